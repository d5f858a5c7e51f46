// Package format holds the binary encodings of BloomFilter and
// ScalableBloomFilter that the root package's doc writes out; this file is
// version 3, whose words start on a cache line so that a filter can be
// probed where its bytes lie (a file mapping, an embedded string).
package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// ErrCorrupt is wrapped by every error a decoder returns for input that is
// not a valid encoding; the root package exports it as bloom.ErrCorrupt.
var ErrCorrupt = errors.New("bloom: corrupt or invalid encoding")

// Corrupt returns an error wrapping ErrCorrupt with the message.
func Corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// The constants of format version 3.
const (
	V3Version = 3

	// V3HeaderSize is the size of the header of either type, and V3Align
	// the alignment, from the start of the encoding, of a BloomFilter's
	// words and of a ScalableBloomFilter's sub-filters: one cache line.
	V3HeaderSize = 64
	V3Align      = 64

	// V3SectionSize is the number of bytes of the words that one CRC-32C
	// of the section table covers, as written; decoders take any power of
	// two from V3MinSection to V3MaxSection.
	V3SectionSize = 1 << 20
	V3MinSection  = 64
	V3MaxSection  = 1 << 30

	v3Magic         = "BLMF"
	v3ScalableMagic = "BLMS"
	v3LayoutBlocked = 1
	v3CRCOffset     = V3HeaderSize - 4

	// The limits of bloom.MaxBits and bloom.MaxHashes, which the root
	// package checks at compile time to agree, and of the sub-filters.
	v3MaxBits       uint64 = 1 << 40
	v3MaxHashes            = 64
	v3MaxSubFilters        = 1 << 16
)

// v3MaxWords is the number of words of the largest filter, bounded by what
// an int can index on this platform.
var v3MaxWords = min(v3MaxBits/64, uint64(math.MaxInt)/8)

var castagnoliV3 = crc32.MakeTable(crc32.Castagnoli)

// V3Header is a BloomFilter's header in version 3.
type V3Header struct {
	Blocked     bool // the layout: 1 blocked, 0 classic
	Seed        uint32
	K           uint
	M           uint64
	Capacity    uint64
	ErrorRate   float64
	Count       uint64
	SectionSize uint64 // bytes of words per checksum; 0 in AppendV3 means V3SectionSize
}

// Words returns the number of 64-bit words of the bits.
func (h *V3Header) Words() uint64 { return (h.M + 63) / 64 }

// Sections returns the number of sections of the words, each with its
// CRC-32C in the table after them.
func (h *V3Header) Sections() uint64 {
	size := h.SectionSize
	if size == 0 {
		size = V3SectionSize
	}
	return (8*h.Words() + size - 1) / size
}

// Size returns the length of the encoding in bytes: the header, the words,
// the section table. It does not overflow for a header ParseV3Header
// accepted.
func (h *V3Header) Size() uint64 { return V3HeaderSize + 8*h.Words() + 4*h.Sections() }

// V3Size returns the length in bytes of the version-3 encoding of a filter
// of m bits, as AppendV3 writes it.
func V3Size(m uint64) uint64 {
	h := V3Header{M: m, SectionSize: V3SectionSize}
	return h.Size()
}

// appendV3Header appends the header of h, with its checksum.
func appendV3Header(b []byte, h V3Header) []byte {
	start := len(b)
	layout := uint16(0)
	if h.Blocked {
		layout = v3LayoutBlocked
	}
	b = append(b, v3Magic...)
	b = binary.LittleEndian.AppendUint16(b, V3Version)
	b = binary.LittleEndian.AppendUint16(b, layout)
	b = binary.LittleEndian.AppendUint32(b, h.Seed)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.K))
	b = binary.LittleEndian.AppendUint64(b, h.M)
	b = binary.LittleEndian.AppendUint64(b, h.Capacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.ErrorRate))
	b = binary.LittleEndian.AppendUint64(b, h.Count)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.SectionSize))
	b = append(b, make([]byte, 8)...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoliV3))
}

// load returns word i, with an atomic load if the words may be written
// meanwhile (a Concurrent filter).
func load(words []uint64, i int, conc bool) uint64 {
	if conc {
		return atomic.LoadUint64(&words[i])
	}
	return words[i]
}

