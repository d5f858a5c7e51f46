// Package bloom implements Bloom filters: compact sets that answer "definitely
// absent" or "probably present", with no false negatives and a false-positive
// rate that is chosen up front and that holds.
//
// BloomFilter is a fixed-size filter sized from a capacity (keys) and a target
// error rate. ScalableBloomFilter grows without limit while keeping its overall
// error rate under its target.
//
// Keys are hashed once with 128-bit murmur3 (seeded by the filter's seed); the
// k bit positions are derived from the two 64-bit halves by enhanced double
// hashing, each mixed by an xorshift-multiply and mapped onto [0, m) with a
// multiply-shift. AppendLocations exposes exactly those positions so that
// other stores (see the redisbloom module) can share a filter bit for bit.
//
// # Saving and loading
//
// Both types implement encoding.BinaryMarshaler and BinaryUnmarshaler (so
// encoding/gob works), io.WriterTo and io.ReaderFrom in the binary format
// below, and encoding.TextMarshaler and TextUnmarshaler as the standard
// base64 of it, so that a filter in a struct survives encoding/json and
// encoding/xml. Read, ReadScalable and ReadAny build a filter from a stream
// with options, such as Concurrent. Header, AppendWords and FromWords move a
// BloomFilter's bits in and out as 64-bit words, for stores that keep them
// elsewhere.
//
// Every decoder validates before it allocates: a truncated input is
// io.ErrUnexpectedEOF, anything else that is not exactly an encoding below an
// error wrapping ErrCorrupt, never a panic, never an allocation much larger
// than the input, and the receiver is unchanged on error.
//
// # Binary format
//
// The encoding of a filter is a pure function of what Equal compares, so the
// same filter always encodes to the same bytes. The format is versioned: an
// encoding of version 1 written by any release loads, and answers the same,
// in every later release. All integers are little-endian.
//
// A BloomFilter, version 1:
//
//	offset  size  field
//	0       4     magic "BLMF"
//	4       2     version, 1
//	6       2     flags, 0 (decoders reject any other value)
//	8       4     seed (murmur3)
//	12      4     k, hash functions, in [1, MaxHashes]
//	16      8     m, bits, in [1, MaxBits]
//	24      8     capacity, keys, at least 1
//	32      8     error rate, IEEE 754 float64 bits, in (0, 1)
//	40      8     count, at most the number of set bits
//	48      8*W   the bits as W = ceil(m/64) 64-bit words: bit i is bit i%64
//	              of word i/64; bits at m and above are 0
//	48+8*W  4     CRC-32C (Castagnoli) of every byte before it
//
// Bit positions are those of AppendLocations. Decoders accept exactly this
// layout: a wrong magic, version, flags, size, padding bit, count, trailing
// byte or checksum is an error wrapping ErrCorrupt.
//
// A ScalableBloomFilter, version 1:
//
//	offset  size  field
//	0       4     magic "BLMS"
//	4       2     version, 1
//	6       2     flags: bit 0 set if the filter is Saturated; others 0
//	8       4     seed (murmur3), the same in every sub-filter
//	12      1     growth: 1 Linear, 2 Exponential
//	13      3     zero
//	16      8     scale, float64 bits (> 0 for Linear, > 1 for Exponential)
//	24      8     tightening ratio r, float64 bits, in (0, 1)
//	32      8     initial capacity, keys, at least 1
//	40      8     error rate P, float64 bits, in (0, 1)
//	48      4     N, the number of sub-filters, in [1, 65536]
//	52      4     zero
//	56      ...   the N sub-filters, oldest first, each in the BloomFilter
//	              format (with its own CRC-32C)
//	end-4   4     CRC-32C (Castagnoli) of every byte before it
//
// Sub-filter i must have exactly the capacity, error rate, size and hash
// count that the parameters give it, so a decoded filter grows exactly as the
// original would; every sub-filter but the newest must be full (its count at
// its capacity). Decoders reject anything else with an error wrapping
// ErrCorrupt. The sizes of filters saved before sizing used the exact rate
// are accepted too.
//
// Version 2 records the layout; it was written for filters with the blocked
// layout (see Blocked), and version 1 for classic filters, until version 3
// replaced both. A BloomFilter in version 2 is version 1 with 2 at
// offset 4 and, at offset 6 in place of the flags, the layout 1 (blocked:
// 512-bit blocks, m a multiple of 512; block b is words 8b to 8b+7, and the
// positions are those of AppendBlockedLocations). A ScalableBloomFilter in
// version 2 has 2 at offset 4 and the layout 1 at offset 13, and its
// sub-filters are blocked BloomFilters in version 2. Decoders reject version
// 2 with any other layout, so that every filter has one encoding.
//
// Version 3 is what every encoder writes. Its bits start 64 bytes into the
// encoding, so that in any page-aligned copy of it (a file mapping) they
// start on a cache line and every block of the blocked layout is one; the
// header has a checksum of its own, and the bits one per section, so they can
// be verified in parallel. A BloomFilter in version 3:
//
//	offset  size  field
//	0       48    as in version 1, with 3 at offset 4 and, at offset 6,
//	              the layout: 0 classic, 1 blocked
//	48      4     S, the section size in bytes: a power of two in
//	              [64, 2^30]; 2^20 as written
//	52      8     zero
//	60      4     CRC-32C of bytes 0 to 59
//	64      8*W   the bits, as in version 1
//	64+8*W  4*N   CRC-32C of each of the N = ceil(8W/S) sections of S
//	              bytes of the bits, in order (the last may be shorter)
//
// A ScalableBloomFilter in version 3:
//
//	offset  size  field
//	0       52    as in version 1, with 3 at offset 4 and the layout at
//	              offset 13: 0 classic, 1 blocked
//	52      4     CRC-32C of the table at offset 64
//	56      4     zero
//	60      4     CRC-32C of bytes 0 to 59
//	64      8*N   the table: the offset of each sub-filter from the start
//	              of the encoding, oldest first
//	T_i     ...   sub-filter i, a BloomFilter in version 3 of that layout;
//	              T_0 is 64+8N rounded up to a multiple of 64, T_{i+1}
//	              the end of sub-filter i rounded up likewise, with zero
//	              bytes before each; the encoding ends with the last one
//
// Decoders reject a version-3 sub-filter in a filter of version 1 or 2 and
// the reverse, and any other offset, padding or length.
//
// The text encoding of either type is the standard base64 (RFC 4648, with
// padding, without line breaks) of its binary encoding.
package bloom

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/blockbits"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

const (
	// MaxBits is the largest filter New and NewWithSize build: 2^40 bits
	// (128 GiB). Larger requests are errors, refused before any allocation.
	// On 32-bit platforms the limit is what an int can index instead.
	MaxBits uint64 = 1 << 40

	// MaxHashes is the largest number of hash functions a filter may use.
	// It is optimal down to error rates of about 1e-19; New and Size meet
	// lower rates with MaxHashes hash functions and more bits.
	MaxHashes uint = 64

	// DefaultSeed is the murmur3 seed filters use unless the Seed option says
	// otherwise. Filters built anywhere with the same parameters and this seed
	// set the same bits, so they can be saved, merged and compared.
	DefaultSeed uint32 = 0x5BD1E995
)

// maxWords is the number of 64-bit words the largest filter needs, bounded by
// what an int can index on this platform.
var maxWords = min(MaxBits/64, uint64(math.MaxInt)/8)

// Sentinel errors, to be matched with errors.Is.
var (
	// ErrInvalidParameter is wrapped by every error a constructor or option
	// returns for a parameter out of its allowed range.
	ErrInvalidParameter = errors.New("bloom: invalid parameter")

	// ErrIncompatible is returned when combining filters whose sizes, hash
	// counts, seeds or layouts differ.
	ErrIncompatible = errors.New("bloom: incompatible filters")

	// ErrCorrupt is wrapped by every error a decoder returns for input that is
	// not a valid encoding: bad magic, unknown version, inconsistent header,
	// wrong length or checksum mismatch.
	ErrCorrupt = format.ErrCorrupt
)

func paramError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParameter, fmt.Sprintf(format, args...))
}

// Option configures a filter at construction. Options are created by Seed,
// Concurrent and Blocked and, for ScalableBloomFilter only, by Linear,
// Exponential and Tightening. Each may be given at most once: an option
// given twice, even with the same value, is an error wrapping
// ErrInvalidParameter that names it (and so are Linear and Exponential
// together).
type Option struct {
	apply func(*settings) error
}

// settings collects what the options chose.
type settings struct {
	seed       uint32
	seedSet    bool    // Seed was given
	growth     growth  // growthNone unless Linear or Exponential was given
	scale      float64 // growth scale factor
	tightening float64 // 0 unless Tightening was given
	concurrent bool    // Concurrent was given
	blocked    bool    // Blocked was given
	classic    bool    // Classic was given
}

