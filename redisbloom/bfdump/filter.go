package bfdump

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/bloomfilters/bloom"
)

// The options field of RedisBloom's chain (bloom.h's BLOOM_OPT_* flags).
const (
	optNoRound   = 1 // BLOOM_OPT_NOROUND: bits = entries*bpe, not a power of two
	optEntsBits  = 2 // BLOOM_OPT_ENTS_IS_BITS: never set by BF.* commands
	optForce64   = 4 // BLOOM_OPT_FORCE64: MurmurHash64A positions
	optNoScaling = 8 // BLOOM_OPT_NO_SCALING: NONSCALING, a full filter refuses adds

	// reserveOptions are the options BF.RESERVE, BF.ADD and BF.INSERT give a
	// new filter (rebloom.c, bfCreateChain), without NONSCALING.
	reserveOptions = optForce64 | optNoRound
)

// Limits of this package (RedisBloom's own are noted beside them).
const (
	// MaxBits is the largest sub-filter, in bits, that a constructor builds,
	// that growth creates and that a decoder accepts: 2^40 bits (128 GiB),
	// as bloom.MaxBits.
	MaxBits uint64 = 1 << 40

	// MaxHashes is the largest number of hash functions a sub-filter may
	// use. RedisBloom's sizing gives ceil(ln2 * -ln(p)/(ln 2)^2) hash
	// functions, 1075 at the smallest positive error rate; a chain that
	// halved its rate that far cannot grow further.
	MaxHashes = 2048

	// MaxExpansion is the largest growth factor, as BF.RESERVE's EXPANSION
	// accepts it (RedisBloom's bf-expansion-factor range [0, 32768]).
	MaxExpansion = 32768

	// MaxReserveCapacity is the largest capacity BF.RESERVE accepts
	// (RedisBloom's bf-initial-size range [1, 2^30]); Reserve refuses more.
	MaxReserveCapacity = 1 << 30

	// maxFilters bounds the sub-filters a decoded chain may have. Each link
	// halves the error rate, so RedisBloom stops growing after about 1075
	// (the rate reaches 0 and bloom_init refuses it).
	maxFilters = 2048
)

// DefaultExpansion is RedisBloom's default growth factor (bf-expansion-factor).
const DefaultExpansion = 2

// tightening is RedisBloom's ERROR_TIGHTENING_RATIO (sb.c): a scaling chain's
// first sub-filter gets half the rate asked, and each new one half the rate
// of the one before, so that the rates add up to less than the one asked.
const tightening = 0.5

var (
	// ErrFull is returned by the adds of a non-scaling filter (NONSCALING,
	// or EXPANSION 0) whose sub-filter holds its capacity, as RedisBloom
	// answers "ERR non scaling filter is full". The key was not added.
	ErrFull = errors.New("bfdump: non-scaling filter is full")

	// ErrGrowth is wrapped by the error of an add that needed a new
	// sub-filter that cannot be made: its capacity overflows, its rate
	// reached 0 after many halvings, or it would exceed MaxBits (RedisBloom
	// answers "ERR problem inserting into filter"). The key was not added.
	ErrGrowth = errors.New("bfdump: cannot grow the filter")

	// ErrZeroValue is wrapped by the error of every call with an error
	// result on a zero Filter (declared rather than made by New, Reserve,
	// NewWithSize or a decoder), Restore of one included.
	ErrZeroValue = errors.New("bfdump: use of a zero Filter")
)

// A Filter is a RedisBloom Bloom filter held in memory: a chain of one or
// more sub-filters with the bits, positions, growth and counts of the
// filter a RedisBloom server keeps under a key created by BF.RESERVE (or
// BF.ADD, BF.INSERT). Loaded into Redis (Restore), it answers BF.EXISTS as
// Test does; read from Redis (ScanDump), it answers Test as the server
// answers BF.EXISTS.
//
// A key's positions in a sub-filter of m bits are
//
//	a = MurmurHash64A(key, 0xc6a4a7935bd1e995), b = MurmurHash64A(key, a)
//	x_i = ((a + i*b) mod 2^64) mod m,  i = 0 .. hashes-1
//
// and position x is bit x%8 (least significant first) of byte x/8.
//
// Test reports whether any sub-filter has all of the key's positions set.
// An add (Add, TestAndAdd and their forms) does nothing for a key Test
// reports present; otherwise, when the newest sub-filter already holds its
// capacity, a scaling filter first appends a sub-filter of Expansion() times
// that capacity and half its error rate (a non-scaling one returns ErrFull),
// and the key's positions are set in the newest sub-filter, whose count and
// the filter's Count go up by one. That is RedisBloom's SBChain_Add.
//
// A Filter is not safe for concurrent use: an add must not run concurrently
// with any other call; concurrent Tests (and the other read-only methods)
// are safe. A zero Filter is not usable: create one with New, Reserve,
// NewWithSize or a decoder (ReadFrom, Loader, ScanDump). Its methods with an
// error result return one wrapping ErrZeroValue, and the others answer as a
// filter with no sub-filter and nothing added (Test false, Count 0, no
// header and no stream); ReadFrom and UnmarshalBinary fill it.
type Filter struct {
	links   []link
	count   uint64 // keys added (RedisBloom's size): the sum of links[i].size
	options uint32
	growth  uint32
	// exact is set when new sub-filters are sized by Size (New,
	// NewWithSize) rather than as RedisBloom sizes them (Reserve).
	exact bool
}

