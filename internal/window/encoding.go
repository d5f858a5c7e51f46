package window

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"

	"github.com/bloomfilters/bloom/internal/format"
)

// The binary encoding of a window, in the style of format version 3 (the
// root package's doc writes it out, which is the compatibility promise):
// a 64-byte header with its own CRC-32C, a table of the generations with
// its CRC-32C padded to a cache line, the words of the generations oldest
// first (so that each starts a cache line of the encoding), and the CRC-32C
// of each section of the words. All integers little-endian. Under Grow
// (policy 2) the table also holds each generation's extension count and a
// record per extension, whose words follow the generations'; encodings of
// the other policies are what they were before Grow, byte for byte.
const (
	Magic   = "BLMW"
	Version = 3

	HeaderSize  = 64
	SectionSize = 1 << 20 // bytes of words per checksum, as written

	crcOffset = HeaderSize - 4
)

// header is what the 64-byte header holds.
type header struct {
	Config
	section uint64
}

// extRecord is the bytes of an extension's record in the table: capacity
// uint64, bits uint64, hash functions uint32, four zero bytes, key count
// uint64.
const extRecord = 32

// tableFixed returns the bytes of the table before its extension records:
// period, rotations, a count and a start per generation, and under Grow an
// extension count per generation.
func (h *header) tableFixed() uint64 {
	n := 16 + 16*uint64(h.Gens)
	if h.Policy == Grow {
		n += 8 * uint64(h.Gens)
	}
	return n
}

// tableSize returns the bytes of the table of a window of h with exts
// extensions in all, padding included: tableFixed, the records, and the
// table's CRC-32C. For RotateEarly and Saturate it is what it was before
// Grow: format.AlignV3(16 + 16*Gens + 4).
func (h *header) tableSize(exts uint64) uint64 {
	return format.AlignV3(h.tableFixed() + extRecord*exts + 4)
}

func (h *header) words() uint64 { return uint64(h.Gens) * (h.M / 64) }

// sections returns the checksummed sections of the words, the extensions'
// extWords included.
func (h *header) sections(extWords uint64) uint64 {
	return (8*(h.words()+extWords) + h.section - 1) / h.section
}

// size returns the length of the encoding of a window of h with exts
// extensions of extWords words in all; no overflow for a parsed header and
// a parsed table (at most MaxBits bits in all).
func (h *header) size(exts, extWords uint64) uint64 {
	return HeaderSize + h.tableSize(exts) + 8*(h.words()+extWords) + 4*h.sections(extWords)
}

// EncodedSize returns the length in bytes of f's encoding.
func (f *Filter) EncodedSize() uint64 {
	h := header{f.Config, SectionSize}
	return h.size(uint64(f.nExt), f.extBits/64)
}

func appendHeader(b []byte, c Config) []byte {
	start := len(b)
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, byte(c.Policy), 0)
	b = binary.LittleEndian.AppendUint32(b, c.Seed)
	b = binary.LittleEndian.AppendUint32(b, uint32(c.K))
	b = binary.LittleEndian.AppendUint64(b, c.M)
	b = binary.LittleEndian.AppendUint64(b, c.Window)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.ErrorRate))
	b = binary.LittleEndian.AppendUint64(b, c.GenCap)
	b = binary.LittleEndian.AppendUint16(b, uint16(c.Gens))
	b = append(b, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, SectionSize)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(c.SatLimit)))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], format.Castagnoli))
}

// nth returns the index of the generation j after the oldest.
func (f *Filter) nth(j int) int { return (f.newest + 1 + j) % f.Gens }

func (f *Filter) appendTable(b []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(f.Period))
	b = binary.LittleEndian.AppendUint64(b, f.rotations)
	for j := range f.Gens {
		g := f.nth(j)
		b = binary.LittleEndian.AppendUint64(b, f.counts[g])
		b = binary.LittleEndian.AppendUint64(b, uint64(f.starts[g]))
	}
	if f.Policy == Grow {
		for j := range f.Gens {
			b = binary.LittleEndian.AppendUint64(b, uint64(len(f.exts[f.nth(j)])))
		}
		for j := range f.Gens {
			for _, e := range f.exts[f.nth(j)] {
				b = binary.LittleEndian.AppendUint64(b, e.Cap)
				b = binary.LittleEndian.AppendUint64(b, e.M)
				b = binary.LittleEndian.AppendUint32(b, uint32(e.K))
				b = binary.LittleEndian.AppendUint32(b, 0)
				b = binary.LittleEndian.AppendUint64(b, e.count)
			}
		}
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], format.Castagnoli))
	h := header{Config: f.Config}
	return append(b, make([]byte, h.tableSize(uint64(f.nExt))-uint64(len(b)-start))...)
}

