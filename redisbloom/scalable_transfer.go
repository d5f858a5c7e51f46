package redisbloom

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"strconv"

	"github.com/bloomfilters/bloom"
)

// Export returns an in-memory copy of the filter: a bloom.ScalableBloomFilter
// of the classic layout with the same parameters, sub-filters, counts and
// bits, Equal to the one bloom.NewScalable (classic) builds from the same
// keys added in the same order. It
// reads every sub-filter in one round trip, consistently, and needs about
// three times the filter's size in bytes on the client. It returns the errors
// Test returns, and ErrCorrupt if the bitmaps do not decode (a filter
// saturated where the bloom package would still grow it: see
// ScalableFilter).
func (s *ScalableFilter) Export(ctx context.Context) (*bloom.ScalableBloomFilter, error) {
	res, n, err := s.state(ctx, scalableExportScript)
	if err != nil {
		return nil, err
	}
	if len(res) != 3+2*n {
		return nil, fmt.Errorf("%w: %q: malformed export reply", ErrFormat, s.h.name)
	}
	saturated := res[2] == "1"
	enc := make([]byte, 0, 56)
	enc = append(enc, "BLMS"...)
	enc = binary.LittleEndian.AppendUint16(enc, 1)
	var flags uint16
	if saturated {
		flags = 1
	}
	enc = binary.LittleEndian.AppendUint16(enc, flags)
	enc = binary.LittleEndian.AppendUint32(enc, s.seed)
	enc = append(enc, s.growth, 0, 0, 0)
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(s.scale))
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(s.tightening))
	enc = binary.LittleEndian.AppendUint64(enc, s.initialCapacity)
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(s.errorRate))
	enc = binary.LittleEndian.AppendUint32(enc, uint32(n))
	enc = binary.LittleEndian.AppendUint32(enc, 0)
	for j := range n {
		z := s.size(j)
		count, err := parseUint(s.h.name, "count", res[3+j])
		if err != nil {
			return nil, err
		}
		bitmap, ok := res[3+n+j].(string)
		if !ok || !z.ok || uint64(len(bitmap)) != (z.m+7)/8 {
			return nil, fmt.Errorf("%w: %q: bitmap of sub-filter %d does not match its size", ErrCorrupt, s.h.name, j)
		}
		enc = appendEncoding(enc, s.seed, z.k, z.m, z.capacity, z.rate, count, bitmap)
	}
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc, castagnoli))
	g := new(bloom.ScalableBloomFilter)
	if err := g.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCorrupt, s.h.name, err)
	}
	return g, nil
}

// Import replaces the filter's sub-filters, counts and saturation with those
// of src, in one round trip, atomically: Export afterwards returns a filter
// Equal to src. src must have the classic layout, as every Redis filter (a
// filter built with bloom.Blocked is refused), and the filter's parameters
// (seed, growth, scale, tightening, initial capacity and error rate), or
// Import returns an error wrapping bloom.ErrIncompatible. Other handles on
// the filter notice the Import at their next call (the import epoch) and
// take its sub-filters, fewer ones included. Keys added by other clients
// between Export and Import are lost; Import is meant for restoring or
// seeding a filter.
func (s *ScalableFilter) Import(ctx context.Context, src *bloom.ScalableBloomFilter) error {
	if s.h.rdb == nil {
		return errZeroScalable
	}
	if err := s.compatible(src); err != nil {
		return err
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint16(enc[4:]) != importVersion || enc[13] != 0 || enc[12] != s.growth ||
		binary.LittleEndian.Uint64(enc[16:]) != math.Float64bits(s.scale) ||
		binary.LittleEndian.Uint64(enc[24:]) != math.Float64bits(s.tightening) {
		return fmt.Errorf("%w: scalable filter %q has other parameters than the imported one", bloom.ErrIncompatible, s.h.name)
	}
	saturated := "0"
	if binary.LittleEndian.Uint16(enc[6:])&1 != 0 {
		saturated = "1"
	}
	n := int(binary.LittleEndian.Uint32(enc[48:]))
	counts := make([]any, n)
	bitmaps := make([]any, n)
	for j := range n {
		off := int(binary.LittleEndian.Uint64(enc[importTable+8*j:]))
		z, err := s.sizeCtx(ctx, j)
		if err != nil {
			return err
		}
		m := binary.LittleEndian.Uint64(enc[off+16:])
		k := binary.LittleEndian.Uint32(enc[off+12:])
		if !z.ok || m != z.m || uint(k) != z.k {
			return fmt.Errorf("%w: sub-filter %d of the imported filter has %d bits, %d hashes, which Redis cannot hold as sub-filter %d of %q",
				bloom.ErrIncompatible, j, m, k, j, s.h.name)
		}
		counts[j] = strconv.FormatUint(binary.LittleEndian.Uint64(enc[off+40:]), 10)
		bitmap := enc[off+importHeader : off+importHeader+int((m+7)/8)]
		for i, b := range bitmap {
			bitmap[i] = bits.Reverse8(b)
		}
		bitmaps[j] = bitmap
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return s.h.wrap(err)
		}
		if try > maxChangedRetries {
			return s.errKeepsChanging()
		}
		v := s.chain.load()
		S := max(n, s.subFilters(v, false))
		args := s.args(v, S, 0, 2+2*n)
		args = append(args, strconv.Itoa(n), saturated)
		args = append(args, counts...)
		args = append(args, bitmaps...)
		cmd, notReplicated := s.write(ctx, scalableImportScript, s.keys(S), args)
		res, err := cmd.Slice()
		if retry, err := s.changed(ctx, v, err); err != nil {
			return err
		} else if retry {
			continue
		}
		if err != nil {
			return s.h.scriptErr(ctx, err)
		}
		if len(res) != 2 {
			return fmt.Errorf("redisbloom: filter %q: malformed import reply", s.h.name)
		}
		gen, err1 := parseUint(s.h.name, "generation", res[0])
		epoch, err2 := parseUint(s.h.name, "epoch", res[1])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		s.h.seen.observe(gen)
		s.chain.see(epoch, n)
		return notReplicated
	}
}

// compatible returns an error wrapping bloom.ErrIncompatible if src is nil,
// zero, blocked, or has another seed, initial capacity or error rate than
// s; Import checks the rest (growth, scale, tightening and the sizes).
func (s *ScalableFilter) compatible(src *bloom.ScalableBloomFilter) error {
	switch {
	case src == nil || src.NumFilters() == 0:
		return fmt.Errorf("%w: nil or zero ScalableBloomFilter", bloom.ErrIncompatible)
	case src.Layout() == bloom.LayoutBlocked:
		return errBlockedSource("the imported scalable filter")
	case src.Seed() != s.seed || src.InitialCapacity() != s.initialCapacity ||
		math.Float64bits(src.ErrorRate()) != math.Float64bits(s.errorRate):
		return fmt.Errorf("%w: scalable filter %q has other parameters than the imported one", bloom.ErrIncompatible, s.h.name)
	}
	return nil
}
