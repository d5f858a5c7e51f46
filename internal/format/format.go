// Package format reads and writes the binary encodings of BloomFilter and
// ScalableBloomFilter, whose layout the root package's doc writes out (it
// is the compatibility promise): the headers, the words of the bits, the
// CRC-32C checksums, reading from a stream in bounded chunks (read.go), and
// the base64 text form (text.go). Versions 1 and 2 are here (this file), and
// version 3, which every encoder of the root package writes, in v3.go; the
// writers of versions 1 and 2 stay so that tests can check that what older
// releases wrote keeps decoding.
//
// Every decoder here validates before it allocates and never panics: a
// truncated input is io.ErrUnexpectedEOF, anything else that is not exactly
// an encoding an error wrapping ErrCorrupt. What the header alone cannot
// say, such as whether a ScalableBloomFilter's sub-filters have the sizes its
// parameters give them, the root package checks.
package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/hugepage"
)

// ErrCorrupt is wrapped by every error a decoder returns for input that is
// not a valid encoding; the root package exports it as bloom.ErrCorrupt.
var ErrCorrupt = errors.New("bloom: corrupt or invalid encoding")

// Corrupt returns an error wrapping ErrCorrupt with the message.
func Corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// The kinds of filter, as BadMagic names them.
const (
	KindBloom    = "BloomFilter"
	KindScalable = "ScalableBloomFilter"
	KindWindow   = "WindowFilter"
)

// BadMagic returns the error for an encoding that starts with magic, 4
// bytes, where one of a filter of kind want was expected. If magic is that
// of another kind, the error says which and names the root package's
// functions that read it; otherwise it is "bad magic". It wraps ErrCorrupt.
func BadMagic(magic []byte, want string) error {
	kind, reader := "", ""
	switch string(magic) {
	case Magic:
		kind, reader = KindBloom, "Read"
	case ScalableMagic:
		kind, reader = KindScalable, "ReadScalable"
	case WindowMagic:
		kind, reader = KindWindow, "ReadWindow"
	}
	if kind == "" || kind == want {
		return Corrupt("bad magic %q", magic)
	}
	return Corrupt("the input holds a %s, not a %s: read it with %s, or with ReadAny for any kind", kind, want, reader)
}

// The limits a header must keep, those of bloom.MaxBits and bloom.MaxHashes
// (the root package checks at compile time that they agree), and MaxWords,
// the number of 64-bit words the largest filter needs, bounded by what an int
// can index on this platform.
const (
	MaxBits   uint64 = 1 << 40
	MaxHashes uint   = 64
)

var MaxWords = min(MaxBits/64, uint64(math.MaxInt)/8)

// The constants of the format.
const (
	Magic         = "BLMF" // a BloomFilter
	ScalableMagic = "BLMS" // a ScalableBloomFilter
	WindowMagic   = "BLMW" // a WindowFilter (internal/window's Magic)

	Version1      = 1 // the classic layout
	Version2      = 2 // a layout recorded: the blocked one
	LayoutBlocked = 1 // the layout field of version 2

	HeaderSize         = 48 // a BloomFilter's header
	ScalableHeaderSize = 56 // a ScalableBloomFilter's header
	CRCSize            = 4
	MaxSubFilters      = 1 << 16

	// BlockBits is the block of the blocked layout, in bits: a blocked
	// filter's size is a multiple of it.
	BlockBits = 512
)

// Castagnoli is the table of the CRC-32C of every encoding.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a BloomFilter's header: everything it holds but its bits.
type Header struct {
	Seed      uint32
	K         uint
	M         uint64
	Capacity  uint64
	ErrorRate float64
	Count     uint64
	Blocked   bool // format version 2, layout 1
}

// Words returns the number of 64-bit words of the bits.
func (h *Header) Words() uint64 { return (h.M + 63) / 64 }

// Size returns the length of the encoding, in bytes. It does not overflow
// for a header that ParseHeader accepted.
func (h *Header) Size() uint64 { return HeaderSize + 8*h.Words() + CRCSize }

// AppendHeader appends the encoding of h to b.
func AppendHeader(b []byte, h Header) []byte {
	version, layout := uint16(Version1), uint16(0)
	if h.Blocked {
		version, layout = Version2, LayoutBlocked
	}
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, layout)
	b = binary.LittleEndian.AppendUint32(b, h.Seed)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.K))
	b = binary.LittleEndian.AppendUint64(b, h.M)
	b = binary.LittleEndian.AppendUint64(b, h.Capacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.ErrorRate))
	b = binary.LittleEndian.AppendUint64(b, h.Count)
	return b
}