// bodies returns the word arrays of f in the order of the encoding: the
// generations' bases oldest first, then the extensions of each generation,
// oldest generation first.
func (f *Filter) bodies() [][]uint64 {
	out := make([][]uint64, 0, f.Gens+f.nExt)
	for j := range f.Gens {
		out = append(out, f.gen(f.nth(j)))
	}
	for j := range f.Gens {
		for _, e := range f.exts[f.nth(j)] {
			out = append(out, e.words)
		}
	}
	return out
}

// AppendBinary appends the encoding of f to b.
func (f *Filter) AppendBinary(b []byte) []byte {
	b = appendHeader(b, f.Config)
	b = f.appendTable(b)
	body := len(b)
	for _, w := range f.bodies() {
		for _, x := range w {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
	}
	data := b[body:]
	for off := 0; off < len(data); off += SectionSize {
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(data[off:min(off+SectionSize, len(data))], format.Castagnoli))
	}
	return b
}

// WriteTo writes the encoding of f to w through a buffer of at most 64 KiB
// and returns the bytes written.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	const chunk = 1 << 13 // words per write
	var total int64
	write := func(p []byte) error {
		n, err := w.Write(p)
		total += int64(n)
		return err
	}
	if err := write(f.appendTable(appendHeader(nil, f.Config))); err != nil {
		return total, err
	}
	buf := make([]byte, 0, 8*chunk)
	var table []byte
	var crc uint32
	fill := uint64(0)
	flush := func() error {
		for p := buf; len(p) > 0; {
			n := min(uint64(len(p)), SectionSize-fill)
			crc = crc32.Update(crc, format.Castagnoli, p[:n])
			if fill += n; fill == SectionSize {
				table = binary.LittleEndian.AppendUint32(table, crc)
				crc, fill = 0, 0
			}
			p = p[n:]
		}
		err := write(buf)
		buf = buf[:0]
		return err
	}
	for _, words := range f.bodies() {
		for _, x := range words {
			buf = binary.LittleEndian.AppendUint64(buf, x)
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return total, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return total, err
	}
	if fill != 0 {
		table = binary.LittleEndian.AppendUint32(table, crc)
	}
	return total, write(table)
}

// parseHeader validates the header at the start of b, which holds at least
// HeaderSize bytes. It allocates nothing.
func parseHeader(b []byte) (header, error) {
	var h header
	if string(b[:4]) != Magic {
		return h, format.BadMagic(b[:4], format.KindWindow)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != Version {
		return h, format.Corrupt("window format version %d, want %d", v, Version)
	}
	if crc32.Checksum(b[:crcOffset], format.Castagnoli) != binary.LittleEndian.Uint32(b[crcOffset:]) {
		return h, format.Corrupt("header checksum mismatch")
	}
	h.Policy = Policy(b[6])
	h.Seed = binary.LittleEndian.Uint32(b[8:])
	k := binary.LittleEndian.Uint32(b[12:])
	h.K = uint(k)
	h.M = binary.LittleEndian.Uint64(b[16:])
	h.Window = binary.LittleEndian.Uint64(b[24:])
	h.ErrorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[32:]))
	h.GenCap = binary.LittleEndian.Uint64(b[40:])
	h.Gens = int(binary.LittleEndian.Uint16(b[48:]))
	h.section = uint64(binary.LittleEndian.Uint32(b[52:]))
	// Four bytes once reserved (zero): the saturation limit, a float32,
	// 0 for the default.
	h.SatLimit = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[56:])))
	switch {
	case h.Policy >= numPolicies:
		return h, format.Corrupt("unknown overflow policy %d", b[6])
	case b[7] != 0 || b[50] != 0 || b[51] != 0:
		return h, format.Corrupt("non-zero reserved bytes")
	case h.SatLimit != 0 && (h.Policy != Saturate || !(h.SatLimit >= h.ErrorRate && h.SatLimit < 1)):
		return h, format.Corrupt("saturation limit %v on a window of policy %d at error rate %v", h.SatLimit, h.Policy, h.ErrorRate)
	case k < 1 || uint64(k) > uint64(format.MaxHashes):
		return h, format.Corrupt("hash count %d not in [1, %d]", k, format.MaxHashes)
	case h.Gens < 2 || h.Gens > MaxGens:
		return h, format.Corrupt("%d generations, not in [2, %d]", h.Gens, MaxGens)
	case h.M == 0 || h.M%format.BlockBits != 0 || h.M > format.MaxBits/uint64(h.Gens) || h.words() > format.MaxWords:
		return h, format.Corrupt("generation size %d bits not a positive multiple of %d with %d of them within %d bits", h.M, format.BlockBits, h.Gens, format.MaxBits)
	case h.Window == 0:
		return h, format.Corrupt("window of 0 keys")
	case !(h.ErrorRate > 0 && h.ErrorRate < 1):
		return h, format.Corrupt("error rate %v not in (0, 1)", h.ErrorRate)
	case h.GenCap != GenCapFor(h.Window, h.Gens):
		return h, format.Corrupt("generation capacity %d, want %d for a window of %d keys in %d generations", h.GenCap, GenCapFor(h.Window, h.Gens), h.Window, h.Gens)
	case h.section < format.V3MinSection || h.section > format.V3MaxSection || h.section&(h.section-1) != 0:
		return h, format.Corrupt("section size %d not a power of two in [%d, %d]", h.section, format.V3MinSection, format.V3MaxSection)
	}
	return h, nil
}