// AppendV3 appends the version-3 encoding of a filter with header h and
// words to b: the header, the words, and the CRC-32C of each section of the
// words, computed over the bytes written (so a Concurrent filter, whose
// words are loaded atomically one by one, still gets a valid encoding). The
// caller has made b's length plus the header a multiple of V3Align if the
// words are to start on a cache line.
func AppendV3(b []byte, h V3Header, words []uint64, conc bool) []byte {
	if h.SectionSize == 0 {
		h.SectionSize = V3SectionSize
	}
	b = appendV3Header(b, h)
	body := len(b)
	for i := range words {
		b = binary.LittleEndian.AppendUint64(b, load(words, i, conc))
	}
	data := b[body:]
	for off := 0; off < len(data); off += int(h.SectionSize) {
		sec := data[off:min(off+int(h.SectionSize), len(data))]
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(sec, castagnoliV3))
	}
	return b
}

// WriteV3 writes what AppendV3 appends to w, through a buffer of at most
// 64 KiB, and returns the number of bytes written.
func WriteV3(w io.Writer, h V3Header, words []uint64, conc bool) (int64, error) {
	if h.SectionSize == 0 {
		h.SectionSize = V3SectionSize
	}
	const chunk = 1 << 13 // words per write
	buf := make([]byte, 0, max(V3HeaderSize, 8*min(chunk, len(words))))
	var total int64
	write := func(p []byte) error {
		n, err := w.Write(p)
		total += int64(n)
		return err
	}
	if err := write(appendV3Header(buf, h)); err != nil {
		return total, err
	}
	table := make([]byte, 0, 4*h.Sections())
	per := int(h.SectionSize / 8) // words per section
	for sec := 0; sec < len(words); sec += per {
		crc := uint32(0)
		for lo := sec; lo < min(sec+per, len(words)); lo += chunk {
			buf = buf[:0]
			for i := lo; i < min(lo+chunk, sec+per, len(words)); i++ {
				buf = binary.LittleEndian.AppendUint64(buf, load(words, i, conc))
			}
			crc = crc32.Update(crc, castagnoliV3, buf)
			if err := write(buf); err != nil {
				return total, err
			}
		}
		table = binary.LittleEndian.AppendUint32(table, crc)
	}
	return total, write(table)
}

// ParseV3Header validates the version-3 header at the start of b, which
// holds at least V3HeaderSize bytes, and returns it. It checks the header's
// checksum and every field, and allocates nothing.
func ParseV3Header(b []byte) (V3Header, error) {
	var h V3Header
	if string(b[0:4]) != v3Magic {
		return h, Corrupt("bad magic %q", b[0:4])
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != V3Version {
		return h, Corrupt("format version %d, want %d", v, V3Version)
	}
	if crc32.Checksum(b[:v3CRCOffset], castagnoliV3) != binary.LittleEndian.Uint32(b[v3CRCOffset:]) {
		return h, Corrupt("header checksum mismatch")
	}
	switch l := binary.LittleEndian.Uint16(b[6:]); l {
	case 0:
	case v3LayoutBlocked:
		h.Blocked = true
	default:
		return h, Corrupt("unknown layout %#x", l)
	}
	h.Seed = binary.LittleEndian.Uint32(b[8:])
	k := binary.LittleEndian.Uint32(b[12:])
	h.M = binary.LittleEndian.Uint64(b[16:])
	h.Capacity = binary.LittleEndian.Uint64(b[24:])
	h.ErrorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[32:]))
	h.Count = binary.LittleEndian.Uint64(b[40:])
	h.SectionSize = uint64(binary.LittleEndian.Uint32(b[48:]))
	switch {
	case k == 0 || k > v3MaxHashes:
		return h, Corrupt("hash count %d not in [1, %d]", k, v3MaxHashes)
	case h.M == 0 || h.M > v3MaxBits || (h.M-1)/64 >= v3MaxWords:
		return h, Corrupt("size %d bits not in [1, %d]", h.M, min(v3MaxBits, v3MaxWords*64))
	case h.Blocked && h.M%512 != 0:
		return h, Corrupt("blocked size %d bits not a multiple of 512", h.M)
	case h.Capacity == 0:
		return h, Corrupt("capacity 0")
	case !(h.ErrorRate > 0 && h.ErrorRate < 1):
		return h, Corrupt("error rate %v not in (0, 1)", h.ErrorRate)
	case h.Count > h.M:
		return h, Corrupt("count %d exceeds %d bits", h.Count, h.M)
	case h.SectionSize < V3MinSection || h.SectionSize > V3MaxSection || h.SectionSize&(h.SectionSize-1) != 0:
		return h, Corrupt("section size %d not a power of two in [%d, %d]", h.SectionSize, V3MinSection, V3MaxSection)
	case binary.LittleEndian.Uint64(b[52:]) != 0:
		return h, Corrupt("non-zero reserved bytes")
	}
	h.K = uint(k)
	return h, nil
}