func newSettings(opts []Option) (settings, error) {
	s := settings{seed: DefaultSeed}
	for _, o := range opts {
		if o.apply == nil {
			return s, paramError("zero Option value")
		}
		if err := o.apply(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Seed sets the murmur3 seed (default DefaultSeed). Filters can only be
// combined and compared when their seeds match.
//
// With a public seed anyone can compute which keys collide in a filter and
// craft keys that make it answer "present" for chosen absent keys, or fill it
// quickly. A secret random seed (for example from crypto/rand), kept with the
// filter, defends against such adversaries.
func Seed(seed uint32) Option {
	return Option{func(s *settings) error {
		if s.seedSet {
			return paramError("Seed may be given only once")
		}
		s.seed, s.seedSet = seed, true
		return nil
	}}
}

// Concurrent makes a BloomFilter or ScalableBloomFilter safe for Add, Test and
// TestAndAdd (and their String forms) from any number of goroutines at once,
// without a global lock. A concurrent BloomFilter carries a table of locks
// of about 1/8 of its size, at least 1 KiB (16 locks) and at most 64 KiB
// (1024 locks, from 512 KiB filters up); a concurrent ScalableBloomFilter,
// which grows, 64 KiB. A filter made without the option pays one
// predictable branch per call.
//
// Test takes no lock: it reads the bits with atomic loads. Add and TestAndAdd
// first test the key the same way, so a key that is already present costs no
// lock and no write. Otherwise they take one of the mutexes, chosen by the
// key's hash, and set the bits with atomic ORs. Goroutines adding different
// keys rarely share a mutex; goroutines adding the same key take turns, so
// TestAndAdd reports a new key absent to exactly one of them and Count is
// exact.
//
// The mutexes are what makes that exact: the old values that the atomic ORs
// return cannot decide it alone. If goroutine A sets a key's first bit and B,
// finding it set, sets the key's second bit before A gets to it, each has set
// a bit that was clear, and nothing in the bits says which came first.
//
// The type docs of BloomFilter and ScalableBloomFilter say which other methods
// are safe during concurrent writes. A filter keeps its mode when cloned,
// combined or decoded into: decoding into a filter made with Concurrent gives
// a concurrent filter, decoding into a zero value a plain one. Read,
// ReadScalable, ReadAny and FromWords take the option too. The mode is not
// part of the binary format or of Equal.
func Concurrent() Option {
	return Option{func(s *settings) error {
		if s.concurrent {
			return paramError("Concurrent may be given only once")
		}
		s.concurrent = true
		return nil
	}}
}

// BloomFilter is a fixed-size Bloom filter of m bits and k hash functions.
// Test never reports a key that was added as absent; it reports an absent key
// as present with a probability close to ErrorRate while the filter holds at
// most Capacity keys, and with a growing probability beyond that.
//
// A zero BloomFilter is not usable: create one with New or NewWithSize, or
// decode one with UnmarshalBinary or ReadFrom. Add, Test, TestAndAdd (and
// their String, Hash and batch forms) and Clone panic on a zero BloomFilter,
// once given a key, with a message
// that says so: it never answers "present" for every key. AppendBinary,
// MarshalBinary, AppendText, MarshalText and WriteTo return an error, and
// Union, Intersection and Merge one wrapping ErrIncompatible. The accessors
// and estimates (Bits, Hashes, Seed, Capacity, ErrorRate, Count, FillRatio,
// EstimatedCount, EstimatedErrorRate, EncodedSize, Header) return 0 and
// IsFull false; AppendWords appends nothing; Clear does nothing; Equal
// reports whether the other filter is zero too.
//
// Without the Concurrent option a BloomFilter is not safe for concurrent use:
// calls that may modify it (Add, TestAndAdd, Merge, Clear, UnmarshalBinary,
// UnmarshalText, ReadFrom) must not run concurrently with any other call.
// Concurrent Test calls are safe.
//
// With Concurrent, Add, TestAndAdd and Test may run from any number of
// goroutines at once, and so may the methods that only read the filter:
// Count, IsFull, FillRatio, EstimatedCount, EstimatedErrorRate, Clone, Equal,
// Union, Intersection, EncodedSize, AppendBinary, MarshalBinary, AppendText,
// MarshalText, WriteTo, Header and AppendWords; so may Merge into f.
// While writes go on, those see the filter as it is at no single instant: all
// keys added before they started and perhaps some added meanwhile. A copy or
// encoding made then is valid and has no false negatives for the keys added
// before it started. Clear, UnmarshalBinary, UnmarshalText and ReadFrom must
// still not run concurrently with any other call.
type BloomFilter struct {
	m     uint64         // number of bits
	k     uint           // number of hash functions
	seed  uint32         // murmur3 seed
	set   *bitset.BitSet // the bits; words aliases its storage
	words []uint64       // len(words) == ceil(m/64); bits >= m are always 0
	count uint64         // Adds that set at least one new bit; 0 if conc != nil
	conc  *concurrency   // nil unless the filter is concurrent

	// blocked is set for the blocked layout (see Blocked): m is a multiple
	// of BlockBits and words starts a cache line.
	blocked bool

	capacity  uint64  // keys the filter was sized for
	errorRate float64 // target false-positive rate at capacity
}

// New returns an empty filter sized to hold capacity keys with a
// false-positive rate of at most errorRate, that is with
// FalsePositiveRate(Bits(), Hashes(), capacity) <= errorRate.
//
// It uses about -ln(errorRate)/(ln 2)^2 bits per key (9.6 bits at 1%, 14.4 at
// 0.1%) and OptimalHashes hash functions, capped at MaxHashes (Size). A filter
// for a few keys needs more bits per key: 38 bits and 20 hash functions for
// one key at 1e-7, where that estimate says 34 bits (see FalsePositiveRate).
// It returns an error wrapping ErrInvalidParameter when capacity is 0, when
// errorRate is not in (0, 1), when the filter would need more than MaxBits
// bits (the error states the lowest rate MaxBits bits reach), or when an
// option is invalid or only meant for ScalableBloomFilter.
//
// The layout is the blocked one (see Blocked) where it costs at most 10% more
// memory than the classic one, DefaultLayout(capacity, errorRate): at 1% and
// 0.1% for all but tiny filters, about twice as fast as classic once the
// filter outgrows the CPU caches. It is then sized by BlockedSize, so that
// BlockedFalsePositiveRate(Bits(), Hashes(), capacity) <= errorRate, and the
// figures above become 9.9 bits per key at 1% and 15.5 at 0.1%. Blocked or
// Classic forces a layout.
func New(capacity uint64, errorRate float64, opts ...Option) (*BloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.plainOnly(); err != nil {
		return nil, err
	}
	if !s.blocked && !s.classic {
		s.blocked = defaultBlocked(capacity, errorRate)
	}
	size := Size
	if s.blocked {
		size = BlockedSize
	}
	m, k, err := size(capacity, errorRate)
	if err != nil {
		return nil, err
	}
	return newFilter(m, k, capacity, errorRate, s)
}

// NewWithSize returns an empty filter of exactly bits bits and hashes hash
// functions. Its Capacity is the number of keys for which hashes is optimal,
// round(bits ln 2 / hashes) and at least 1, and its ErrorRate the
// false-positive rate at that capacity, FalsePositiveRate(bits, hashes,
// Capacity()), or the largest float64 below 1 where that rounds to 1. It
// returns an error wrapping ErrInvalidParameter when bits is not in
// [1, MaxBits], hashes is not in [1, MaxHashes], or an option is invalid or
// only meant for ScalableBloomFilter. With Blocked, bits must be a multiple
// of BlockBits and the ErrorRate is BlockedFalsePositiveRate's.
func NewWithSize(bits uint64, hashes uint, opts ...Option) (*BloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.plainOnly(); err != nil {
		return nil, err
	}
	if err := checkSize(bits, hashes); err != nil {
		return nil, err
	}
	if s.blocked && bits%BlockBits != 0 {
		return nil, paramError("bits must be a multiple of %d with Blocked, got %d", BlockBits, bits)
	}
	capacity := max(uint64(math.Round(float64(bits)*math.Ln2/float64(hashes))), 1)
	fpr := FalsePositiveRate
	if s.blocked {
		fpr = BlockedFalsePositiveRate
	}
	// A filter of a few bits and many hash functions (1 bit and 38 or more)
	// has a rate that rounds to 1, which the format, and so decoding its
	// own encoding, refuses: keep it in (0, 1).
	rate := min(max(fpr(bits, hashes, capacity), math.SmallestNonzeroFloat64), maxRate)
	return newFilter(bits, hashes, capacity, rate, s)
}

// maxRate is the largest float64 below 1, the largest error rate a filter
// records.
var maxRate = math.Nextafter(1, 0)

func checkSize(bits uint64, hashes uint) error {
	if bits == 0 || bits > MaxBits || (bits-1)/64 >= maxWords {
		return paramError("bits must be in [1, %d], got %d", min(MaxBits, maxWords*64), bits)
	}
	if hashes == 0 || hashes > MaxHashes {
		return paramError("hashes must be in [1, %d], got %d", MaxHashes, hashes)
	}
	return nil
}

// plainOnly reports an error if s holds options that only ScalableBloomFilter
// understands.
func (s *settings) plainOnly() error {
	if s.growth != growthNone || s.tightening != 0 {
		return paramError("Linear, Exponential and Tightening apply only to NewScalable")
	}
	return nil
}

// newFilter is the one path that allocates a filter; m and k are valid.
func newFilter(m uint64, k uint, capacity uint64, errorRate float64, s settings) (*BloomFilter, error) {
	set := newSet(m, s.blocked)
	f := &BloomFilter{
		m:         m,
		k:         k,
		seed:      s.seed,
		set:       set,
		words:     set.Words()[:(m+63)/64],
		capacity:  capacity,
		errorRate: errorRate,
		blocked:   s.blocked,
	}
	if s.concurrent {
		f.makeConcurrent(newLockTable(len(f.words)))
	}
	return f, nil
}

// concurrency is the state of a concurrent filter, which replaces
// BloomFilter.count.
type concurrency struct {
	// locks serializes writers of the same key and keeps the count, in
	// parts. It is nil in the sub-filters of a ScalableBloomFilter, which
	// lock for themselves and keep the count in count.
	locks *lockTable
	count atomic.Uint64

	// reserved is, in a sub-filter of a ScalableBloomFilter, count plus the
	// keys that have taken a slot and not yet set their bits: see
	// ScalableBloomFilter.reserve.
	reserved atomic.Uint64
}

// load returns the count.
func (c *concurrency) load() uint64 {
	if c.locks == nil {
		return c.count.Load()
	}
	var n uint64
	for i := range c.locks.stripes {
		n += c.locks.stripes[i].count.Load()
	}
	return n
}

// store sets the count; nothing else may run.
func (c *concurrency) store(n uint64) {
	if c.locks == nil {
		c.count.Store(n)
		c.reserved.Store(n)
		return
	}
	for i := range c.locks.stripes {
		c.locks.stripes[i].count.Store(0)
	}
	c.locks.stripes[0].count.Store(n)
}

// The number of stripes in a lockTable is a power of two between
// minStripes and maxStripes, about one per stripeWords words of the filter:
// the locks take about 1/8 of the filter's memory, at least 1 KiB and at
// most 64 KiB (from 512 KiB filters up). A lock is held while a new key sets
// its k bits, so two writers only wait for each other when they add keys of
// the same stripe at the same moment: 16 stripes keep that rare for the few
// writers a small filter sees, and large filters, whose writes miss the
// caches and hold a lock longer, get the 1024 that every filter had before.
const (
	minStripes  = 16
	maxStripes  = 1024
	stripeWords = 64
)

// lockTable is the striped locks of a concurrent filter.
type lockTable struct {
	stripes []stripe // len is a power of two
	shift   uint     // 64 - log2(len(stripes))
}

// newLockTable returns the locks for a filter of the given number of
// 64-bit words; a ScalableBloomFilter, which grows, passes maxStripes *
// stripeWords.
func newLockTable(words int) *lockTable {
	n := stripesFor(words)
	return &lockTable{stripes: make([]stripe, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
}

// stripesFor returns the number of stripes for a filter of the given number
// of words.
func stripesFor(words int) int {
	n := minStripes
	for n < maxStripes && n*stripeWords < words {
		n *= 2
	}
	return n
}

// stripe is a lock and the keys counted under it, alone on a cache line: a
// writer writes no memory that writers of other keys write, but for the bits.
type stripe struct {
	count atomic.Uint64
	mu    sync.Mutex
	_     [64 - 8 - unsafe.Sizeof(sync.Mutex{})]byte
}

// of returns the stripe of a key whose hash has h2 as its second half.
func (t *lockTable) of(h2 uint64) *stripe { return &t.stripes[h2>>t.shift] }

// makeConcurrent switches f, not yet shared, to concurrent mode with the
// given locks (nil for a sub-filter of a ScalableBloomFilter).
func (f *BloomFilter) makeConcurrent(locks *lockTable) {
	f.conc = &concurrency{locks: locks}
	f.conc.store(f.count)
	f.count = 0
}

// newLocks returns the locks for a copy of a filter with state c: new ones,
// or nil for a sub-filter of a ScalableBloomFilter.
func (c *concurrency) newLocks() *lockTable {
	if c.locks == nil {
		return nil
	}
	return &lockTable{stripes: make([]stripe, len(c.locks.stripes)), shift: c.locks.shift}
}

// word returns word i of the bits, with an atomic load if f is concurrent.
func (f *BloomFilter) word(i int) uint64 {
	if f.conc != nil {
		return atomic.LoadUint64(&f.words[i])
	}
	return f.words[i]
}

// golden is 2^64 divided by the golden ratio. Scaling the enhanced double
// hashing correction by it makes the correction reach the high bits that the
// multiply-shift reads.
const golden = 0x9E3779B97F4A7C15

// mixer is the multiplier of the xorshift-multiply in locate (the second
// multiplier of the SplitMix64 finalizer).
const mixer = 0x94D049BB133111EB

// locate maps the hash value x of one position onto [0, m): an
// xorshift-multiply, then a multiply-shift.
//
// The mix matters for small filters. Double hashing makes the positions of a
// key an affine function of (h1, h2); under a bare multiply-shift two keys
// whose h1 and h2 are close get the same k positions, with a probability of
// the order of 1/m^2 per pair of keys. At m = 336 bits, k = 23, n = 10 that
// alone made the false-positive rate 10x its 1e-7 target. The xorshift is not
// affine, so after it positions of different keys no longer move together.
func locate(x, m uint64) uint64 {
	p, _ := bits.Mul64(mix(x), m)
	return p
}

// mix is the xorshift-multiply of locate, for callers that reuse it for
// several m.
func mix(x uint64) uint64 {
	return (x ^ x>>32) * mixer
}

// AppendLocations appends to dst the hashes bit positions, each in [0, bits),
// that a filter of bits bits, hashes hash functions and seed seed sets for key
// and returns the extended slice. They are exactly the positions Add sets and
// Test reads, in the same order, and they are part of the format promise:
// they never change within a format version. Positions may repeat.
//
// With (h1, h2) the 128-bit murmur3 hash of key with seed, and all
// arithmetic mod 2^64, position i is ((z_i * 0x94D049BB133111EB) * bits) >> 64
// with z_i = x_i ^ (x_i >> 32), x_0 = h1, x_{i+1} = x_i + y_i, y_0 = h2 and
// y_{i+1} = y_i + (i+1)*0x9E3779B97F4A7C15.
func AppendLocations(dst []uint64, key []byte, bits uint64, hashes uint, seed uint32) []uint64 {
	// Every loop over positions in this package (add, test, their
	// concurrent forms, anyHolds) writes this recurrence out by hand, on
	// purpose: a shared helper measured about 8% slower on Test of present
	// keys. TestGoldenLocations, TestNoFalseNegatives and
	// TestScalableSideBySideProbing keep the copies in step.
	h1, h2 := murmur.Sum128(key, seed)
	return appendPositions(dst, h1, h2, bits, hashes)
}

func appendPositions(dst []uint64, h1, h2 uint64, m uint64, k uint) []uint64 {
	x, y, c := h1, h2, uint64(0)
	for range k {
		p := locate(x, m)
		dst = append(dst, p)
		c += golden
		x += y
		y += c
	}
	return dst
}

// bytesOf returns the bytes of s without copying. The result must not be
// modified; murmur3 only reads it.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

const errZeroValue = "bloom: use of a zero BloomFilter (create one with New or NewWithSize)"

// add sets the positions of the key hashed to (h1, h2) and reports whether
// all of them were already set. Count goes up when at least one was not.
//
// The compiler (Go 1.26) spills the loaded word of the loop to the stack and
// reloads it, and spills y, for lack of registers around the MULQ of locate;
// writing the update as old := w[i]; w[i] = old | mask did not change that.
// The reloads hit the store buffer and are off the path of the cache misses.
func (f *BloomFilter) add(h1, h2 uint64) (present bool) {
	if f.conc != nil {
		return f.addConcurrent(h1, h2)
	}
	if f.k == 0 {
		panic(errZeroValue)
	}
	if f.blocked {
		return f.addBlocked(h1, h2)
	}
	w, m := f.words, f.m
	var fresh uint64
	x, y, c := h1, h2, uint64(0)
	for range f.k {
		p := locate(x, m)
		i, mask := p>>6, uint64(1)<<(p&63)
		fresh |= mask &^ w[i]
		w[i] |= mask
		c += golden
		x += y
		y += c
	}
	if fresh == 0 {
		return true
	}
	f.count++
	return false
}

// test reports whether every position of the key hashed to (h1, h2) is set.
// f is not concurrent: callers check. It is not inlined into Test (go build
// -gcflags=-m: cost 91, budget 80), and inlining it would save one call in a
// path that pays a murmur3 pass and, on large filters, cache misses.
func (f *BloomFilter) test(h1, h2 uint64) bool {
	if f.k == 0 || f.blocked {
		if f.k == 0 {
			panic(errZeroValue)
		}
		return f.testBlocked(h1, h2)
	}
	w, m := f.words, f.m
	x, y, c := h1, h2, uint64(0)
	for range f.k {
		p := locate(x, m)
		if w[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		c += golden
		x += y
		y += c
	}
	return true
}

// testConcurrent is test with atomic loads.
func (f *BloomFilter) testConcurrent(h1, h2 uint64) bool {
	if f.blocked {
		return f.testBlockedConcurrent(h1, h2)
	}
	w, m := f.words, f.m
	x, y, c := h1, h2, uint64(0)
	for range f.k {
		p := locate(x, m)
		if atomic.LoadUint64(&w[p>>6])&(1<<(p&63)) == 0 {
			return false
		}
		c += golden
		x += y
		y += c
	}
	return true
}

// unsetConcurrent returns a mask of the positions of the key hashed to
// (h1, h2) whose bits are clear: bit i for the i-th position. Unlike
// testConcurrent it loads every position, so that the cache misses overlap,
// and setConcurrent then finds the words in the cache: an atomic OR waits
// for its memory before anything after it runs.
func (f *BloomFilter) unsetConcurrent(h1, h2 uint64) (unset uint64) {
	if f.blocked {
		return f.unsetBlocked(h1, h2)
	}
	w, m := f.words, f.m
	x, y, c := h1, h2, uint64(0)
	for i := range f.k {
		p := locate(x, m)
		unset |= (atomic.LoadUint64(&w[p>>6])>>(p&63)&1 ^ 1) << i
		c += golden
		x += y
		y += c
	}
	return unset
}

// setConcurrent sets with atomic ORs the positions of the key hashed to
// (h1, h2) that unset marks, as unsetConcurrent returns it, and reports
// whether it set a bit that was clear. The other positions were set and stay
// set. It skips the OR, and so taking the cache line from other cores, for
// bits that have been set since.
func (f *BloomFilter) setConcurrent(h1, h2, unset uint64) (fresh bool) {
	if f.blocked {
		return f.setBlocked(h1, h2, unset)
	}
	w, m := f.words, f.m
	var flipped uint64
	x, y, c := h1, h2, uint64(0)
	for i := 0; unset>>i != 0; i++ {
		if unset>>i&1 != 0 {
			p := locate(x, m)
			word, mask := &w[p>>6], uint64(1)<<(p&63)
			if atomic.LoadUint64(word)&mask == 0 {
				flipped |= mask &^ atomic.OrUint64(word, mask)
			}
		}
		c += golden
		x += y
		y += c
	}
	return flipped != 0
}

// addConcurrent is add for a concurrent filter. A key that tests present
// needs no lock. Otherwise the lock of the key serializes it with callers
// adding the same key, so exactly one of them sets a clear bit and counts it.
func (f *BloomFilter) addConcurrent(h1, h2 uint64) (present bool) {
	unset := f.unsetConcurrent(h1, h2)
	if unset == 0 {
		return true
	}
	st := f.conc.locks.of(h2)
	st.mu.Lock()
	fresh := f.setConcurrent(h1, h2, unset)
	if fresh {
		st.count.Add(1)
	}
	st.mu.Unlock()
	return !fresh
}

// Add inserts key. Afterwards Test(key) reports true. It hashes key once and
// does not allocate.
func (f *BloomFilter) Add(key []byte) {
	// Add, AddString, TestAndAdd and TestAndAddString are small enough to
	// be inlined: the caller calls addKey directly, as Test calls testKey.
	addKey(f, key)
}

// AddString inserts key, like Add, without copying or allocating.
func (f *BloomFilter) AddString(key string) {
	addKey(f, bytesOf(key))
}

// addKey is TestAndAdd, for a key or (with K uint64) a hash; it is generic
// so that AddHash and the other hashed calls share its code at the cost of
// Add. The single-key calls go straight to the blocked code
// of a filter that is not concurrent, one call less per key than through
// add (which cannot be inlined), and to addBlockedFast, one less again than
// through addBlocked.
func addKey[K keyType](f *BloomFilter, key K) (present bool) {
	h1, h2 := murmur.Sum128(keyBytes(&key), f.seed)
	if !f.blocked || f.conc != nil {
		return f.add(h1, h2)
	}
	if useBlockbits(f.k) {
		// addWide written out: through the call Add cost 1.06-1.14x
		// blobloom's time at 10^7 keys, p = 0.001 (six runs), and
		// 1.01-1.09x without it (three; builds alternated).
		blk := f.block(blockOf(h1, f.m/BlockBits))
		present, ok := blockbits.Add(blk, h2, uint64(f.k-fieldsPerWord))
		if !ok {
			return f.addBlockedRepeat(h1, h2)
		}
		if !present {
			f.count++
		}
		return present
	}
	r1, r2, present, ok := f.addBlockedFast(h1, h2)
	if !ok {
		return f.addBlockedRepeat(r1, r2)
	}
	return present
}

// Test reports whether key may be in the filter: false means key was
// definitely never added; true means it probably was (it is wrong with a
// probability of about EstimatedErrorRate).
func (f *BloomFilter) Test(key []byte) bool {
	// Test and TestString are small enough to be inlined: the caller calls
	// testKey directly, one call per key less.
	return testKey(f, key)
}

// TestString is Test for a string key, without copying or allocating.
func (f *BloomFilter) TestString(key string) bool {
	return testKey(f, bytesOf(key))
}

// testKey is Test, for a key or (with K uint64) a hash, like addKey. The blocked test is testBlocked written out again rather
// than called: at 10^7 random 16-byte keys, p = 0.01, absent keys cost
// 1.2-1.5x blobloom's time through a call to the same code and 1.0-1.2x
// with it here (one quiet 2-vCPU machine, variants interleaved). Why one
// call per key weighs this much is not established (no performance
// counters on that machine); TestBlockedTestMatchesMask keeps the copies
// equal.
func testKey[K keyType](f *BloomFilter, key K) bool {
	h1, h2 := murmur.Sum128(keyBytes(&key), f.seed)
	if f.conc != nil {
		return f.testConcurrent(h1, h2)
	}
	if !f.blocked {
		return f.test(h1, h2)
	}
	blk, k := f.block(blockOf(h1, f.m/BlockBits)), f.k
	q := h2 >> 9 // the second candidate, the first again when k = 1
	if k == 1 {
		q = h2
	}
	if blk[h2>>6&7]>>(h2&63)&(blk[q>>6&7]>>(q&63))&1 == 0 {
		return false
	}
	// The third to the min(k, 7)th candidates written out, as in
	// addBlockedFast (a loop over them cost 12 instructions per bit).
	all := uint64(1)
	switch min(k, fieldsPerWord) {
	case 7:
		all &= blk[h2>>60&7] >> (h2 >> 54 & 63)
		fallthrough
	case 6:
		all &= blk[h2>>51&7] >> (h2 >> 45 & 63)
		fallthrough
	case 5:
		all &= blk[h2>>42&7] >> (h2 >> 36 & 63)
		fallthrough
	case 4:
		all &= blk[h2>>33&7] >> (h2 >> 27 & 63)
		fallthrough
	case 3:
		all &= blk[h2>>24&7] >> (h2 >> 18 & 63)
	}
	if all&1 == 0 {
		return false
	}
	return k <= fieldsPerWord && distinctFields(h2&fieldBits, k) || testBlockRest(blk, h2, k)
}

// TestAndAdd inserts key and reports whether it was probably present before
// the call (with Test's meaning of true and false). The key is present
// afterwards either way. It costs one hash pass, like Add. On a Concurrent
// filter, of several goroutines calling it at once with the same new key,
// exactly one gets false.
func (f *BloomFilter) TestAndAdd(key []byte) bool {
	return addKey(f, key)
}

// TestAndAddString is TestAndAdd for a string key, without copying or
// allocating.
func (f *BloomFilter) TestAndAddString(key string) bool {
	return addKey(f, bytesOf(key))
}

// Batch calls.
//
// A batch call is the loop of single-key calls over its keys, in order,
// done faster: the same answers, the same bits and counts afterwards, the
// same growth, the same exactly-once answers under concurrency. On a
// BloomFilter of at least batchMinBits bits the keys go in rounds of a few.
// TestMany hashes a round, prefetches the words that its keys' first
// positions fall in, all at once, and only then tests the keys; AddMany and
// TestAndAddMany are a software pipeline that hashes and prefetches a few
// keys ahead of the one it adds. Either way the keys are then tested or
// added one after the other, in order, by the single-key code. So the cache
// misses of several keys overlap instead of coming one after another, and
// the semantics are those of the single calls by construction.

// keyType is what a batch call takes keys as: bytes, strings, or hashes
// (the hashed calls, such as AddHash).
type keyType interface{ []byte | string | uint64 }

// keyBytes returns the bytes of *k that murmur3 hashes, without copying:
// those of a string or a slice, or for a hash (K uint64) its 8 bytes, which
// it puts in little-endian order in *k (a no-op on little-endian machines),
// so that the bits of a hash are the same on every machine.
func keyBytes[K keyType](k *K) []byte {
	// A uint64 is the only key type of 8 bytes (a string has 16, a slice
	// 24). The compiler makes one copy of a generic function per shape of
	// K and knows the size in each (go build -gcflags=-m shows the test as
	// uintptr(24) == uintptr(8)), so it costs nothing at run time.
	if unsafe.Sizeof(*k) == 8 {
		b := (*[8]byte)(unsafe.Pointer(k))
		binary.LittleEndian.PutUint64(b[:], *(*uint64)(unsafe.Pointer(k)))
		return b[:]
	}
	// A string and a slice both start with the pointer to their bytes and
	// their length; murmur3 only reads the bytes.
	b := (*struct {
		p *byte
		n int
	})(unsafe.Pointer(k))
	return unsafe.Slice(b.p, b.n)
}

// hashed is the 128-bit murmur3 hash of a key.
type hashed struct{ h1, h2 uint64 }

// hashRound hashes keys into h, which is at least as long.
func hashRound[K keyType](h []hashed, keys []K, seed uint32) {
	h = h[:len(keys)]
	for i, k := range keys {
		h[i].h1, h[i].h2 = murmur.Sum128(keyBytes(&k), seed)
	}
}

// batchResults returns results[:n], reusing its storage, if it has room for n
// answers, and a new slice of n otherwise.
func batchResults(results []bool, n int) []bool {
	if cap(results) >= n {
		return results[:n]
	}
	return make([]bool, n)
}

// The rounds of the batch calls, in keys, chosen by BenchmarkBatch at 10^7
// keys (p = 0.01), batches of 1,000 keys, with the other choices measured
// beside them, on the 2-vCPU AMD EPYC VM of the README (speed-ups over the
// loop of single calls; the machine is shared, so they spread widely).
//
// TestMany: for absent keys, two-pass rounds of 16 were 2.1-2.8x faster
// than the loop of Test (10^8: 2.3-3.2x, median 3.1x); prefetching the first
// eight positions of every key at once only 1.4-1.7x, the first two only
// 1.9-2.0x. Present keys came out between 0.9x and 1.2x (10^8: 1.4-1.7x).
// Pipelining TestMany like AddMany (hash and prefetch the first two
// positions, screen those and prefetch the rest a few rounds later, test a
// few rounds after that) helps present keys, but not absent keys at 10^8:
// in rounds of 2 with stages 3 rounds apart, six runs each side by side
// with the rounds of 16, medians 3.05x / 2.35x (absent / present) at 10^7
// against 2.66x / 1.08x, but 2.49x / 1.72x at 10^8 against 3.10x / 1.44x;
// rounds of 4 or 8 traded present keys at 10^7 for absent keys at 10^8
// (rounds of 8: 2.9-3.3x / 1.3-1.7x at 10^7, 2.8-3.0x / 1.5-1.6x at 10^8).
// Prefetching all positions of every key in the first stage, which present
// keys need anyway, measured 1.5-2.2x / 1.5-1.7x at 10^7: absent keys then
// pay for seven lines instead of about two.
//
// AddMany: unpipelined rounds of 8 that prefetch up to eight positions per
// key measured 1.4-1.7x (of 16 1.45x, of 32 1.4x; PREFETCHW instead of
// PREFETCHT0 no difference). Pipelined, with keys hashed and prefetched 8
// ahead of the one added (rounds of 1), 2.9-3.3x, 6 or 12 ahead about the
// same, 16 ahead 2.9-3.2x, rounds of 2 four ahead 3.1-3.3x, rounds of 4 two
// ahead 1.7-2.1x, rounds of 8 or 16 one ahead 1.3-1.7x; at 10^8 8 ahead
// measured about the same as the unpipelined rounds of 8 (2.0-2.4x against
// 1.8-2.3x).
const (
	// testRound is the round of TestMany. Its first pass prefetches the
	// first two positions of every key, its second tests them without a
	// branch and prefetches up to addDepth positions of the keys still in
	// the running, and its third runs the single-key test on those.
	testRound = 16

	// addRound is the round of AddMany and TestAndAddMany: they hash a
	// round and prefetch up to addDepth positions of each of its keys
	// addAhead rounds before they add it. Rounds of one key are best: the
	// pipeline then keeps a steady addAhead keys' worth of lines in flight.
	addRound = 1

	// addAhead is how many rounds ahead of the one being added AddMany and
	// TestAndAddMany hash and prefetch.
	addAhead = 8

	// addDepth is the number of positions of each key that AddMany and
	// TestAndAddMany prefetch (all of them at k <= addDepth).
	addDepth = 8
)

// batchMinBits is the size from which the batch calls of BloomFilter go in
// rounds; smaller filters stay in the caches, where the rounds cost more than
// they save (TestMany of present keys measured 0.6x at 10^6 keys, 1.2 MiB),
// and get the loop of single calls. A variable only so that tests can run the
// rounds on small filters.
var batchMinBits uint64 = 1 << 24

// blockedBatchMinBits is batchMinBits for blocked filters, whose rounds cost
// one prefetch per key: they already beat the loop of single calls on a
// filter of 10^6 keys, 1.2-1.9 MiB, once it no longer fits the 1 MiB L2
// cache of the machine of README (see the notes beside testManyBlocked).
var blockedBatchMinBits uint64 = 1 << 23

// batchMin returns the size from which the batch calls of f go in rounds.
func (f *BloomFilter) batchMin() uint64 {
	if f.blocked {
		return blockedBatchMinBits
	}
	return batchMinBits
}

// The alive mask of a TestMany round has a bit per key.
var _ [64 - testRound]struct{}

// firstPair returns the first two positions of the key hashed to h in a
// filter of m bits and k hashes (the first one twice if k is 1).
func firstPair(h hashed, m uint64, k uint) (p0, p1 uint64) {
	p0 = locate(h.h1, m)
	p1 = p0
	if k > 1 {
		p1 = locate(h.h1+h.h2, m)
	}
	return p0, p1
}

// appendWords appends to idx the words of positions from, from+1, ... below
// to of the key hashed to h in f.
func (f *BloomFilter) appendWords(idx []uint64, h hashed, from, to uint) []uint64 {
	m := f.m
	x, y, c := h.h1, h.h2, uint64(0)
	for i := range to {
		if i >= from {
			idx = append(idx, locate(x, m)>>6)
		}
		c += golden
		x += y
		y += c
	}
	return idx
}

func testMany[K keyType](f *BloomFilter, keys []K, results []bool) []bool {
	results = batchResults(results, len(keys))
	if len(keys) != 0 && f.k == 0 {
		panic(errZeroValue)
	}
	if f.m < f.batchMin() {
		for i, key := range keys {
			h1, h2 := murmur.Sum128(keyBytes(&key), f.seed)
			if f.conc == nil {
				results[i] = f.test(h1, h2)
			} else {
				results[i] = f.testConcurrent(h1, h2)
			}
		}
		return results
	}
	if f.blocked {
		return testManyBlocked(f, keys, results)
	}
	var (
		h     [testRound]hashed
		pairs [testRound][2]uint64
		idx   [testRound * addDepth]uint64
	)
	w, m, k := f.words, f.m, f.k
	for start := 0; start < len(keys); start += testRound {
		round := keys[start:min(start+testRound, len(keys))]
		out := results[start : start+len(round)]
		hashRound(h[:], round, f.seed)
		// First pass: the words of the first two positions of every key.
		n := 0
		for i := range round {
			p0, p1 := firstPair(h[i], m, k)
			pairs[i] = [2]uint64{p0, p1}
			idx[n], idx[n+1] = p0>>6, p1>>6
			n += 2
		}
		prefetch.Words(w, idx[:n])
		// Second pass: rule out the keys with a clear bit among those two,
		// without a branch on the bits, and prefetch further positions of
		// the others. Loads are atomic for concurrent filters (plain loads
		// on amd64).
		var alive uint64
		n = 0
		for i := range round {
			p0, p1 := pairs[i][0], pairs[i][1]
			hold := atomic.LoadUint64(&w[p0>>6]) >> (p0 & 63) & (atomic.LoadUint64(&w[p1>>6]) >> (p1 & 63)) & 1
			alive |= hold << i
			if hold != 0 && k > 2 {
				n = len(f.appendWords(idx[n:n], h[i], 2, min(k, addDepth))) + n
			}
		}
		if n != 0 {
			prefetch.Words(w, idx[:n])
		}
		// Third pass: the single-key test of the keys still in the running.
		for i := range out {
			if alive>>i&1 == 0 {
				out[i] = false
			} else if f.conc == nil {
				out[i] = f.test(h[i].h1, h[i].h2)
			} else {
				out[i] = f.testConcurrent(h[i].h1, h[i].h2)
			}
		}
	}
	return results
}

// addFlight is a round of AddMany in the pipeline: its keys are
// keys[start:start+n], hashed to h.
type addFlight struct {
	start, n int
	h        [addRound]hashed
}

// addMany adds keys in order; if results is not nil, it records in it what
// TestAndAdd would have returned for each. The pipeline hashes and prefetches
// ahead, but adds the keys one by one in their order, with the single-key
// code, so it is the loop of Add (or TestAndAdd) by construction.
func addMany[K keyType](f *BloomFilter, keys []K, results []bool) {
	if len(keys) != 0 && f.k == 0 {
		panic(errZeroValue)
	}
	if f.m < f.batchMin() {
		for i, key := range keys {
			present := f.add(murmur.Sum128(keyBytes(&key), f.seed))
			if results != nil {
				results[i] = present
			}
		}
		return
	}
	if f.blocked {
		addManyBlocked(f, keys, results)
		return
	}
	var (
		ring [addAhead + 1]addFlight // round s is in ring[s%(addAhead+1)]
		idx  [addRound * addDepth]uint64
	)
	depth := min(f.k, addDepth)
	rounds := (len(keys) + addRound - 1) / addRound
	for s := range rounds + addAhead {
		// Hash round s and prefetch its words.
		if s < rounds {
			r := &ring[s%(addAhead+1)]
			r.start = s * addRound
			r.n = min(addRound, len(keys)-r.start)
			hashRound(r.h[:], keys[r.start:r.start+r.n], f.seed)
			n := 0
			for i := range r.n {
				n = len(f.appendWords(idx[n:n], r.h[i], 0, depth)) + n
			}
			prefetch.Words(f.words, idx[:n])
		}
		// Add round s-addAhead, whose words were prefetched before.
		if s >= addAhead {
			r := &ring[(s-addAhead)%(addAhead+1)]
			if results == nil {
				for i := range r.n {
					f.add(r.h[i].h1, r.h[i].h2)
				}
				continue
			}
			out := results[r.start : r.start+r.n]
			for i := range out {
				out[i] = f.add(r.h[i].h1, r.h[i].h2)
			}
		}
	}
}

// AddMany inserts every key of keys, in order, like calling Add on each. On a
// filter larger than the caches it overlaps the cache misses of several keys,
// which makes it faster than that loop. It does not allocate.
func (f *BloomFilter) AddMany(keys [][]byte) { addMany(f, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
func (f *BloomFilter) AddManyStrings(keys []string) { addMany(f, keys, nil) }

// TestMany reports, for every key of keys, whether it may be in the filter,
// with Test's meaning of true and false: results[i] is Test(keys[i]).
//
// Like every batch call returning answers, it fills results[:len(keys)] and
// returns that slice, reusing the storage of results when cap(results) is at
// least len(keys) (then it does not allocate) and allocating a new slice
// otherwise; pass nil to always allocate, or results[:0] of a slice kept
// between calls to reuse it.
//
// On a filter larger than the caches it overlaps the cache misses of several
// keys, which makes it faster than a loop of Test, most of all for absent
// keys. The batch calls are safe for concurrent use wherever their single
// calls are.
func (f *BloomFilter) TestMany(keys [][]byte, results []bool) []bool {
	return testMany(f, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
func (f *BloomFilter) TestManyStrings(keys []string, results []bool) []bool {
	return testMany(f, keys, results)
}

// TestAndAddMany inserts every key of keys, in order, and reports for each
// whether it was probably present before: results[i] is what TestAndAdd
// would have returned for keys[i] had the keys been added one by one, so a
// key repeated within keys is reported present from its second occurrence on.
// It fills and returns results like TestMany. On a Concurrent filter, of
// several goroutines adding the same new key at once, by this call or any
// other, exactly one hears false.
func (f *BloomFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	results = batchResults(results, len(keys))
	addMany(f, keys, results)
	return results
}

// TestAndAddManyStrings is TestAndAddMany for string keys, without copying
// them.
func (f *BloomFilter) TestAndAddManyStrings(keys []string, results []bool) []bool {
	results = batchResults(results, len(keys))
	addMany(f, keys, results)
	return results
}

// Bits returns m, the size of the filter in bits. It occupies Bits()/8 bytes,
// rounded up to whole 64-bit words.
func (f *BloomFilter) Bits() uint64 { return f.m }

// Hashes returns k, the number of bit positions each key sets.
func (f *BloomFilter) Hashes() uint { return f.k }

// Seed returns the murmur3 seed of the filter.
func (f *BloomFilter) Seed() uint32 { return f.seed }

// Capacity returns the number of keys the filter was sized for.
func (f *BloomFilter) Capacity() uint64 { return f.capacity }

// ErrorRate returns the target false-positive rate at Capacity keys.
func (f *BloomFilter) ErrorRate() float64 { return f.errorRate }

// Count returns the number of Add and TestAndAdd calls that set at least one
// new bit: repeated keys are not counted, and a new key whose bits were all
// set already (a false positive) is not counted either. After Union or
// Intersection it is the EstimatedCount of the result. A Concurrent filter
// keeps the count in parts, one per lock, so that writers share no counter;
// Count then sums them, which takes up to about a microsecond.
func (f *BloomFilter) Count() uint64 {
	if f.conc != nil {
		return f.conc.load()
	}
	return f.count
}

// setCount sets what Count returns; f must not be shared.
func (f *BloomFilter) setCount(n uint64) {
	if f.conc != nil {
		f.conc.store(n)
		return
	}
	f.count = n
}

// IsFull reports whether the filter holds Capacity keys or more, so that its
// false-positive rate is at or above ErrorRate. It costs what Count costs.
func (f *BloomFilter) IsFull() bool { return f.k != 0 && f.Count() >= f.capacity }

// setBits returns the number of set bits. It is O(m/64).
func (f *BloomFilter) setBits() uint64 {
	if f.conc != nil {
		var n int
		for i := range f.words {
			n += bits.OnesCount64(atomic.LoadUint64(&f.words[i]))
		}
		return uint64(n)
	}
	if f.set == nil {
		return 0 // a zero BloomFilter
	}
	return uint64(f.set.Count())
}

// FillRatio returns the fraction of bits that are set, in [0, 1]. It is
// O(m/64): it counts the bits.
func (f *BloomFilter) FillRatio() float64 {
	if f.m == 0 {
		return 0
	}
	return float64(f.setBits()) / float64(f.m)
}

// EstimatedCount returns the number of distinct keys the filter most likely
// holds, computed from its fill with EstimateCount. Unlike Count it also works
// for filters built by Union and Intersection. It is math.MaxUint64 when every
// bit is set, and O(m/64).
func (f *BloomFilter) EstimatedCount() uint64 {
	return f.estimatedCountOf(f.setBits())
}

func estimatedCount(m uint64, k uint, set uint64) uint64 {
	e := EstimateCount(m, k, set)
	if e >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(e))
}

// EstimatedErrorRate returns the probability that Test reports an absent key
// as present at the current fill: FillRatio()^k. It is O(m/64).
func (f *BloomFilter) EstimatedErrorRate() float64 {
	if f.k == 0 {
		return 0 // a zero BloomFilter; Pow(0, 0) is 1
	}
	if f.blocked {
		return f.blockedErrorRate()
	}
	return math.Pow(f.FillRatio(), float64(f.k))
}

// Clear removes every key and resets Count to 0, keeping the size. O(m/64).
// It must not run concurrently with any other call, even on a concurrent
// filter.
func (f *BloomFilter) Clear() {
	clear(f.words)
	f.setCount(0)
}

// Clone returns an independent copy of the filter, concurrent if f is (with
// its own locks). O(m/64).
func (f *BloomFilter) Clone() *BloomFilter {
	if f.k == 0 {
		panic(errZeroValue)
	}
	g := f.snapshot()
	if f.conc != nil {
		g.makeConcurrent(f.conc.newLocks())
	}
	return g
}

// snapshot returns a plain (not concurrent) copy of f. The count of a copy of
// a concurrent f is at most its set bits, as sharedCount explains. O(m/64).
func (f *BloomFilter) snapshot() *BloomFilter {
	g := *f
	if f.conc == nil {
		g.set = cloneSet(f.set, f.m, f.blocked)
		g.words = g.set.Words()[:len(f.words)]
		return &g
	}
	count := f.conc.load() // before the bits: see sharedCount
	g.conc = nil
	g.set = newSet(f.m, f.blocked)
	g.words = g.set.Words()[:len(f.words)]
	var set int
	for i := range g.words {
		g.words[i] = atomic.LoadUint64(&f.words[i])
		set += bits.OnesCount64(g.words[i])
	}
	g.count = min(count, uint64(set))
	return &g
}

// sharedCount returns the count to record, before its bits, in a copy or
// encoding of f made while other goroutines may be adding to it: Count, but
// at most the number of set bits, an invariant decoders check. Every filter,
// standalone or a sub-filter of a ScalableBloomFilter, counts a key only once
// it has set a bit that was clear, and bits are only ever set, so reading
// Count before the bits is enough; the min is a guard.
func (f *BloomFilter) sharedCount() uint64 {
	if f.conc == nil {
		return f.count
	}
	return min(f.conc.load(), f.setBits())
}

// Equal reports whether f and other are the same filter: the same size, hash
// count, seed, layout, capacity, error rate, count and bits, which is when they encode
// to the same bytes. Whether they are concurrent does not matter. O(m/64).
func (f *BloomFilter) Equal(other *BloomFilter) bool {
	if f == nil || other == nil {
		return f == other
	}
	if f.m != other.m || f.k != other.k || f.seed != other.seed || f.blocked != other.blocked || f.Count() != other.Count() ||
		f.capacity != other.capacity || math.Float64bits(f.errorRate) != math.Float64bits(other.errorRate) {
		return false
	}
	if f.conc != nil || other.conc != nil {
		for i := range f.words {
			if f.word(i) != other.word(i) {
				return false
			}
		}
		return true
	}
	for i, w := range f.words {
		if other.words[i] != w {
			return false
		}
	}
	return true
}

// compatible returns an error wrapping ErrIncompatible unless f and other can
// be combined.
func (f *BloomFilter) compatible(other *BloomFilter) error {
	switch {
	case f.k == 0 || other == nil || other.k == 0:
		return fmt.Errorf("%w: nil or zero BloomFilter", ErrIncompatible)
	case f.m != other.m:
		return fmt.Errorf("%w: %d bits vs %d bits", ErrIncompatible, f.m, other.m)
	case f.k != other.k:
		return fmt.Errorf("%w: %d hashes vs %d hashes", ErrIncompatible, f.k, other.k)
	case f.seed != other.seed:
		return fmt.Errorf("%w: seed %#x vs seed %#x", ErrIncompatible, f.seed, other.seed)
	case f.blocked != other.blocked:
		return fmt.Errorf("%w: blocked vs classic layout", ErrIncompatible)
	}
	return nil
}

// Union returns a new filter holding the keys of both f and other: Test on it
// reports true for every key added to either. Its capacity, error rate and
// concurrency are f's; its Count is its EstimatedCount. f and other are unchanged. It returns
// an error wrapping ErrIncompatible if their sizes, hash counts, seeds or
// layouts differ. O(m/64).
func (f *BloomFilter) Union(other *BloomFilter) (*BloomFilter, error) {
	return f.combine(other, (*bitset.BitSet).InPlaceUnion)
}

// Intersection returns a new filter whose bits are set where both f's and
// other's are: Test on it reports true for every key added to both (and, with
// a somewhat higher false-positive rate than either, for some keys added to
// only one). Its capacity, error rate and concurrency are f's; its Count is
// its EstimatedCount. f and other are unchanged. It returns an error wrapping
// ErrIncompatible if their sizes, hash counts, seeds or layouts differ.
// O(m/64).
func (f *BloomFilter) Intersection(other *BloomFilter) (*BloomFilter, error) {
	return f.combine(other, (*bitset.BitSet).InPlaceIntersection)
}

func (f *BloomFilter) combine(other *BloomFilter, op func(a, b *bitset.BitSet)) (*BloomFilter, error) {
	if err := f.compatible(other); err != nil {
		return nil, err
	}
	g := f.snapshot()
	if other.conc != nil {
		other = other.snapshot()
	}
	op(g.set, other.set)
	g.words = g.set.Words()[:len(f.words)]
	set := g.setBits()
	// Count never exceeds the number of set bits, an invariant decoders check.
	g.count = min(g.estimatedCountOf(set), set)
	if f.conc != nil {
		g.makeConcurrent(f.conc.newLocks())
	}
	return g, nil
}

// The binary format of a BloomFilter, version 1, is written out in the
// package doc, where go doc shows it: it is the compatibility
// promise. These are its constants.
const (
	magic         = "BLMF"
	formatVersion = 1
	headerSize    = 48
	crcSize       = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// EncodedSize returns the length in bytes of the filter's binary encoding.
// It is 0 for a zero BloomFilter, which has no encoding.
func (f *BloomFilter) EncodedSize() int {
	if f.k == 0 {
		return 0
	}
	return int(format.V3Size(f.m))
}

// AppendBinary appends the binary encoding of the filter to b and returns the
// extended slice (encoding.BinaryAppender).
func (f *BloomFilter) AppendBinary(b []byte) ([]byte, error) {
	if f.k == 0 {
		return b, errors.New(errZeroValue)
	}
	return format.AppendV3(b, f.v3Header(), f.words, f.conc != nil), nil
}

// v3Header returns the header of f's encoding. It reads the count before
// any bit: see sharedCount.
func (f *BloomFilter) v3Header() format.V3Header {
	return format.V3Header{
		Blocked: f.blocked, Seed: f.seed, K: f.k, M: f.m, Capacity: f.capacity,
		ErrorRate: f.errorRate, Count: f.sharedCount(),
	}
}

// allocWords returns n zero words for a decoded filter, cache-line aligned
// if blocked (as newSet makes them).
func allocWords(blocked bool) func(n uint64) []uint64 {
	if blocked {
		return alignedWords
	}
	return hugepage.Words
}

// fromV3 is header.build for a version-3 header.
func fromV3(h format.V3Header, words []uint64) (*BloomFilter, error) {
	hd := header{seed: h.Seed, k: h.K, m: h.M, capacity: h.Capacity, errorRate: h.ErrorRate, count: h.Count, blocked: h.Blocked}
	return hd.build(words)
}

// MarshalBinary returns the binary encoding of the filter described in the
// package doc (encoding.BinaryMarshaler). It errors only for a zero BloomFilter.
func (f *BloomFilter) MarshalBinary() ([]byte, error) {
	return f.AppendBinary(make([]byte, 0, f.EncodedSize()))
}

// header is a decoded, validated header.
type header struct {
	seed      uint32
	k         uint
	m         uint64
	capacity  uint64
	errorRate float64
	count     uint64
	blocked   bool // format version 2, layout 1
}

func (h *header) words() uint64 { return (h.m + 63) / 64 }

// parseHeader validates the fixed-size header; it allocates nothing.
func parseHeader(b []byte) (header, error) {
	var h header
	if string(b[0:4]) != magic {
		return h, corrupt("bad magic %q", b[0:4])
	}
	switch v, fl := binary.LittleEndian.Uint16(b[4:]), binary.LittleEndian.Uint16(b[6:]); {
	case v == blockedVersion && fl == layoutBlocked:
		h.blocked = true
	case v == blockedVersion:
		return h, corrupt("unknown layout %#x", fl)
	case v != formatVersion:
		return h, corrupt("unsupported format version %d (want %d or %d)", v, formatVersion, blockedVersion)
	case fl != 0:
		return h, corrupt("unknown flags %#x", fl)
	}
	h.seed = binary.LittleEndian.Uint32(b[8:])
	k := binary.LittleEndian.Uint32(b[12:])
	h.m = binary.LittleEndian.Uint64(b[16:])
	h.capacity = binary.LittleEndian.Uint64(b[24:])
	h.errorRate = math.Float64frombits(binary.LittleEndian.Uint64(b[32:]))
	h.count = binary.LittleEndian.Uint64(b[40:])
	if k == 0 || k > uint32(MaxHashes) {
		return h, corrupt("hash count %d not in [1, %d]", k, MaxHashes)
	}
	h.k = uint(k)
	if err := checkSize(h.m, h.k); err != nil {
		return h, corrupt("size %d bits not in [1, %d]", h.m, MaxBits)
	}
	if h.blocked && h.m%BlockBits != 0 {
		return h, corrupt("blocked size %d bits not a multiple of %d", h.m, BlockBits)
	}
	if h.capacity == 0 {
		return h, corrupt("capacity 0")
	}
	if !(h.errorRate > 0 && h.errorRate < 1) {
		return h, corrupt("error rate %v not in (0, 1)", h.errorRate)
	}
	if h.count > h.m {
		return h, corrupt("count %d exceeds %d bits", h.count, h.m)
	}
	return h, nil
}

// build checks the payload words against the header and returns the filter.
// words is owned by the result.
func (h *header) build(words []uint64) (*BloomFilter, error) {
	if r := h.m % 64; r != 0 && words[len(words)-1]>>r != 0 {
		return nil, corrupt("bits set beyond the filter size")
	}
	if h.blocked && !isAligned(words) {
		words = append(alignedWords(uint64(len(words)))[:0], words...)
	}
	set := bitset.FromWithLength(uint(h.m), words)
	if c := uint64(set.Count()); h.count > c {
		return nil, corrupt("count %d exceeds the %d set bits", h.count, c)
	}
	return &BloomFilter{
		m: h.m, k: h.k, seed: h.seed, set: set, words: words, count: h.count,
		capacity: h.capacity, errorRate: h.errorRate, blocked: h.blocked,
	}, nil
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
		locks := f.conc.locks // free: nothing else runs
		if len(locks.stripes) != stripesFor(len(g.words)) {
			locks = newLockTable(len(g.words))
		}
		g.makeConcurrent(locks)
	}
	*f = *g
}

func decode(data []byte) (*BloomFilter, error) {
	if len(data) >= 6 && format.IsV3(data) {
		h, words, err := format.DecodeV3(data, allocWords(len(data) > 7 && data[6] == 1))
		if err != nil {
			return nil, err
		}
		return fromV3(h, words)
	}
	if len(data) < headerSize {
		return nil, io.ErrUnexpectedEOF
	}
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	want := headerSize + 8*h.words() + crcSize // no overflow: m <= MaxBits
	switch {
	case uint64(len(data)) < want:
		return nil, io.ErrUnexpectedEOF
	case uint64(len(data)) > want:
		return nil, corrupt("%d trailing bytes", uint64(len(data))-want)
	}
	body := data[:want-crcSize]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[want-crcSize:]) {
		return nil, corrupt("checksum mismatch")
	}
	words := hugepage.Words(h.words())
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[headerSize+8*i:])
	}
	return h.build(words)
}

// WriteTo writes the binary encoding of the filter to w (io.WriterTo) and
// returns the number of bytes written.
func (f *BloomFilter) WriteTo(w io.Writer) (int64, error) {
	if f.k == 0 {
		return 0, errors.New(errZeroValue)
	}
	return format.WriteV3(w, f.v3Header(), f.words, f.conc != nil)
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
	g, n, err := readFilter(r, r, anyVersion)
	if err != nil {
		return n, err
	}
	f.replace(g)
	return n, nil
}

// readFilter reads one filter from r. src is the reader underneath r (r
// itself, or one that r only passes through), which holds reports on.
func readFilter(r, src io.Reader, want version) (*BloomFilter, int64, error) {
	var hb [headerSize]byte
	n, err := io.ReadFull(r, hb[:])
	read := int64(n)
	if err != nil {
		return nil, read, noEOF(err)
	}
	if v3 := format.IsV3(hb[:]); v3 != (want == version3) && want != anyVersion {
		return nil, read, corrupt("sub-filter of format version %d in a filter of another", binary.LittleEndian.Uint16(hb[4:]))
	} else if v3 {
		holds := func(need uint64) bool { return holds(src, need) }
		h, words, n, err := format.ReadV3(r, hb[:], holds, allocWords(hb[6] == 1))
		read += n
		if err != nil {
			return nil, read, err
		}
		g, err := fromV3(h, words)
		return g, read, err
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return nil, read, err
	}
	crc := crc32.Checksum(hb[:], castagnoli)
	words, n64, err := readWords(r, h.words(), &crc, holds(src, 8*h.words()+crcSize), h.blocked)
	read += n64
	if err != nil {
		return nil, read, err
	}
	var cb [crcSize]byte
	n, err = io.ReadFull(r, cb[:])
	read += int64(n)
	if err != nil {
		return nil, read, noEOF(err)
	}
	if binary.LittleEndian.Uint32(cb[:]) != crc {
		return nil, read, corrupt("checksum mismatch")
	}
	g, err := h.build(words)
	return g, read, err
}

// version is the format version readFilter expects: any, for a BloomFilter
// read alone, or that of the ScalableBloomFilter it is a sub-filter of,
// whose sub-filters are all of its version (1 or 2 alike, or 3).
type version uint8

const (
	anyVersion version = iota
	version1or2
	version3
)

// readChunk is the number of 64-bit words readWords reads at a time (64 KiB).
const readChunk = 1 << 13

// readWords reads total little-endian words from r, updating crc with their
// bytes, and returns them with the number of bytes read, cache-line aligned
// if blocked (as newSet makes them).
//
// If known, the input has shown that it holds them (see holds): they are
// read into one slice of that size, through a buffer of one chunk.
//
// Otherwise, a header can claim up to MaxBits bits that the input does not
// hold, so the words are kept in chunks of readChunk words, each allocated when its bytes
// are about to be read: until the input has supplied every word, what is
// allocated is what has arrived plus one chunk. Only then are the chunks
// copied into one slice of the declared size, so a valid input costs twice
// its size, once for the chunks and once for the result, and a truncated or
// hostile one about its size. Growing one slice by append instead cost about
// 5x what was read (Go grows large slices by 1.25x; the copies add up), and
// allocating the declared size up front lets a 48-byte header ask for 128 GiB.
func readWords(r io.Reader, total uint64, crc *uint32, known, blocked bool) ([]uint64, int64, error) {
	if total <= readChunk {
		words := make([]uint64, total)
		n, err := readInto(r, words, make([]byte, 8*total), crc)
		return words, n, err
	}
	var read int64
	buf := make([]byte, 8*readChunk)
	if known {
		var words []uint64
		if blocked {
			words = alignedWords(total)
		} else {
			words = hugepage.Words(total)
		}
		for got := uint64(0); got < total; {
			c := words[got : got+min(total-got, readChunk)]
			n, err := readInto(r, c, buf, crc)
			read += n
			if err != nil {
				return nil, read, err
			}
			got += uint64(len(c))
		}
		return words, read, nil
	}
	var chunks [][]uint64
	for got := uint64(0); got < total; {
		c := make([]uint64, min(total-got, readChunk))
		n, err := readInto(r, c, buf, crc)
		read += n
		if err != nil {
			return nil, read, err
		}
		chunks = append(chunks, c)
		got += uint64(len(c))
	}
	words := hugepage.Words(total)[:0]
	for i, c := range chunks {
		words = append(words, c...)
		chunks[i] = nil // the collector may take it now
	}
	return words, read, nil
}

// holds reports whether src, at its current position, has shown that it
// holds at least need more bytes, so that a decoder may allocate them before
// it reads them. In-memory readers tell by their Len, a regular file by its
// size and offset. Any other reader must have a Size, which alone can
// exceed what it holds (io.NewSectionReader(r, 0, math.MaxInt64) is an
// idiom for "all of r"), and then read the last byte needed at its offset.
// Every other reader, and any error, gives false: the caller then allocates
// only as bytes arrive.
func holds(src io.Reader, need uint64) bool {
	switch v := src.(type) {
	case *bytes.Reader:
		return uint64(v.Len()) >= need
	case *bytes.Buffer:
		return uint64(v.Len()) >= need
	case *strings.Reader:
		return uint64(v.Len()) >= need
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		return err == nil && pos >= 0 && pos <= fi.Size() && uint64(fi.Size()-pos) >= need
	}
	v, ok := src.(interface {
		Size() int64
		io.ReaderAt
		io.Seeker
	})
	if !ok || need == 0 {
		return false
	}
	pos, err := v.Seek(0, io.SeekCurrent)
	size := v.Size()
	if err != nil || pos < 0 || pos > size || uint64(size-pos) < need {
		return false
	}
	var b [1]byte
	n, _ := v.ReadAt(b[:], pos+int64(need)-1) // no overflow: size-pos >= need
	return n == 1
}

// readInto fills words from r through buf, which holds at least
// 8*len(words) bytes, updates crc, and returns the number of bytes read.
func readInto(r io.Reader, words []uint64, buf []byte, crc *uint32) (int64, error) {
	part := buf[:8*len(words)]
	n, err := io.ReadFull(r, part)
	if err != nil {
		return int64(n), noEOF(err)
	}
	*crc = crc32.Update(*crc, castagnoli, part)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(part[8*i:])
	}
	return int64(n), nil
}

// noEOF turns an end of input inside an encoding into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

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
	var buf [format.V3HeaderSize]byte
	hb := buf[:headerSize]
	if err := readHeader(r, prefix, hb); err != nil {
		return nil, err
	}
	var h header
	if format.IsV3(hb) {
		hb = buf[:]
		if _, err := io.ReadFull(r, hb[headerSize:]); err != nil {
			return nil, noEOF(err)
		}
		v3, err := format.ParseV3Header(hb)
		if err != nil {
			return nil, err
		}
		h = header{seed: v3.Seed, blocked: v3.Blocked}
	} else {
		var err error
		if h, err = parseHeader(hb); err != nil {
			return nil, err
		}
	}
	if s.seedSet && s.seed != h.seed {
		return nil, paramError("Seed(%#x) contradicts the encoded seed %#x", s.seed, h.seed)
	}
	if s.blocked && !h.blocked {
		return nil, paramError("Blocked contradicts the encoded classic layout")
	}
	if s.classic && h.blocked {
		return nil, paramError("Classic contradicts the encoded blocked layout")
	}
	g, _, err := readFilter(io.MultiReader(bytes.NewReader(hb), r), r, anyVersion)
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
	var buf [format.V3HeaderSize]byte
	hb := buf[:scalableHeaderSize]
	if err := readHeader(r, prefix, hb); err != nil {
		return nil, err
	}
	var d *ScalableBloomFilter
	if format.IsV3(hb) {
		hb = buf[:]
		if _, err := io.ReadFull(r, hb[scalableHeaderSize:]); err != nil {
			return nil, noEOF(err)
		}
		h, err := format.ParseV3ScalableHeader(hb)
		if err != nil {
			return nil, err
		}
		if d, err = fromV3Header(h); err != nil {
			return nil, err
		}
	} else {
		var err error
		if d, _, err = parseScalableHeader(hb); err != nil {
			return nil, err
		}
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
	case s.classic && d.blocked:
		return nil, paramError("Classic contradicts the encoded blocked layout")
	}
	var g ScalableBloomFilter
	if _, err := g.readFrom(io.MultiReader(bytes.NewReader(hb), r), r); err != nil {
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
	data, err := decodeText(text, format.V3HeaderSize, func(hdr []byte) (uint64, error) {
		if format.IsV3(hdr) {
			h, err := format.ParseV3Header(hdr)
			return h.Size(), err
		}
		h, err := parseHeader(hdr)
		return headerSize + 8*h.words() + crcSize, err
	})
	if err != nil {
		return err
	}
	return f.UnmarshalBinary(data)
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
	data, err := decodeText(text, format.V3HeaderSize, func(hdr []byte) (uint64, error) {
		if format.IsV3(hdr) {
			h, err := format.ParseV3ScalableHeader(hdr)
			if err == nil {
				_, err = fromV3Header(h)
			}
			// At least the header, the table and n sub-filters of a header
			// and a word.
			return format.AlignV3(format.V3HeaderSize+8*uint64(h.N)) + uint64(h.N)*(format.V3HeaderSize+8+4), err
		}
		_, n, err := parseScalableHeader(hdr)
		// At least the header, n sub-filter headers and two checksums
		// each: an exact length needs the sub-filter headers.
		return scalableHeaderSize + uint64(n)*(headerSize+8+crcSize) + crcSize, err
	})
	if err != nil {
		return err
	}
	return s.UnmarshalBinary(data)
}

// decodeText decodes text, the base64 of a binary encoding whose first
// headerLen bytes parse reads, returning the least length that header
// implies. It decodes and parses the header first, on the stack, and
// allocates the decoded bytes only once the text is long enough for them.
func decodeText(text []byte, headerLen int, parse func(hdr []byte) (uint64, error)) ([]byte, error) {
	if bytes.ContainsAny(text, "\r\n") {
		return nil, corrupt("line break in base64 text")
	}
	enc := base64.StdEncoding.Strict()
	var hb [format.V3HeaderSize + 3]byte
	if n := (headerLen + 2) / 3 * 4; len(text) >= n {
		if _, err := enc.Decode(hb[:], text[:n]); err != nil {
			return nil, textError(err)
		}
		least, err := parse(hb[:headerLen])
		if err != nil {
			return nil, err
		}
		if uint64(enc.DecodedLen(len(text))) < least {
			return nil, io.ErrUnexpectedEOF
		}
	}
	// A text cut short mid-quartet is truncated, not corrupt, if what
	// comes before is valid.
	whole := len(text) - len(text)%4
	data := make([]byte, enc.DecodedLen(whole))
	n, err := enc.Decode(data, text[:whole])
	switch {
	case err != nil:
		return nil, textError(err)
	case whole < len(text):
		return nil, io.ErrUnexpectedEOF
	}
	return data[:n], nil
}

func textError(err error) error {
	var ce base64.CorruptInputError
	if errors.As(err, &ce) {
		return corrupt("invalid base64 at byte %d", int64(ce))
	}
	return corrupt("invalid base64: %v", err)
}

// Header is everything a BloomFilter holds besides its bits: the fields of
// its binary header (see the package doc). Header returns a filter's, and
// FromWords builds a filter from one and the bits, so that other stores (the
// redisbloom module keeps the bits in Redis) can move a filter in and out
// without writing the binary format by hand.
//
// The layout must be stated: FromWords refuses a Header whose Layout is 0,
// such as one built field by field by code written before Layout existed,
// rather than read a blocked filter's words as a classic filter's (which
// would answer "absent" for keys that were added).
type Header struct {
	Bits      uint64  // m, the size in bits, in [1, MaxBits]
	Hashes    uint    // k, the number of hash functions, in [1, MaxHashes]
	Seed      uint32  // the murmur3 seed
	Capacity  uint64  // the keys the filter was sized for, at least 1
	ErrorRate float64 // the target false-positive rate at Capacity, in (0, 1)
	Count     uint64  // what Count returns, at most the number of set bits
	Layout    Layout  // LayoutClassic or LayoutBlocked (Bits is then a multiple of BlockBits); never 0

	// Blocked reports whether Layout is LayoutBlocked.
	//
	// Deprecated: Blocked mirrors Layout, which states the layout
	// explicitly; FromWords refuses a Header where the two disagree.
	Blocked bool
}

// Layout is how a filter places a key's bits: LayoutClassic or LayoutBlocked
// (see Blocked). The zero Layout states no layout; only a zero BloomFilter
// or ScalableBloomFilter reports it.
type Layout uint8

// The layouts.
const (
	// LayoutClassic spreads a key's k bits over the whole filter
	// (AppendLocations). It is the default.
	LayoutClassic Layout = 1

	// LayoutBlocked keeps a key's k bits in one 512-bit block
	// (AppendBlockedLocations), made by the Blocked option.
	LayoutBlocked Layout = 2
)

// String returns "classic" or "blocked", or "Layout(n)" for any other value.
func (l Layout) String() string {
	switch l {
	case LayoutClassic:
		return "classic"
	case LayoutBlocked:
		return "blocked"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// layoutOf returns the layout of a filter that exists, blocked or not.
func layoutOf(blocked bool) Layout {
	if blocked {
		return LayoutBlocked
	}
	return LayoutClassic
}

// Layout returns the filter's layout, LayoutClassic or LayoutBlocked, or 0
// for a zero BloomFilter. Filters of different layouts are never combined or
// Equal, and their bits mean different keys.
func (f *BloomFilter) Layout() Layout {
	if f.k == 0 {
		return 0
	}
	return layoutOf(f.blocked)
}

// Layout returns the layout of the filter's sub-filters, LayoutClassic or
// LayoutBlocked, or 0 for a zero ScalableBloomFilter.
func (s *ScalableBloomFilter) Layout() Layout {
	if filters, _ := s.subFilters(); len(filters) == 0 {
		return 0
	}
	return layoutOf(s.blocked)
}

// Header returns the filter's size, hash count, seed, capacity, error rate,
// count and layout: a zero Header for a zero BloomFilter. Its Count is at most the
// number of set bits, even while other goroutines add to a Concurrent
// filter, and stays so for words that AppendWords returns after it: bits are
// only ever set. O(m/64) for a concurrent filter, which counts the bits.
func (f *BloomFilter) Header() Header {
	if f.k == 0 {
		return Header{}
	}
	return Header{
		Bits: f.m, Hashes: f.k, Seed: f.seed,
		Capacity: f.capacity, ErrorRate: f.errorRate, Count: f.sharedCount(),
		Layout: layoutOf(f.blocked), Blocked: f.blocked,
	}
}

// AppendWords appends a copy of the filter's bits to dst as ceil(Bits()/64)
// 64-bit words and returns the extended slice: bit i of the filter is bit
// i%64 of word i/64, and the bits at Bits() and above are 0. It appends
// nothing for a zero BloomFilter. On a Concurrent filter it may run during
// writes, like Clone. O(m/64); it allocates only if dst lacks room.
func (f *BloomFilter) AppendWords(dst []uint64) []uint64 {
	if f.conc == nil {
		return append(dst, f.words...)
	}
	dst = slices.Grow(dst, len(f.words))
	for i := range f.words {
		dst = append(dst, atomic.LoadUint64(&f.words[i]))
	}
	return dst
}

// FromWords returns a filter with the fields of h and the bits of words,
// laid out as AppendWords returns them: FromWords(f.Header(),
// f.AppendWords(nil)) is Equal to f. It copies words. Options: Concurrent;
// Seed is allowed only if it agrees with h.Seed, Blocked only if h.Layout is
// LayoutBlocked. It returns an error wrapping ErrInvalidParameter, before it
// allocates, for a field of h out of the range Header gives (including a
// Layout of 0, which states no layout, and a Blocked that contradicts
// Layout), for len(words) other than ceil(h.Bits/64), for a bit set at
// h.Bits or above, for a Count above the number of set bits, and for an
// option that contradicts h or applies only to ScalableBloomFilter.
func FromWords(h Header, words []uint64, opts ...Option) (*BloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.plainOnly(); err != nil {
		return nil, err
	}
	if s.seedSet && s.seed != h.Seed {
		return nil, paramError("Seed(%#x) contradicts the seed %#x of the header", s.seed, h.Seed)
	}
	s.seed = h.Seed
	switch {
	case h.Layout == 0:
		return nil, paramError("Header.Layout must be stated (LayoutClassic or LayoutBlocked), got 0: a Header built before Layout existed must set it")
	case h.Layout != LayoutClassic && h.Layout != LayoutBlocked:
		return nil, paramError("Header.Layout must be LayoutClassic or LayoutBlocked, got %v", h.Layout)
	case h.Blocked != (h.Layout == LayoutBlocked):
		return nil, paramError("Header.Blocked %v contradicts Header.Layout %v", h.Blocked, h.Layout)
	case s.blocked && h.Layout != LayoutBlocked:
		return nil, paramError("Blocked contradicts the classic layout of the header")
	case s.classic && h.Layout != LayoutClassic:
		return nil, paramError("Classic contradicts the blocked layout of the header")
	}
	s.blocked = h.Layout == LayoutBlocked
	if err := checkSize(h.Bits, h.Hashes); err != nil {
		return nil, err
	}
	if s.blocked && h.Bits%BlockBits != 0 {
		return nil, paramError("Bits must be a multiple of %d with Blocked, got %d", BlockBits, h.Bits)
	}
	switch {
	case h.Capacity == 0:
		return nil, paramError("Capacity must be at least 1, got 0")
	case !(h.ErrorRate > 0 && h.ErrorRate < 1):
		return nil, paramError("ErrorRate must be in (0, 1), got %v", h.ErrorRate)
	case uint64(len(words)) != (h.Bits+63)/64:
		return nil, paramError("%d bits need %d words, got %d", h.Bits, (h.Bits+63)/64, len(words))
	}
	if r := h.Bits % 64; r != 0 && words[len(words)-1]>>r != 0 {
		return nil, paramError("bits set at %d bits or above", h.Bits)
	}
	var set uint64
	for _, w := range words {
		set += uint64(bits.OnesCount64(w))
	}
	if h.Count > set {
		return nil, paramError("Count %d exceeds the %d set bits", h.Count, set)
	}
	f, err := newFilter(h.Bits, h.Hashes, h.Capacity, h.ErrorRate, s)
	if err != nil {
		return nil, err
	}
	copy(f.words, words)
	f.setCount(h.Count)
	return f, nil
}

// Merge adds the keys of other to f, in place: afterwards Test on f reports
// true for every key added to either, and f is Equal to what f.Union(other)
// would have returned, its Count the EstimatedCount of the result. It returns
// an error wrapping ErrIncompatible, and leaves f unchanged, if their sizes,
// hash counts, seeds or layouts differ or either is nil or zero. O(m/64); it does not
// allocate.
//
// On a Concurrent f, Merge may run during Add, Test, TestAndAdd and the
// methods that only read f: it sets the bits with atomic ORs, so those keep
// their guarantees (of goroutines adding one new key, exactly one hears it is
// new, unless Merge brought the key in first, and then none does). Keys added
// during Merge make Count approximate, as they would Count after Union.
// other must not be modified during the call unless it is Concurrent.
// ScalableBloomFilter has no Merge: see its doc.
func (f *BloomFilter) Merge(other *BloomFilter) error {
	if err := f.compatible(other); err != nil {
		return err
	}
	if f.conc == nil {
		if other.conc == nil {
			for i, w := range other.words {
				f.words[i] |= w
			}
		} else {
			for i := range f.words {
				f.words[i] |= atomic.LoadUint64(&other.words[i])
			}
		}
		set := f.setBits()
		f.count = min(f.estimatedCountOf(set), set)
		return nil
	}
	for i := range f.words {
		w := other.word(i)
		// Skipping words that add nothing keeps the cache lines of f
		// shared with other cores where nothing changes.
		if w&^atomic.LoadUint64(&f.words[i]) != 0 {
			atomic.OrUint64(&f.words[i], w)
		}
	}
	set := f.setBits()
	want := min(f.estimatedCountOf(set), set)
	// Adds that count meanwhile go to their own stripes and stay counted:
	// the difference goes into one stripe, modulo 2^64 like the sum.
	f.conc.locks.stripes[0].count.Add(want - f.conc.load())
	return nil
}

// Blocked makes New, NewWithSize and NewScalable build filters of the blocked
// layout: all k bits of a key lie in one block of BlockBits (512) bits, one
// 64-byte cache line, so that Add and Test cost one cache miss per key
// instead of up to k. The price is memory: keys spread unevenly over the
// blocks, so a blocked filter needs more bits for the same error rate (9.89
// bits per key instead of 9.59 at 1%, 15.48 instead of 14.38 at 0.1%, 21.92
// instead of 19.17 at 0.01%), and it always has at least one block. New
// sizes it by BlockedSize, from the blocked false-positive rate
// (BlockedFalsePositiveRate), so that the error rate at capacity is still at
// most the one asked for. Choose it for filters larger than the CPU caches
// and error rates down to about 1e-4. New and NewScalable choose it by
// default where it costs at most 10% more memory (see DefaultLayout);
// NewWithSize only with this option.
//
// A key's block is the high half of its murmur3 hash h1 mapped onto the
// blocks with a multiply-shift; its k distinct positions within the block
// come from the low half h2 (see AppendBlockedLocations). The words of a
// blocked filter are aligned to 64 bytes in memory, so that each block is
// one cache line.
//
// Blocked filters are combined and compared only with blocked filters. They
// encode in format version 2, which is version 1 (see BloomFilter and
// ScalableBloomFilter) with the layout recorded:
//
//   - BloomFilter: version 2 at offset 4, and at offset 6, where version 1
//     has its flags, the layout, 1 for blocked (512-bit blocks); m is then a
//     multiple of 512. Every other field is as in version 1, and the bits
//     are the words of the blocks in order (block b is words 8b to 8b+7).
//   - ScalableBloomFilter: version 2 at offset 4 and the layout, 1, at
//     offset 13; every sub-filter is a blocked BloomFilter in version 2.
//
// Classic filters keep encoding as version 1, byte for byte; decoders reject
// version 2 with any layout other than 1, so every filter has one encoding.
func Blocked() Option {
	return Option{func(s *settings) error {
		if s.blocked {
			return paramError("Blocked may be given only once")
		}
		if s.classic {
			return paramError("Blocked contradicts Classic: give one of them")
		}
		s.blocked = true
		return nil
	}}
}

// Classic selects the classic layout: the k bits of a key anywhere in the
// filter (see AppendLocations), sized by FalsePositiveRate. New and
// NewScalable choose the blocked layout by default where it costs at most
// 10% more memory than the classic one for the requested size (error rates
// down to about 5e-4 for large filters; see DefaultLayout); Classic keeps
// the classic layout whatever the size, for the least memory at low error
// rates or to combine with classic filters. NewWithSize is classic without
// it. Given to a decoder or FromWords, it requires a classic encoding.
func Classic() Option {
	return Option{func(s *settings) error {
		if s.classic {
			return paramError("Classic may be given only once")
		}
		if s.blocked {
			return paramError("Classic contradicts Blocked: give one of them")
		}
		s.classic = true
		return nil
	}}
}

// blockedVersion is the format version of blocked filters, and layoutBlocked
// the layout field that version 2 requires.
const (
	blockedVersion = 2
	layoutBlocked  = 1
)

// cacheLine is the alignment of the words of a blocked filter, in bytes.
const cacheLine = 64

// alignedWords returns n zero words whose first one starts a cache line.
// Large allocations are page-aligned anyway; small ones get up to 7 words of
// slack in front.
func alignedWords(n uint64) []uint64 {
	w := hugepage.Words(n + cacheLine/8 - 1)
	off := (cacheLine - uintptr(unsafe.Pointer(&w[0]))%cacheLine) % cacheLine / 8
	return w[off : off+uintptr(n) : off+uintptr(n)]
}

// isAligned reports whether w starts a cache line.
func isAligned(w []uint64) bool {
	return len(w) == 0 || uintptr(unsafe.Pointer(&w[0]))%cacheLine == 0
}

// newSet returns an empty bit set of m bits, cache-line aligned if blocked.
// Every filter's words come from here or from the decoders, through
// hugepage.Words: at 10^8 keys huge pages made random loads ~1.5x faster
// (TLB misses on top of cache misses otherwise).
func newSet(m uint64, blocked bool) *bitset.BitSet {
	if !blocked {
		return bitset.FromWithLength(uint(m), hugepage.Words((m+63)/64))
	}
	return bitset.FromWithLength(uint(m), alignedWords((m+63)/64))
}

// cloneSet returns a copy of set, of m bits, cache-line aligned if blocked.
func cloneSet(set *bitset.BitSet, m uint64, blocked bool) *bitset.BitSet {
	c := newSet(m, blocked)
	copy(c.Words(), set.Words())
	return c
}

// splitmix is the SplitMix64 finalizer (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014).
func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// blockOf returns the block, in [0, blocks), of a key whose hash has h1 as
// its first half.
func blockOf(h1, blocks uint64) uint64 {
	b, _ := bits.Mul64(h1, blocks)
	return b
}

// blockMask returns the k distinct in-block positions of a key whose hash
// has h2 as its second half, as a mask of the block's 8 words: candidates
// are the 9-bit fields of h2, then of splitmix(h2 + i*golden) for i = 1, 2,
// ..., seven per word from the low bits up, and a candidate already taken is
// skipped. AppendBlockedLocations documents the same sequence; testBlocked
// and addBlockedFast write it out again, without a mask, and so does the
// assembly of internal/blockbits for k = 8, 9.
func blockMask(h2 uint64, k uint) (m [8]uint64) {
	if w1, ok := firstDistinct(h2, k); ok {
		for p, n := h2, min(k, fieldsPerWord); n > 0; n-- {
			m[p>>6&7] |= 1 << (p & 63)
			p >>= 9
		}
		for p := w1; k > fieldsPerWord; k-- {
			m[p>>6&7] |= 1 << (p & 63)
			p >>= 9
		}
		return m
	}
	return repeatMask(h2, k)
}

// repeatMask is blockMask for any key, and the way there for one whose
// first k candidates repeat (about k(k-1)/1024 of keys, 7% at k = 9): the
// first k candidates are positions of the key whatever they are, so their
// bits go into the mask without a check, and only the candidates after them
// are checked one by one, until k bits are set; after one repeat, the
// usual case, that is one candidate.
func repeatMask(h2 uint64, k uint) (m [8]uint64) {
	c := newCandidates(h2)
	for range k {
		p := c.next()
		m[p>>6] |= 1 << (p & 63)
	}
	var n uint
	for _, x := range m {
		n += uint(bits.OnesCount64(x))
	}
	for n < k {
		p := c.next()
		if i, bit := p>>6, uint64(1)<<(p&63); m[i]&bit == 0 {
			m[i] |= bit
			n++
		}
	}
	return m
}

// candidates walks the in-block candidates of a key (see blockMask).
type candidates struct {
	w, state uint64 // the word being read, and its splitmix input
	left     int    // candidates left in w
}

func newCandidates(h2 uint64) candidates {
	return candidates{w: h2, state: h2, left: fieldsPerWord}
}

// next returns the next candidate, in [0, BlockBits).
func (c *candidates) next() uint64 {
	if c.left == 0 {
		c.state += golden
		c.w, c.left = splitmix(c.state), fieldsPerWord
	}
	p := c.w & (BlockBits - 1)
	c.w >>= 9
	c.left--
	return p
}

// fieldsPerWord is the number of 9-bit candidates a 64-bit word gives.
const fieldsPerWord = 7

// fieldLows has the lowest bit of each of the seven 9-bit fields of a word
// set, fieldHighs the highest.
const (
	fieldLows  = 0x0040201008040201
	fieldHighs = fieldLows << 8
	fieldBits  = 1<<63 - 1 // the bits of the seven fields
)

// zeroFields returns a value that is nonzero if and only if some field of x
// whose highest bit is in highs is zero: the zero-byte test of Hacker's
// Delight (6-1) with 9-bit fields. A borrow out of a zero field can flag the
// field above it too, but only when a field below is zero already.
func zeroFields(x, highs uint64) uint64 {
	return (x - fieldLows) &^ x & highs
}

// pairMasks[d-1][k], for k <= 7 and d = 1, 2, 3, has the highest bit of
// field i set when fields i and (i+d) mod 7 are both among the first k:
// the pairs that distinctFields compares in its round d. Every pair of the
// seven fields is (i+d) mod 7 apart for one d in 1..3.
var pairMasks = func() (t [3][fieldsPerWord + 1]uint64) {
	for d := range t {
		for k := range t[d] {
			for i := range k {
				if (i+d+1)%fieldsPerWord < k {
					t[d][k] |= 1 << (9*i + 8)
				}
			}
		}
	}
	return t
}()

// distinctFields reports whether the first k <= 7 fields of w are distinct;
// the bit of w above its fields, bit 63, must be clear. Round d compares
// every field i with field (i+d) mod 7, all at once: w xor w rotated by d
// fields has a zero field where the two are equal. It is small enough to be
// inlined (cost 80 of 80: masking bit 63 here would cross that).
func distinctFields(w uint64, k uint) bool {
	k &= 7
	x1 := w ^ (w>>9 | w<<54)
	x2 := w ^ (w>>18 | w<<45)
	x3 := w ^ (w>>27 | w<<36)
	return (x1-fieldLows)&^x1&pairMasks[0][k]|(x2-fieldLows)&^x2&pairMasks[1][k]|(x3-fieldLows)&^x3&pairMasks[2][k] == 0
}

// distinct7 is distinctFields(w, 7) with the masks folded into one: with
// all seven fields in play every round compares seven pairs.
func distinct7(w uint64) bool {
	x1 := w ^ (w>>9 | w<<54)
	x2 := w ^ (w>>18 | w<<45)
	x3 := w ^ (w>>27 | w<<36)
	return ((x1-fieldLows)&^x1|(x2-fieldLows)&^x2|(x3-fieldLows)&^x3)&fieldHighs == 0
}

// laterDistinct2 reports, for n1 = 1 or 2 (k = 8 or 9, p near 1e-3),
// whether the first n1 fields of w1 differ from each other and from the
// seven fields of h2, written out so that it inlines: h2 ^ c*fieldLows has
// a zero field where h2 has c. laterDistinct is the general case.
func laterDistinct2(h2, w1 uint64, n1 uint) bool {
	a0, a1 := w1&(BlockBits-1), w1>>9&(BlockBits-1)
	if n1 == 1 {
		a1 = a0
	}
	return zeroFields(h2^a0*fieldLows, fieldHighs)|zeroFields(h2^a1*fieldLows, fieldHighs) == 0 && (n1 == 1 || a0 != a1)
}

// laterDistinct reports, for n1 in [1, 7], whether the first n1 fields of
// w1 differ from each other and from the seven fields of h2.
func laterDistinct(h2, w1 uint64, n1 uint) bool {
	var zero uint64
	for j := range n1 {
		zero |= zeroFields(h2^(w1>>(9*j)&(BlockBits-1))*fieldLows, fieldHighs)
	}
	return zero == 0 && distinctFields(w1&fieldBits, n1)
}

// firstDistinct reports whether the first k candidates of the in-block
// sequence (see blockMask) are distinct, so that they are the key's
// positions, for k <= 2*fieldsPerWord, and returns the second word of
// candidates, w1 = splitmix(h2 + golden), when k needs it: the key's
// positions are then the first min(k, 7) fields of h2 and the first k-7 of
// w1. It returns false for larger k, and otherwise with a probability of
// about k(k-1)/1024, when the callers take the general loop. Callers check
// k <= 7 with distinctFields first, which inlines.
func firstDistinct(h2 uint64, k uint) (w1 uint64, ok bool) {
	if k <= fieldsPerWord {
		return 0, distinctFields(h2&fieldBits, k)
	}
	if k > 2*fieldsPerWord || !distinct7(h2&fieldBits) {
		return 0, false
	}
	w1 = splitmix(h2 + golden)
	if n1 := k - fieldsPerWord; n1 <= 2 {
		return w1, laterDistinct2(h2, w1, n1)
	}
	return w1, laterDistinct(h2, w1, k-fieldsPerWord)
}

// AppendBlockedLocations appends to dst the hashes bit positions, each in
// [0, bits), that a blocked filter (see Blocked) of bits bits, hashes hash
// functions and seed seed sets for key, and returns the extended slice. They
// are exactly the positions Add sets and Test reads, and they are part of the
// format promise (version 2): they never change within a format version.
// They are distinct and lie in one block. bits must be a positive multiple of
// BlockBits and hashes in [1, MaxHashes]; otherwise dst is returned
// unchanged.
//
// With (h1, h2) the 128-bit murmur3 hash of key with seed and all arithmetic
// mod 2^64, the block is b = (h1 * (bits/512)) >> 64, and position i is
// 512*b + q_i, where q_0, q_1, ... are the candidates in [0, 512) with
// those equal to an earlier one left out: the 9-bit fields (x >> 9j) & 511,
// j = 0..6, of x = h2, then of x = splitmix64(h2 + t*0x9E3779B97F4A7C15) for
// t = 1, 2, ..., with splitmix64(z) the SplitMix64 finalizer
// z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
// z *= 0x94D049BB133111EB; z ^= z >> 31.
func AppendBlockedLocations(dst []uint64, key []byte, bits uint64, hashes uint, seed uint32) []uint64 {
	if bits < BlockBits || bits%BlockBits != 0 || hashes == 0 || hashes > MaxHashes {
		return dst
	}
	h1, h2 := murmur.Sum128(key, seed)
	base := blockOf(h1, bits/BlockBits) * BlockBits
	c := newCandidates(h2)
	var seen [8]uint64
	for n := uint(0); n < hashes; {
		p := c.next()
		if bit := uint64(1) << (p & 63); seen[p>>6]&bit == 0 {
			seen[p>>6] |= bit
			dst = append(dst, base+p)
			n++
		}
	}
	return dst
}

// block returns the 8 words of block b of f.
func (f *BloomFilter) block(b uint64) *[8]uint64 {
	return (*[8]uint64)(f.words[b*8 : b*8+8])
}

// addBlockedFast is addBlocked for the usual key, whose first k candidates
// are distinct (see firstDistinct), and reports in ok whether the key was
// one: otherwise it changes nothing and the caller goes to addBlocked.
//
// It is a leaf without a frame (go build -gcflags=-S: no call, no spill, no
// saved frame pointer), which is why it writes firstDistinct and f.block out
// again. Building a filter of 10^7 random 16-byte keys at p = 0.01, calling
// it from the key loop cost 58-68 ns per key against 74-101 for the former
// addBlocked, which had the same loops behind a frame of 176 bytes, two
// spills and a call to firstDistinct (one noisy 2-vCPU machine, runs
// interleaved). Why fewer instructions and stores per key weigh this much
// at sizes where every key misses the cache is not established (no
// performance counters on that machine): a full reorder buffer or store
// buffer, which bound the keys in flight, would explain it.
//
// It gives h1 and h2 back as r1 and r2, so that Add, which goes on to
// addBlocked when ok is false, does not spill them around the call (two
// stores per key; within the noise of the bench on its own).
//
// Each bit is set with one BTS and what it changed gathered with one XOR
// (setBit), the k bits one after the other without a loop: 10-11
// instructions per bit against 15 for a loop that read each bit into a
// running AND. At 10^7 16-byte keys, p = 0.001 (k = 9), blocked/blobloom
// for Add went from 1.14-1.29 (median 1.26) to 1.14-1.18 (three alternated
// bench runs of each build); before that, distinct7 and laterDistinct2 had
// cut the checks of the second word of candidates (Add 1.15-1.28 ->
// 1.14-1.20). Without those checks (wrong positions for 7% of keys, a
// measurement only) Add cost as much as blobloom's: at k = 9 they are what
// is left, and where the CPU has AVX-512 Add takes the assembly of
// internal/blockbits instead for k = 8, 9 (see addWide).
func (f *BloomFilter) addBlockedFast(h1, h2 uint64) (r1, r2 uint64, present, ok bool) {
	k := f.k
	var w1 uint64
	if k <= fieldsPerWord {
		if !distinctFields(h2&fieldBits, k) {
			return h1, h2, false, false
		}
	} else {
		// firstDistinct written out, as it cannot be inlined (nor can
		// laterDistinct, whose loop is here again).
		if k > 2*fieldsPerWord || !distinct7(h2&fieldBits) {
			return h1, h2, false, false
		}
		w1 = splitmix(h2 + golden)
		if n1 := k - fieldsPerWord; n1 <= 2 {
			if !laterDistinct2(h2, w1, n1) {
				return h1, h2, false, false
			}
		} else {
			var zero uint64
			for j := range n1 {
				zero |= zeroFields(h2^(w1>>(9*j)&(BlockBits-1))*fieldLows, fieldHighs)
			}
			if zero != 0 || !distinctFields(w1&fieldBits, n1) {
				return h1, h2, false, false
			}
		}
	}
	// The block without the bounds checks of f.block, whose calls to panic
	// would give the function a frame; a block out of range (never, as
	// len(f.words) == f.m/64) goes to addBlocked, which panics.
	b, words := blockOf(h1, f.m/BlockBits), f.words
	if b >= uint64(len(words))/8 {
		return h1, h2, false, false
	}
	blk := (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(words)), b*64))
	// The k candidates' bits one after the other, from the last: no loop
	// counter, and no register moves around the shifts by a variable count
	// (the loop it replaces spent 15 instructions per bit, go build
	// -gcflags=-S, GOAMD64=v1).
	var fresh uint64
	switch k {
	case 14:
		fresh = setBit(blk, w1>>54, fresh)
		fallthrough
	case 13:
		fresh = setBit(blk, w1>>45, fresh)
		fallthrough
	case 12:
		fresh = setBit(blk, w1>>36, fresh)
		fallthrough
	case 11:
		fresh = setBit(blk, w1>>27, fresh)
		fallthrough
	case 10:
		fresh = setBit(blk, w1>>18, fresh)
		fallthrough
	case 9:
		fresh = setBit(blk, w1>>9, fresh)
		fallthrough
	case 8:
		fresh = setBit(blk, w1, fresh)
		fallthrough
	case 7:
		fresh = setBit(blk, h2>>54, fresh)
		fallthrough
	case 6:
		fresh = setBit(blk, h2>>45, fresh)
		fallthrough
	case 5:
		fresh = setBit(blk, h2>>36, fresh)
		fallthrough
	case 4:
		fresh = setBit(blk, h2>>27, fresh)
		fallthrough
	case 3:
		fresh = setBit(blk, h2>>18, fresh)
		fallthrough
	case 2:
		fresh = setBit(blk, h2>>9, fresh)
		fallthrough
	default:
		fresh = setBit(blk, h2, fresh)
	}
	if fresh == 0 {
		return h1, h2, true, true
	}
	f.count++
	return h1, h2, false, true
}

// setBit sets bit p&511 of blk and returns fresh with that bit (in its
// word) added if it was clear.
func setBit(blk *[8]uint64, p, fresh uint64) uint64 {
	w := &blk[p>>6&7]
	old := *w
	x := old | 1<<(p&63)
	*w = x
	return fresh | (x ^ old)
}

// addBlocked is add for a blocked filter that is not concurrent. Keys whose
// first candidates repeat (about 3% at k = 6) take addBlockedRepeat.
func (f *BloomFilter) addBlocked(h1, h2 uint64) (present bool) {
	if useBlockbits(f.k) {
		return f.addWide(h1, h2)
	}
	if _, _, present, ok := f.addBlockedFast(h1, h2); ok {
		return present
	}
	return f.addBlockedRepeat(h1, h2)
}

// useBlockbits reports whether a blocked filter of k hash functions takes
// the assembly of internal/blockbits: k = 8 or 9 (p near 1e-3) on a CPU with
// AVX-512.
func useBlockbits(k uint) bool { return k-8 < 2 && blockbits.Native }

// addWide is addBlocked for k = 8 or 9 (p near 1e-3) where
// blockbits.Native: the assembly compares the key's nine candidates in one
// instruction (VPCONFLICTQ) and sets their bits. Against addBlockedFast,
// which compares them in Go (distinct7, laterDistinct2: about 70
// instructions), Add at 10^7 random 16-byte keys, p = 0.001, went from
// 1.13-1.51x blobloom's time (median 1.19 of 13 runs) to 0.93-1.05x (6
// runs; builds alternated; Add and AddString call the assembly without
// this call in between).
func (f *BloomFilter) addWide(h1, h2 uint64) (present bool) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	present, ok := blockbits.Add(blk, h2, uint64(f.k-fieldsPerWord))
	if !ok {
		return f.addBlockedRepeat(h1, h2)
	}
	if !present {
		f.count++
	}
	return present
}

// addBlockedRepeat is addBlocked for a key that addBlockedFast turned away,
// whose first k candidates repeat: it goes to repeatMask without checking
// them again.
func (f *BloomFilter) addBlockedRepeat(h1, h2 uint64) (present bool) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := repeatMask(h2, f.k)
	var fresh uint64
	for i := range blk {
		fresh |= m[i] &^ blk[i]
		blk[i] |= m[i]
	}
	if fresh == 0 {
		return true
	}
	f.count++
	return false
}

// testBlocked is test for a blocked filter that is not concurrent; testKey
// writes it out again.
//
// It tests the first min(k, 7) candidates, the fields of h2, which are
// positions of the key even when some repeat: the first two with a branch,
// which sends about three absent keys in four away, then the rest without
// one (testBlockTail). For keys that pass, distinctFields (or
// testBlockRest, k > 7, in assembly for k = 8, 9 where the CPU has
// AVX-512) says whether those candidates, and the next k-7 when k > 7, are
// the key's positions; the rare rest goes through repeatMask.
//
// The branch after two bits mispredicts for about half the absent keys, yet
// it beat a test of all candidates without a branch: in the bench at 10^7
// keys (p = 0.01 and 0.001, binaries alternated), blocked/blobloom for
// absent keys went from 1.35-1.54 to 0.94-1.07, present keys within the
// noise (0.93-1.15 before, 0.98-1.38 after). A branch at every candidate
// was as fast for absent keys and slower for present ones; a guess at why
// (no performance counters here): loads on a mispredicted path still bring
// their lines in, while without a branch every load's dependents wait in
// the scheduler, which fills before many keys are in flight.
func (f *BloomFilter) testBlocked(h1, h2 uint64) bool {
	blk, k := f.block(blockOf(h1, f.m/BlockBits)), f.k
	q := h2 >> 9 // the second candidate, the first again when k = 1
	if k == 1 {
		q = h2
	}
	if blk[h2>>6&7]>>(h2&63)&(blk[q>>6&7]>>(q&63))&1 == 0 {
		return false
	}
	return testBlockTail(blk, h2, k)
}

// testBlockTail is the rest of testBlocked for a key whose first two
// candidates are set in blk: the third to min(k, 7)th, then whether those
// are the key's positions (distinctFields) or the rest (testBlockRest).
// The batch calls take it too (testManyBlocked), after their own first two.
func testBlockTail(blk *[8]uint64, h2 uint64, k uint) bool {
	all := uint64(1)
	for p, n := h2>>18, min(k, fieldsPerWord)-2; int(n) > 0; n-- {
		all &= blk[p>>6&7] >> (p & 63)
		p >>= 9
	}
	if all&1 == 0 {
		return false
	}
	return k <= fieldsPerWord && distinctFields(h2&fieldBits, k) || testBlockRest(blk, h2, k)
}

// testBlockRest is the rest of a blocked test for a key whose first min(k,
// 7) candidates are set in blk and, when k <= 7, repeat: it tests the
// candidates after the seventh (k > 7), or the whole mask when the first k
// candidates repeat.
func testBlockRest(blk *[8]uint64, h2 uint64, k uint) bool {
	if useBlockbits(k) {
		// As addWide: the nine candidates compared in one instruction
		// (present keys at 10^7, p = 0.001: 1.04-1.65x blobloom's time,
		// median 1.11 of 13 runs, through firstDistinct; 0.94-1.04x, 9
		// runs, here; builds alternated).
		if present, ok := blockbits.Test(blk, h2, uint64(k-fieldsPerWord)); ok {
			return present
		}
	} else if w1, ok := firstDistinct(h2, k); ok {
		all := uint64(1)
		for p := w1; k > fieldsPerWord; k-- {
			all &= blk[p>>6&7] >> (p & 63)
			p >>= 9
		}
		return all&1 != 0
	}
	m := repeatMask(h2, k)
	return holdsMask(blk, &m)
}

// testBlockedConcurrent is testBlocked with atomic loads.
func (f *BloomFilter) testBlockedConcurrent(h1, h2 uint64) bool {
	m := blockMask(h2, f.k)
	return holdsMaskAtomic(f.block(blockOf(h1, f.m/BlockBits)), &m)
}

// unsetBlocked is unsetConcurrent for a blocked filter: bit i of the result
// is set if word i of the key's block lacks some of the key's bits.
func (f *BloomFilter) unsetBlocked(h1, h2 uint64) (unset uint64) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	for i := range blk {
		if m[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			unset |= 1 << i
		}
	}
	return unset
}

// setBlocked is setConcurrent for a blocked filter, with unset from
// unsetBlocked.
func (f *BloomFilter) setBlocked(h1, h2, unset uint64) (fresh bool) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	var flipped uint64
	for i := range blk {
		if unset>>i&1 != 0 && m[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			flipped |= m[i] &^ atomic.OrUint64(&blk[i], m[i])
		}
	}
	return flipped != 0
}

// blockedErrorRate returns the false-positive rate of the blocked filter f
// as its bits stand: the mean over its blocks of C(x, k)/C(512, k), x the
// block's set bits. O(m/64).
func (f *BloomFilter) blockedErrorRate() float64 {
	var pow [BlockBits + 1]float64
	for x := range pow {
		pow[x] = 1
		for i := range int(f.k) {
			pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
		}
	}
	var sum float64
	for b := 0; b < len(f.words); b += 8 {
		x := 0
		for i := range 8 {
			x += bits.OnesCount64(f.word(b + i))
		}
		sum += pow[x]
	}
	return sum / float64(len(f.words)/8)
}

// estimatedCountOf returns the estimated count of f if set of its bits are
// set, by its layout's formula.
func (f *BloomFilter) estimatedCountOf(set uint64) uint64 {
	if !f.blocked {
		return estimatedCount(f.m, f.k, set)
	}
	e := EstimateBlockedCount(f.m, f.k, set)
	if e >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(e))
}