// extCount validates the extension counts of the table that follows header
// h, whose first tableFixed bytes are in b, and returns their sum (0 but
// under Grow). They are read before the table's checksum, which covers
// them, is checked; each is at most MaxExtensions, so the table they
// imply is at most MaxGens*MaxExtensions records.
func extCount(h *header, b []byte) (uint64, error) {
	if h.Policy != Grow {
		return 0, nil
	}
	var n uint64
	for j := range h.Gens {
		c := binary.LittleEndian.Uint64(b[16+16*h.Gens+8*j:])
		if c > MaxExtensions {
			return 0, format.Corrupt("generation %d has %d extensions, more than %d", j, c, MaxExtensions)
		}
		n += c
	}
	return n, nil
}

// parseTable validates the table that follows header h in b (tableSize(exts)
// bytes, exts from extCount) and returns a filter of h with the table's
// state, the extensions checked against sizer, and no words allocated yet.
func parseTable(h header, b []byte, exts uint64, sizer Sizer) (*Filter, error) {
	fixed := h.tableFixed()
	n := fixed + extRecord*exts
	if crc32.Checksum(b[:n], format.Castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, format.Corrupt("checksum mismatch in the table of generations")
	}
	for _, c := range b[n+4 : h.tableSize(exts)] {
		if c != 0 {
			return nil, format.Corrupt("non-zero padding after the table of generations")
		}
	}
	period := int64(binary.LittleEndian.Uint64(b))
	switch {
	case period < 0:
		return nil, format.Corrupt("negative period %d", period)
	case period == 0 && h.Policy != RotateEarly:
		return nil, format.Corrupt("overflow policy %d on a count window", h.Policy)
	case period == 0 && h.SatLimit != 0:
		return nil, format.Corrupt("saturation limit on a count window")
	case period > MaxPeriodSpan/int64(h.Gens):
		return nil, format.Corrupt("period %d ns: %d generations of it span more than %d ns", period, h.Gens, int64(MaxPeriodSpan))
	}
	span := period * int64(h.Gens)
	f := &Filter{
		Config:    h.Config,
		gw:        h.M / 64,
		counts:    make([]uint64, h.Gens),
		starts:    make([]int64, h.Gens),
		exts:      make([][]ext, h.Gens),
		newest:    h.Gens - 1,
		rotations: binary.LittleEndian.Uint64(b[8:]),
		sizer:     sizer,
	}
	f.Period = period
	for j := range h.Gens {
		f.counts[j] = binary.LittleEndian.Uint64(b[16+16*j:])
		f.starts[j] = int64(binary.LittleEndian.Uint64(b[24+16*j:]))
		// A generation takes keys past its capacity (Saturate, and
		// for the floor; see window.go), but each counted key set a
		// bit.
		if f.counts[j] > f.M {
			return nil, format.Corrupt("generation %d counts %d keys, more than its %d bits", j, f.counts[j], f.M)
		}
		// The clock arithmetic takes starts up to span away from
		// either end of int64 (StartLimit).
		if s := f.starts[j]; period != 0 && (s > math.MaxInt64-span || s < math.MinInt64+span) {
			return nil, format.Corrupt("generation %d starts at %d ns, not within %d ns of the time a clock can tell", j, s, span)
		}
	}
	f.span = uint64(span)
	if exts == 0 {
		return f, nil
	}
	rec := b[fixed:]
	for j := range h.Gens {
		c := int(binary.LittleEndian.Uint64(b[16+16*h.Gens+8*j:]))
		if c > 0 && f.counts[j] < f.GenCap {
			return nil, format.Corrupt("generation %d has extensions, but its base counts %d keys, less than its capacity %d", j, f.counts[j], f.GenCap)
		}
		for i := 1; i <= c; i++ {
			want, ok := f.extSize(i)
			if !ok {
				return nil, format.Corrupt("generation %d has an extension %d, which its window cannot have", j, i)
			}
			e := ext{
				Ext:   Ext{Cap: binary.LittleEndian.Uint64(rec), M: binary.LittleEndian.Uint64(rec[8:]), K: uint(binary.LittleEndian.Uint32(rec[16:]))},
				count: binary.LittleEndian.Uint64(rec[24:]),
			}
			switch {
			case binary.LittleEndian.Uint32(rec[20:]) != 0:
				return nil, format.Corrupt("non-zero reserved bytes in extension %d of generation %d", i, j)
			case e.Ext != want:
				return nil, format.Corrupt("extension %d of generation %d has %d keys, %d bits, %d hashes; the window's sizing gives %d, %d, %d", i, j, e.Cap, e.M, e.K, want.Cap, want.M, want.K)
			case e.count > e.M || i < c && e.count > e.Cap:
				return nil, format.Corrupt("extension %d of generation %d counts %d keys, more than it can hold", i, j, e.count)
			case i < c && e.count != e.Cap:
				return nil, format.Corrupt("extension %d of generation %d counts %d keys, not its capacity %d, and has a successor", i, j, e.count, e.Cap)
			case e.M > format.MaxBits-f.Bits():
				return nil, format.Corrupt("extensions of more than %d bits in all", format.MaxBits)
			}
			f.exts[j] = append(f.exts[j], e)
			f.nExt++
			f.extBits += e.M
			rec = rec[extRecord:]
		}
	}
	return f, nil
}