// ParseHeader validates the fixed-size header at the start of b, which holds
// at least HeaderSize bytes; it allocates nothing.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if string(b[0:4]) != Magic {
		return h, BadMagic(b[0:4], KindBloom)
	}
	switch v, fl := binary.LittleEndian.Uint16(b[4:]), binary.LittleEndian.Uint16(b[6:]); {
	case v == Version2 && fl == LayoutBlocked:
		h.Blocked = true
	case v == Version2:
		return h, Corrupt("unknown layout %#x", fl)
	case v != Version1:
		return h, Corrupt("unsupported format version %d (want %d or %d)", v, Version1, Version2)
	case fl != 0:
		return h, Corrupt("unknown flags %#x", fl)
	}
	return h, h.parseFields(b)
}

// parseFields reads the fields at offsets 8 to 47, which every version has,
// into h, and checks them.
func (h *Header) parseFields(b []byte) error {
	h.Seed = binary.LittleEndian.Uint32(b[8:])
	k := binary.LittleEndian.Uint32(b[12:])
	h.M = binary.LittleEndian.Uint64(b[16:])
	h.Capacity = binary.LittleEndian.Uint64(b[24:])
	h.ErrorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[32:]))
	h.Count = binary.LittleEndian.Uint64(b[40:])
	if k == 0 || k > uint32(MaxHashes) {
		return Corrupt("hash count %d not in [1, %d]", k, MaxHashes)
	}
	h.K = uint(k)
	if h.M == 0 || h.M > MaxBits || (h.M-1)/64 >= MaxWords {
		return Corrupt("size %d bits not in [1, %d]", h.M, MaxBits)
	}
	if h.Blocked && h.M%BlockBits != 0 {
		return Corrupt("blocked size %d bits not a multiple of %d", h.M, BlockBits)
	}
	if h.Capacity == 0 {
		return Corrupt("capacity 0")
	}
	if !(h.ErrorRate > 0 && h.ErrorRate < 1) {
		return Corrupt("error rate %v not in (0, 1)", h.ErrorRate)
	}
	if h.Count > h.M {
		return Corrupt("count %d exceeds %d bits", h.Count, h.M)
	}
	return nil
}

// Padding reports whether words, of m bits, has a bit set at m or above.
func Padding(m uint64, words []uint64) bool {
	r := m % 64
	return r != 0 && words[len(words)-1]>>r != 0
}

// SetBits returns the number of bits set in words.
func SetBits(words []uint64) uint64 {
	var n int
	for _, w := range words {
		n += bits.OnesCount64(w)
	}
	return uint64(n)
}

// checkWords checks the words of a payload against its header: no bit set
// past the size, and no more keys counted than bits set.
func checkWords(h *Header, words []uint64) error {
	if Padding(h.M, words) {
		return Corrupt("bits set beyond the filter size")
	}
	if c := SetBits(words); h.Count > c {
		return Corrupt("count %d exceeds the %d set bits", h.Count, c)
	}
	return nil
}

// Append appends the encoding of a BloomFilter with header h and the bits
// words to b, loading the words atomically if conc (the filter is Concurrent
// and may be written meanwhile), and returns the extended slice. h.Count was
// read before the words: see the root package's sharedCount.
func Append(b []byte, h Header, words []uint64, conc bool) []byte {
	start := len(b)
	b = AppendHeader(b, h)
	for i := range words {
		b = binary.LittleEndian.AppendUint64(b, load(words, i, conc))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], Castagnoli))
}

// load returns words[i], loaded atomically if conc.
func load(words []uint64, i int, conc bool) uint64 {
	if conc {
		return atomic.LoadUint64(&words[i])
	}
	return words[i]
}

// Decode decodes the encoding of one BloomFilter that is all of data, and
// returns its header and its words (from hugepage.Words).
func Decode(data []byte) (Header, []uint64, error) {
	if len(data) < HeaderSize {
		return Header{}, nil, io.ErrUnexpectedEOF
	}
	h, err := ParseHeader(data)
	if err != nil {
		return h, nil, err
	}
	want := h.Size() // no overflow: m <= MaxBits
	switch {
	case uint64(len(data)) < want:
		return h, nil, io.ErrUnexpectedEOF
	case uint64(len(data)) > want:
		return h, nil, Corrupt("%d trailing bytes", uint64(len(data))-want)
	}
	body := data[:want-CRCSize]
	if crc32.Checksum(body, Castagnoli) != binary.LittleEndian.Uint32(data[want-CRCSize:]) {
		return h, nil, Corrupt("checksum mismatch")
	}
	words := hugepage.Words(h.Words())
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[HeaderSize+8*i:])
	}
	if err := checkWords(&h, words); err != nil {
		return h, nil, err
	}
	return h, words, nil
}

// ScalableHeader is a ScalableBloomFilter's header.
type ScalableHeader struct {
	Seed            uint32
	Growth          uint8 // GrowthLinear or GrowthExponential
	Scale           float64
	Tightening      float64
	InitialCapacity uint64
	ErrorRate       float64
	Saturated       bool
	Blocked         bool // format version 2, layout 1
	N               int  // the number of sub-filters, in [1, MaxSubFilters]
}

// The growth field of a ScalableBloomFilter's header.
const (
	GrowthLinear      = 1
	GrowthExponential = 2
)

