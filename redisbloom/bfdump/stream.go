package bfdump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math"

	"github.com/bloomfilters/bloom"
)

// MaxChunkSize is the largest chunk of bits in a BF.SCANDUMP stream, in
// bytes: RedisBloom's MAX_SCANDUMP_SIZE, 16 MiB.
const MaxChunkSize = 16 << 20

// Sizes of the packed structures of sb.c.
const (
	chainHeaderSize = 20 // dumpedChainHeader: size u64, nfilters u32, options u32, growth u32
	linkHeaderSize  = 53 // dumpedChainLink: bytes, bits, size u64; error, bpe f64; hashes u32; entries u64; n2 u8

	maxHeaderSize = chainHeaderSize + linkHeaderSize*maxFilters
)

// maxTotalBytes bounds the bit arrays of a decoded chain, all sub-filters
// together, so that every iterator fits an int64 and every array an int.
var maxTotalBytes = min(uint64(math.MaxInt), MaxBits/8*16)

// maxLinkBytes bounds one bit array: MaxBits bits, and what an int indexes.
var maxLinkBytes = min(uint64(math.MaxInt), MaxBits/8)

// AppendHeader appends the header of f's BF.SCANDUMP stream (the chunk of
// iterator 1) to dst and returns the result: the packed little-endian
// dumpedChainHeader and one dumpedChainLink per sub-filter described in the
// package documentation. A zero Filter has no header: it returns dst.
func (f *Filter) AppendHeader(dst []byte) []byte {
	if len(f.links) == 0 {
		return dst // a zero Filter has no stream
	}
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, f.count)
	dst = le.AppendUint32(dst, uint32(len(f.links)))
	dst = le.AppendUint32(dst, f.options)
	dst = le.AppendUint32(dst, f.growth)
	for i := range f.links {
		l := &f.links[i]
		dst = le.AppendUint64(dst, l.m/8)
		dst = le.AppendUint64(dst, l.m)
		dst = le.AppendUint64(dst, l.size)
		dst = le.AppendUint64(dst, math.Float64bits(l.err))
		dst = le.AppendUint64(dst, math.Float64bits(l.bpe))
		dst = le.AppendUint32(dst, l.k)
		dst = le.AppendUint64(dst, l.entries)
		dst = append(dst, 0) // n2: bits are not a power of two
	}
	return dst
}

// Chunks returns f's BF.SCANDUMP stream: the pairs (iterator, chunk) that
// BF.SCANDUMP returns for a key holding f, in order, without the final
// (0, empty) pair. The first is (1, header); then come the bit arrays, oldest
// sub-filter first, in chunks of at most MaxChunkSize bytes that never cross
// a sub-filter, each with the iterator 1 + the byte offset of its end across
// all bit arrays. BF.LOADCHUNK with each pair, in order, recreates f in
// Redis; Restore does that safely.
//
// The chunks are f's own bit arrays, not copies: they must not be modified,
// and f must not be changed while the sequence runs. It allocates only the
// header. A zero Filter has no stream: the sequence is empty.
func (f *Filter) Chunks() iter.Seq2[int64, []byte] {
	return func(yield func(int64, []byte) bool) {
		if len(f.links) == 0 {
			return
		}
		if !yield(1, f.AppendHeader(nil)) {
			return
		}
		pos := int64(1)
		for i := range f.links {
			for b := f.links[i].bits; len(b) > 0; {
				n := min(len(b), MaxChunkSize)
				pos += int64(n)
				if !yield(pos, b[:n:n]) {
					return
				}
				b = b[n:]
			}
		}
	}
}

// corrupt returns an error wrapping bloom.ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: bfdump: %s", bloom.ErrCorrupt, fmt.Sprintf(format, args...))
}

// unsupported returns an error wrapping errors.ErrUnsupported, for streams
// RedisBloom loads but this package does not.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("bfdump: %s: %w", fmt.Sprintf(format, args...), errors.ErrUnsupported)
}