// Blocked reports whether the filter has the blocked layout (see Blocked).
func (f *BloomFilter) Blocked() bool { return f.blocked }

// Blocked reports whether the filter's sub-filters have the blocked layout
// (see Blocked).
func (s *ScalableBloomFilter) Blocked() bool { return s.blocked }

// blockedFullRate is fullRate for a blocked sub-filter: its false-positive
// rate when its count reaches capacity, a little above, never below. After t
// random keys the rate is r(t) = BlockedFalsePositiveRate(m, k, t) (keys
// that test present set no bit, so the bits are those of t keys), and the
// count is c(t) = integral of (1 - r) from 0 to t. It sums c in 64 steps of
// capacity/64 keys with r at the end of each step, which underestimates c as
// r grows, so the t found for c = capacity (interpolated within its step) is
// at or above the true one. It is 1 if c stops short of capacity.
//
// stop, if not nil, may end the work early: each step's r is at most the
// result (the result is the rate at a t no earlier than that step's end,
// and the rate grows with t), so once stop(lo) holds for lo, that r less a
// margin for rounding, blockedFullRate returns lo and true. Otherwise it
// returns the result and false. w, if not nil, meters the work.
func blockedFullRate(capacity, m uint64, k uint, stop func(lo float64) bool, w *workMeter) (float64, bool) {
	const steps = 64
	n := float64(capacity)
	dt := n / steps
	var c, t float64
	for {
		r := blockedRate(m, k, uint64(math.Ceil(t+dt)), w)
		if r > 1-1e-6 || t > float64(MaxBits) {
			return 1, false
		}
		if c+(1-r)*dt >= n {
			t += (n - c) / (1 - r)
			return blockedRate(m, k, uint64(math.Ceil(t)), w), false
		}
		// The margin covers rounding in BlockedFalsePositiveRate, which is
		// accurate to about 1e-12, so that lo is below the result.
		if lo := r - 1e-9; stop != nil && lo > 0 && stop(lo) {
			return lo, true
		}
		c += (1 - r) * dt
		t += dt
	}
}

