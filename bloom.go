package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"

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

// Layout returns the filter's layout, LayoutClassic or LayoutBlocked, or 0
// for a zero BloomFilter. Filters of different layouts are never combined or
// Equal, and their bits mean different keys.
func (f *BloomFilter) Layout() Layout {
	if f.k == 0 {
		return 0
	}
	return layoutOf(f.blocked)
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

// Blocked reports whether the filter has the blocked layout (see Blocked).
//
// Deprecated: Layout says the same: f.Layout() == LayoutBlocked. Blocked
// keeps working until v1.
func (f *BloomFilter) Blocked() bool { return f.blocked }