// decodeHeader checks a header chunk and returns the filter it describes,
// with empty bit arrays, and the total size of those, in bytes. It accepts
// what RedisBloom's SB_NewChainFromHeader accepts, except what the package
// does not implement (errors.ErrUnsupported: the 32-bit hashing and
// power-of-two sizes of filters made before RedisBloom 2.0) and filters past
// its limits or with no hash function (bloom.ErrCorrupt). It allocates
// nothing before the header has been checked.
func decodeHeader(h []byte) (*Filter, uint64, error) {
	le := binary.LittleEndian
	if len(h) < chainHeaderSize {
		return nil, 0, corrupt("header of %d bytes, shorter than %d", len(h), chainHeaderSize)
	}
	size := le.Uint64(h)
	nf := le.Uint32(h[8:])
	options := le.Uint32(h[12:])
	growth := le.Uint32(h[16:])
	switch {
	case nf == 0:
		return nil, 0, corrupt("header with no sub-filter")
	case nf > maxFilters:
		return nil, 0, corrupt("header with %d sub-filters, more than %d", nf, maxFilters)
	case len(h) != chainHeaderSize+linkHeaderSize*int(nf):
		return nil, 0, corrupt("header of %d bytes for %d sub-filters, want %d", len(h), nf, chainHeaderSize+linkHeaderSize*int(nf))
	case options&^(optNoRound|optEntsBits|optForce64|optNoScaling) != 0:
		return nil, 0, corrupt("unknown options %#x", options)
	case options&optForce64 == 0:
		return nil, 0, unsupported("options %#x: 32-bit MurmurHash2 positions (filters of RedisBloom before 2.0)", options)
	case options&(optNoRound|optEntsBits) != optNoRound:
		return nil, 0, unsupported("options %#x: power-of-two sizing (filters of RedisBloom before 2.0)", options)
	}
	var total, sum uint64
	for i := range int(nf) {
		p := h[chainHeaderSize+linkHeaderSize*i:]
		bytes, nbits, lsize := le.Uint64(p), le.Uint64(p[8:]), le.Uint64(p[16:])
		rate, bpe := math.Float64frombits(le.Uint64(p[24:])), math.Float64frombits(le.Uint64(p[32:]))
		k, n2 := le.Uint32(p[40:]), p[52]
		switch {
		case n2 != 0:
			return nil, 0, unsupported("sub-filter %d: power-of-two size 2^%d (filters of RedisBloom before 2.0)", i, n2)
		case !(rate > 0 && rate < 1):
			return nil, 0, corrupt("sub-filter %d: error rate %v not in (0, 1)", i, rate)
		case bytes == 0 || bytes > math.MaxUint64/8 || nbits != bytes*8:
			return nil, 0, corrupt("sub-filter %d: %d bits in %d bytes", i, nbits, bytes)
		case bytes > maxLinkBytes:
			return nil, 0, corrupt("sub-filter %d: %d bytes, more than this package's limit of %d", i, bytes, maxLinkBytes)
		case k < 1 || k > MaxHashes:
			return nil, 0, corrupt("sub-filter %d: %d hash functions, not in [1, %d]", i, k, MaxHashes)
		case hashesOf(bpe) != k:
			return nil, 0, corrupt("sub-filter %d: %d hash functions where its bits per entry %v give %d", i, k, bpe, hashesOf(bpe))
		case lsize > math.MaxUint64-sum:
			return nil, 0, corrupt("sub-filter counts overflow")
		}
		sum += lsize
		if total += bytes; total > maxTotalBytes {
			return nil, 0, corrupt("bit arrays of more than %d bytes", maxTotalBytes)
		}
	}
	if sum != size {
		return nil, 0, corrupt("count %d, but the sub-filters' counts add up to %d", size, sum)
	}
	f := &Filter{links: make([]link, nf), count: size, options: options, growth: growth}
	for i := range f.links {
		p := h[chainHeaderSize+linkHeaderSize*i:]
		nbits := le.Uint64(p[8:])
		f.links[i] = link{
			m:       nbits,
			size:    le.Uint64(p[16:]),
			err:     math.Float64frombits(le.Uint64(p[24:])),
			bpe:     math.Float64frombits(le.Uint64(p[32:])),
			k:       le.Uint32(p[40:]),
			entries: le.Uint64(p[44:]),
		}
	}
	// A chain whose first sub-filter records RedisBloom's bits per entry
	// for its rate grows as RedisBloom grows it; New's grow by Size. A few
	// ulps of slack cover the rare rates for which the server's log is not
	// correctly rounded (see logRounded); New's m/n or bpeFor(k) is not
	// that close to -ln(p)/(ln 2)^2 but by a coincidence of 1 in 10^14.
	d := int64(math.Float64bits(f.links[0].bpe)) - int64(math.Float64bits(calcBPE(f.links[0].err)))
	f.exact = d < -4 || d > 4
	if err := checkChain(f); err != nil {
		return nil, 0, err
	}
	return f, total, nil
}