// IsV3 reports whether b, the first 6 or more bytes of an encoding of either
// type, is of version 3.
func IsV3(b []byte) bool { return binary.LittleEndian.Uint16(b[4:]) == V3Version }

// CheckV3 validates data as exactly one version-3 encoding of a
// BloomFilter and returns its header: the header and its checksum, the
// length (io.ErrUnexpectedEOF if short), the bits at m and above (zero), and
// if body, the checksum of every section, in parallel if data is large. The
// words are data[V3HeaderSize:][:8*h.Words()], little-endian. It allocates
// nothing unless it verifies in parallel.
func CheckV3(data []byte, body bool) (V3Header, error) {
	if len(data) < V3HeaderSize {
		return V3Header{}, io.ErrUnexpectedEOF
	}
	h, err := ParseV3Header(data)
	if err != nil {
		return h, err
	}
	switch size := h.Size(); {
	case uint64(len(data)) < size:
		return h, io.ErrUnexpectedEOF
	case uint64(len(data)) > size:
		return h, Corrupt("%d trailing bytes", uint64(len(data))-size)
	}
	last := binary.LittleEndian.Uint64(data[V3HeaderSize+8*(h.Words()-1):])
	if r := h.M % 64; r != 0 && last>>r != 0 {
		return h, Corrupt("bits set beyond the filter size")
	}
	if body {
		return h, VerifyV3(data, h, ParallelMin)
	}
	return h, nil
}

// ParallelMin is the size of the words from which VerifyV3, called by
// CheckV3, checks sections on several cores: below it, starting goroutines
// costs more than they save. A variable only so that tests can lower it.
var ParallelMin uint64 = 32 << 20

