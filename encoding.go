package bloom

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/window"
)

// EncodedSize returns the length in bytes of the filter's binary encoding.
// It is 0 for a zero BloomFilter, which has no encoding.
func (f *BloomFilter) EncodedSize() int {
	if f.k == 0 {
		return 0
	}
	return int(format.V3Size(f.m))
}

// header returns the header of f's encoding, with the count read before the
// bits (see sharedCount).
func (f *BloomFilter) header() format.Header {
	return format.Header{
		Seed: f.seed, K: f.k, M: f.m, Capacity: f.capacity, ErrorRate: f.errorRate,
		Count: f.sharedCount(), Blocked: f.blocked,
	}
}

// AppendBinary appends the binary encoding of the filter to b and returns the
// extended slice (encoding.BinaryAppender).
func (f *BloomFilter) AppendBinary(b []byte) ([]byte, error) {
	if f.k == 0 {
		return b, errors.New(errZeroValue)
	}
	return format.AppendV3(b, format.V3Header{Header: f.header()}, f.words, f.conc != nil), nil
}

// MarshalBinary returns the binary encoding of the filter described in the
// package doc (encoding.BinaryMarshaler). It errors only for a zero BloomFilter.
func (f *BloomFilter) MarshalBinary() ([]byte, error) {
	return f.AppendBinary(make([]byte, 0, f.EncodedSize()))
}

// fromHeader returns the plain filter of a decoded header and its words,
// which it owns.
func fromHeader(h format.Header, words []uint64) *BloomFilter {
	if h.Blocked && !hugepage.IsAligned(words) {
		words = append(hugepage.AlignedWords(uint64(len(words)))[:0], words...)
	}
	return &BloomFilter{
		m: h.M, k: h.K, seed: h.Seed, set: bitset.FromWithLength(uint(h.M), words), words: words,
		count: h.Count, capacity: h.Capacity, errorRate: h.ErrorRate, blocked: h.Blocked,
	}
}

// UnmarshalBinary decodes a filter encoded by MarshalBinary into f
// (encoding.BinaryUnmarshaler), replacing its contents but keeping its mode:
// f stays concurrent if it was made with Concurrent. It validates the header
// and the length before it allocates, never panics, and leaves f unchanged on
// error. Errors wrap ErrCorrupt, or are io.ErrUnexpectedEOF for a truncated
// input. It must not run concurrently with any other call.
func (f *BloomFilter) UnmarshalBinary(data []byte) error {
	g, err := decode(data)
	if err != nil {
		return err
	}
	f.replace(g)
	return nil
}

// replace replaces f with the plain filter g, keeping f's mode.
func (f *BloomFilter) replace(g *BloomFilter) {
	if f.conc != nil {
		locks := f.conc.Locks // free: nothing else runs
		if locks.Len() != layout.StripesFor(len(g.words)) {
			locks = layout.NewLocks(len(g.words))
		}
		g.makeConcurrent(locks)
	}
	*f = *g
}

func decode(data []byte) (*BloomFilter, error) {
	if len(data) >= 6 && format.IsV3(data) {
		h, words, err := format.DecodeV3(data)
		if err != nil {
			return nil, err
		}
		return fromHeader(h.Header, words), nil
	}
	h, words, err := format.Decode(data)
	if err != nil {
		return nil, err
	}
	return fromHeader(h, words), nil
}

// WriteTo writes the binary encoding of the filter to w (io.WriterTo) and
// returns the number of bytes written.
func (f *BloomFilter) WriteTo(w io.Writer) (int64, error) {
	if f.k == 0 {
		return 0, errors.New(errZeroValue)
	}
	return format.WriteV3(w, format.V3Header{Header: f.header()}, f.words, f.conc != nil)
}