// A Loader rebuilds a Filter from a BF.SCANDUMP stream given one pair at a
// time, as BF.LOADCHUNK loads it into a key, but strictly: the header must
// come first (iterator 1), then every byte of the bit arrays exactly once,
// in order, in chunks that do not cross a sub-filter, each with the
// iterator 1 + the offset of its end; anything else is an error wrapping
// bloom.ErrCorrupt (or errors.ErrUnsupported, see ReadFrom), after which the
// Loader refuses every call. It allocates no more than about twice the
// bytes it was given. The zero Loader is ready for the header.
//
// ScanDump uses a Loader for the pairs a server returns; so can a program
// that has them from elsewhere (a log of BF.LOADCHUNK commands, say).
type Loader struct {
	f     *Filter
	total uint64 // bytes of all bit arrays
	done  uint64 // bytes loaded
	link  int    // the sub-filter being loaded
	off   uint64 // bytes loaded into it
	err   error  // sticky

	// noBits makes the Loader check the stream without keeping the bits,
	// for RestoreFrom and ScanDumpTo, which pass them on.
	noBits bool
}

// LoadChunk takes the next pair (iterator, chunk) of the stream. chunk is
// copied.
func (l *Loader) LoadChunk(iterator int64, chunk []byte) error {
	if l.err != nil {
		return l.err
	}
	if err := l.load(iterator, chunk); err != nil {
		l.err = err
		return err
	}
	return nil
}

func (l *Loader) load(iterator int64, chunk []byte) error {
	if l.f == nil {
		if iterator != 1 {
			return corrupt("stream starts with iterator %d, not 1 (the header)", iterator)
		}
		f, total, err := decodeHeader(chunk)
		if err != nil {
			return err
		}
		l.f, l.total = f, total
		return nil
	}
	n := uint64(len(chunk))
	if l.done == l.total {
		return corrupt("chunk (iterator %d) after the end of the bit arrays", iterator)
	}
	lk := &l.f.links[l.link]
	rest := lk.m/8 - l.off
	switch {
	case n == 0:
		return corrupt("empty chunk (iterator %d)", iterator)
	case n > rest:
		return corrupt("chunk of %d bytes (iterator %d) past the end of sub-filter %d, which has %d bytes left", n, iterator, l.link, rest)
	case iterator < 1 || uint64(iterator) != 1+l.done+n:
		return corrupt("chunk of %d bytes with iterator %d, want %d", n, iterator, 1+l.done+n)
	}
	if !l.noBits {
		lk.bits = extend(lk.bits, int(n), int(lk.m/8))
		lk.bits = append(lk.bits, chunk...)
	}
	l.done += n
	if l.off += n; l.off == lk.m/8 {
		l.link++
		l.off = 0
	}
	return nil
}