// VerifyV3 checks the CRC-32C of every section of the words of data, a
// version-3 encoding with header h whose length CheckV3 has checked, on up
// to GOMAXPROCS goroutines if the words take parallel bytes or more. The
// error names the first bad section it found.
func VerifyV3(data []byte, h V3Header, parallel uint64) error {
	words := data[V3HeaderSize : V3HeaderSize+8*h.Words()]
	table := data[V3HeaderSize+8*h.Words():]
	sections := int(h.Sections())
	check := func(i int) bool {
		lo := uint64(i) * h.SectionSize
		sec := words[lo:min(lo+h.SectionSize, uint64(len(words)))]
		return crc32.Checksum(sec, castagnoliV3) == binary.LittleEndian.Uint32(table[4*i:])
	}
	bad := -1
	if workers := min(runtime.GOMAXPROCS(0), sections); uint64(len(words)) < parallel || workers < 2 {
		for i := range sections {
			if !check(i) {
				bad = i
				break
			}
		}
	} else {
		var next atomic.Int64
		var first atomic.Int64
		first.Store(math.MaxInt64)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(sections) || i > first.Load() {
						return
					}
					if !check(int(i)) {
						for {
							f := first.Load()
							if i >= f || first.CompareAndSwap(f, i) {
								break
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		if f := first.Load(); f != math.MaxInt64 {
			bad = int(f)
		}
	}
	if bad >= 0 {
		lo := uint64(bad) * h.SectionSize
		return Corrupt("checksum mismatch in section %d (bytes %d to %d of the bit array)", bad, lo, min(lo+h.SectionSize, uint64(len(words)))-1)
	}
	return nil
}

// DecodeV3 checks data as CheckV3 does, body included, and returns its
// header and its words, in a slice of alloc(h.Words()).
func DecodeV3(data []byte, alloc func(n uint64) []uint64) (V3Header, []uint64, error) {
	h, err := CheckV3(data, true)
	if err != nil {
		return h, nil, err
	}
	words := alloc(h.Words())
	body := data[V3HeaderSize:]
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	return h, words, nil
}

// sectionCRCs computes the checksums of the sections of a stream of words
// as its bytes pass through update.
type sectionCRCs struct {
	size, fill uint64
	crc        uint32
	sums       []uint32
}

func (c *sectionCRCs) update(p []byte) {
	for len(p) > 0 {
		n := min(uint64(len(p)), c.size-c.fill)
		c.crc = crc32.Update(c.crc, castagnoliV3, p[:n])
		c.fill += n
		p = p[n:]
		if c.fill == c.size {
			c.sums = append(c.sums, c.crc)
			c.crc, c.fill = 0, 0
		}
	}
}

// readChunkV3 is the number of words ReadV3 reads at a time (64 KiB).
const readChunkV3 = 1 << 13

// ReadV3 reads one version-3 encoding of a BloomFilter from r, whose first
// len(prefix) bytes (at most V3HeaderSize) have been read into prefix, and
// returns its header, its words and the number of bytes it read from r. It
// reads no byte past the encoding.
//
// If holds(need) reports that r holds the need bytes after the header, the
// words go straight into one slice of alloc(h.Words()); otherwise they are
// kept in chunks as they arrive and copied into it once all have, so that a
// header that lies about the size costs no more than what arrived.
func ReadV3(r io.Reader, prefix []byte, holds func(need uint64) bool, alloc func(n uint64) []uint64) (V3Header, []uint64, int64, error) {
	var hb [V3HeaderSize]byte
	n := copy(hb[:], prefix)
	got, err := io.ReadFull(r, hb[n:])
	read := int64(got)
	if err != nil {
		return V3Header{}, nil, read, noEOFV3(err)
	}
	h, err := ParseV3Header(hb[:])
	if err != nil {
		return h, nil, read, err
	}
	total := h.Words()
	crcs := sectionCRCs{size: h.SectionSize}
	buf := make([]byte, 8*min(total, readChunkV3))
	fill := func(words []uint64) error {
		part := buf[:8*len(words)]
		n, err := io.ReadFull(r, part)
		read += int64(n)
		if err != nil {
			return noEOFV3(err)
		}
		crcs.update(part)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(part[8*i:])
		}
		return nil
	}
	var words []uint64
	if total <= readChunkV3 || holds(8*total+4*h.Sections()) {
		words = alloc(total)
		for lo := uint64(0); lo < total; lo += readChunkV3 {
			if err := fill(words[lo:min(lo+readChunkV3, total)]); err != nil {
				return h, nil, read, err
			}
		}
	} else {
		var chunks [][]uint64
		for lo := uint64(0); lo < total; lo += readChunkV3 {
			c := make([]uint64, min(total-lo, readChunkV3))
			if err := fill(c); err != nil {
				return h, nil, read, err
			}
			chunks = append(chunks, c)
		}
		words = alloc(total)[:0]
		for i, c := range chunks {
			words = append(words, c...)
			chunks[i] = nil // the collector may take it now
		}
	}
	if crcs.fill != 0 {
		crcs.sums = append(crcs.sums, crcs.crc)
	}
	// The table, in pieces of at most buf's size.
	for i := 0; i < len(crcs.sums); {
		part := buf[:4*min(len(crcs.sums)-i, len(buf)/4)]
		n, err := io.ReadFull(r, part)
		read += int64(n)
		if err != nil {
			return h, nil, read, noEOFV3(err)
		}
		for j := 0; j < len(part); j, i = j+4, i+1 {
			if binary.LittleEndian.Uint32(part[j:]) != crcs.sums[i] {
				lo := uint64(i) * h.SectionSize
				return h, nil, read, Corrupt("checksum mismatch in section %d (bytes %d to %d of the bit array)", i, lo, min(lo+h.SectionSize, 8*total)-1)
			}
		}
	}
	if r := h.M % 64; r != 0 && words[len(words)-1]>>r != 0 {
		return h, nil, read, Corrupt("bits set beyond the filter size")
	}
	return h, words, read, nil
}

// noEOFV3 turns an end of input inside an encoding into io.ErrUnexpectedEOF.
func noEOFV3(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// V3ScalableHeader is a ScalableBloomFilter's header in version 3; the root
// package checks that its parameters can grow a filter.
type V3ScalableHeader struct {
	Blocked         bool
	Saturated       bool
	Seed            uint32
	Growth          uint8
	Scale           float64
	Tightening      float64
	InitialCapacity uint64
	ErrorRate       float64
	N               int // sub-filters, in [1, 65536]
	tableCRC        uint32
}

// AlignV3 returns n rounded up to a multiple of V3Align.
func AlignV3(n uint64) uint64 { return (n + V3Align - 1) &^ (V3Align - 1) }

// V3ScalableOffsets returns the offsets, from the start of the encoding, at
// which the sub-filters of the given encoded sizes start in a
// ScalableBloomFilter's version-3 encoding, and the length of that encoding:
// after the header and the table of offsets, each on a cache line, the
// previous one padded with zeros up to it. It allocates len(sizes)+1 words.
func V3ScalableOffsets(sizes []uint64) (offsets []uint64, total uint64) {
	offsets = make([]uint64, len(sizes))
	at := AlignV3(V3HeaderSize + 8*uint64(len(sizes)))
	for i, size := range sizes {
		offsets[i] = at
		total = at + size
		at = AlignV3(total)
	}
	return offsets, total
}

// AppendV3ScalableHeader appends the header of h, with its checksums, and
// the table of the given offsets (from V3ScalableOffsets), padded with zeros
// up to the first sub-filter; h.N is len(offsets).
func AppendV3ScalableHeader(b []byte, h V3ScalableHeader, offsets []uint64) []byte {
	var table []byte
	for _, o := range offsets {
		table = binary.LittleEndian.AppendUint64(table, o)
	}
	var flags uint16
	if h.Saturated {
		flags = 1
	}
	layout := byte(0)
	if h.Blocked {
		layout = v3LayoutBlocked
	}
	start := len(b)
	b = append(b, v3ScalableMagic...)
	b = binary.LittleEndian.AppendUint16(b, V3Version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint32(b, h.Seed)
	b = append(b, h.Growth, layout, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Scale))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Tightening))
	b = binary.LittleEndian.AppendUint64(b, h.InitialCapacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.ErrorRate))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(offsets)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(table, castagnoliV3))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoliV3))
	b = append(b, table...)
	return append(b, make([]byte, AlignV3(uint64(len(b)-start))-uint64(len(b)-start))...)
}