// alloc allocates the words of f's ring and extensions.
func (f *Filter) alloc() {
	f.words = alignedWords(uint64(f.Gens) * f.gw)
	for _, x := range f.exts {
		for i := range x {
			x[i].words = alignedWords(x[i].M / 64)
		}
	}
}

// Decode decodes data, exactly one encoding of a window, checking every
// checksum, the extensions' sizes against sizer (under Grow; sizer may be
// nil otherwise). It validates the header and the table before it
// allocates the words, and never panics.
func Decode(data []byte, sizer Sizer) (*Filter, error) {
	if len(data) < HeaderSize {
		return nil, io.ErrUnexpectedEOF
	}
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) < h.size(0, 0) {
		return nil, io.ErrUnexpectedEOF
	}
	tb := data[HeaderSize:]
	exts, err := extCount(&h, tb)
	if err != nil {
		return nil, err
	}
	if uint64(len(tb)) < h.tableSize(exts) {
		return nil, io.ErrUnexpectedEOF
	}
	f, err := parseTable(h, tb, exts, sizer)
	if err != nil {
		return nil, err
	}
	extWords := f.extBits / 64
	switch size := h.size(exts, extWords); {
	case uint64(len(data)) < size:
		return nil, io.ErrUnexpectedEOF
	case uint64(len(data)) > size:
		return nil, format.Corrupt("%d trailing bytes", uint64(len(data))-size)
	}
	words := h.words() + extWords
	body := tb[h.tableSize(exts):][:8*words]
	table := tb[h.tableSize(exts)+8*words:]
	for i := uint64(0); i < h.sections(extWords); i++ {
		lo := i * h.section
		if crc32.Checksum(body[lo:min(lo+h.section, uint64(len(body)))], format.Castagnoli) != binary.LittleEndian.Uint32(table[4*i:]) {
			return nil, format.Corrupt("checksum mismatch in section %d of the generations", i)
		}
	}
	f.alloc()
	for _, w := range f.bodies() {
		for i := range w {
			w[i] = binary.LittleEndian.Uint64(body[8*i:])
		}
		body = body[8*len(w):]
	}
	return f, nil
}