// link is one sub-filter (RedisBloom's SBLink with its struct bloom).
type link struct {
	bits    []byte  // the bit array, len(bits)*8 == m
	m       uint64  // bits
	k       uint32  // hash functions
	entries uint64  // capacity: keys it takes before the chain grows
	size    uint64  // keys added to it
	err     float64 // its target error rate
	bpe     float64 // bits per entry, as recorded (hashes == ceil(ln2*bpe))
}

// errZero is the error of a zero Filter's calls.
var errZero = fmt.Errorf("%w: make one with New, Reserve, NewWithSize or a decoder", ErrZeroValue)

// Option configures a constructor.
type Option func(*settings) error

type settings struct {
	growth     uint32
	nonScaling bool
	expansion  bool // Expansion was given a factor above 0
}

// Expansion sets the growth factor: each new sub-filter holds factor times
// the keys of the one before (BF.RESERVE's EXPANSION; the default is 2).
// Expansion(0) makes the filter non-scaling and records the factor 0, as
// EXPANSION 0 does (NonScaling alone records the default 2). factor must be
// at most MaxExpansion.
func Expansion(factor uint32) Option {
	return func(s *settings) error {
		if factor > MaxExpansion {
			return fmt.Errorf("%w: bfdump: expansion must be in [0, %d], got %d", bloom.ErrInvalidParameter, MaxExpansion, factor)
		}
		if factor == 0 {
			// RedisBloom sets BLOOM_OPT_NO_SCALING and keeps the 0 as
			// the chain's growth (cap1000-p0.01-exp0.json).
			s.nonScaling, s.growth = true, 0
			return nil
		}
		s.growth, s.expansion = factor, true
		return nil
	}
}

// NonScaling makes the filter a single sub-filter that refuses adds once it
// holds its capacity (ErrFull), and that is sized for the whole error rate
// rather than half of it (BF.RESERVE's NONSCALING). It cannot be combined
// with a non-zero Expansion, as in BF.RESERVE.
func NonScaling() Option {
	return func(s *settings) error {
		s.nonScaling = true
		return nil
	}
}

func newSettings(opts []Option) (settings, error) {
	s := settings{growth: DefaultExpansion}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&s); err != nil {
			return s, err
		}
	}
	if s.nonScaling && s.expansion {
		// BF.RESERVE: "Nonscaling filters cannot expand".
		return s, fmt.Errorf("%w: bfdump: a non-scaling filter cannot have an expansion", bloom.ErrInvalidParameter)
	}
	return s, nil
}

func (s settings) options() uint32 {
	if s.nonScaling {
		return reserveOptions | optNoScaling
	}
	return reserveOptions
}

// linkRate returns the error rate of the first sub-filter of a filter asked
// for errorRate: half of it for a scaling filter (SB_NewChain).
func (s settings) linkRate(errorRate float64) float64 {
	if s.nonScaling {
		return errorRate
	}
	return errorRate * tightening
}