// ParseV3ScalableHeader validates the fixed header at the start of b, which
// holds at least V3HeaderSize bytes: magic, version, flags, layout, reserved
// bytes, checksum and the number of sub-filters. It allocates nothing.
func ParseV3ScalableHeader(b []byte) (V3ScalableHeader, error) {
	var h V3ScalableHeader
	if string(b[0:4]) != v3ScalableMagic {
		return h, Corrupt("bad magic %q", b[0:4])
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != V3Version {
		return h, Corrupt("format version %d, want %d", v, V3Version)
	}
	if crc32.Checksum(b[:v3CRCOffset], castagnoliV3) != binary.LittleEndian.Uint32(b[v3CRCOffset:]) {
		return h, Corrupt("header checksum mismatch")
	}
	flags := binary.LittleEndian.Uint16(b[6:])
	if flags&^1 != 0 || b[14]|b[15] != 0 || binary.LittleEndian.Uint32(b[56:]) != 0 {
		return h, Corrupt("unknown flags or non-zero reserved bytes")
	}
	switch b[13] {
	case 0:
	case v3LayoutBlocked:
		h.Blocked = true
	default:
		return h, Corrupt("unknown layout %d", b[13])
	}
	h.Saturated = flags&1 != 0
	h.Seed = binary.LittleEndian.Uint32(b[8:])
	h.Growth = b[12]
	h.Scale = math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
	h.Tightening = math.Float64frombits(binary.LittleEndian.Uint64(b[24:]))
	h.InitialCapacity = binary.LittleEndian.Uint64(b[32:])
	h.ErrorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[40:]))
	n := binary.LittleEndian.Uint32(b[48:])
	if n == 0 || n > v3MaxSubFilters {
		return h, Corrupt("%d sub-filters", n)
	}
	h.N = int(n)
	h.tableCRC = binary.LittleEndian.Uint32(b[52:])
	return h, nil
}

