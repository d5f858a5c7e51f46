package format

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/hugepage"
)

// Version 3: the encoding every encoder of the root package writes. A
// 64-byte header with its own checksum (the fields of version 1 at their
// offsets), the words at offset 64, so that they start on a cache line of
// any page-aligned copy, and the CRC-32C of each section of the words after
// them, so that a reader can verify them in parallel or section by section;
// a ScalableBloomFilter is a 64-byte header, a table of the offsets of its
// sub-filters, and the sub-filters, each on a cache line.

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

	v3CRCOffset = V3HeaderSize - 4
)

// V3Header is a BloomFilter's header in version 3: the fields of every
// version and the section size.
type V3Header struct {
	Header
	SectionSize uint64 // bytes of words per checksum; 0 in AppendV3 means V3SectionSize
}

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
	h := V3Header{Header: Header{M: m}, SectionSize: V3SectionSize}
	return h.Size()
}

// appendV3Header appends the header of h, with its checksum.
func appendV3Header(b []byte, h V3Header) []byte {
	start := len(b)
	layout := uint16(0)
	if h.Blocked {
		layout = LayoutBlocked
	}
	b = append(b, Magic...)
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
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], Castagnoli))
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
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(sec, Castagnoli))
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
			crc = crc32.Update(crc, Castagnoli, buf)
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
	if string(b[0:4]) != Magic {
		return h, BadMagic(b[0:4], KindBloom)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != V3Version {
		return h, Corrupt("format version %d, want %d", v, V3Version)
	}
	if crc32.Checksum(b[:v3CRCOffset], Castagnoli) != binary.LittleEndian.Uint32(b[v3CRCOffset:]) {
		return h, Corrupt("header checksum mismatch")
	}
	switch l := binary.LittleEndian.Uint16(b[6:]); l {
	case 0:
	case LayoutBlocked:
		h.Blocked = true
	default:
		return h, Corrupt("unknown layout %#x", l)
	}
	if err := h.parseFields(b); err != nil {
		return h, err
	}
	h.SectionSize = uint64(binary.LittleEndian.Uint32(b[48:]))
	switch {
	case h.SectionSize < V3MinSection || h.SectionSize > V3MaxSection || h.SectionSize&(h.SectionSize-1) != 0:
		return h, Corrupt("section size %d not a power of two in [%d, %d]", h.SectionSize, V3MinSection, V3MaxSection)
	case binary.LittleEndian.Uint64(b[52:]) != 0:
		return h, Corrupt("non-zero reserved bytes")
	}
	return h, nil
}

// Versions is a set of format versions that ReadVersions accepts.
type Versions uint8

const (
	V1or2      Versions = 1 << iota // versions 1 and 2
	V3                              // version 3
	AnyVersion = V1or2 | V3
)

// ReadVersions reads one encoding of a BloomFilter, of a version in want,
// from r, as Read or ReadV3 does, and returns its header, its words and the
// number of bytes read. A ScalableBloomFilter's sub-filters are all of its
// version: another is an error wrapping ErrCorrupt.
func ReadVersions(r, src io.Reader, want Versions) (Header, []uint64, int64, error) {
	var hb [HeaderSize]byte
	n, err := io.ReadFull(r, hb[:])
	if err != nil {
		return Header{}, nil, int64(n), NoEOF(err)
	}
	v3 := IsV3(hb[:])
	if v3 && want&V3 == 0 || !v3 && want&V1or2 == 0 {
		return Header{}, nil, int64(n), Corrupt("sub-filter of format version %d in a filter of another", binary.LittleEndian.Uint16(hb[4:]))
	}
	if v3 {
		h, words, read, err := ReadV3(r, src, hb[:])
		return h.Header, words, int64(n) + read, err
	}
	return Read(io.MultiReader(bytes.NewReader(hb[:]), r), src)
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
	if Padding(h.M, []uint64{last}) {
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
		return crc32.Checksum(sec, Castagnoli) == binary.LittleEndian.Uint32(table[4*i:])
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
		// The workers fault as the caller would: a caller that made faults
		// panics (bloom.Open over a file truncated during the check) gets
		// the first worker's panic in its own goroutine, where it can
		// recover it, instead of a crash.
		panicOnFault := debug.SetPanicOnFault(true)
		debug.SetPanicOnFault(panicOnFault)
		var panicked atomic.Pointer[any]
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						panicked.CompareAndSwap(nil, &r)
						next.Store(math.MaxInt64 / 2) // stop the others
					}
				}()
				debug.SetPanicOnFault(panicOnFault)
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
		if r := panicked.Load(); r != nil {
			panic(*r)
		}
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
// header and its words (cache-line aligned for the blocked layout), which
// it checks as Decode does.
func DecodeV3(data []byte) (V3Header, []uint64, error) {
	h, err := CheckV3(data, true)
	if err != nil {
		return h, nil, err
	}
	words := allocWords(h.Words(), h.Blocked)
	body := data[V3HeaderSize:]
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	if err := checkWords(&h.Header, words); err != nil {
		return h, nil, err
	}
	return h, words, nil
}