// New returns an empty filter for capacity keys at a false-positive rate of
// at most errorRate, sized by Size rather than as RedisBloom sizes it: the
// first sub-filter gets errorRate (NonScaling) or errorRate/2 (scaling: the
// sub-filters' rates, halved at each growth, add up to less than errorRate),
// and each sub-filter added by growth is sized by Size too. RedisBloom loads
// such a filter and answers as it does (see Size for the geometry it
// accepts); sub-filters the server adds when it grows a loaded filter are
// sized by RedisBloom's own rule, as Reserve's are.
//
// It returns an error wrapping bloom.ErrInvalidParameter when capacity is 0,
// errorRate is not in (0, 1), an option is invalid, or the sub-filter would
// need more than MaxBits bits.
func New(capacity uint64, errorRate float64, opts ...Option) (*Filter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("%w: bfdump: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	rate := s.linkRate(errorRate)
	m, k, err := Size(capacity, rate)
	if err != nil {
		return nil, err
	}
	return build(capacity, rate, m, k, recordedBPE(m, capacity, k), s, true)
}

// Reserve returns the filter that `BF.RESERVE key errorRate capacity`
// creates (note the order of the arguments: capacity first, as in New),
// with EXPANSION and NONSCALING given by the options: the same sub-filter
// geometry, header and growth, so that after the same adds its BF.SCANDUMP
// stream is byte for byte the server's (ReserveSize gives the geometry).
// Like BF.RESERVE it caps errorRate at 0.25.
//
// RedisBloom's sizing misses its rate for small filters (see ReserveSize);
// New keeps it.
//
// It returns an error wrapping bloom.ErrInvalidParameter where BF.RESERVE
// fails: capacity not in [1, MaxReserveCapacity], errorRate not in (0, 1),
// or an invalid option.
func Reserve(capacity uint64, errorRate float64, opts ...Option) (*Filter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if capacity < 1 || capacity > MaxReserveCapacity {
		return nil, fmt.Errorf("%w: bfdump: capacity must be in [1, %d], got %d", bloom.ErrInvalidParameter, MaxReserveCapacity, capacity)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("%w: bfdump: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	errorRate = min(errorRate, reserveRateCap)
	rate := s.linkRate(errorRate)
	m, k, bpe, err := reserveGeometry(capacity, rate)
	if err != nil {
		return nil, err
	}
	return build(capacity, rate, m, k, bpe, s, false)
}

// NewWithSize returns an empty filter whose first sub-filter has bits bits
// and hashes hash functions, takes capacity keys before the filter grows or
// fills, and records errorRate as its target (growth halves it for the next
// sub-filter, which Size sizes). bits must be a positive multiple of 8 (a
// whole number of bytes, as RedisBloom requires) and at most MaxBits, hashes
// in [1, MaxHashes]. The filter records the bits per entry as bits/capacity
// when hashes = ceil(ln2 * bits/capacity), and otherwise the value nearest
// below hashes/ln2 for which RedisBloom computes hashes, so that it loads the
// filter either way.
//
// It returns an error wrapping bloom.ErrInvalidParameter for a parameter out
// of range or an invalid option.
func NewWithSize(bits uint64, hashes uint, capacity uint64, errorRate float64, opts ...Option) (*Filter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if capacity == 0 {
		return nil, fmt.Errorf("%w: bfdump: capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("%w: bfdump: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	if bits == 0 || bits%8 != 0 || bits > MaxBits {
		return nil, fmt.Errorf("%w: bfdump: bits must be a multiple of 8 in [8, %d], got %d", bloom.ErrInvalidParameter, MaxBits, bits)
	}
	if hashes < 1 || hashes > MaxHashes {
		return nil, fmt.Errorf("%w: bfdump: hashes must be in [1, %d], got %d", bloom.ErrInvalidParameter, MaxHashes, hashes)
	}
	return build(capacity, errorRate, bits, uint32(hashes), recordedBPE(bits, capacity, uint32(hashes)), s, true)
}

// recordedBPE returns the bits per entry a sub-filter of m bits, n keys and
// k hash functions records: m/n when RedisBloom's rule gives k from it, and
// otherwise the largest value that gives k (bpeFor).
func recordedBPE(m, n uint64, k uint32) float64 {
	if bpe := float64(m) / float64(n); hashesOf(bpe) == k {
		return bpe
	}
	return bpeFor(k)
}

// build is the one path that makes a filter: a chain of one empty
// sub-filter of m bits (a multiple of 8) and k hash functions.
func build(capacity uint64, rate float64, m uint64, k uint32, bpe float64, s settings, exact bool) (*Filter, error) {
	l, err := newLink(capacity, rate, m, k, bpe)
	if err != nil {
		return nil, err
	}
	l.bits = make([]byte, m/8)
	return &Filter{links: []link{l}, options: s.options(), growth: s.growth, exact: exact}, nil
}

// newLink returns a sub-filter without its bit array.
func newLink(entries uint64, rate float64, m uint64, k uint32, bpe float64) (link, error) {
	if m == 0 || m%8 != 0 || m > MaxBits || m/8 > maxLinkBytes {
		return link{}, fmt.Errorf("%w: bfdump: %d keys at rate %v need %d bits, more than MaxBits (%d)", bloom.ErrInvalidParameter, entries, rate, m, MaxBits)
	}
	if k < 1 || k > MaxHashes {
		return link{}, fmt.Errorf("%w: bfdump: %d keys at rate %v need %d hash functions, more than MaxHashes (%d)", bloom.ErrInvalidParameter, entries, rate, k, MaxHashes)
	}
	return link{m: m, k: k, entries: entries, err: rate, bpe: bpe}, nil
}

// The positions of a key in a sub-filter are ((a + i*b) mod 2^64) mod m,
// one division each, as RedisBloom computes them. Carrying x_i to x_{i+1}
// instead (x + b mod m, less 2^64 mod m where the 64-bit sum wraps; two
// divisions per key) was slower on the 2-vCPU AMD test machine, where the
// k divisions of a key are independent and overlap but the carried
// positions form a chain with unpredictable branches: Test of present keys
// 87-180 ns against 151-383 at 10^5 keys, 408-738 against 543-1019 at 10^7,
// three runs of each binary, alternated.

// test reports whether all of the positions of (a, b) are set.
func (l *link) test(a, b uint64) bool {
	m, set := l.m, l.bits
	for i := range uint64(l.k) {
		x := (a + i*b) % m
		if set[x>>3]&(1<<(x&7)) == 0 {
			return false
		}
	}
	return true
}

// add sets the positions of (a, b) and reports whether any was clear.
func (l *link) add(a, b uint64) (fresh bool) {
	m, set := l.m, l.bits
	var clear byte
	for i := range uint64(l.k) {
		x := (a + i*b) % m
		p, mask := &set[x>>3], byte(1)<<(x&7)
		clear |= ^*p & mask
		*p |= mask
	}
	return clear != 0
}

// test reports whether any sub-filter, newest first, holds (a, b)
// (SBChain_Check); a zero Filter has none.
func (f *Filter) test(a, b uint64) bool {
	for i := len(f.links) - 1; i >= 0; i-- {
		if f.links[i].test(a, b) {
			return true
		}
	}
	return false
}

// testAndAdd is SBChain_Add: it reports whether (a, b) was present, and
// otherwise adds it to the newest sub-filter, growing the chain first if
// that one holds its capacity.
func (f *Filter) testAndAdd(a, b uint64) (present bool, err error) {
	if len(f.links) == 0 {
		return false, errZero
	}
	if f.test(a, b) {
		return true, nil
	}
	cur := &f.links[len(f.links)-1]
	if cur.size >= cur.entries {
		if f.options&optNoScaling != 0 {
			return false, ErrFull
		}
		if err := f.grow(); err != nil {
			return false, err
		}
		cur = &f.links[len(f.links)-1]
	}
	if cur.add(a, b) {
		cur.size++
		f.count++
	}
	return false, nil
}

// grow appends a sub-filter of growth times the newest one's capacity at
// half its rate (SBChain_Add), sized as the filter sizes them.
func (f *Filter) grow() error {
	cur := &f.links[len(f.links)-1]
	hi, entries := bits.Mul64(cur.entries, uint64(f.growth))
	rate := cur.err * tightening
	if hi != 0 || entries == 0 || !(rate > 0) || len(f.links) >= maxFilters {
		return fmt.Errorf("%w: no sub-filter can follow one of %d keys at rate %v (expansion %d, %d sub-filters)",
			ErrGrowth, cur.entries, cur.err, f.growth, len(f.links))
	}
	var (
		m   uint64
		k   uint32
		bpe float64
		err error
	)
	if f.exact {
		m, k, err = Size(entries, rate)
		bpe = recordedBPE(m, entries, k)
	} else {
		m, k, bpe, err = reserveGeometry(entries, rate)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGrowth, err)
	}
	l, err := newLink(entries, rate, m, k, bpe)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGrowth, err)
	}
	l.bits = make([]byte, m/8)
	f.links = append(f.links, l)
	return nil
}

// bytesOf returns the bytes of s without copying; the hash only reads them.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Add adds key, as BF.ADD does: afterwards Test(key) reports true. It
// returns ErrFull when a non-scaling filter is full and an error wrapping
// ErrGrowth when the chain cannot grow; the key is then not added. It hashes
// key twice (MurmurHash64A) and allocates only when the chain grows.
func (f *Filter) Add(key []byte) error {
	_, err := f.testAndAdd(hash(key))
	return err
}

// AddString is Add for a string key, without copying it.
func (f *Filter) AddString(key string) error {
	_, err := f.testAndAdd(hash(bytesOf(key)))
	return err
}

// TestAndAdd reports whether key was present (Test), and adds it if not;
// present is the opposite of BF.ADD's reply. Its errors are Add's.
func (f *Filter) TestAndAdd(key []byte) (present bool, err error) {
	return f.testAndAdd(hash(key))
}

// TestAndAddString is TestAndAdd for a string key, without copying it.
func (f *Filter) TestAndAddString(key string) (present bool, err error) {
	return f.testAndAdd(hash(bytesOf(key)))
}

// Test reports whether key may have been added, as BF.EXISTS does: false
// means definitely not; true means probably (a false positive has about the
// probability of the sub-filters' rates added up). It tests the sub-filters
// newest first, stopping at the first clear position of each, and does not
// allocate.
func (f *Filter) Test(key []byte) bool {
	return f.test(hash(key))
}

// TestString is Test for a string key, without copying it.
func (f *Filter) TestString(key string) bool {
	return f.test(hash(bytesOf(key)))
}

// Count returns the number of keys added: adds of keys Test reported absent
// (BF.CARD, BF.INFO's "Number of items inserted").
func (f *Filter) Count() uint64 { return f.count }

// Capacity returns the number of keys the filter takes before it grows or
// fills: the sum of its sub-filters' capacities (BF.INFO's "Capacity").
func (f *Filter) Capacity() uint64 {
	var c uint64
	for i := range f.links {
		c += f.links[i].entries
	}
	return c
}

// NonScaling reports whether the filter refuses adds once full rather than
// growing (NONSCALING).
func (f *Filter) NonScaling() bool { return f.options&optNoScaling != 0 }

// Expansion returns the growth factor (BF.INFO's "Expansion rate"); the
// factor is recorded but unused for a non-scaling filter.
func (f *Filter) Expansion() uint32 { return f.growth }

// SubFilter describes one sub-filter of a chain.
type SubFilter struct {
	Bits         uint64  // size of its bit array, in bits (a multiple of 8)
	Hashes       uint    // positions per key
	Capacity     uint64  // keys it takes before the chain grows or fills
	Count        uint64  // keys added to it
	ErrorRate    float64 // its target false-positive rate, as recorded
	BitsPerEntry float64 // as recorded; Hashes = ceil(ln2 * BitsPerEntry)
}

// SubFilters returns the sub-filters, oldest first (BF.DEBUG's lines).
func (f *Filter) SubFilters() []SubFilter {
	if len(f.links) == 0 {
		return nil // a zero Filter
	}
	out := make([]SubFilter, len(f.links))
	for i := range f.links {
		l := &f.links[i]
		out[i] = SubFilter{Bits: l.m, Hashes: uint(l.k), Capacity: l.entries, Count: l.size, ErrorRate: l.err, BitsPerEntry: l.bpe}
	}
	return out
}

// Info holds the fields of BF.INFO.
type Info struct {
	Capacity  uint64 // "Capacity": Capacity()
	Size      uint64 // "Size": the bytes RedisBloom reports using, 32 + 64 per sub-filter + the bit arrays
	Filters   int    // "Number of filters"
	Items     uint64 // "Number of items inserted": Count()
	Expansion uint32 // "Expansion rate": 0 where BF.INFO gives nil (non-scaling)
}

// Info returns what BF.INFO reports for the filter. Size counts the
// structures of RedisBloom's C code on a 64-bit server (an SBChain of 32
// bytes and an SBLink of 64 per sub-filter), as BF.INFO does.
func (f *Filter) Info() Info {
	if len(f.links) == 0 {
		return Info{} // a zero Filter
	}
	in := Info{Capacity: f.Capacity(), Size: 32 + 64*uint64(len(f.links)), Filters: len(f.links), Items: f.count}
	for i := range f.links {
		in.Size += f.links[i].m / 8
	}
	if !f.NonScaling() {
		in.Expansion = f.growth
	}
	return in
}

// Equal reports whether f and g have the same header (geometry, counts,
// options, growth) and the same bits. How new sub-filters are sized is not
// compared.
func (f *Filter) Equal(g *Filter) bool {
	if f.count != g.count || f.options != g.options || f.growth != g.growth || len(f.links) != len(g.links) {
		return false
	}
	for i := range f.links {
		a, b := &f.links[i], &g.links[i]
		if a.m != b.m || a.k != b.k || a.entries != b.entries || a.size != b.size ||
			math.Float64bits(a.err) != math.Float64bits(b.err) || math.Float64bits(a.bpe) != math.Float64bits(b.bpe) ||
			string(a.bits) != string(b.bits) {
			return false
		}
	}
	return true
}

// Clone returns a copy of f that shares nothing with it.
func (f *Filter) Clone() *Filter {
	g := *f
	g.links = make([]link, len(f.links))
	copy(g.links, f.links)
	for i := range g.links {
		g.links[i].bits = append([]byte(nil), f.links[i].bits...)
	}
	return &g
}
