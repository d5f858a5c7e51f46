// Package bloom implements Bloom filters: compact sets that answer "definitely
// absent" or "probably present", with no false negatives and a false-positive
// rate that is chosen up front and that holds.
//
// BloomFilter is a fixed-size filter sized from a capacity (keys) and a target
// error rate. ScalableBloomFilter grows without limit while keeping its overall
// error rate under its target. WindowFilter remembers only the last keys it
// was given, by count or by time, keeping its rate in bounded memory. View
// answers from the bytes of an encoding where they lie (a file mapping, an
// embedded string) without loading them.
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
// elsewhere. A View answers queries from an encoding where it lies, without
// decoding it: bytes in memory (NewView), a string from go:embed
// (NewViewString) or a file mapped into memory (Open).
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
// A WindowFilter's encoding (magic "BLMW", version 3) is laid out the same
// way, a 64-byte header with its own checksum and the bits of each
// generation in checksummed sections; its type doc gives the fields.
//
// The text encoding of every type is the standard base64 (RFC 4648, with
// padding, without line breaks) of its binary encoding.
package bloom

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/mmap"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/window"

	// The batch pipelines of internal/classic and internal/blocked are
	// generic, so they are compiled here, where they are instantiated, and
	// the compiler inlines prefetch.Words and Pointers into them only if
	// this package imports internal/prefetch itself (go build -gcflags=-m;
	// without it, one call more per prefetch).
	_ "github.com/bloomfilters/bloom/internal/prefetch"
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

// The copies of these limits in internal/format and internal/blocked: the
// build fails (constant overflow) if they differ.
const (
	_ = uint64(MaxBits-format.MaxBits) + uint64(format.MaxBits-MaxBits)
	_ = uint(MaxHashes-format.MaxHashes) + uint(format.MaxHashes-MaxHashes)
	_ = uint(BlockBits-blocked.BlockBits) + uint(blocked.BlockBits-BlockBits) +
		uint(BlockBits-format.BlockBits) + uint(format.BlockBits-BlockBits)
)

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

	win windowSettings // Every, Clock, OnOverflow, Generations (scalable.go)
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
// their String forms) and Clone panic on a zero BloomFilter, with a message
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
	conc  *layout.Conc   // nil unless the filter is concurrent

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
	if bits == 0 || bits > MaxBits || (bits-1)/64 >= format.MaxWords {
		return paramError("bits must be in [1, %d], got %d", min(MaxBits, format.MaxWords*64), bits)
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
	return s.win.none()
}

// newFilter is the one path that allocates a filter; m and k are valid.
func newFilter(m uint64, k uint, capacity uint64, errorRate float64, s settings) (*BloomFilter, error) {
	set := layout.NewSet(m, s.blocked)
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
		f.makeConcurrent(layout.NewLocks(len(f.words)))
	}
	return f, nil
}

// makeConcurrent switches f, not yet shared, to concurrent mode with the
// given locks (nil for a sub-filter of a ScalableBloomFilter).
func (f *BloomFilter) makeConcurrent(locks *layout.Locks) {
	f.conc = &layout.Conc{Locks: locks}
	f.conc.Store(f.count)
	f.count = 0
}

// word returns word i of the bits, with an atomic load if f is concurrent.
func (f *BloomFilter) word(i int) uint64 {
	if f.conc != nil {
		return atomic.LoadUint64(&f.words[i])
	}
	return f.words[i]
}

// bits returns the bits of f as the layouts probe them.
func (f *BloomFilter) bits() layout.Bits {
	return layout.Bits{Words: f.words, M: f.m, K: f.k}
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
	h1, h2 := murmur.Sum128(key, seed)
	return classic.AppendPositions(dst, h1, h2, bits, hashes)
}

// bytesOf returns the bytes of s without copying. The result must not be
// modified; murmur3 only reads it.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

const errZeroValue = "bloom: use of a zero BloomFilter (create one with New or NewWithSize)"