// Batch calls of blocked filters. A key's bits lie in one cache line, so a
// key needs one prefetch per filter. They run as a pipeline: round s+ahead is
// hashed and the blocks of its keys are prefetched, all at once, while round
// s, whose blocks were prefetched before, is tested or added, key after key
// in order, so that the answers and the bits are those of the loop of single
// calls by construction.

// The rounds of the blocked batch calls, chosen at 10^7 and 10^8 keys
// (p = 0.01, 9.9 bits per key), batches of 1,000 16-byte keys, every variant
// and the loop of Test interleaved chunk by chunk in one process, medians of
// 5 or 9 repetitions on the shared 2-vCPU machine of README (the other jobs
// on it move single figures by 15-30%, so only large differences count).
// Rounds of 16 keys two rounds ahead and of 8 keys two or four ahead came
// out within that noise of each other (16/2 took 0.63-0.99x the time of 8/2
// in two runs, 0.99-1.17x in a third); rounds of 32 one ahead 1.2-1.4x, of
// 16 three ahead 1.1-1.4x, of 2 eight ahead 1.0-1.5x. The loop of Test took
// 3.7-5.6x the time of the rounds for absent keys and 2.8-4.6x for present
// keys. The rounds of 16 this pipeline replaced, which hashed, prefetched
// and tested one round at a time with testBlocked, measured 0.96-1.12x its
// time (10^7 and 10^8 keys, absent and present): within the noise. On this
// machine the batch calls are bound by the work per key (murmur3 a third of
// it, the block's test a fifth), not by the misses; the pipeline keeps them
// overlapped where the memory is slower.
//
// Testing the whole mask of every key (blockMask) instead of first its two
// first candidates measured 0.8-1.3x, for absent keys mostly slower. Testing
// those two candidates of every key of a round first, without a branch, then
// the whole mask of the keys still in the running, measured 0.86-0.95x the
// time of testing both key by key with a branch after the two candidates for
// absent keys, and 0.92-1.13x for present keys (two runs, 9 repetitions).
const (
	// blockedRound is the round of the batch calls of a blocked filter,
	// in keys.
	blockedRound = 16

	// blockedAhead is how many rounds ahead of the one being tested or
	// added the blocked batch calls hash and prefetch.
	blockedAhead = 2

	// scalableRound and scalableAhead are blockedRound and blockedAhead
	// for a blocked ScalableBloomFilter, whose keys need a block in every
	// sub-filter: keys one at a time, four ahead.
	scalableRound = 1
	scalableAhead = 4

	// blockedPrefetchBits is the size from which the batch calls of a
	// blocked ScalableBloomFilter prefetch a sub-filter's blocks: smaller
	// sub-filters fit the 32 KiB L1 cache of a core.
	blockedPrefetchBits = 1 << 18
)