// allocWords returns n zero words for a decoded filter, cache-line aligned
// for the blocked layout.
func allocWords(n uint64, blocked bool) []uint64 {
	if blocked {
		return hugepage.AlignedWords(n)
	}
	return hugepage.Words(n)
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
		c.crc = crc32.Update(c.crc, Castagnoli, p[:n])
		c.fill += n
		p = p[n:]
		if c.fill == c.size {
			c.sums = append(c.sums, c.crc)
			c.crc, c.fill = 0, 0
		}
	}
}

// ReadV3 reads one version-3 encoding of a BloomFilter from r, whose first
// len(prefix) bytes (at most V3HeaderSize) have been read into prefix, and
// returns its header, its words (checked as Decode does) and the number of
// bytes it read from r. It reads no byte past the encoding. src is the
// reader underneath r, as for Read.
//
// If src holds the bytes after the header (Holds), the words go straight
// into one slice; otherwise they are kept in chunks as they arrive and
// copied into one once all have, as readWords does, so that a header that
// lies about the size costs no more than what arrived.
func ReadV3(r, src io.Reader, prefix []byte) (V3Header, []uint64, int64, error) {
	var hb [V3HeaderSize]byte
	n := copy(hb[:], prefix)
	got, err := io.ReadFull(r, hb[n:])
	read := int64(got)
	if err != nil {
		return V3Header{}, nil, read, NoEOF(err)
	}
	h, err := ParseV3Header(hb[:])
	if err != nil {
		return h, nil, read, err
	}
	total := h.Words()
	crcs := sectionCRCs{size: h.SectionSize}
	buf := make([]byte, 8*min(total, readChunk))
	fill := func(words []uint64) error {
		part := buf[:8*len(words)]
		n, err := io.ReadFull(r, part)
		read += int64(n)
		if err != nil {
			return NoEOF(err)
		}
		crcs.update(part)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(part[8*i:])
		}
		return nil
	}
	var words []uint64
	if total <= readChunk || Holds(src, 8*total+4*h.Sections()) {
		words = allocWords(total, h.Blocked)
		for lo := uint64(0); lo < total; lo += readChunk {
			if err := fill(words[lo:min(lo+readChunk, total)]); err != nil {
				return h, nil, read, err
			}
		}
	} else {
		var chunks [][]uint64
		for lo := uint64(0); lo < total; lo += readChunk {
			c := make([]uint64, min(total-lo, readChunk))
			if err := fill(c); err != nil {
				return h, nil, read, err
			}
			chunks = append(chunks, c)
		}
		words = allocWords(total, h.Blocked)[:0]
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
			return h, nil, read, NoEOF(err)
		}
		for j := 0; j < len(part); j, i = j+4, i+1 {
			if binary.LittleEndian.Uint32(part[j:]) != crcs.sums[i] {
				lo := uint64(i) * h.SectionSize
				return h, nil, read, Corrupt("checksum mismatch in section %d (bytes %d to %d of the bit array)", i, lo, min(lo+h.SectionSize, 8*total)-1)
			}
		}
	}
	if err := checkWords(&h.Header, words); err != nil {
		return h, nil, read, err
	}
	return h, words, read, nil
}

// V3ScalableHeader is a ScalableBloomFilter's header in version 3: the
// fields of every version and the checksum of the table of offsets.
type V3ScalableHeader struct {
	ScalableHeader
	tableCRC uint32
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
		layout = LayoutBlocked
	}
	start := len(b)
	b = append(b, ScalableMagic...)
	b = binary.LittleEndian.AppendUint16(b, V3Version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint32(b, h.Seed)
	b = append(b, h.Growth, layout, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Scale))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Tightening))
	b = binary.LittleEndian.AppendUint64(b, h.InitialCapacity)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.ErrorRate))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(offsets)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(table, Castagnoli))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], Castagnoli))
	b = append(b, table...)
	return append(b, make([]byte, AlignV3(uint64(len(b)-start))-uint64(len(b)-start))...)
}

// ParseV3ScalableHeader validates the fixed header at the start of b, which
// holds at least V3HeaderSize bytes: magic, version, checksum, layout,
// reserved bytes, and the fields each on its own, as ParseScalableHeader
// does. It allocates nothing.
func ParseV3ScalableHeader(b []byte) (V3ScalableHeader, error) {
	var h V3ScalableHeader
	if string(b[0:4]) != ScalableMagic {
		return h, BadMagic(b[0:4], KindScalable)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != V3Version {
		return h, Corrupt("format version %d, want %d", v, V3Version)
	}
	if crc32.Checksum(b[:v3CRCOffset], Castagnoli) != binary.LittleEndian.Uint32(b[v3CRCOffset:]) {
		return h, Corrupt("header checksum mismatch")
	}
	switch b[13] {
	case 0:
	case LayoutBlocked:
		h.Blocked = true
	default:
		return h, Corrupt("unknown layout %d", b[13])
	}
	if binary.LittleEndian.Uint32(b[56:]) != 0 {
		return h, Corrupt("unknown flags or non-zero reserved bytes")
	}
	h.tableCRC = binary.LittleEndian.Uint32(b[52:])
	return h, h.parseFields(b)
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
	if crc32.Checksum(table[:8*h.N], Castagnoli) != h.tableCRC {
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
			return nil, read, NoEOF(err)
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
		return int64(got), NoEOF(err)
	}
	for _, c := range pad[:n] {
		if c != 0 {
			return int64(got), Corrupt("non-zero padding between sub-filters")
		}
	}
	return int64(got), nil
}