// ReadFrom decodes one filter written by WriteTo or MarshalBinary from r into
// f (io.ReaderFrom), replacing its contents but keeping its mode, like
// UnmarshalBinary, and returns the number of bytes read. It reads exactly the
// encoding and no byte past it, so several filters can follow each other in
// one stream. It never allocates much more than the bytes it has actually
// read, or that r has shown it holds (below), whatever the header claims,
// never panics, and leaves f unchanged on error. A stream that ends early
// gives io.ErrUnexpectedEOF; other errors wrap ErrCorrupt or come from r. It
// must not run concurrently with any other call.
//
// Where r shows that it holds the whole encoding the header declares (a
// *bytes.Reader, *bytes.Buffer or *strings.Reader by its Len, a regular
// *os.File by its size and offset, an *io.SectionReader or other
// io.ReaderAt and io.Seeker with a Size by its size and by reading the last
// byte needed), ReadFrom reads the bits straight into the filter: it
// allocates about the size of the input. From any other reader it keeps the
// bits in chunks as they arrive and copies them once they all have: about
// twice the size of the input.
func (f *BloomFilter) ReadFrom(r io.Reader) (int64, error) {
	g, n, err := readFilter(r, r, format.AnyVersion)
	if err != nil {
		return n, err
	}
	f.replace(g)
	return n, nil
}

// readFilter reads one filter of a version in want from r. src is the
// reader underneath r (r itself, or one that r only passes through), which
// format.Holds reports on.
func readFilter(r, src io.Reader, want format.Versions) (*BloomFilter, int64, error) {
	h, words, n, err := format.ReadVersions(r, src, want)
	if err != nil {
		return nil, n, err
	}
	return fromHeader(h, words), n, nil
}

// Read reads one BloomFilter written by WriteTo or MarshalBinary from r and
// returns it, built with opts: Concurrent makes it concurrent; Seed is
// allowed only if it agrees with the encoded seed. It has the guarantees of
// ReadFrom: it reads no byte past the filter, allocates only what the input
// has supplied or shown it holds, and never panics. A stream that ends
// before the first byte gives io.EOF, so a loop can read filters until then;
// one that ends later io.ErrUnexpectedEOF. Other errors wrap ErrCorrupt (also for a
// ScalableBloomFilter's encoding: use ReadAny for either) or come from r; an
// option that contradicts the encoding, or applies only to
// ScalableBloomFilter, is an error wrapping ErrInvalidParameter, and invalid
// options are refused before anything is read.
func Read(r io.Reader, opts ...Option) (*BloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.plainOnly(); err != nil {
		return nil, err
	}
	return readPlain(r, nil, s)
}

// readPlain is Read, after prefix has been read from r.
func readPlain(r io.Reader, prefix []byte, s settings) (*BloomFilter, error) {
	var buf [format.V3HeaderSize]byte
	hb := buf[:format.HeaderSize]
	if err := format.ReadHeader(r, prefix, hb); err != nil {
		return nil, err
	}
	var h format.Header
	if format.IsV3(hb) {
		hb = buf[:]
		if _, err := io.ReadFull(r, hb[format.HeaderSize:]); err != nil {
			return nil, format.NoEOF(err)
		}
		v3, err := format.ParseV3Header(hb)
		if err != nil {
			return nil, err
		}
		h = v3.Header
	} else {
		var err error
		if h, err = format.ParseHeader(hb); err != nil {
			return nil, err
		}
	}
	if s.seedSet && s.seed != h.Seed {
		return nil, paramError("Seed(%#x) contradicts the encoded seed %#x", s.seed, h.Seed)
	}
	if s.blocked && !h.Blocked {
		return nil, paramError("Blocked contradicts the encoded classic layout")
	}
	if s.classic && h.Blocked {
		return nil, paramError("Classic contradicts the encoded blocked layout")
	}
	g, _, err := readFilter(io.MultiReader(bytes.NewReader(hb), r), r, format.AnyVersion)
	if err != nil {
		return nil, err
	}
	if s.concurrent {
		g.makeConcurrent(layout.NewLocks(len(g.words)))
	}
	return g, nil
}

// The text encoding of both filter types is the standard base64 (RFC 4648,
// with padding, no line breaks) of their binary encoding. Implementing
// encoding.TextMarshaler rather than json.Marshaler makes encoding/json
// write a filter as a JSON string, and serves encoding/xml, flag.TextVar and
// most other encoders as well, with one format. MarshalText and AppendText
// have value receivers so that a filter held by value in a struct is encoded
// too, not skipped as a struct without exported fields.