// The rounds of the blocked ScalableBloomFilter's batch calls were chosen
// like those above, on a filter grown from 1,000 to 10^7 keys at p = 0.01
// (21 sub-filters of 2-8,700 KiB), TestMany of absent keys against the
// loop of Test of one classic filter of 10^7 keys, interleaved (time
// ratios, medians of 7 or 9 repetitions, in four runs). Prefetching only
// the sub-filters from 2^23 bits (1 MiB, the L2 cache), as the first version
// did, measured 2.3-2.5x in rounds of 16 or 4; from 2^18 bits, keys one at
// a time four ahead, 1.3-1.7x, and 1.0-1.2x once the first pass of
// anyHoldsSeq read two bits per sub-filter instead of the whole block (the
// first version, which built each distinct k's mask with blockMask,
// measured the same as the single walk of blockSeq: the misses dominate).
// With that first pass: rounds of 1 four ahead 0.97-1.21x, of 2 two to four
// ahead 1.08-1.14x, of 4 one or two ahead 1.22-1.33x, of 8 two ahead
// 1.00-1.69x, of 16 two ahead from 2^23 bits 1.28x; from 2^16 bits about
// the same as from 2^18, from 2^20 1.72x, every sub-filter 1.30x.

// blockedFlight is a round of a blocked batch call in the pipeline: n keys
// hashed to h, and the first word of each one's block in the filter (of a
// BloomFilter; not used for a ScalableBloomFilter).
type blockedFlight struct {
	n   int
	h   [blockedRound]hashed
	idx [blockedRound]uint64
}