// CheckV3Table validates the table of offsets that follows the header h in
// table (8*h.N bytes, then zeros up to the first sub-filter): its checksum,
// and that the first sub-filter starts right after it. It returns the
// offsets, a slice of h.N words, which the caller checks against the
// sub-filters' sizes with V3ScalableOffsets.
func CheckV3Table(h V3ScalableHeader, table []byte) ([]uint64, error) {
	first := AlignV3(V3HeaderSize + 8*uint64(h.N))
	if uint64(len(table)) < first-V3HeaderSize {
		return nil, io.ErrUnexpectedEOF
	}
	if crc32.Checksum(table[:8*h.N], castagnoliV3) != h.tableCRC {
		return nil, Corrupt("checksum mismatch in the table of sub-filters")
	}
	for _, c := range table[8*h.N : first-V3HeaderSize] {
		if c != 0 {
			return nil, Corrupt("non-zero padding after the table of sub-filters")
		}
	}
	offsets := make([]uint64, h.N)
	for i := range offsets {
		offsets[i] = binary.LittleEndian.Uint64(table[8*i:])
	}
	if offsets[0] != first {
		return nil, Corrupt("sub-filter 0 at offset %d, want %d", offsets[0], first)
	}
	return offsets, nil
}

// V3Sub is where a sub-filter lies in a ScalableBloomFilter's version-3
// encoding: at Off, with header H, H.Size() bytes.
type V3Sub struct {
	Off uint64
	H   V3Header
}

// WalkV3Scalable validates the structure of data as exactly one version-3
// encoding of a ScalableBloomFilter: its header, its table of offsets, and
// every sub-filter's header, offset and zero padding, and the length
// (io.ErrUnexpectedEOF if short). It returns the header and the sub-filters,
// whose words it has not read: CheckV3 or DecodeV3 on
// data[s.Off:s.Off+s.H.Size()] does. It allocates two slices of h.N
// elements, which the table in data accounts for.
func WalkV3Scalable(data []byte) (V3ScalableHeader, []V3Sub, error) {
	if len(data) < V3HeaderSize {
		return V3ScalableHeader{}, nil, io.ErrUnexpectedEOF
	}
	h, err := ParseV3ScalableHeader(data)
	if err != nil {
		return h, nil, err
	}
	offsets, err := CheckV3Table(h, data[V3HeaderSize:])
	if err != nil {
		return h, nil, err
	}
	subs := make([]V3Sub, h.N)
	at := offsets[0]
	for i, off := range offsets {
		if off != at {
			return h, nil, Corrupt("sub-filter %d at offset %d, want %d", i, off, at)
		}
		if uint64(len(data)) < off+V3HeaderSize {
			return h, nil, io.ErrUnexpectedEOF
		}
		sh, err := ParseV3Header(data[off:])
		if err != nil {
			return h, nil, fmt.Errorf("sub-filter %d: %w", i, err)
		}
		subs[i] = V3Sub{off, sh}
		end := off + sh.Size()
		if uint64(len(data)) < end {
			return h, nil, io.ErrUnexpectedEOF
		}
		if i == len(offsets)-1 {
			if uint64(len(data)) > end {
				return h, nil, Corrupt("%d trailing bytes", uint64(len(data))-end)
			}
			break
		}
		at = AlignV3(end)
		if uint64(len(data)) < at {
			return h, nil, io.ErrUnexpectedEOF
		}
		for _, c := range data[end:at] {
			if c != 0 {
				return h, nil, Corrupt("non-zero padding after sub-filter %d", i)
			}
		}
	}
	return h, subs, nil
}

// ReadV3Table reads, after the header h of a ScalableBloomFilter, its table
// of offsets and the padding after it from r, and returns the offsets (see
// CheckV3Table) and the number of bytes read. It allocates as the bytes
// arrive, in pieces of at most 64 KiB.
func ReadV3Table(r io.Reader, h V3ScalableHeader) ([]uint64, int64, error) {
	need := AlignV3(V3HeaderSize+8*uint64(h.N)) - V3HeaderSize
	var table []byte
	var read int64
	for uint64(len(table)) < need {
		part := make([]byte, min(need-uint64(len(table)), 64<<10))
		n, err := io.ReadFull(r, part)
		read += int64(n)
		if err != nil {
			return nil, read, noEOFV3(err)
		}
		table = append(table, part...)
	}
	offsets, err := CheckV3Table(h, table)
	return offsets, read, err
}

// ReadV3Padding reads the n zero bytes (n < V3Align) that pad a sub-filter
// from r and returns the number read.
func ReadV3Padding(r io.Reader, n uint64) (int64, error) {
	var pad [V3Align]byte
	got, err := io.ReadFull(r, pad[:n])
	if err != nil {
		return int64(got), noEOFV3(err)
	}
	for _, c := range pad[:n] {
		if c != 0 {
			return int64(got), Corrupt("non-zero padding between sub-filters")
		}
	}
	return int64(got), nil
}