// AppendText appends the text encoding of the filter to b: the standard
// base64 encoding, with padding, of its binary encoding
// (encoding.TextAppender). It returns an error only for a zero BloomFilter.
func (f BloomFilter) AppendText(b []byte) ([]byte, error) {
	data, err := f.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the filter, the standard base64
// encoding of MarshalBinary's (encoding.TextMarshaler): encoding/json writes
// a filter, held by pointer or by value, as a JSON string. It returns an
// error only for a zero BloomFilter.
func (f BloomFilter) MarshalText() ([]byte, error) {
	return f.AppendText(make([]byte, 0, base64.StdEncoding.EncodedLen(f.EncodedSize())))
}

// UnmarshalText decodes a filter encoded by MarshalText into f
// (encoding.TextUnmarshaler), with the guarantees of UnmarshalBinary: it
// keeps the mode of f, checks the header and the length before it allocates
// (then about 1.5 times the length of text), never panics, and leaves f
// unchanged on error. Errors wrap ErrCorrupt (also for text that is not
// base64, or has line breaks), or are io.ErrUnexpectedEOF for a truncated
// text. It must not run concurrently with any other call.
func (f *BloomFilter) UnmarshalText(text []byte) error {
	data, err := format.DecodeText(text, format.V3HeaderSize, func(hdr []byte) (uint64, error) {
		if format.IsV3(hdr) {
			h, err := format.ParseV3Header(hdr)
			return h.Size(), err
		}
		h, err := format.ParseHeader(hdr)
		return h.Size(), err
	})
	if err != nil {
		return err
	}
	return f.UnmarshalBinary(data)
}

// scalableParams are the parameters that determine how a filter grows.
type scalableParams struct {
	seed            uint32
	growth          growth
	saturated       bool
	blocked         bool
	scale           uint64 // float64 bits
	tightening      uint64 // float64 bits
	initialCapacity uint64
	errorRate       uint64 // float64 bits
}

func (s *ScalableBloomFilter) params() scalableParams {
	return scalableParams{
		s.seed, s.growth, s.Saturated(), s.blocked, math.Float64bits(s.scale), math.Float64bits(s.tightening),
		s.initialCapacity, math.Float64bits(s.errorRate),
	}
}

// The binary format of a ScalableBloomFilter, version 1, is written out in
// the package doc. These are its constants.
// header returns the header of an encoding of s with the given sub-filters
// and saturation, taken from one call of subFilters.
func (s *ScalableBloomFilter) header(filters []*BloomFilter, saturated bool) format.ScalableHeader {
	return format.ScalableHeader{
		Seed: s.seed, Growth: uint8(s.growth), Scale: s.scale, Tightening: s.tightening,
		InitialCapacity: s.initialCapacity, ErrorRate: s.errorRate, Saturated: saturated,
		Blocked: s.blocked, N: len(filters),
	}
}

// EncodedSize returns the length in bytes of the filter's binary encoding.
// It is 0 for a zero ScalableBloomFilter, which has no encoding.
func (s *ScalableBloomFilter) EncodedSize() int {
	filters, _ := s.subFilters()
	if len(filters) == 0 {
		return 0
	}
	_, total := format.V3ScalableOffsets(encodedSizes(filters))
	return int(total)
}

// encodedSizes returns the lengths of the encodings of filters.
func encodedSizes(filters []*BloomFilter) []uint64 {
	sizes := make([]uint64, len(filters))
	for i, f := range filters {
		sizes[i] = format.V3Size(f.m)
	}
	return sizes
}

// AppendBinary appends the binary encoding of the filter to b
// (encoding.BinaryAppender).
func (s *ScalableBloomFilter) AppendBinary(b []byte) ([]byte, error) {
	filters, saturated := s.subFilters()
	if len(filters) == 0 {
		return b, errors.New(errZeroScalable)
	}
	start := len(b)
	offsets, _ := format.V3ScalableOffsets(encodedSizes(filters))
	b = format.AppendV3ScalableHeader(b, format.V3ScalableHeader{ScalableHeader: s.header(filters, saturated)}, offsets)
	for i, f := range filters {
		b = append(b, make([]byte, start+int(offsets[i])-len(b))...)
		b = format.AppendV3(b, format.V3Header{Header: f.header()}, f.words, f.conc != nil)
	}
	return b, nil
}

// MarshalBinary returns the binary encoding described in the package doc
// (encoding.BinaryMarshaler).
func (s *ScalableBloomFilter) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.EncodedSize()))
}