// launch hashes keys, at most blockedRound, into r and prefetches their
// blocks in f.
func launch[K keyType](r *blockedFlight, f *BloomFilter, keys []K) {
	r.n = len(keys)
	hashRound(r.h[:], keys, f.seed)
	blocks := f.m / BlockBits
	for i := range r.n {
		r.idx[i] = blockOf(r.h[i].h1, blocks) * 8
	}
	prefetch.Words(f.words, r.idx[:r.n])
}

// holdsMask reports whether blk has every bit of m set.
func holdsMask(blk, m *[8]uint64) bool {
	return m[0]&^blk[0]|m[1]&^blk[1]|m[2]&^blk[2]|m[3]&^blk[3]|
		m[4]&^blk[4]|m[5]&^blk[5]|m[6]&^blk[6]|m[7]&^blk[7] == 0
}

// holdsMaskAtomic is holdsMask with atomic loads of blk, for the blocks of
// concurrent filters.
func holdsMaskAtomic(blk, m *[8]uint64) bool {
	var miss uint64
	for i := range blk {
		miss |= m[i] &^ atomic.LoadUint64(&blk[i])
	}
	return miss == 0
}

// testManyBlocked is testMany for a blocked filter.
func testManyBlocked[K keyType](f *BloomFilter, keys []K, results []bool) []bool {
	var ring [blockedAhead + 1]blockedFlight // round s is in ring[s%(blockedAhead+1)]
	k := f.k
	rounds := (len(keys) + blockedRound - 1) / blockedRound
	for s := range rounds + blockedAhead {
		if s < rounds {
			lo := s * blockedRound
			launch(&ring[s%(blockedAhead+1)], f, keys[lo:min(lo+blockedRound, len(keys))])
		}
		if s < blockedAhead {
			continue
		}
		r := &ring[(s-blockedAhead)%(blockedAhead+1)]
		out := results[(s-blockedAhead)*blockedRound:][:r.n]
		if f.conc != nil {
			for i := range out {
				out[i] = f.testBlockedConcurrent(r.h[i].h1, r.h[i].h2)
			}
			continue
		}
		// First pass: the first two in-block candidates of every key,
		// without a branch on the bits. For k >= 2 both are positions of
		// the key (the second may repeat the first), and they rule out
		// most absent keys. Second pass: the rest of the single-key test
		// for the keys still in the running (testBlockTail; through
		// blockMask and holdsMask instead, present keys cost 0.26-0.27x
		// our classic Test at 10^7 URL-like keys, p = 0.01, against
		// 0.21x: three alternated bench runs).
		var alive uint64
		w := f.words
		for i := range out {
			h2, b := r.h[i].h2, r.idx[i]
			p0, p1 := h2&(BlockBits-1), h2>>9&(BlockBits-1)
			if k == 1 {
				p1 = p0
			}
			alive |= (w[b+p0>>6] >> (p0 & 63) & (w[b+p1>>6] >> (p1 & 63)) & 1) << i
			out[i] = false
		}
		for ; alive != 0; alive &= alive - 1 {
			i := bits.TrailingZeros64(alive)
			out[i] = testBlockTail((*[8]uint64)(w[r.idx[i]:]), r.h[i].h2, k)
		}
	}
	return results
}