// extend returns b with room for n more bytes, growing its capacity at most
// to limit and at most to about twice what it holds, so that a header
// cannot make a decoder allocate what the input does not provide.
func extend(b []byte, n, limit int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := min(max(2*cap(b), len(b)+n), limit)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// Filter returns the filter once the stream is complete; the Loader must
// not be used afterwards. An incomplete stream is an error wrapping
// bloom.ErrCorrupt and io.ErrUnexpectedEOF.
func (l *Loader) Filter() (*Filter, error) {
	if l.err != nil {
		return nil, l.err
	}
	if l.f == nil {
		return nil, fmt.Errorf("%w: bfdump: stream without a header: %w", bloom.ErrCorrupt, io.ErrUnexpectedEOF)
	}
	if l.done != l.total {
		return nil, fmt.Errorf("%w: bfdump: stream ends after %d of %d bytes of bits: %w", bloom.ErrCorrupt, l.done, l.total, io.ErrUnexpectedEOF)
	}
	f := l.f
	l.f, l.err = nil, errors.New("bfdump: Loader used after Filter")
	return f, nil
}

// The saved form (WriteTo, ReadFrom, MarshalBinary, UnmarshalBinary) is the
// BF.SCANDUMP stream framed for a file; see the package documentation.
const (
	magic       = "bfdump\x00\x01" // 7 bytes of name, 1 of version
	recordSize  = 12               // iterator int64, length uint32
	trailerSize = 4                // CRC-32C
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedSize returns the length of f's saved form, in bytes (0 for a zero
// Filter, which has none).
func (f *Filter) EncodedSize() int {
	if len(f.links) == 0 {
		return 0
	}
	n := len(magic) + recordSize + chainHeaderSize + linkHeaderSize*len(f.links) + recordSize + trailerSize
	for i := range f.links {
		b := len(f.links[i].bits)
		n += b + recordSize*((b+MaxChunkSize-1)/MaxChunkSize)
	}
	return n
}

// WriteTo writes f's saved form to w: its BF.SCANDUMP stream (Chunks)
// framed as the package documentation describes. It returns the bytes
// written and the first error of w.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if len(f.links) == 0 {
		return 0, errZero
	}
	crc := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(w, crc)}
	var rec [recordSize]byte
	le := binary.LittleEndian
	if _, err := io.WriteString(cw, magic); err != nil {
		return cw.n, err
	}
	for it, chunk := range f.Chunks() {
		le.PutUint64(rec[:], uint64(it))
		le.PutUint32(rec[8:], uint32(len(chunk)))
		if _, err := cw.Write(rec[:]); err != nil {
			return cw.n, err
		}
		if _, err := cw.Write(chunk); err != nil {
			return cw.n, err
		}
	}
	clear(rec[:])
	if _, err := cw.Write(rec[:]); err != nil {
		return cw.n, err
	}
	n, err := w.Write(le.AppendUint32(nil, crc.Sum32()))
	return cw.n + int64(n), err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// MarshalBinary returns f's saved form (WriteTo).
func (f *Filter) MarshalBinary() ([]byte, error) {
	if len(f.links) == 0 {
		return nil, errZero
	}
	b := make([]byte, 0, f.EncodedSize())
	w := appendWriter{&b}
	_, err := f.WriteTo(w)
	return b, err
}

type appendWriter struct{ b *[]byte }

func (a appendWriter) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// ReadFrom replaces f with the filter of the saved form read from r (as
// WriteTo writes it), reading up to the end of the saved form and no
// further. It returns the bytes read. On error f is unchanged; input that is
// not a valid saved form (magic, records, the BF.SCANDUMP stream's rules as
// Loader checks them, the checksum) gives an error wrapping bloom.ErrCorrupt,
// a stream RedisBloom loads but this package does not (the 32-bit hashing or
// power-of-two sizes of filters made before RedisBloom 2.0) one wrapping
// errors.ErrUnsupported, and input that ends early also wraps
// io.ErrUnexpectedEOF. It never allocates much more than it reads.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	g, n, err := readSaved(r, &Loader{}, nil)
	if err != nil {
		return n, err
	}
	*f = *g
	return n, nil
}

// UnmarshalBinary replaces f with the filter of the saved form data, which
// must hold the saved form and nothing else. Its errors are ReadFrom's.
func (f *Filter) UnmarshalBinary(data []byte) error {
	r := &sliceReader{b: data}
	g, _, err := readSaved(r, &Loader{}, nil)
	if err != nil {
		return err
	}
	if len(r.b) != 0 {
		return corrupt("%d bytes after the saved form", len(r.b))
	}
	*f = *g
	return nil
}

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// readSavedTo reads a saved form from r and passes each pair on to each
// once a Loader has checked it, keeping no bits; the chunk is valid until
// each returns, and an error each returns stops the read. It returns nil
// only once the whole saved form, checksum included, is read and valid.
func readSavedTo(r io.Reader, each func(int64, []byte) error) (int64, error) {
	_, n, err := readSaved(r, &Loader{noBits: true}, each)
	return n, err
}