// HeaderLen is the bytes of an encoding that Least needs.
const HeaderLen = HeaderSize

// Least validates the header at the start of hdr (HeaderLen bytes) and
// returns the least length of the encoding it declares (that of a window
// without extensions), for text decoding.
func Least(hdr []byte) (uint64, error) {
	h, err := parseHeader(hdr)
	if err != nil {
		return 0, err
	}
	return h.size(0, 0), nil
}

// readChunk is the words Read allocates at a time while the input has not
// shown that it holds them.
const readChunk = 1 << 13

// Read reads one encoding of a window from r, whose first len(prefix)
// bytes have been read into prefix, and returns it with the number of bytes
// it read from r; sizer is Decode's. It reads no byte past the encoding.
// If src, the reader under r, shows that it holds the words (format.Holds),
// they go into their slices; otherwise they are kept in chunks as they
// arrive, so that a header or table that lies about the size costs no
// more than what arrived.
func Read(r, src io.Reader, prefix []byte, sizer Sizer) (*Filter, int64, error) {
	var hb [HeaderSize]byte
	n := copy(hb[:], prefix)
	got, err := io.ReadFull(r, hb[n:])
	read := int64(got)
	if err != nil {
		return nil, read, format.NoEOF(err)
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return nil, read, err
	}
	tb := make([]byte, h.tableFixed(), h.tableSize(0))
	got, err = io.ReadFull(r, tb)
	read += int64(got)
	if err != nil {
		return nil, read, format.NoEOF(err)
	}
	exts, err := extCount(&h, tb)
	if err != nil {
		return nil, read, err
	}
	// The rest of the table, at most 33 KiB, a KiB at a time.
	for size := h.tableSize(exts); uint64(len(tb)) < size; {
		lo := len(tb)
		tb = append(tb, make([]byte, min(size-uint64(lo), 1024))...)
		got, err = io.ReadFull(r, tb[lo:])
		read += int64(got)
		if err != nil {
			return nil, read, format.NoEOF(err)
		}
	}
	f, err := parseTable(h, tb, exts, sizer)
	if err != nil {
		return nil, read, err
	}
	extWords := f.extBits / 64
	total := h.words() + extWords
	buf := make([]byte, 8*min(total, readChunk))
	var sums []uint32
	var crc uint32
	var fillSec uint64
	fill := func(words []uint64) error {
		part := buf[:8*len(words)]
		n, err := io.ReadFull(r, part)
		read += int64(n)
		if err != nil {
			return format.NoEOF(err)
		}
		for p := part; len(p) > 0; {
			c := min(uint64(len(p)), h.section-fillSec)
			crc = crc32.Update(crc, format.Castagnoli, p[:c])
			if fillSec += c; fillSec == h.section {
				sums = append(sums, crc)
				crc, fillSec = 0, 0
			}
			p = p[c:]
		}
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(part[8*i:])
		}
		return nil
	}
	if total <= readChunk || format.Holds(src, 8*total+4*h.sections(extWords)) {
		f.alloc()
		for _, w := range f.bodies() {
			for lo := 0; lo < len(w); lo += readChunk {
				if err := fill(w[lo:min(lo+readChunk, len(w))]); err != nil {
					return nil, read, err
				}
			}
		}
	} else {
		var chunks [][]uint64
		for lo := uint64(0); lo < total; lo += readChunk {
			c := make([]uint64, min(total-lo, readChunk))
			if err := fill(c); err != nil {
				return nil, read, err
			}
			chunks = append(chunks, c)
		}
		f.alloc()
		ci, off := 0, 0
		for _, w := range f.bodies() {
			for done := 0; done < len(w); {
				n := copy(w[done:], chunks[ci][off:])
				done += n
				if off += n; off == len(chunks[ci]) {
					chunks[ci] = nil
					ci, off = ci+1, 0
				}
			}
		}
	}
	if fillSec != 0 {
		sums = append(sums, crc)
	}
	var cb [4]byte
	for i, want := range sums {
		got, err := io.ReadFull(r, cb[:])
		read += int64(got)
		if err != nil {
			return nil, read, format.NoEOF(err)
		}
		if binary.LittleEndian.Uint32(cb[:]) != want {
			return nil, read, format.Corrupt("checksum mismatch in section %d of the generations", i)
		}
	}
	return f, read, nil
}