// add sets the positions of the key hashed to (h1, h2) and reports whether
// all of them were already set. Count goes up when at least one was not.
func (f *BloomFilter) add(h1, h2 uint64) (present bool) {
	switch {
	case f.conc != nil && f.blocked:
		return blocked.AddLocked(f.words, f.m, f.k, h1, h2, f.conc.Locks)
	case f.conc != nil:
		return classic.AddLocked(f.words, f.m, f.k, h1, h2, f.conc.Locks)
	case f.k == 0:
		panic(errZeroValue)
	case !f.blocked:
		present = classic.Add(f.words, f.m, f.k, h1, h2)
	case blocked.Wide(f.k):
		blk := blocked.Block(f.words, f.m, h1)
		var ok bool
		if present, ok = blocked.AddWide(blk, h2, f.k); !ok {
			present = blocked.AddRepeat(blk, h2, f.k)
		}
	default: // blocked.Add, with f's fields read again after AddFast
		r1, r2, fast, ok := blocked.AddFast(f.words, f.k, h1, h2)
		if present = fast; !ok {
			present = blocked.AddRepeat(blocked.Block(f.words, f.m, r1), r2, f.k)
		}
	}
	if !present {
		f.count++
	}
	return present
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

// addKey is TestAndAdd. For the usual filter, blocked, not Concurrent, with
// 2 to 7 hash functions (error rates from about 0.3% to 25%), or 8 or 9
// where blocked.Wide, the hash and the layout's add are written out here
// from parts that inline (murmur's Blocks and Finish, Tail for keys that
// are not a multiple of 16 bytes; blocked's BlockAt, DistinctFields,
// SetBit), so that a key costs one call, this one, and one to assembly
// where the CPU has AVX-512 (blocked.AddFields, AddWide); the other filters
// go on to addHashed. Against the former code, a murmur call and a call to
// blocked.AddFast, Add of a 16-byte key into a filter of 1% went from 311
// to 278 instructions per key in a loop on the Go path (valgrind
// --tool=cachegrind; blobloom's Add with xxhash: 211).
//
// The hashed calls pass it a hash's 8 bytes (layout.HashBytes). It is not
// generic, as it was for a while: a call to a generic function that a
// caller in another package inlines, such as Add, made the key escape there
// (escape analysis had no tags for the instantiation), so Add of a stack
// array allocated (TestNoAllocsFromOtherPackage).
func addKey(f *BloomFilter, key []byte) (present bool) {
	var h1, h2 uint64
	if len(key) <= 16 {
		// murmur.Sum128 written out, as its parts inline: no call for a
		// key of 16 bytes. Longer keys take one call, as before, whose
		// loop is faster than Blocks' (its slices need a mask).
		h1, h2 = murmur.Blocks(key, f.seed)
		if len(key) != 16 {
			h1, h2 = murmur.Tail(h1, h2, key)
		}
		h1, h2 = murmur.Finish(h1, h2, len(key))
	} else {
		h1, h2 = murmur.Sum128(key, f.seed)
	}
	if k := f.k; f.conc == nil && f.blocked && (k-2 < blocked.FieldsPerWord-1 || blocked.Wide(k)) {
		// blocked.Add for 2 <= k <= 7, and 8 or 9 where Wide, written out:
		// the first k candidates are the key's positions when they are
		// distinct (AddFast), otherwise AddRepeat finds them.
		blk := blocked.BlockAt(f.words, h1)
		var ok bool
		switch {
		case k > blocked.FieldsPerWord:
			present, ok = blocked.AddWide(blk, h2, k)
		case blocked.Native():
			present, ok = blocked.AddFields(blk, h2, k)
		case blocked.DistinctFields(h2&blocked.FieldBits, k):
			ok = true
			var fresh uint64
			switch k {
			case 7:
				fresh = blocked.SetBit(blk, h2>>54, fresh)
				fallthrough
			case 6:
				fresh = blocked.SetBit(blk, h2>>45, fresh)
				fallthrough
			case 5:
				fresh = blocked.SetBit(blk, h2>>36, fresh)
				fallthrough
			case 4:
				fresh = blocked.SetBit(blk, h2>>27, fresh)
				fallthrough
			case 3:
				fresh = blocked.SetBit(blk, h2>>18, fresh)
			}
			fresh = blocked.SetBit(blk, h2>>9, fresh)
			present = blocked.SetBit(blk, h2, fresh) == 0
		}
		if !ok {
			present = blocked.AddRepeat(blk, h2, k)
		}
		if !present {
			f.count++
		}
		return present
	}
	if f.conc == nil && !f.blocked && f.k != 0 {
		// The classic layout's add, called from here, as testKey does.
		if present = classic.Add(f.words, f.m, f.k, h1, h2); !present {
			f.count++
		}
		return present
	}
	return addHashed(f, h1, h2)
}

// addHashed is addKey for the key hashed to (h1, h2) in the filters that
// its fast path leaves: Concurrent ones, classic ones, and blocked ones of
// k = 1 or k > 7 (k > 9 where blocked.Wide).
func addHashed(f *BloomFilter, h1, h2 uint64) (present bool) {
	switch {
	case f.conc != nil || f.k == 0:
		return f.add(h1, h2)
	case !f.blocked:
		present = classic.Add(f.words, f.m, f.k, h1, h2)
	case blocked.Wide(f.k):
		blk := blocked.Block(f.words, f.m, h1)
		var ok bool
		if present, ok = blocked.AddWide(blk, h2, f.k); !ok {
			present = blocked.AddRepeat(blk, h2, f.k)
		}
	default:
		r1, r2, fast, ok := blocked.AddFast(f.words, f.k, h1, h2)
		if present = fast; !ok {
			present = blocked.AddRepeat(blocked.Block(f.words, f.m, r1), r2, f.k)
		}
	}
	if !present {
		f.count++
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

// testKey is Test. It takes bytes only, like addKey, and writes the hash
// and blocked.Test out the same way for the same filters, from parts that
// all inline but Rest, taken by few keys (see blocked.Test for what a call
// per key cost); the others go on to testHashed.
//
// After the first two candidates (one branch on both, which sends three
// absent keys in four away), each further one is a bit test and a branch
// (Has: BT and a jump, 8 instructions), instead of blocked.Later3 and
// Later6 (shifts by a count in CL, two switches on k): for present keys
// every branch goes the same way. With the hash written out and BlockAt
// (no bounds check), Test of a present 16-byte key in a filter of 1% went
// from 303 to 259 instructions per key in a loop, absent keys from 200 to
// 170 (valgrind --tool=cachegrind; blobloom's Has with xxhash: 216 and 145).
// A branch after every candidate from the first on cost absent keys at
// 10^6 1.05-1.08x blobloom's time against 0.77-0.79x (mispredicted
// branches).
//
// Where the CPU has AVX-512 (blocked.Native), the test of the k candidates
// and the check that they are distinct are one call to assembly
// (blocked.TestFields; TestAll for k = 8, 9), with one branch on the answer. At 10^6 16-byte keys,
// p = 0.01 (k = 6), the Go path above cost present keys 1.34-1.46x
// blobloom's time, of which the distinct check (DistinctFields, 37
// instructions) was most: without it (a measurement only, wrong for 3% of
// keys) 1.02x. With TestFields present keys cost 0.99-1.06x and absent keys
// 0.54-0.57x, against 0.78-0.86x (fastest and median of 15 alternated
// passes, bench's probe on a loaded 2-vCPU machine). addKey likewise calls
// blocked.AddFields: Add 1.21-1.31x -> 1.16x.
func testKey(f *BloomFilter, key []byte) bool {
	var h1, h2 uint64
	if len(key) <= 16 {
		// murmur.Sum128 written out, as its parts inline: no call for a
		// key of 16 bytes. Longer keys take one call, as before, whose
		// loop is faster than Blocks' (its slices need a mask).
		h1, h2 = murmur.Blocks(key, f.seed)
		if len(key) != 16 {
			h1, h2 = murmur.Tail(h1, h2, key)
		}
		h1, h2 = murmur.Finish(h1, h2, len(key))
	} else {
		h1, h2 = murmur.Sum128(key, f.seed)
	}
	if k := f.k; f.conc == nil && f.blocked && (k-2 < blocked.FieldsPerWord-1 || blocked.Wide(k)) {
		// blocked.Test for 2 <= k <= 7, and 8 or 9 where Wide, written out.
		blk := blocked.BlockAt(f.words, h1)
		if blocked.Native() {
			var present, ok bool
			if k > blocked.FieldsPerWord {
				present, ok = blocked.TestAll(blk, h2, k)
			} else {
				present, ok = blocked.TestFields(blk, h2, k)
			}
			if ok {
				return present
			}
			return blocked.Rest(blk, h2, k)
		}
		if blocked.Bit(blk, h2)&blocked.Bit(blk, h2>>9) == 0 {
			return false
		}
		switch k {
		case 7:
			if !blocked.Has(blk, h2>>54) {
				return false
			}
			fallthrough
		case 6:
			if !blocked.Has(blk, h2>>45) {
				return false
			}
			fallthrough
		case 5:
			if !blocked.Has(blk, h2>>36) {
				return false
			}
			fallthrough
		case 4:
			if !blocked.Has(blk, h2>>27) {
				return false
			}
			fallthrough
		case 3:
			if !blocked.Has(blk, h2>>18) {
				return false
			}
		}
		return blocked.DistinctFields(h2&blocked.FieldBits, k) || blocked.Rest(blk, h2, k)
	}
	if f.conc == nil && !f.blocked && f.k != 0 {
		// The classic layout's test, called from here as before (through
		// testHashed, one frame more, classic Test at 10^6 keys cost
		// 1.1-1.2x).
		return classic.Test(f.words, f.m, f.k, h1, h2)
	}
	return testHashed(f, h1, h2)
}

// testHashed is testKey for the key hashed to (h1, h2) in the filters that
// its fast path leaves: Concurrent ones, classic ones, and blocked ones of
// k = 1 or k > 7 (k > 9 where blocked.Wide).
func testHashed(f *BloomFilter, h1, h2 uint64) bool {
	switch {
	case f.conc != nil && f.blocked:
		return blocked.TestAtomic(f.words, f.m, f.k, h1, h2)
	case f.conc != nil:
		return classic.TestAtomic(f.words, f.m, f.k, h1, h2)
	case !f.blocked:
		if f.k == 0 {
			panic(errZeroValue)
		}
		return classic.Test(f.words, f.m, f.k, h1, h2)
	}
	blk, k := blocked.Block(f.words, f.m, h1), f.k
	if !blocked.FirstTwo(blk, h2, k) || blocked.Later3(blk, h2, k)&blocked.Later6(blk, h2, k)&1 == 0 {
		return false
	}
	return k <= blocked.FieldsPerWord && blocked.DistinctFields(h2&blocked.FieldBits, k) || blocked.Rest(blk, h2, k)
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
// BloomFilter larger than the caches the keys go in rounds, a pipeline of
// the filter's layout (classic.TestMany and AddMany, blocked.TestMany and
// AddMany): it hashes keys and prefetches their words a few keys ahead of
// the one it tests or adds, and tests or adds the keys one after the other,
// in order, with the single-key code. So the cache misses of several keys
// overlap instead of coming one after another, and the semantics are those
// of the single calls by construction.
//
// The exported batch methods are go:noinline: each is a call to a generic
// function, and a caller in another package that inlined one called that
// generic function's instantiation, for which escape analysis has no tags,
// so the keys escaped: a [][]byte on the caller's stack cost two
// allocations per call (TestNoAllocsFromOtherPackage). One call per batch
// is nothing next to the keys.

// batchResults returns results[:n], reusing its storage, if it has room for n
// answers, and a new slice of n otherwise.
func batchResults(results []bool, n int) []bool {
	if cap(results) >= n {
		return results[:n]
	}
	return make([]bool, n)
}

// testMany is TestMany for either kind of keys: the layout's pipeline.
func testMany[K layout.Key](f *BloomFilter, keys []K, results []bool) []bool {
	results = batchResults(results, len(keys))
	if len(keys) != 0 && f.k == 0 {
		panic(errZeroValue)
	}
	if f.blocked {
		blocked.TestMany(f.bits(), f.seed, keys, results, f.conc != nil)
	} else {
		classic.TestMany(f.bits(), f.seed, keys, results, f.conc != nil)
	}
	return results
}

// addMany adds keys in order; if results is not nil, it records in it what
// TestAndAdd would have returned for each.
func addMany[K layout.Key](f *BloomFilter, keys []K, results []bool) {
	if len(keys) != 0 && f.k == 0 {
		panic(errZeroValue)
	}
	var locks *layout.Locks
	if f.conc != nil {
		locks = f.conc.Locks
	}
	if f.blocked {
		blocked.AddMany(f.bits(), f.seed, keys, results, &f.count, locks)
	} else {
		classic.AddMany(f.bits(), f.seed, keys, results, &f.count, locks)
	}
}

// AddMany inserts every key of keys, in order, like calling Add on each. On a
// filter larger than the caches it overlaps the cache misses of several keys,
// which makes it faster than that loop. It does not allocate.
//
//go:noinline
func (f *BloomFilter) AddMany(keys [][]byte) { addMany(f, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
//
//go:noinline
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
//
//go:noinline
func (f *BloomFilter) TestMany(keys [][]byte, results []bool) []bool {
	return testMany(f, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
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
//
//go:noinline
func (f *BloomFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	results = batchResults(results, len(keys))
	addMany(f, keys, results)
	return results
}

// TestAndAddManyStrings is TestAndAddMany for string keys, without copying
// them.
//
//go:noinline
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
		return f.conc.Load()
	}
	return f.count
}

// setCount sets what Count returns; f must not be shared.
func (f *BloomFilter) setCount(n uint64) {
	if f.conc != nil {
		f.conc.Store(n)
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

// EstimatedErrorRate returns the probability that Test reports an absent key
// as present at the current fill: FillRatio()^k. It is O(m/64).
func (f *BloomFilter) EstimatedErrorRate() float64 {
	if f.k == 0 {
		return 0 // a zero BloomFilter; Pow(0, 0) is 1
	}
	if f.blocked {
		return blocked.ErrorRate(f.bits(), f.conc != nil)
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
		g.makeConcurrent(f.conc.NewLocks())
	}
	return g
}

// snapshot returns a plain (not concurrent) copy of f. The count of a copy of
// a concurrent f is at most its set bits, as sharedCount explains. O(m/64).
func (f *BloomFilter) snapshot() *BloomFilter {
	g := *f
	if f.conc == nil {
		g.set = layout.CloneSet(f.set, f.m, f.blocked)
		g.words = g.set.Words()[:len(f.words)]
		return &g
	}
	count := f.conc.Load() // before the bits: see sharedCount
	g.conc = nil
	g.set = layout.NewSet(f.m, f.blocked)
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
	return min(f.conc.Load(), f.setBits())
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
		g.makeConcurrent(f.conc.NewLocks())
	}
	return g, nil
}

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

// Layout returns the filter's layout, LayoutClassic or LayoutBlocked, or 0
// for a zero BloomFilter. Filters of different layouts are never combined or
// Equal, and their bits mean different keys.
func (f *BloomFilter) Layout() Layout {
	if f.k == 0 {
		return 0
	}
	return layoutOf(f.blocked)
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
	if format.Padding(h.Bits, words) {
		return nil, paramError("bits set at %d bits or above", h.Bits)
	}
	if set := format.SetBits(words); h.Count > set {
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
	f.conc.Locks.AddCount(want - f.conc.Load())
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
// Blocked filters are combined and compared only with blocked filters; the
// encoding records the layout (see the package doc: version 3, and version 2
// as written before it).
func Blocked() Option { return layoutOption(true) }

// Classic selects the classic layout: the k bits of a key anywhere in the
// filter (see AppendLocations), sized by FalsePositiveRate. New and
// NewScalable choose the blocked layout by default where it costs at most
// 10% more memory than the classic one for the requested size (error rates
// down to about 5e-4 for large filters; see DefaultLayout); Classic keeps
// the classic layout whatever the size, for the least memory at low error
// rates or to combine with classic filters. NewWithSize is classic without
// it. Given to a decoder or FromWords, it requires a classic encoding.
func Classic() Option { return layoutOption(false) }

// layoutOption is Blocked (isBlocked) or Classic: each may be given once,
// and not both.
func layoutOption(isBlocked bool) Option {
	name, other := "Classic", "Blocked"
	if isBlocked {
		name, other = other, name
	}
	return Option{func(s *settings) error {
		switch {
		case s.blocked == isBlocked && (s.blocked || s.classic):
			return paramError("%s may be given only once", name)
		case s.blocked || s.classic:
			return paramError("%s contradicts %s: give one of them", name, other)
		}
		s.blocked, s.classic = isBlocked, !isBlocked
		return nil
	}}
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
	return blocked.AppendPositions(dst, h1, h2, bits, hashes)
}

// Blocked reports whether the filter has the blocked layout (see Blocked).
func (f *BloomFilter) Blocked() bool { return f.blocked }

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
	addKey(f, layout.HashBytes(&h))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false. It is Test of the 8
// little-endian bytes of h: the filter mixes h with murmur3 and its seed,
// so a weak hash such as FNV-1a or sequential integers meets the
// false-positive rate; keys whose hashes collide are one key to the filter,
// which adds about n/2^64 to the rate for n keys and a uniform 64-bit hash.
// It does not allocate.
func (f *BloomFilter) TestHash(h uint64) bool {
	return testKey(f, layout.HashBytes(&h))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (f *BloomFilter) TestAndAddHash(h uint64) bool {
	return addKey(f, layout.HashBytes(&h))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes: it inserts every
// hash of hashes, in order, like calling AddHash on each.
//
//go:noinline
func (f *BloomFilter) AddManyHashes(hashes []uint64) { addMany(f, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
//
//go:noinline
func (f *BloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return testMany(f, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
//
//go:noinline
func (f *BloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	addMany(f, hashes, results)
	return results
}

// View is a read-only filter over the bytes of an encoding, of a
// BloomFilter or a ScalableBloomFilter, in any format version: a filter
// that a file mapping, an embedded string or any []byte already holds,
// answered where it lies, without decoding it into the heap. NewView and
// NewViewString make one over bytes in memory, Open over a file.
//
// A View answers Test, TestString, TestHash and their batch forms exactly as
// the filter decoded from the same bytes would, with the same meaning of
// true and false. It never writes the bytes, and is safe for any number of
// concurrent readers. It never copies the bits of a version-3 encoding
// (what MarshalBinary and WriteTo write) that starts on a multiple of 8
// bytes, as a file mapping, a go:embed []byte and large heap slices do:
// then its bits start on a cache line if the encoding starts on one. A
// misaligned encoding (a go:embed string can start at any address), and
// every encoding on a big-endian machine, costs one aligned copy of its
// bits; so do the sub-filters of a ScalableBloomFilter in version 1 or 2
// that do not lie on a multiple of 8 bytes. Copied reports whether there
// was a copy. Versions 1 and 2 put the bits at offset 48, so the blocks of
// a blocked filter in them straddle cache lines: saving it again writes
// version 3.
//
// Before its first answer a View checks the headers, the length and, unless
// SkipBodyCheck is given, every checksum of the bits (in parallel, for
// version 3): a corrupt or truncated encoding is an error wrapping ErrCorrupt
// or io.ErrUnexpectedEOF, never an answer. Unlike a decoder, it does not
// count the bits set, so Count is the count recorded.
//
// Close releases what Open mapped. A call after Close panics with a message
// that says so; Close must not run concurrently with other calls, and the
// bytes given to NewView must not change while the View is used.
type View struct {
	f      *BloomFilter         // the filter of a BloomFilter's encoding, or nil
	s      *ScalableBloomFilter // the filter of a ScalableBloomFilter's encoding, or nil
	closed atomic.Bool
	file   *mmap.File // what Open mapped or read
	copied bool
	ver    int
}

// ViewOption configures NewView, NewViewString and Open.
type ViewOption struct{ skipBody bool }

// SkipBodyCheck makes a View check only the headers and the length of the
// encoding, not the checksums of its bits, so that opening a large file
// reads only its first page and the pages its answers touch (a 1.2 GB
// filter opens in milliseconds instead of about a second). The risk is the
// one the checksums guard against: a bit cleared by a damaged disk, a torn
// copy or a truncated write that kept the length makes the View answer
// "absent" for keys that were added (false negatives), and a bit set makes
// it answer "present" more often; nothing reports it. Use it for bytes
// whose integrity is known otherwise: embedded in the program, checked once
// after download, or on a file system that checksums its blocks.
func SkipBodyCheck() ViewOption { return ViewOption{skipBody: true} }

// skipBody reports whether opts hold SkipBodyCheck.
func skipBody(opts []ViewOption) bool {
	for _, o := range opts {
		if o.skipBody {
			return true
		}
	}
	return false
}

const errClosedView = "bloom: use of a View after Close"

// littleEndian reports whether words can be read where they lie in an
// encoding, which is little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// NewView returns a View over data, the encoding of a BloomFilter or a
// ScalableBloomFilter, after checking it (see View). data must hold exactly
// one encoding; the View reads it for as long as it is used, so data must
// not change. It returns an error wrapping ErrCorrupt, or
// io.ErrUnexpectedEOF, for anything else, and never panics.
//
// A View answers at the speed of the memory that holds data. At 10^8 keys,
// bytes in 2 MiB pages answered Test and TestMany within 1.03x of the
// filter decoded with Read (which asks for such pages); a large []byte from
// make sits in 4 KiB pages where the system gives huge pages only on
// request (Linux's transparent_hugepage=madvise, the Go heap does not ask),
// and answered 1.3 to 1.5x slower. For a big filter queried at random,
// prefer Open on a file, or Read (docs/mapping.md).
func NewView(data []byte, opts ...ViewOption) (*View, error) {
	if len(data) >= len(window.Magic) && string(data[:len(window.Magic)]) == window.Magic {
		return nil, format.Corrupt("a WindowFilter's encoding: a View reads those of BloomFilter and ScalableBloomFilter; use ReadWindow")
	}
	e, err := format.Locate(data, !skipBody(opts))
	if err != nil {
		return nil, err
	}
	v := &View{ver: e.Version}
	filters := make([]*BloomFilter, len(e.Filters))
	for i, l := range e.Filters {
		words, copied := wordsAt(data, l.Words, l.Header.Words(), l.Blocked)
		v.copied = v.copied || copied
		filters[i] = &BloomFilter{
			m: l.M, k: l.K, seed: l.Seed, set: bitset.FromWithLength(uint(l.M), words), words: words,
			count: l.Count, capacity: l.Capacity, errorRate: l.ErrorRate, blocked: l.Blocked,
		}
	}
	if !e.Scalable {
		v.f = filters[0]
		return v, nil
	}
	var k scalableSink
	if err := k.Params(e.Params); err != nil {
		return nil, err
	}
	for i, f := range filters {
		if err := k.add(i, f); err != nil {
			return nil, err
		}
	}
	if err := k.done(nil); err != nil {
		return nil, err
	}
	v.s = k.d
	return v, nil
}

// wordsAt returns the n little-endian words at offset off of data: those
// bytes themselves if they lie on a multiple of 8 and the machine is
// little-endian, otherwise a copy (cache-line aligned for the blocked
// layout), and whether it copied.
func wordsAt(data []byte, off, n uint64, isBlocked bool) ([]uint64, bool) {
	b := data[off : off+8*n]
	if p := unsafe.Pointer(unsafe.SliceData(b)); littleEndian && uintptr(p)%8 == 0 {
		return unsafe.Slice((*uint64)(p), n), false
	}
	words := hugepage.Words(n)
	if isBlocked {
		words = hugepage.AlignedWords(n)
	}
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return words, true
}

// NewViewString is NewView over the bytes of data, such as a filter
// embedded with go:embed into a string variable, without copying them
// unless they are misaligned (see View).
func NewViewString(data string, opts ...ViewOption) (*View, error) {
	return NewView(bytesOf(data), opts...)
}

// Open returns a View over the file at path, which holds one encoding. On
// Linux and macOS it maps the file read-only and shared: opening reads the
// pages the checks read (the first one only, with SkipBodyCheck), an answer
// the pages it touches, and processes that open the same file share its
// pages in the page cache. Elsewhere it reads the file into memory. Close
// unmaps it.
//
// Queries cost what the pages that hold the file cost: on Linux a file the
// kernel caches in 2 MiB pages (ext4 does for a file read back from disk,
// tmpfs mounted with huge=always) answers as fast as a filter loaded with
// Read, one this machine has just written, cached in small pages, about 2
// to 4 times slower per query until it is read back (docs/mapping.md has the
// measurements and what to do). With SkipBodyCheck, Open asks for 2 MiB
// pages (MADV_HUGEPAGE): the first answer from a cold 1.2 GB file then took
// 1.6 ms instead of 14.7 ms.
func Open(path string, opts ...ViewOption) (*View, error) {
	var advice []mmap.Advice
	if skipBody(opts) {
		// Not with the body check: huge pages made a cold check slower
		// (675 ms instead of 295 ms, bench's BenchmarkOpenFirstQuery).
		advice = append(advice, mmap.HugePages)
	}
	file, err := mmap.Open(path, advice...)
	if err != nil {
		return nil, err
	}
	v, err := NewView(file.Data, opts...)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	v.file = file
	return v, nil
}

// Close releases the View: it unmaps the file that Open mapped. Any call
// after it, Close included, panics. It must not run concurrently with other
// calls of the View.
func (v *View) Close() error {
	if v.closed.Swap(true) {
		panic(errClosedView)
	}
	if v.file != nil {
		return v.file.Close()
	}
	return nil
}

// check panics if v is closed.
func (v *View) check() {
	if v.closed.Load() {
		panic(errClosedView)
	}
}

// Test reports whether key may be in the filter, with the meaning of
// BloomFilter.Test: false means key was definitely never added.
func (v *View) Test(key []byte) bool {
	v.check()
	if v.f != nil {
		return testKey(v.f, key)
	}
	return v.s.test(murmur.Sum128(key, v.s.seed))
}

// TestString is Test for a string key, without copying or allocating.
func (v *View) TestString(key string) bool { return v.Test(bytesOf(key)) }

// TestHash is Test for a key given as its 64-bit hash, as
// BloomFilter.TestHash.
func (v *View) TestHash(h uint64) bool {
	v.check()
	if v.f != nil {
		return testKey(v.f, layout.HashBytes(&h))
	}
	return v.s.test(murmur.Sum128(layout.KeyBytes(&h), v.s.seed))
}

// TestMany reports for every key of keys whether it may be in the filter:
// results[i] is Test(keys[i]). It fills and returns results like
// BloomFilter.TestMany, and overlaps the cache misses of several keys.
//
//go:noinline
func (v *View) TestMany(keys [][]byte, results []bool) []bool { return viewTestMany(v, keys, results) }

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
func (v *View) TestManyStrings(keys []string, results []bool) []bool {
	return viewTestMany(v, keys, results)
}

// TestManyHashes is TestMany for keys given as 64-bit hashes.
//
//go:noinline
func (v *View) TestManyHashes(hashes []uint64, results []bool) []bool {
	return viewTestMany(v, hashes, results)
}

func viewTestMany[K layout.Key](v *View, keys []K, results []bool) []bool {
	v.check()
	if v.f != nil {
		return testMany(v.f, keys, results)
	}
	return scalableTestMany(v.s, keys, results)
}

// Scalable reports whether the View is over a ScalableBloomFilter's
// encoding.
func (v *View) Scalable() bool { return v.s != nil }

// Version returns the format version of the encoding, 1 to 3.
func (v *View) Version() int { return v.ver }

// Copied reports whether the View copied the bits, or some of them, because
// they were misaligned or the machine is big-endian (see View).
func (v *View) Copied() bool { return v.copied }

// filter returns the filter the View answers with. It panics after Close,
// like every method of View.
func (v *View) filter() Filter {
	v.check()
	if v.f != nil {
		return v.f
	}
	return v.s
}

// Layout returns the filter's layout, LayoutClassic or LayoutBlocked.
func (v *View) Layout() Layout { return v.filter().Layout() }

// Seed returns the filter's murmur3 seed.
func (v *View) Seed() uint32 { return v.filter().Seed() }

// Bits returns the size of the filter in bits, all sub-filters together for
// a ScalableBloomFilter.
func (v *View) Bits() uint64 { return v.filter().Bits() }

// Hashes returns the number of hash functions of a BloomFilter's encoding,
// and of the newest sub-filter of a ScalableBloomFilter's.
func (v *View) Hashes() uint {
	if v.filter(); v.f != nil {
		return v.f.k
	}
	return v.s.filters[len(v.s.filters)-1].k
}

// Count returns the number of keys the encoding records as added.
func (v *View) Count() uint64 { return v.filter().Count() }

// Capacity returns the filter's capacity in keys: that of the BloomFilter,
// or of all sub-filters together for a ScalableBloomFilter.
func (v *View) Capacity() uint64 { return v.filter().Capacity() }

// InitialCapacity returns the capacity of a ScalableBloomFilter's first
// sub-filter, and a BloomFilter's capacity.
func (v *View) InitialCapacity() uint64 {
	if v.filter(); v.f != nil {
		return v.f.capacity
	}
	return v.s.initialCapacity
}

// ErrorRate returns the filter's target false-positive rate.
func (v *View) ErrorRate() float64 { return v.filter().ErrorRate() }

// Saturated reports whether the encoding is of a ScalableBloomFilter that
// can grow no more (see ScalableBloomFilter.Saturated).
func (v *View) Saturated() bool {
	v.check()
	return v.s != nil && v.s.Saturated()
}

// FillRatio returns the fraction of the bits that are set, as the filter
// decoded from the same bytes does. It reads every word, O(m/64), and so
// every page of a mapped file.
func (v *View) FillRatio() float64 { return v.filter().FillRatio() }

// EstimatedCount returns the number of distinct keys the filter most likely
// holds, as the decoded filter does. O(m/64), like FillRatio.
func (v *View) EstimatedCount() uint64 { return v.filter().EstimatedCount() }

// EstimatedErrorRate returns the false-positive rate at the filter's
// current fill, as the decoded filter does. O(m/64), like FillRatio.
func (v *View) EstimatedErrorRate() float64 { return v.filter().EstimatedErrorRate() }

// NumFilters returns the number of sub-filters of a ScalableBloomFilter's
// encoding, and 1 for a BloomFilter's.
func (v *View) NumFilters() int {
	if v.filter(); v.f != nil {
		return 1
	}
	return len(v.s.filters)
}