// scalableFrom returns an empty filter with the parameters of a decoded
// header, of any version, if they can grow a filter.
func scalableFrom(h format.ScalableHeader) (*ScalableBloomFilter, error) {
	s := &ScalableBloomFilter{
		seed:            h.Seed,
		growth:          growth(h.Growth),
		scale:           h.Scale,
		tightening:      h.Tightening,
		initialCapacity: h.InitialCapacity,
		errorRate:       h.ErrorRate,
		saturated:       h.Saturated,
		blocked:         h.Blocked,
	}
	// growthWithin, not checkGrowth: the bound that checkGrowth's message
	// gives takes a bisection over many sizings, which would let a short
	// hostile input cost a decoder seconds (seen as stalls in
	// FuzzScalableUnmarshalBinary), and growthWorks alone up to 0.12 s.
	if !s.growthWithin(headerWork) {
		return nil, format.Corrupt("growth %d with scale %v, tightening %v and error rate %v cannot keep the error rate (NewScalable refuses them)", s.growth, s.scale, s.tightening, s.errorRate)
	}
	return s, nil
}

// finish validates the decoded filter as a whole.
func (s *ScalableBloomFilter) finish() error {
	for _, f := range s.filters[:len(s.filters)-1] {
		if f.count < f.capacity {
			return format.Corrupt("a sub-filter other than the newest is not full")
		}
	}
	// Arithmetic only: building the next sub-filter to see whether it
	// fits would let a short input allocate up to MaxBits bits.
	if s.saturated && !s.legacySaturated() {
		if _, _, _, _, err := s.nextSize(len(s.filters), s.Bits()); err == nil {
			return format.Corrupt("marked saturated but can still grow")
		}
	}
	return nil
}

// UnmarshalBinary decodes a filter encoded by MarshalBinary into s
// (encoding.BinaryUnmarshaler), with the guarantees of
// BloomFilter.UnmarshalBinary: it keeps the mode of s (concurrent or not),
// validates before it allocates, never panics, and leaves s unchanged on
// error. It must not run concurrently with any other call.
func (s *ScalableBloomFilter) UnmarshalBinary(data []byte) error {
	var k scalableSink
	if err := format.DecodeScalable(data, &k); err != nil {
		return err
	}
	return k.done(s)
}

// scalableSink builds a filter from what a decoder finds
// (format.ScalableSink): it checks the parameters, against opts if set, and
// each sub-filter's size as they come.
type scalableSink struct {
	opts *settings
	d    *ScalableBloomFilter
}

func (k *scalableSink) Params(h format.ScalableHeader) error {
	d, err := scalableFrom(h)
	if err != nil {
		return err
	}
	if s := k.opts; s != nil {
		switch {
		case s.seedSet && s.seed != d.seed:
			return paramError("Seed(%#x) contradicts the encoded seed %#x", s.seed, d.seed)
		case s.growth != growthNone && (s.growth != d.growth || s.scale != d.scale):
			return paramError("growth option contradicts the encoded growth (%s %v)", growthName(d.growth), d.scale)
		case s.tightening != 0 && s.tightening != d.tightening:
			return paramError("Tightening(%v) contradicts the encoded tightening %v", s.tightening, d.tightening)
		case s.blocked && !d.blocked:
			return paramError("Blocked contradicts the encoded classic layout")
		case s.classic && d.blocked:
			return paramError("Classic contradicts the encoded blocked layout")
		}
	}
	k.d = d
	return nil
}