// The alive mask of a round of testManyBlocked has a bit per key.
var _ [64 - blockedRound]struct{}

// addManyBlocked is addMany for a blocked filter.
func addManyBlocked[K keyType](f *BloomFilter, keys []K, results []bool) {
	var ring [blockedAhead + 1]blockedFlight
	rounds := (len(keys) + blockedRound - 1) / blockedRound
	for s := range rounds + blockedAhead {
		if s < rounds {
			lo := s * blockedRound
			launch(&ring[s%(blockedAhead+1)], f, keys[lo:min(lo+blockedRound, len(keys))])
		}
		if s < blockedAhead {
			continue
		}
		r := &ring[(s-blockedAhead)%(blockedAhead+1)]
		start := (s - blockedAhead) * blockedRound
		for i := range r.n {
			var present bool
			// addBlocked's frameless fast path beat a mask from
			// blockMask and an or of all 8 words: 27-28 against 32-33
			// ns/key in 3 of 4 alternating runs of
			// BenchmarkBlockedBatch/Add/AddMany.
			if f.conc != nil {
				present = f.add(r.h[i].h1, r.h[i].h2)
			} else {
				present = f.addBlocked(r.h[i].h1, r.h[i].h2)
			}
			if results != nil {
				results[start+i] = present
			}
		}
	}
}