// AppendScalableHeader appends the encoding of h to b.
func AppendScalableHeader(b []byte, h ScalableHeader) []byte {
	var flags uint16
	if h.Saturated {
		flags = 1
	}
	version, layout := uint16(Version1), byte(0)
	if h.Blocked {
		version, layout = Version2, LayoutBlocked
	}
	b = append(b, ScalableMagic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint32(b, h.Seed)
	b = append(b, h.Growth, layout, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Scale))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Tightening))
	b = binary.LittleEndian.AppendUint64(b, h.InitialCapacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.ErrorRate))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.N))
	return binary.LittleEndian.AppendUint32(b, 0)
}

// ParseScalableHeader validates the fields of the fixed-size header at the
// start of b, which holds at least ScalableHeaderSize bytes, each on its
// own; whether together they can grow is for the caller to check.
func ParseScalableHeader(b []byte) (ScalableHeader, error) {
	var h ScalableHeader
	if string(b[:4]) != ScalableMagic {
		return h, BadMagic(b[:4], KindScalable)
	}
	switch v := binary.LittleEndian.Uint16(b[4:]); {
	case v == Version2 && b[13] == LayoutBlocked:
		h.Blocked = true
	case v == Version2:
		return h, Corrupt("unknown layout %d", b[13])
	case v != Version1:
		return h, Corrupt("unsupported format version %d (want %d or %d)", v, Version1, Version2)
	case b[13] != 0:
		return h, Corrupt("non-zero reserved byte 13")
	}
	if binary.LittleEndian.Uint32(b[52:]) != 0 {
		return h, Corrupt("unknown flags or non-zero reserved bytes")
	}
	return h, h.parseFields(b)
}

// parseFields reads the fields at offsets 6 to 51, which every version has,
// into h, and checks them each on its own.
func (h *ScalableHeader) parseFields(b []byte) error {
	flags := binary.LittleEndian.Uint16(b[6:])
	if flags&^1 != 0 || b[14]|b[15] != 0 {
		return Corrupt("unknown flags or non-zero reserved bytes")
	}
	h.Seed = binary.LittleEndian.Uint32(b[8:])
	h.Growth = b[12]
	h.Scale = math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
	h.Tightening = math.Float64frombits(binary.LittleEndian.Uint64(b[24:]))
	h.InitialCapacity = binary.LittleEndian.Uint64(b[32:])
	h.ErrorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[40:]))
	h.Saturated = flags&1 != 0
	n := binary.LittleEndian.Uint32(b[48:])
	switch {
	case h.Growth == GrowthLinear && !(h.Scale > 0 && !math.IsInf(h.Scale, 0)),
		h.Growth == GrowthExponential && !(h.Scale > 1 && !math.IsInf(h.Scale, 0)),
		h.Growth != GrowthLinear && h.Growth != GrowthExponential:
		return Corrupt("bad growth %d with scale %v", h.Growth, h.Scale)
	case !(h.Tightening > 0 && h.Tightening < 1):
		return Corrupt("tightening %v not in (0, 1)", h.Tightening)
	case h.InitialCapacity == 0:
		return Corrupt("initial capacity 0")
	case !(h.ErrorRate > 0 && h.ErrorRate < 1):
		return Corrupt("error rate %v not in (0, 1)", h.ErrorRate)
	case n == 0 || n > MaxSubFilters:
		return Corrupt("%d sub-filters", n)
	}
	h.N = int(n)
	return nil
}

// SubFilterSizes walks the headers of the n sub-filters that follow the
// header of a ScalableBloomFilter's encoding data, and checks the length of
// data and its checksum before anything is allocated for them: a truncated
// input is io.ErrUnexpectedEOF. It returns the length of each sub-filter's
// encoding, in order, the first starting at ScalableHeaderSize.
func SubFilterSizes(data []byte, n int) ([]uint64, error) {
	return subFilterSizes(data, n, true)
}

// subFilterSizes is SubFilterSizes, which checks the checksum only if
// verify.
func subFilterSizes(data []byte, n int, verify bool) ([]uint64, error) {
	sizes := make([]uint64, 0, min(n, len(data)/(HeaderSize+8+CRCSize)))
	off := uint64(ScalableHeaderSize)
	for range n {
		if uint64(len(data)) < off+HeaderSize {
			return nil, io.ErrUnexpectedEOF
		}
		h, err := ParseHeader(data[off:])
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, h.Size())
		off += h.Size()
	}
	switch {
	case uint64(len(data)) < off+CRCSize:
		return nil, io.ErrUnexpectedEOF
	case uint64(len(data)) > off+CRCSize:
		return nil, Corrupt("%d trailing bytes", uint64(len(data))-off-CRCSize)
	}
	if verify && crc32.Checksum(data[:off], Castagnoli) != binary.LittleEndian.Uint32(data[off:]) {
		return nil, Corrupt("checksum mismatch")
	}
	return sizes, nil
}
