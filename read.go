package bloom

import (
	"bytes"
	"io"
)

// Filter is what BloomFilter and ScalableBloomFilter have in common, for
// code that handles either kind, such as the result of ReadAny. Only
// *BloomFilter and *ScalableBloomFilter implement it, so that methods can be
// added to it as both types gain them; use a type switch for the rest.
type Filter interface {
	Add(key []byte)
	AddString(key string)
	Test(key []byte) bool
	TestString(key string) bool
	TestAndAdd(key []byte) bool
	TestAndAddString(key string) bool
	AddMany(keys [][]byte)
	AddManyStrings(keys []string)
	TestMany(keys [][]byte, results []bool) []bool
	TestManyStrings(keys []string, results []bool) []bool
	TestAndAddMany(keys [][]byte, results []bool) []bool
	TestAndAddManyStrings(keys []string, results []bool) []bool

	Count() uint64
	Capacity() uint64
	ErrorRate() float64
	Seed() uint32
	Bits() uint64
	FillRatio() float64
	EstimatedCount() uint64
	EstimatedErrorRate() float64
	Clear()

	EncodedSize() int
	AppendBinary(b []byte) ([]byte, error)
	MarshalBinary() ([]byte, error)
	AppendText(b []byte) ([]byte, error)
	MarshalText() ([]byte, error)
	WriteTo(w io.Writer) (int64, error)

	isFilter()
}

func (*BloomFilter) isFilter()         {}
func (*ScalableBloomFilter) isFilter() {}

var (
	_ Filter = (*BloomFilter)(nil)
	_ Filter = (*ScalableBloomFilter)(nil)
)

// Read reads one BloomFilter written by WriteTo or MarshalBinary from r and
// returns it, built with opts: Concurrent makes it concurrent; Seed is
// allowed only if it agrees with the encoded seed. It has the guarantees of
// ReadFrom: it reads no byte past the filter, allocates only as data
// arrives, and never panics. A stream that ends before the first byte gives
// io.EOF, so a loop can read filters until then; one that ends later
// io.ErrUnexpectedEOF. Other errors wrap ErrCorrupt (also for a
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

// ReadAny reads one filter of either kind from r, as its magic says, and
// returns it built with opts: a *BloomFilter or a *ScalableBloomFilter, with
// the guarantees and errors of Read and ReadScalable. Growth options
// contradict a BloomFilter's encoding. On error the Filter is nil.
func ReadAny(r io.Reader, opts ...Option) (Filter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	var m [len(magic)]byte
	if n, err := io.ReadFull(r, m[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, io.EOF
		}
		return nil, noEOF(err)
	}
	switch string(m[:]) {
	case magic:
		if err := s.plainOnly(); err != nil {
			return nil, paramError("Linear, Exponential and Tightening contradict a BloomFilter's encoding")
		}
		f, err := readPlain(r, m[:], s)
		if err != nil {
			return nil, err // not a nil *BloomFilter in a non-nil Filter
		}
		return f, nil
	case scalableMagic:
		f, err := readScalable(r, m[:], s)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return nil, corrupt("bad magic %q", m[:])
}

// readHeader reads the fixed-size header of an encoding into hb, after the
// prefix already read: io.EOF if r ends before its first byte and there is
// no prefix.
func readHeader(r io.Reader, prefix, hb []byte) error {
	n := copy(hb, prefix)
	got, err := io.ReadFull(r, hb[n:])
	if err != nil {
		if n+got == 0 && err == io.EOF {
			return io.EOF
		}
		return noEOF(err)
	}
	return nil
}

// readPlain is Read, after prefix has been read from r.
func readPlain(r io.Reader, prefix []byte, s settings) (*BloomFilter, error) {
	var hb [headerSize]byte
	if err := readHeader(r, prefix, hb[:]); err != nil {
		return nil, err
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return nil, err
	}
	if s.seedSet && s.seed != h.seed {
		return nil, paramError("Seed(%#x) contradicts the encoded seed %#x", s.seed, h.seed)
	}
	if s.blocked && !h.blocked {
		return nil, paramError("Blocked contradicts the encoded classic layout")
	}
	g, _, err := readFilter(io.MultiReader(bytes.NewReader(hb[:]), r))
	if err != nil {
		return nil, err
	}
	if s.concurrent {
		g.makeConcurrent(newLockTable(len(g.words)))
	}
	return g, nil
}

// readScalable is ReadScalable, after prefix has been read from r.
func readScalable(r io.Reader, prefix []byte, s settings) (*ScalableBloomFilter, error) {
	var hb [scalableHeaderSize]byte
	if err := readHeader(r, prefix, hb[:]); err != nil {
		return nil, err
	}
	d, _, err := parseScalableHeader(hb[:])
	if err != nil {
		return nil, err
	}
	switch {
	case s.seedSet && s.seed != d.seed:
		return nil, paramError("Seed(%#x) contradicts the encoded seed %#x", s.seed, d.seed)
	case s.growth != growthNone && (s.growth != d.growth || s.scale != d.scale):
		return nil, paramError("growth option contradicts the encoded growth (%s %v)", growthName(d.growth), d.scale)
	case s.tightening != 0 && s.tightening != d.tightening:
		return nil, paramError("Tightening(%v) contradicts the encoded tightening %v", s.tightening, d.tightening)
	case s.blocked && !d.blocked:
		return nil, paramError("Blocked contradicts the encoded classic layout")
	}
	var g ScalableBloomFilter
	if _, err := g.ReadFrom(io.MultiReader(bytes.NewReader(hb[:]), r)); err != nil {
		return nil, err
	}
	if s.concurrent {
		g.makeConcurrent(newScalableLocks())
	}
	return &g, nil
}

func growthName(g growth) string {
	if g == growthLinear {
		return "Linear"
	}
	return "Exponential"
}