// readSaved reads a saved form from r into ld. When each is not nil, it
// also gets every pair once ld has accepted it (see readSavedTo).
func readSaved(r io.Reader, ld *Loader, each func(int64, []byte) error) (*Filter, int64, error) {
	crc := crc32.New(castagnoli)
	cr := &countReader{r: io.TeeReader(r, crc)}
	fail := func(err error) (*Filter, int64, error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: bfdump: saved form ends early: %w", bloom.ErrCorrupt, io.ErrUnexpectedEOF)
		}
		return nil, cr.n, err
	}
	var head [recordSize]byte
	if _, err := io.ReadFull(cr, head[:len(magic)]); err != nil {
		return fail(err)
	}
	if string(head[:len(magic)]) != magic {
		if string(head[:len(magic)-1]) == magic[:len(magic)-1] {
			return fail(corrupt("saved form of version %d, this package reads version %d", head[len(magic)-1], magic[len(magic)-1]))
		}
		return fail(corrupt("not a saved BF.SCANDUMP stream (magic %q)", head[:len(magic)]))
	}
	var buf []byte // the header record and, when each is set, chunks
	le := binary.LittleEndian
	for {
		if _, err := io.ReadFull(cr, head[:]); err != nil {
			return fail(err)
		}
		it, n := int64(le.Uint64(head[:])), int(le.Uint32(head[8:]))
		if it == 0 && n == 0 {
			break
		}
		var data []byte
		switch {
		case ld.f == nil:
			if n > maxHeaderSize {
				return fail(corrupt("header record of %d bytes, more than %d", n, maxHeaderSize))
			}
			b, err := readGrow(cr, buf[:0], n)
			if err != nil {
				return fail(err)
			}
			data, buf = b, b
		default:
			if n == 0 || n > MaxChunkSize {
				return fail(corrupt("chunk record of %d bytes, not in [1, %d]", n, MaxChunkSize))
			}
			if ld.done == ld.total {
				return fail(corrupt("chunk (iterator %d) after the end of the bit arrays", it))
			}
			if each == nil {
				// Read straight into the sub-filter; LoadChunk with the
				// bytes already in place only checks and counts them.
				if err := ld.loadInPlace(cr, it, n); err != nil {
					if errors.Is(err, bloom.ErrCorrupt) {
						ld.err = err
					}
					return fail(err)
				}
				continue
			}
			b, err := readGrow(cr, buf[:0], n)
			if err != nil {
				return fail(err)
			}
			data, buf = b, b
		}
		if err := ld.LoadChunk(it, data); err != nil {
			return fail(err)
		}
		if each != nil {
			if err := each(it, data); err != nil {
				return nil, cr.n, err
			}
		}
	}
	sum := crc.Sum32()
	var tail [trailerSize]byte
	if _, err := io.ReadFull(cr, tail[:]); err != nil {
		return fail(err)
	}
	if got := le.Uint32(tail[:]); got != sum {
		return fail(corrupt("checksum %#08x, the saved form's bytes give %#08x", got, sum))
	}
	f, err := ld.Filter()
	if err != nil {
		return fail(err)
	}
	return f, cr.n, nil
}

// loadInPlace reads a chunk of n bytes from r straight into the sub-filter
// being loaded, after checking it as load does.
func (l *Loader) loadInPlace(r io.Reader, iterator int64, n int) error {
	lk := &l.f.links[l.link]
	rest := lk.m/8 - l.off
	switch {
	case uint64(n) > rest:
		return corrupt("chunk of %d bytes (iterator %d) past the end of sub-filter %d, which has %d bytes left", n, iterator, l.link, rest)
	case iterator < 1 || uint64(iterator) != 1+l.done+uint64(n):
		return corrupt("chunk of %d bytes with iterator %d, want %d", n, iterator, 1+l.done+uint64(n))
	}
	b, err := readGrowLimit(r, lk.bits, n, int(lk.m/8))
	if err != nil {
		return err
	}
	lk.bits = b
	l.done += uint64(n)
	if l.off += uint64(n); l.off == lk.m/8 {
		l.link++
		l.off = 0
	}
	return nil
}

// readStep is the most readGrow allocates ahead of the bytes it has read.
const readStep = 1 << 20

// readGrow appends n bytes read from r to b, growing b as the bytes arrive.
func readGrow(r io.Reader, b []byte, n int) ([]byte, error) {
	return readGrowLimit(r, b, n, len(b)+n)
}

// readGrowLimit is readGrow with b's capacity never grown past limit.
func readGrowLimit(r io.Reader, b []byte, n, limit int) ([]byte, error) {
	for n > 0 {
		step := min(n, readStep)
		b = extend(b, step, limit)
		got, err := io.ReadFull(r, b[len(b):len(b)+step])
		b = b[:len(b)+got]
		if err != nil {
			return b, err
		}
		n -= step
	}
	return b, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