// blockSeq walks the in-block candidates of blockMask one at a time, so that
// one walk gives the masks of several k: the mask of k positions is made of
// the first k distinct candidates, so it is the start of the walk that
// makes the mask of any larger k (TestBlockSeqMatchesBlockMask).
type blockSeq struct {
	h2 uint64
	c  candidates
	n  uint // distinct positions in m
	m  [8]uint64
}

func newBlockSeq(h2 uint64) blockSeq {
	return blockSeq{h2: h2, c: newCandidates(h2)}
}

// maskOf returns the mask of the first k positions, blockMask(h2, k),
// walking on from where the last call stopped if k is not smaller.
func (s *blockSeq) maskOf(k uint) *[8]uint64 {
	if k < s.n {
		*s = newBlockSeq(s.h2)
	}
	for s.n < k {
		p := s.c.next()
		if i, bit := p>>6, uint64(1)<<(p&63); s.m[i]&bit == 0 {
			s.m[i] |= bit
			s.n++
		}
	}
	return &s.m
}

// anyHoldsSeq reports whether any of the blocked filters, oldest first,
// holds the key hashed to (h1, h2). The first two in-block candidates of a
// key are the same in every filter, and for k >= 2 both are positions (the
// second may repeat the first): a first pass reads those two bits in every
// filter, without a branch on them, so that the cache misses of all
// filters are in flight at once and an absent key is usually ruled out
// there (each filter's bits are about half set at capacity). The filters
// still in the running are then tested in full, oldest first, the order in
// which their k grow, so that one walk of the key's in-block sequence
// (blockSeq) makes all their masks. Loads are atomic for concurrent
// filters (plain loads on amd64).
func anyHoldsSeq(filters []*BloomFilter, h1, h2 uint64) bool {
	seq := newBlockSeq(h2)
	p0, p1 := h2&(BlockBits-1), h2>>9&(BlockBits-1)
	for len(filters) > 0 {
		chunk := filters[:min(len(filters), 64)]
		filters = filters[len(chunk):]
		var alive uint64 // bit j: chunk[j] may hold the key
		for j, f := range chunk {
			q := p1
			if f.k == 1 {
				q = p0
			}
			blk := f.block(blockOf(h1, f.m/BlockBits))
			hold := atomic.LoadUint64(&blk[p0>>6]) >> (p0 & 63) & (atomic.LoadUint64(&blk[q>>6]) >> (q & 63)) & 1
			alive |= hold << j
		}
		for ; alive != 0; alive &= alive - 1 {
			f := chunk[bits.TrailingZeros64(alive)]
			blk := f.block(blockOf(h1, f.m/BlockBits))
			if holdsCandidates(blk, h2, f.k) && holdsMaskAtomic(blk, seq.maskOf(f.k)) {
				return true
			}
		}
	}
	return false
}

// holdsCandidates reports whether blk, loaded atomically, holds the third to
// the min(k, 7)th in-block candidates of h2, which are positions of the key
// whatever they are (see testBlocked): false rules the key out without its
// mask. anyHoldsSeq screens the filters left after its first pass with it,
// so that few absent keys walk their sequence (blockSeq).
func holdsCandidates(blk *[8]uint64, h2 uint64, k uint) bool {
	all := uint64(1)
	for p, n := h2>>18, int(min(k, fieldsPerWord))-2; n > 0; n-- {
		all &= atomic.LoadUint64(&blk[p>>6&7]) >> (p & 63)
		p >>= 9
	}
	return all&1 != 0
}

// scalableFlight is a round of a blocked ScalableBloomFilter's batch call
// in the pipeline: n keys hashed to h.
type scalableFlight struct {
	n int
	h [scalableRound]hashed
}

// launchScalable hashes keys, at most scalableRound, into r and prefetches
// their blocks in every sub-filter of at least blockedPrefetchBits bits, in
// one call to prefetch.Pointers rather than one prefetch.Words per
// sub-filter (0.82-0.88x the time per absent key, two runs side by side).
func launchScalable[K keyType](r *scalableFlight, s *ScalableBloomFilter, keys []K) {
	r.n = len(keys)
	hashRound(r.h[:], keys, s.seed)
	filters, _ := s.subFilters()
	var ps [64]*uint64
	n := 0
	for _, f := range filters {
		if f.m < blockedPrefetchBits {
			continue
		}
		blocks := f.m / BlockBits
		for i := range r.n {
			if n == len(ps) {
				prefetch.Pointers(ps[:])
				n = 0
			}
			ps[n] = &f.words[blockOf(r.h[i].h1, blocks)*8]
			n++
		}
	}
	prefetch.Pointers(ps[:n])
}

// scalableTestManyBlocked is scalableTestMany for blocked sub-filters, with
// the pipeline of testManyBlocked across the sub-filters.
func scalableTestManyBlocked[K keyType](s *ScalableBloomFilter, keys []K, results []bool) []bool {
	var ring [scalableAhead + 1]scalableFlight
	rounds := (len(keys) + scalableRound - 1) / scalableRound
	for t := range rounds + scalableAhead {
		if t < rounds {
			lo := t * scalableRound
			launchScalable(&ring[t%(scalableAhead+1)], s, keys[lo:min(lo+scalableRound, len(keys))])
		}
		if t < scalableAhead {
			continue
		}
		r := &ring[(t-scalableAhead)%(scalableAhead+1)]
		out := results[(t-scalableAhead)*scalableRound:][:r.n]
		filters, _ := s.subFilters()
		for i := range out {
			out[i] = anyHoldsSeq(filters, r.h[i].h1, r.h[i].h2)
		}
	}
	return results
}

// scalableAddManyBlocked is scalableAddMany for blocked sub-filters, with
// the pipeline of scalableTestManyBlocked. Growth happens where the loop of
// single calls grows: the keys are tested and inserted in order.
func scalableAddManyBlocked[K keyType](s *ScalableBloomFilter, keys []K, results []bool) {
	var ring [scalableAhead + 1]scalableFlight
	rounds := (len(keys) + scalableRound - 1) / scalableRound
	for t := range rounds + scalableAhead {
		if t < rounds {
			lo := t * scalableRound
			launchScalable(&ring[t%(scalableAhead+1)], s, keys[lo:min(lo+scalableRound, len(keys))])
		}
		if t < scalableAhead {
			continue
		}
		r := &ring[(t-scalableAhead)%(scalableAhead+1)]
		start := (t - scalableAhead) * scalableRound
		for i := range r.n {
			h1, h2 := r.h[i].h1, r.h[i].h2
			var present bool
			if s.conc != nil {
				present = s.testAndAdd(h1, h2)
			} else if present = anyHoldsSeq(s.filters, h1, h2); !present {
				s.insert(h1, h2)
			}
			if results != nil {
				results[start+i] = present
			}
		}
	}
}

// Hashed keys.
//
// AddHash, TestHash, TestAndAddHash and their batch forms take a key that
// the caller has already hashed to 64 bits (a request ID, a content hash, a
// hash kept from an earlier pass). The filter hashes that number again, as
// its 8 little-endian bytes with murmur3 and the filter's seed, so the hashed
// calls of a key h set and read exactly the bits that Add, Test and
// TestAndAdd of those 8 bytes do. The second hash spreads any input, even a
// weak hash such as FNV-1a or plain sequential integers, over the positions
// as well as murmur3 spreads keys, so the false-positive rate is the one
// the filter promises for keys, plus the collisions of the caller's hash:
// keys whose 64-bit hashes are equal are one key to the filter. For n added
// keys and a hash that is uniform over 64 bits, that adds about n/2^64 to the
// rate (5e-11 at n = 10^9). They cost less than the calls on keys of 9 bytes
// or more and never allocate.

// AddHash inserts the key whose 64-bit hash is h: it is Add of the 8
// little-endian bytes of h (see TestHash). It does not allocate.
func (f *BloomFilter) AddHash(h uint64) {
	addKey(f, h)
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false. It is Test of the 8
// little-endian bytes of h: the filter mixes h with murmur3 and its seed,
// so a weak hash such as FNV-1a or sequential integers meets the
// false-positive rate; keys whose hashes collide are one key to the filter,
// which adds about n/2^64 to the rate for n keys and a uniform 64-bit hash.
// It does not allocate.
func (f *BloomFilter) TestHash(h uint64) bool {
	return testKey(f, h)
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (f *BloomFilter) TestAndAddHash(h uint64) bool {
	return addKey(f, h)
}

// AddManyHashes is AddMany for keys given as 64-bit hashes: it inserts every
// hash of hashes, in order, like calling AddHash on each.
func (f *BloomFilter) AddManyHashes(hashes []uint64) { addMany(f, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
func (f *BloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return testMany(f, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
func (f *BloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	addMany(f, hashes, results)
	return results
}