func (k *scalableSink) Sub(i int, h format.Header, words []uint64) error {
	return k.add(i, fromHeader(h, words))
}

// add appends f, the decoded sub-filter i, after checking its size.
func (k *scalableSink) add(i int, f *BloomFilter) error {
	if err := k.d.checkSubFilter(i, f); err != nil {
		return err
	}
	k.d.filters = append(k.d.filters, f)
	return nil
}

// done validates the decoded filter as a whole and, if s is not nil, replaces
// s with it, keeping the mode of s.
func (k *scalableSink) done(s *ScalableBloomFilter) error {
	if err := k.d.finish(); err != nil {
		return err
	}
	k.d.setFilters(k.d.filters)
	if s != nil {
		s.replace(k.d)
	}
	return nil
}

// replace replaces s with the plain filter d, keeping s's mode.
func (s *ScalableBloomFilter) replace(d *ScalableBloomFilter) {
	if s.conc != nil {
		d.makeConcurrent(s.conc.locks) // s's locks are free: nothing else runs
	}
	*s = *d
}

// WriteTo writes the binary encoding of the filter to w (io.WriterTo).
func (s *ScalableBloomFilter) WriteTo(w io.Writer) (int64, error) {
	filters, saturated := s.subFilters()
	if len(filters) == 0 {
		return 0, errors.New(errZeroScalable)
	}
	offsets, _ := format.V3ScalableOffsets(encodedSizes(filters))
	n, err := w.Write(format.AppendV3ScalableHeader(nil, format.V3ScalableHeader{ScalableHeader: s.header(filters, saturated)}, offsets))
	total := int64(n)
	var pad [format.V3Align]byte
	for i, f := range filters {
		if err != nil {
			return total, err
		}
		n, err = w.Write(pad[:offsets[i]-uint64(total)])
		total += int64(n)
		if err != nil {
			return total, err
		}
		var n64 int64
		n64, err = format.WriteV3(w, format.V3Header{Header: f.header()}, f.words, f.conc != nil)
		total += n64
	}
	return total, err
}

// ReadFrom decodes one filter written by WriteTo or MarshalBinary from r into
// s (io.ReaderFrom), with the guarantees of BloomFilter.ReadFrom: it keeps the
// mode of s, reads no byte past the filter, allocates only what the input
// has supplied or shown it holds, never panics, and leaves s unchanged on
// error. It must not run concurrently with any other call. Like
// BloomFilter.ReadFrom, it allocates about the size of the input from a
// reader that shows it holds each sub-filter, and about twice that from any
// other.
func (s *ScalableBloomFilter) ReadFrom(r io.Reader) (int64, error) {
	return s.readFrom(r, r)
}

// readFrom is ReadFrom from r, which passes src through (see readFilter).
func (s *ScalableBloomFilter) readFrom(r, src io.Reader) (int64, error) {
	var k scalableSink
	n, err := format.ReadScalable(r, src, nil, &k)
	if err == nil {
		err = k.done(s)
	}
	return n, format.NoEOF(err)
}

var (
	_ Filter = (*BloomFilter)(nil)
	_ Filter = (*ScalableBloomFilter)(nil)
)

// ReadScalable reads one ScalableBloomFilter written by WriteTo or
// MarshalBinary from r and returns it, built with opts, with the guarantees
// and errors of Read. Concurrent makes it concurrent; Seed, Linear,
// Exponential and Tightening are allowed only if they agree with the
// encoded parameters.
func ReadScalable(r io.Reader, opts ...Option) (*ScalableBloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return readScalable(r, nil, s)
}

