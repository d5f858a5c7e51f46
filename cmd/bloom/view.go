package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strings"
	"unsafe"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/mmap"
)

// skipCheckDoc is the help of query's and info's -skip-check.
const skipCheckDoc = "check only the headers and the length of FILE, not the checksums of its bits: " +
	"it opens at once, but damage goes unnoticed and can make added keys test absent"

// filterFile is a filter file open as a bloom.View, for query and info: the
// file mapped read-only (bloom.Open's internal/mmap), so that opening it
// reads only the pages that the checks and the answers touch and copies
// nothing into the heap; a file that cannot be mapped, such as a FIFO, is
// read into memory first.
//
// It maps the file itself and makes the View with bloom.NewView, rather
// than calling bloom.Open, because info reads the bits for its statistics
// (fill ratio, estimated count and error rate) and a scalable filter's
// saturation and initial capacity, which View does not offer; with those
// on View, this becomes bloom.Open.
type filterFile struct {
	*bloom.View
	data    []byte          // the file's bytes
	mapped  *mmap.File      // what mmap.Open returned, or nil if read
	enc     format.Encoding // where the filters lie in data
	checked bool            // whether the checksums of the bits were checked
}

// openFilter opens the filter file at path, which must hold exactly one
// encoding of either type in any format version, and checks it as NewView
// does: its headers and length, and its bits' checksums unless skipCheck.
// Opening a FIFO waits for a writer, as cat does.
func openFilter(path string, skipCheck bool) (*filterFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f := &filterFile{checked: !skipCheck}
	switch {
	case fi.Mode().IsRegular() && fi.Size() == 0:
		return nil, fmt.Errorf("%s: empty file, not a filter", path)
	case fi.Mode().IsRegular():
		if f.mapped, err = mmap.Open(path); err != nil {
			return nil, err
		}
		f.data = f.mapped.Data
	default:
		// A pipe has no pages to map: read it whole (the View then needs
		// no copy of its own, a large heap block being aligned).
		r, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		f.data, err = io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := f.open(skipCheck); err != nil {
		f.unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// open makes the View over f.data.
func (f *filterFile) open(skipCheck bool) error {
	if len(f.data) == 0 {
		return errors.New("empty file, not a filter")
	}
	if head := f.data[:min(4, len(f.data))]; string(head) != magicPlain && string(head) != magicScalable {
		return fmt.Errorf("not a filter file (it starts with %q, not %q or %q)", head, magicPlain, magicScalable)
	}
	var opts []bloom.ViewOption
	if skipCheck {
		opts = append(opts, bloom.SkipBodyCheck())
	}
	v, err := bloom.NewView(f.data, opts...)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated: the file ends inside the filter")
	case err != nil && strings.HasSuffix(err.Error(), " trailing bytes"):
		// The library's message for a valid encoding followed by more.
		return fmt.Errorf("unexpected data after the filter: %w", err)
	case err != nil:
		return err
	}
	// NewView has checked what Locate checks: this finds where the filters
	// lie again, from their headers, and cannot fail.
	if f.enc, err = format.Locate(f.data, false); err != nil {
		return err
	}
	f.View = v
	return nil
}

// Close closes the View and unmaps the file.
func (f *filterFile) Close() error {
	f.View.Close()
	return f.unmap()
}

func (f *filterFile) unmap() error {
	if f.mapped == nil {
		return nil
	}
	return f.mapped.Close()
}

// Saturated reports whether a scalable filter can grow no more (see
// bloom.ScalableBloomFilter.Saturated); a fixed-size filter never is.
func (f *filterFile) Saturated() bool { return f.enc.Scalable && f.enc.Params.Saturated }

// InitialCapacity returns the capacity of a scalable filter's first
// sub-filter.
func (f *filterFile) InitialCapacity() uint64 { return f.enc.Params.InitialCapacity }

// fill is the fill of a filter's bits: what the library's FillRatio,
// EstimatedCount and EstimatedErrorRate compute from them, for a fixed-size
// filter and, summed, for a scalable one.
type fill struct {
	set, bits uint64
	estimated uint64  // distinct keys, math.MaxUint64 when unknown
	rate      float64 // the false-positive rate at this fill
}

// Ratio returns the fraction of bits set.
func (s fill) Ratio() float64 {
	if s.bits == 0 {
		return 0
	}
	return float64(s.set) / float64(s.bits)
}

// fill reads every bit of the filter, or of every sub-filter, and returns
// its fill. The arithmetic is the library's, in the library's order, so
// that info prints the same numbers for a file as for the filter decoded
// from it (TestFillMatchesLibrary).
func (f *filterFile) fill() fill {
	var all fill
	var logMiss float64 // sum of log1p(-rate) over the sub-filters
	for _, l := range f.enc.Filters {
		s := subFill(f.data, l)
		all.set += s.set
		all.bits += s.bits
		switch {
		case all.estimated == math.MaxUint64 || s.estimated > math.MaxUint64-all.estimated:
			all.estimated = math.MaxUint64
		default:
			all.estimated += s.estimated
		}
		all.rate = s.rate
		logMiss += math.Log1p(-s.rate)
	}
	if f.enc.Scalable {
		all.rate = -math.Expm1(logMiss)
	}
	return all
}

// subFill returns the fill of the filter l of data.
func subFill(data []byte, l format.Located) fill {
	words := wordsOf(data[l.Words : l.Words+8*l.Header.Words()])
	var n int
	for _, w := range words {
		n += bits.OnesCount64(w)
	}
	s := fill{set: uint64(n), bits: l.M}
	var est float64
	if l.Blocked {
		s.rate = blocked.ErrorRate(layout.Bits{Words: words, M: l.M, K: l.K}, false)
		est = bloom.EstimateBlockedCount(l.M, l.K, s.set)
	} else {
		s.rate = math.Pow(s.Ratio(), float64(l.K))
		est = bloom.EstimateCount(l.M, l.K, s.set)
	}
	s.estimated = math.MaxUint64
	if est < math.MaxUint64 {
		s.estimated = uint64(math.Round(est))
	}
	return s
}

// littleEndian reports whether words can be read where they lie.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordsOf returns b, little-endian words, as a []uint64: b itself if it
// lies on a multiple of 8 on a little-endian machine (a mapping of a
// version-3 file always does), else a copy.
func wordsOf(b []byte) []uint64 {
	n := len(b) / 8
	if n == 0 {
		return nil
	}
	if p := unsafe.Pointer(unsafe.SliceData(b)); littleEndian && uintptr(p)%8 == 0 {
		return unsafe.Slice((*uint64)(p), n)
	}
	words := make([]uint64, n)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return words
}