// ReadAny reads one filter of any kind from r, as its magic says, and
// returns it built with opts: a *BloomFilter, a *ScalableBloomFilter or a
// *WindowFilter, with the guarantees and errors of Read, ReadScalable and
// ReadWindow. Growth options
// contradict a BloomFilter's encoding. On error the Filter is nil.
func ReadAny(r io.Reader, opts ...Option) (Filter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	var m [len(format.Magic)]byte
	if n, err := io.ReadFull(r, m[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, io.EOF
		}
		return nil, format.NoEOF(err)
	}
	switch string(m[:]) {
	case format.Magic:
		if err := s.plainOnly(); err != nil {
			return nil, fmt.Errorf("%w (the encoding is a BloomFilter's)", err)
		}
		f, err := readPlain(r, m[:], s)
		if err != nil {
			return nil, err // not a nil *BloomFilter in a non-nil Filter
		}
		return f, nil
	case format.ScalableMagic:
		f, err := readScalable(r, m[:], s)
		if err != nil {
			return nil, err
		}
		return f, nil
	case window.Magic:
		f, err := readWindow(r, m[:], s)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return nil, format.Corrupt("bad magic %q", m[:])
}

// readScalable is ReadScalable, after prefix has been read from r.
func readScalable(r io.Reader, prefix []byte, s settings) (*ScalableBloomFilter, error) {
	if err := s.win.none(); err != nil {
		return nil, err
	}
	k := scalableSink{opts: &s}
	if _, err := format.ReadScalable(r, r, prefix, &k); err != nil {
		return nil, err
	}
	if err := k.done(nil); err != nil {
		return nil, err
	}
	if s.concurrent {
		k.d.makeConcurrent(newScalableLocks())
	}
	return k.d, nil
}

func growthName(g growth) string {
	if g == growthLinear {
		return "Linear"
	}
	return "Exponential"
}

// AppendText appends the text encoding of the filter to b: the standard
// base64 encoding, with padding, of its binary encoding
// (encoding.TextAppender). It returns an error only for a zero
// ScalableBloomFilter.
func (s ScalableBloomFilter) AppendText(b []byte) ([]byte, error) {
	data, err := s.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the filter, the standard base64
// encoding of MarshalBinary's (encoding.TextMarshaler), as for BloomFilter.
func (s ScalableBloomFilter) MarshalText() ([]byte, error) {
	return s.AppendText(make([]byte, 0, base64.StdEncoding.EncodedLen(s.EncodedSize())))
}

// UnmarshalText decodes a filter encoded by MarshalText into s
// (encoding.TextUnmarshaler), with the guarantees of
// BloomFilter.UnmarshalText.
func (s *ScalableBloomFilter) UnmarshalText(text []byte) error {
	data, err := format.DecodeText(text, format.V3HeaderSize, func(hdr []byte) (uint64, error) {
		if format.IsV3(hdr) {
			h, err := format.ParseV3ScalableHeader(hdr)
			if err == nil {
				_, err = scalableFrom(h.ScalableHeader)
			}
			// At least the header, the table and n sub-filters of a
			// header and a word.
			return format.AlignV3(format.V3HeaderSize+8*uint64(h.N)) + uint64(h.N)*(format.V3HeaderSize+8+4), err
		}
		h, err := format.ParseScalableHeader(hdr)
		if err == nil {
			_, err = scalableFrom(h)
		}
		n := h.N
		// At least the header, n sub-filter headers and two checksums
		// each: an exact length needs the sub-filter headers.
		return format.ScalableHeaderSize + uint64(n)*(format.HeaderSize+8+format.CRCSize) + format.CRCSize, err
	})
	if err != nil {
		return err
	}
	return s.UnmarshalBinary(data)
}

// EncodedSize returns the length in bytes of the binary encoding, which
// grows and shrinks with the extensions of a window under Grow. On a
// Concurrent window it takes the adds' lock.
func (w *WindowFilter) EncodedSize() (n int) {
	w.read(func(f *window.Filter, _ int64) { n = int(f.EncodedSize()) })
	return n
}

// AppendBinary appends the binary encoding of the window (see
// WindowFilter) to b (encoding.BinaryAppender). O(Bits/64); on a
// Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) AppendBinary(b []byte) ([]byte, error) {
	w.read(func(f *window.Filter, _ int64) { b = f.AppendBinary(b) })
	return b, nil
}

// MarshalBinary returns the binary encoding of the window, as AppendBinary
// (and at the same cost).
func (w *WindowFilter) MarshalBinary() ([]byte, error) {
	return w.AppendBinary(make([]byte, 0, w.EncodedSize()))
}

// UnmarshalBinary decodes a window encoded by MarshalBinary into w, keeping
// w's mode and clock (a zero WindowFilter becomes a plain one reading
// time.Now). It validates the header, the table and the length before it
// allocates, checks every checksum, never panics, and leaves w unchanged
// on error, which wraps ErrCorrupt or is io.ErrUnexpectedEOF. On a
// Concurrent window it may run beside other calls, which see the window
// before or after it (it takes the adds' lock to replace the ring);
// otherwise it must not run concurrently with other calls.
func (w *WindowFilter) UnmarshalBinary(data []byte) error {
	f, err := window.Decode(data, windowSizer)
	if err != nil {
		return err
	}
	w.setRing(f)
	return nil
}

// WriteTo writes the binary encoding of the window to w (io.WriterTo)
// through a buffer of at most 64 KiB. On a Concurrent window it holds the
// adds' lock until the last byte is written, so that the encoding is of one
// moment: a slow writer delays the adds, not the tests.
func (w *WindowFilter) WriteTo(dst io.Writer) (n int64, err error) {
	w.read(func(f *window.Filter, _ int64) { n, err = f.WriteTo(dst) })
	return n, err
}

// ReadFrom decodes one window written by WriteTo or MarshalBinary from r
// into w (io.ReaderFrom), with the guarantees of UnmarshalBinary, reading
// no byte past it and allocating only what r has supplied or shown that it
// holds.
func (w *WindowFilter) ReadFrom(r io.Reader) (int64, error) {
	f, n, err := window.Read(r, r, nil, windowSizer)
	if err != nil {
		return n, err
	}
	w.setRing(f)
	return n, nil
}

// ReadWindow reads one window written by WriteTo or MarshalBinary from r,
// with the guarantees of ReadFrom, built with opts: Concurrent, Clock, and
// Seed if it agrees with the encoded one. A stream that ends before the
// first byte gives io.EOF.
func ReadWindow(r io.Reader, opts ...Option) (*WindowFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return readWindow(r, nil, s)
}

// readWindow is ReadWindow after prefix has been read from r.
func readWindow(r io.Reader, prefix []byte, s settings) (*WindowFilter, error) {
	if err := s.windowOnly(); err != nil {
		return nil, err
	}
	if s.win.every != 0 || s.win.policySet || s.win.gens != 0 || s.win.satLimit != 0 {
		return nil, paramError("Every, OnOverflow, Generations and SaturationLimit contradict an encoded window")
	}
	if len(prefix) == 0 {
		var b [1]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, err // io.EOF before the first byte
		}
		prefix = b[:]
	}
	f, _, err := window.Read(r, r, prefix, windowSizer)
	if err != nil {
		return nil, err
	}
	if s.seedSet && s.seed != f.Seed {
		return nil, paramError("Seed %#x contradicts the encoded seed %#x", s.seed, f.Seed)
	}
	w := &WindowFilter{f: f, clock: s.win.clock, onEvent: s.win.onEvent}
	w.hook(f)
	if s.concurrent {
		w.conc, w.f = newWindowConc(f), nil
	}
	return w, nil
}

// AppendText appends the text encoding of the window, the standard base64
// of its binary encoding, to b (encoding.TextAppender).
func (w *WindowFilter) AppendText(b []byte) ([]byte, error) {
	data, err := w.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the window
// (encoding.TextMarshaler).
func (w *WindowFilter) MarshalText() ([]byte, error) { return w.AppendText(nil) }

// UnmarshalText decodes a window encoded by MarshalText into w, with the
// guarantees of UnmarshalBinary: the header is checked before the decoded
// bytes are allocated.
func (w *WindowFilter) UnmarshalText(text []byte) error {
	data, err := format.DecodeText(text, window.HeaderLen, window.Least)
	if err != nil {
		return err
	}
	return w.UnmarshalBinary(data)
}
