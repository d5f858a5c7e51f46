package bloom

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/window"
)

// growth says how a ScalableBloomFilter sizes each new sub-filter.
type growth uint8

const (
	growthNone growth = iota
	growthLinear
	growthExponential
)

// The defaults, chosen by measurement (see docs/scalable.md in the repository):
// averaged over final sizes from 10^4 to 10^7 keys at p = 0.01, Exponential
// 1.5 with tightening 0.9 spends the fewest bits per key of the settings
// measured.
const (
	// DefaultScale is the growth factor of Exponential growth when no
	// growth option is given: each sub-filter holds 1.5x the keys of the
	// one before.
	DefaultScale = 1.5

	// DefaultTightening is the ratio r by which each new sub-filter's error
	// rate shrinks when Tightening is not given.
	DefaultTightening = 0.9
)

func setGrowth(g growth, scale float64, name string, min float64) Option {
	return Option{func(s *settings) error {
		if s.growth == g {
			return paramError("%s may be given only once", name)
		}
		if s.growth != growthNone {
			return paramError("only one of Linear and Exponential may be given, got %s after %s", name, growthName(s.growth))
		}
		if !(scale > min) || math.IsInf(scale, 0) {
			return paramError("%s scale must be finite and greater than %v, got %v", name, min, scale)
		}
		s.growth, s.scale = g, scale
		return nil
	}}
}

// Linear makes a ScalableBloomFilter grow linearly: sub-filter i (i >= 1)
// holds initialCapacity*scale*i keys. scale must be greater than 0. Linear
// growth spends fewer bits per key than exponential growth at small sizes,
// but the number of sub-filters, and so the cost of Test, grows with the
// square root of the number of keys instead of its logarithm.
func Linear(scale float64) Option { return setGrowth(growthLinear, scale, "Linear", 0) }

// Exponential makes a ScalableBloomFilter grow exponentially: sub-filter i
// holds initialCapacity*scale^i keys. scale must be greater than 1. The
// default is Exponential(DefaultScale).
func Exponential(scale float64) Option {
	return setGrowth(growthExponential, scale, "Exponential", 1)
}

// Tightening sets the ratio r by which each new sub-filter's error rate
// shrinks: sub-filter i gets errorRate*(1-r)*r^i, so that the rates sum to
// errorRate however many sub-filters there are. ratio must be in (0, 1) and
// given at most once; the default is DefaultTightening. A low ratio with a
// high errorRate is refused by NewScalable (see ScalableBloomFilter).
func Tightening(ratio float64) Option {
	return Option{func(s *settings) error {
		if s.tightening != 0 {
			return paramError("Tightening may be given only once")
		}
		if !(ratio > 0 && ratio < 1) {
			return paramError("Tightening ratio must be in (0, 1), got %v", ratio)
		}
		s.tightening = ratio
		return nil
	}}
}

// ScalableBloomFilter is a Bloom filter that grows without limit while keeping
// its false-positive rate at most ErrorRate. It chains BloomFilters: when the
// newest is full a larger one is added, with a tighter error rate, following
// Almeida, Baquero, Preguiça and Hutchison, "Scalable Bloom Filters",
// Information Processing Letters 101(6), 2007. Sub-filter i has error rate
// P(1-r)r^i, so the overall rate, at most the sum of the sub-filters' rates,
// does not exceed P.
//
// A sub-filter counts only the keys that set a clear bit, so it reaches its
// capacity somewhat past the rate it was sized for: by parts per million at
// small rates, but a first sub-filter with a high rate P(1-r) fills far past
// it (P = 0.5 with r = 0.1 would reach 0.62, and P = 0.9 with r = 0.1 would
// never fill and answer "present" for everything). NewScalable and the
// decoders work the rate at capacity out from the sizes and refuse parameters
// whose sub-filters, all full, would exceed P by more than 1%, with the
// Tightening that would do; they also refuse growth that cannot build the
// first three sub-filters within MaxBits bits and MaxHashes hash functions.
// A decoder spends at most a few milliseconds on that check, whatever the
// header: parameters it cannot condemn by then (some with thousands of keys
// per block) it lets through. Every filter NewScalable makes decodes, and a
// filter let through still has no false negatives.
//
// Keys go into the newest sub-filter; Test looks newest-first, where most keys
// are. A key is hashed once per call, however many sub-filters there are. A
// key that tests present is not inserted again and does not count, so
// duplicates do not make the filter grow.
//
// Growth stops only when the next sub-filter would take the filter past
// MaxBits bits in all (or its error rate would round to 0), or past 65,536
// sub-filters, the most the binary format holds (growth as slow as
// Linear(1e-9) from one key adds one per key); sub-filters whose
// rate needs more than MaxHashes hash functions use MaxHashes and more bits.
// A stopped filter keeps adding to its newest sub-filter: there are still no
// false negatives, but the error rate rises above ErrorRate; Saturated
// reports it and EstimatedErrorRate tells by how much. A filter saved
// saturated by an older release, whose next sub-filter needed more than
// MaxHashes hash functions then, loads saturated and stays so.
//
// ScalableBloomFilter has no Union or Merge. Its error bound rests on each
// sub-filter holding at most its capacity, and the OR of two sub-filters can
// hold twice that: the result would answer without false negatives but
// silently break the ErrorRate promise. To combine two, add the keys of one
// to the other.
//
// A zero ScalableBloomFilter is not usable: create one with NewScalable or
// decode one with UnmarshalBinary or ReadFrom. Like a zero BloomFilter, it
// panics with a message that says so in Add, Test, TestAndAdd (and their
// String forms) and Clone; AppendBinary, MarshalBinary, AppendText,
// MarshalText and WriteTo return an error; the accessors and estimates
// (Count, Capacity, ErrorRate, InitialCapacity, Seed, EstimatedErrorRate,
// FillRatio, EstimatedCount, Bits, NumFilters, EncodedSize) return 0 and
// Saturated false; Clear does nothing; Equal reports whether the other
// filter is zero too.
//
// Without the Concurrent option a ScalableBloomFilter is not safe for
// concurrent use if any goroutine may modify it. With Concurrent, Add,
// TestAndAdd and Test may run from any number of goroutines at once, and so
// may Count, Capacity, Bits, NumFilters, Saturated, EstimatedErrorRate,
// FillRatio, EstimatedCount, Clone, Equal, EncodedSize, AppendBinary,
// MarshalBinary, AppendText, MarshalText and WriteTo, with the caveats of
// BloomFilter: during writes they see all keys added before they started and
// perhaps some added meanwhile. Clear, UnmarshalBinary, UnmarshalText and
// ReadFrom must still not run concurrently with any other call.
//
// A concurrent filter builds the same sub-filters as a plain one that inserts
// as many keys. A key that tests absent, under the lock of its key as in
// BloomFilter, takes a slot in the newest sub-filter by compare-and-swap,
// never past its capacity, and counts once it has set a clear bit; if keys
// under other locks have set all its bits meanwhile, it is present, like a
// false positive in a serial run, and gives the slot back. The goroutine that
// finds every slot taken waits for those keys to settle and adds the next
// sub-filter under a mutex, once however many find it full at the same
// moment, while they wait for it. Test never waits: it reads the list of
// sub-filters, which growth replaces and never changes, with one atomic load.
type ScalableBloomFilter struct {
	filters   []*BloomFilter // oldest first; never empty once constructed; nil if conc != nil
	subs      []layout.Bits  // the bits of filters, for the layouts' tests (subsOf)
	saturated bool           // growth has stopped: the next sub-filter cannot be built
	conc      *scalableConcurrency

	seed            uint32
	initialCapacity uint64
	errorRate       float64
	growth          growth
	scale           float64
	tightening      float64
	blocked         bool // the sub-filters have the blocked layout (see Blocked)

	work *workMeter // meters subSize and rateBound while a decoder checks s; nil otherwise
}

// scalableConcurrency is the state of a concurrent ScalableBloomFilter.
type scalableConcurrency struct {
	chain atomic.Pointer[chain] // replaces filters, subs and saturated
	grow  sync.Mutex            // held while adding a sub-filter
	locks *layout.Locks         // serializes writers of the same key
}

// chain is the sub-filters of a concurrent ScalableBloomFilter. It is never
// changed once stored: growth stores a new one.
type chain struct {
	filters   []*BloomFilter // concurrent, without locks of their own
	subs      []layout.Bits  // the bits of filters (subsOf)
	saturated bool
}

// newScalableLocks returns the locks of a concurrent ScalableBloomFilter:
// the most a BloomFilter gets. They cannot grow with the filter: two writers
// of one key must take the same lock, and a goroutine holding a lock of the
// old table would not exclude one taking a lock of the new.
func newScalableLocks() *layout.Locks { return layout.NewLocks(layout.MaxStripes * layout.StripeWords) }

// subsOf returns the bits of filters, which the layouts' tests of several
// sub-filters at once (classic.AnyHolds, blocked.AnyHolds) read: kept beside
// the sub-filters, they cost no pointer to follow per sub-filter and key.
func subsOf(filters []*BloomFilter) []layout.Bits {
	subs := make([]layout.Bits, len(filters))
	for i, f := range filters {
		subs[i] = f.bits()
	}
	return subs
}

// setFilters makes filters the sub-filters of s, not concurrent.
func (s *ScalableBloomFilter) setFilters(filters []*BloomFilter) {
	s.filters, s.subs = filters, subsOf(filters)
}

// subFilters returns the sub-filters, oldest first, and whether the filter is
// saturated.
func (s *ScalableBloomFilter) subFilters() ([]*BloomFilter, bool) {
	if s.conc != nil {
		c := s.conc.chain.Load()
		return c.filters, c.saturated
	}
	return s.filters, s.saturated
}

// subBits returns the bits of the sub-filters, oldest first (subsOf).
func (s *ScalableBloomFilter) subBits() []layout.Bits {
	if s.conc != nil {
		return s.conc.chain.Load().subs
	}
	return s.subs
}

// makeConcurrent switches s, not yet shared, to concurrent mode with the
// given locks.
func (s *ScalableBloomFilter) makeConcurrent(locks *layout.Locks) {
	for _, f := range s.filters {
		f.makeConcurrent(nil)
	}
	s.conc = &scalableConcurrency{locks: locks}
	s.conc.chain.Store(&chain{filters: s.filters, subs: s.subs, saturated: s.saturated})
	s.filters, s.subs, s.saturated = nil, nil, false
}

// NewScalable returns an empty ScalableBloomFilter whose first sub-filter
// holds initialCapacity keys and whose overall false-positive rate stays at
// most errorRate. Options: Linear or Exponential (default
// Exponential(DefaultScale)), Tightening (default DefaultTightening), Seed,
// Concurrent, and Blocked or Classic for the sub-filters' layout; without
// either, the layout is DefaultLayout(initialCapacity,
// errorRate*(1-tightening)), that of the first sub-filter (blocked
// sub-filters are each sized by BlockedSize), or classic where the growth
// settings can build only a classic chain.
// It returns an error wrapping ErrInvalidParameter for a capacity of 0, an
// errorRate not in (0, 1), invalid options (including any option given
// twice, or Linear with Exponential), a first sub-filter larger than MaxBits, growth
// parameters that cannot build the first three sub-filters within MaxBits
// bits and MaxHashes hash functions, or an error rate and tightening whose
// sub-filters, filled to capacity, would exceed errorRate (see
// ScalableBloomFilter); the error gives the range that works.
func NewScalable(initialCapacity uint64, errorRate float64, opts ...Option) (*ScalableBloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.win.none(); err != nil {
		return nil, err
	}
	if s.growth == growthNone {
		s.growth, s.scale = growthExponential, DefaultScale
	}
	if s.tightening == 0 {
		s.tightening = DefaultTightening
	}
	if initialCapacity == 0 {
		return nil, paramError("initialCapacity must be at least 1, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	if !s.blocked && !s.classic && defaultBlocked(initialCapacity, errorRate*(1-s.tightening)) {
		// The rule of New, applied to the first sub-filter; where the
		// growth settings cannot build a blocked chain (a rate too low
		// for the tightening), the classic chain they can build.
		s.blocked = true
		if sf, err := newScalable(initialCapacity, errorRate, s); err == nil {
			return sf, nil
		}
		s.blocked = false
	}
	return newScalable(initialCapacity, errorRate, s)
}

// newScalable is NewScalable with its settings complete.
func newScalable(initialCapacity uint64, errorRate float64, s settings) (*ScalableBloomFilter, error) {
	sf := &ScalableBloomFilter{
		seed:            s.seed,
		initialCapacity: initialCapacity,
		errorRate:       errorRate,
		growth:          s.growth,
		scale:           s.scale,
		tightening:      s.tightening,
		blocked:         s.blocked,
	}
	first, err := sf.newSubFilter(0, 0)
	if err != nil {
		return nil, err
	}
	if msg := sf.checkGrowth(); msg != "" {
		return nil, paramError("%s", msg)
	}
	sf.setFilters([]*BloomFilter{first})
	if s.concurrent {
		sf.makeConcurrent(newScalableLocks())
	}
	return sf, nil
}

// newSubFilter builds sub-filter i, given the bits the others use.
func (s *ScalableBloomFilter) newSubFilter(i int, usedBits uint64) (*BloomFilter, error) {
	capacity, rate, m, k, err := s.nextSize(i, usedBits)
	if err != nil {
		return nil, err
	}
	f, err := newFilter(m, k, capacity, rate, settings{seed: s.seed, blocked: s.blocked})
	if err == nil && s.conc != nil {
		f.makeConcurrent(nil)
	}
	return f, err
}

// grow adds a sub-filter, or marks the filter saturated if it cannot.
func (s *ScalableBloomFilter) grow() {
	f, err := s.newSubFilter(len(s.filters), bitsOf(s.filters))
	if err != nil {
		s.saturated = true
		return
	}
	s.filters, s.subs = append(s.filters, f), append(s.subs, f.bits())
}

const errZeroScalable = "bloom: use of a zero ScalableBloomFilter (create one with NewScalable)"

// test reports whether any sub-filter holds the key hashed to (h1, h2): the
// layout's test of all sub-filters at once.
func (s *ScalableBloomFilter) test(h1, h2 uint64) bool {
	subs, conc := s.subs, s.conc != nil
	if conc {
		subs = s.conc.chain.Load().subs
	} else if len(subs) == 0 {
		panic(errZeroScalable)
	}
	if s.blocked {
		return blocked.AnyHolds(subs, h1, h2)
	}
	return classic.AnyHolds(subs, h1, h2, classic.DeepBits, conc)
}

func (s *ScalableBloomFilter) testAndAdd(h1, h2 uint64) bool {
	if s.conc != nil {
		return s.testAndAddConcurrent(h1, h2)
	}
	if s.test(h1, h2) {
		return true
	}
	s.insert(h1, h2)
	return false
}

// insert adds the key hashed to (h1, h2), which tested absent, to the newest
// sub-filter of s, not concurrent, after growing s if that one is full.
func (s *ScalableBloomFilter) insert(h1, h2 uint64) {
	newest := s.filters[len(s.filters)-1]
	if newest.count >= newest.capacity && !s.saturated {
		s.grow()
		newest = s.filters[len(s.filters)-1]
	}
	newest.add(h1, h2)
}

// testAndAddConcurrent is testAndAdd for a concurrent filter. A key that
// tests present needs no lock. Otherwise the lock of the key serializes it
// with callers adding the same key: the first inserts it, the others then
// find it present.
func (s *ScalableBloomFilter) testAndAddConcurrent(h1, h2 uint64) bool {
	// test for the chain c, without one more call (the closure inlines).
	holds := func(c *chain) bool {
		if s.blocked {
			return blocked.AnyHolds(c.subs, h1, h2)
		}
		return classic.AnyHolds(c.subs, h1, h2, classic.DeepBits, true)
	}
	c := s.conc.chain.Load()
	if holds(c) {
		return true
	}
	mu := &s.conc.locks.Of(h2).Mu
	mu.Lock()
	c = s.conc.chain.Load() // holds every sub-filter the key may have gone into
	if holds(c) {
		mu.Unlock()
		return true
	}
	newest := s.reserve(c)
	fresh := newest.setAtomic(h1, h2, newest.unsetAtomic(h1, h2))
	if fresh {
		newest.conc.Count.Add(1)
	} else {
		// Keys under other locks set all its bits since it tested absent:
		// it is present now, a false positive as in a serial run, and
		// gives its slot back. Counting it would leave a count above the
		// set bits (with one hash function, two keys on one bit), which
		// an encoding cannot hold: it clamped an older sub-filter's count
		// below its capacity, and the decoder rejected it as not full.
		newest.conc.Reserved.Add(^uint64(0))
	}
	mu.Unlock()
	return !fresh
}

// unsetAtomic and setAtomic are the add of a concurrent filter in two steps,
// for ScalableBloomFilter, which takes its own lock between them:
// unsetAtomic returns what setAtomic, with the lock held, sets. See
// classic.Unset and blocked.Unset.
func (f *BloomFilter) unsetAtomic(h1, h2 uint64) uint64 {
	if f.blocked {
		return blocked.Unset(f.words, f.m, f.k, h1, h2)
	}
	return classic.Unset(f.words, f.m, f.k, h1, h2)
}

func (f *BloomFilter) setAtomic(h1, h2, unset uint64) (fresh bool) {
	if f.blocked {
		return blocked.Set(f.words, f.m, f.k, h1, h2, unset)
	}
	return classic.Set(f.words, f.m, f.k, h1, h2, unset)
}

// reserve takes a slot for one more key in the newest sub-filter of c, or of
// the chain that replaces c when that one is full, and returns that
// sub-filter. The caller then sets the key's bits and either counts the key
// or, if it set no clear bit, gives the slot back. Unless the filter is
// saturated, a sub-filter's slots never exceed its capacity, and a new one is
// only added when its count has reached it: the sub-filters are those a
// serial run with the same keys would build, and every sub-filter but the
// newest holds exactly its capacity.
func (s *ScalableBloomFilter) reserve(c *chain) *BloomFilter {
	for {
		newest := c.filters[len(c.filters)-1]
		n := newest.conc.Reserved.Load()
		if n < newest.capacity || c.saturated {
			if newest.conc.Reserved.CompareAndSwap(n, n+1) {
				return newest
			}
			continue
		}
		c = s.growConcurrent(c)
	}
}

// growConcurrent adds a sub-filter to the chain c, whose slots are all taken,
// or marks the filter saturated, unless another goroutine has already
// replaced c; it returns the current chain. It first waits for the keys that
// hold slots to settle, each counted or given back, which takes as long as
// setting a key's bits: if one is given back, c is not full and it returns c.
// Test goes on meanwhile with the chain it loaded.
func (s *ScalableBloomFilter) growConcurrent(c *chain) *chain {
	s.conc.grow.Lock()
	defer s.conc.grow.Unlock()
	if cur := s.conc.chain.Load(); cur != c {
		return cur
	}
	last := c.filters[len(c.filters)-1]
	for last.conc.Count.Load() < last.capacity {
		if last.conc.Reserved.Load() < last.capacity {
			return c
		}
		runtime.Gosched()
	}
	next := &chain{filters: c.filters, subs: c.subs, saturated: true}
	if f, err := s.newSubFilter(len(c.filters), bitsOf(c.filters)); err == nil {
		// The full slice expression makes append copy: readers of c keep
		// an unchanged slice.
		n := len(c.filters)
		next = &chain{filters: append(c.filters[:n:n], f), subs: append(c.subs[:n:n], f.bits())}
	}
	s.conc.chain.Store(next)
	return next
}

// Add inserts key unless it tests present already. It hashes key once, and
// does not allocate unless it adds a sub-filter.
func (s *ScalableBloomFilter) Add(key []byte) {
	s.testAndAdd(murmur.Sum128(key, s.seed))
}

// AddString is Add for a string key, without copying it.
func (s *ScalableBloomFilter) AddString(key string) {
	s.testAndAdd(murmur.Sum128(bytesOf(key), s.seed))
}

// Test reports whether key may be in the filter: false means key was
// definitely never added; true means it probably was, with a probability of
// error of at most ErrorRate. It looks at the newest sub-filter first and
// costs O(k) per sub-filter in the worst case.
func (s *ScalableBloomFilter) Test(key []byte) bool {
	return s.test(murmur.Sum128(key, s.seed))
}

// TestString is Test for a string key, without copying it.
func (s *ScalableBloomFilter) TestString(key string) bool {
	return s.test(murmur.Sum128(bytesOf(key), s.seed))
}

// TestAndAdd reports whether key was probably present before the call, and
// inserts it if not. The key is present afterwards either way. On a
// Concurrent filter, of several goroutines calling it at once with the same
// new key, exactly one gets false.
func (s *ScalableBloomFilter) TestAndAdd(key []byte) bool {
	return s.testAndAdd(murmur.Sum128(key, s.seed))
}

// TestAndAddString is TestAndAdd for a string key, without copying it.
func (s *ScalableBloomFilter) TestAndAddString(key string) bool {
	return s.testAndAdd(murmur.Sum128(bytesOf(key), s.seed))
}

// Batch calls: the batch calls of BloomFilter, for the chain of
// sub-filters. With classic sub-filters they are the loops of single calls,
// on purpose (see classic.AnyHolds); with blocked ones a pipeline (see
// blocked.ChainTestMany). Either way growth happens exactly where the loop
// of single calls grows.

func scalableTestMany[K layout.Key](s *ScalableBloomFilter, keys []K, results []bool) []bool {
	results = batchResults(results, len(keys))
	if s.blocked {
		blocked.ChainTestMany(s.subBits(), s.seed, keys, results)
		return results
	}
	for i, key := range keys {
		results[i] = s.test(murmur.Sum128(layout.KeyBytes(&key), s.seed))
	}
	return results
}

// scalableAddMany adds keys in order; if results is not nil, it records in it
// what TestAndAdd would have returned for each.
func scalableAddMany[K layout.Key](s *ScalableBloomFilter, keys []K, results []bool) {
	if s.blocked {
		scalableAddManyBlocked(s, keys, results)
		return
	}
	for i, key := range keys {
		present := s.testAndAdd(murmur.Sum128(layout.KeyBytes(&key), s.seed))
		if results != nil {
			results[i] = present
		}
	}
}

// scalableAddManyBlocked is scalableAddMany for blocked sub-filters, with
// the pipeline of blocked.ChainTestMany: it hashes keys and prefetches their
// blocks in every sub-filter a few keys ahead of the one it adds. Growth
// happens where the loop of single calls grows: the keys are tested and
// inserted in order, and each round prefetches in the sub-filters as they
// are then.
func scalableAddManyBlocked[K layout.Key](s *ScalableBloomFilter, keys []K, results []bool) {
	const round, ahead = blocked.ChainRound, blocked.ChainAhead
	var ring [ahead + 1]blocked.ChainFlight
	rounds := (len(keys) + round - 1) / round
	for t := range rounds + ahead {
		if t < rounds {
			lo := t * round
			blocked.LaunchChain(&ring[t%(ahead+1)], s.subBits(), s.seed, keys[lo:min(lo+round, len(keys))])
		}
		if t < ahead {
			continue
		}
		r := &ring[(t-ahead)%(ahead+1)]
		start := (t - ahead) * round
		for i := range r.N {
			h1, h2 := r.H[i].H1, r.H[i].H2
			var present bool
			if s.conc != nil {
				present = s.testAndAdd(h1, h2)
			} else if present = blocked.AnyHolds(s.subs, h1, h2); !present {
				s.insert(h1, h2)
			}
			if results != nil {
				results[start+i] = present
			}
		}
	}
}

// AddMany inserts every key of keys, in order, like calling Add on each: the
// filter grows where that loop would make it grow, and keys that test
// present, including repeats within keys, are not inserted again. It does
// not allocate unless it adds a sub-filter.
//
//go:noinline
func (s *ScalableBloomFilter) AddMany(keys [][]byte) { scalableAddMany(s, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
//
//go:noinline
func (s *ScalableBloomFilter) AddManyStrings(keys []string) { scalableAddMany(s, keys, nil) }

// TestMany reports, for every key of keys, whether it may be in the filter,
// with Test's meaning of true and false: results[i] is Test(keys[i]). It
// fills results[:len(keys)] and returns that slice, reusing the storage of
// results when cap(results) is at least len(keys) (then it does not
// allocate) and allocating a new slice otherwise, like every batch call of
// this package.
//
//go:noinline
func (s *ScalableBloomFilter) TestMany(keys [][]byte, results []bool) []bool {
	return scalableTestMany(s, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
func (s *ScalableBloomFilter) TestManyStrings(keys []string, results []bool) []bool {
	return scalableTestMany(s, keys, results)
}

// TestAndAddMany inserts every key of keys, in order, and reports for each
// whether it was probably present before: results[i] is what TestAndAdd
// would have returned for keys[i] had the keys been added one by one, so a
// key repeated within keys is reported present from its second occurrence
// on. It fills and returns results like TestMany, and grows the filter like
// AddMany. On a Concurrent filter, of several goroutines adding the same new
// key at once, by this call or any other, exactly one hears false.
//
//go:noinline
func (s *ScalableBloomFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	results = batchResults(results, len(keys))
	scalableAddMany(s, keys, results)
	return results
}

// TestAndAddManyStrings is TestAndAddMany for string keys, without copying
// them.
//
//go:noinline
func (s *ScalableBloomFilter) TestAndAddManyStrings(keys []string, results []bool) []bool {
	results = batchResults(results, len(keys))
	scalableAddMany(s, keys, results)
	return results
}

// Count returns the number of keys inserted: Add and TestAndAdd calls whose
// key did not test present. O(number of sub-filters).
func (s *ScalableBloomFilter) Count() uint64 {
	filters, _ := s.subFilters()
	var n uint64
	for _, f := range filters {
		n += f.Count()
	}
	return n
}

// Capacity returns the number of keys the current sub-filters were sized for
// in all. The filter grows past it.
func (s *ScalableBloomFilter) Capacity() uint64 {
	filters, _ := s.subFilters()
	var n uint64
	for _, f := range filters {
		n += f.capacity
	}
	return n
}

// ErrorRate returns the target false-positive rate, which the filter keeps
// however far it grows (until it is Saturated).
func (s *ScalableBloomFilter) ErrorRate() float64 { return s.errorRate }

// InitialCapacity returns the capacity of the first sub-filter, in keys.
func (s *ScalableBloomFilter) InitialCapacity() uint64 { return s.initialCapacity }

// Seed returns the murmur3 seed shared by every sub-filter.
func (s *ScalableBloomFilter) Seed() uint32 { return s.seed }

// EstimatedErrorRate returns the probability that Test reports an absent key
// as present at the current fill: 1 - prod(1 - p_i), with p_i each
// sub-filter's EstimatedErrorRate. It is O(total bits/64).
func (s *ScalableBloomFilter) EstimatedErrorRate() float64 {
	filters, _ := s.subFilters()
	// -expm1(sum log1p(-p_i)) is 1 - prod(1 - p_i) without the rounding
	// of 1 - p_i to 1, which made rates below about 1e-16 come out as 0.
	var logMiss float64
	for _, f := range filters {
		logMiss += math.Log1p(-f.EstimatedErrorRate())
	}
	return -math.Expm1(logMiss)
}

// FillRatio returns the fraction of all the sub-filters' bits that are set,
// in [0, 1]: set bits over Bits. It is O(total bits/64).
func (s *ScalableBloomFilter) FillRatio() float64 {
	filters, _ := s.subFilters()
	var set, all uint64
	for _, f := range filters {
		set += f.setBits()
		all += f.m
	}
	if all == 0 {
		return 0 // a zero ScalableBloomFilter
	}
	return float64(set) / float64(all)
}

// EstimatedCount returns the number of distinct keys the filter most likely
// holds: the sum of its sub-filters' EstimatedCount, each computed from its
// fill. It is math.MaxUint64 when every bit of a sub-filter is set (its
// count is then unknown), and O(total bits/64).
func (s *ScalableBloomFilter) EstimatedCount() uint64 {
	filters, _ := s.subFilters()
	var n uint64
	for _, f := range filters {
		e := f.EstimatedCount()
		if e > math.MaxUint64-n {
			return math.MaxUint64
		}
		n += e
	}
	return n
}

// Bits returns the total size of the sub-filters in bits.
func (s *ScalableBloomFilter) Bits() uint64 {
	filters, _ := s.subFilters()
	return bitsOf(filters)
}

func bitsOf(filters []*BloomFilter) uint64 {
	var n uint64
	for _, f := range filters {
		n += f.m
	}
	return n
}

// NumFilters returns the number of sub-filters, at least 1 (0 for a zero
// ScalableBloomFilter).
func (s *ScalableBloomFilter) NumFilters() int {
	filters, _ := s.subFilters()
	return len(filters)
}

// Saturated reports whether the filter has stopped growing because the next
// sub-filter would take it past MaxBits bits, or past the 65,536 sub-filters
// the binary format holds (see ScalableBloomFilter). A saturated filter still
// has no false negatives, but its error rate rises above ErrorRate as keys
// are added.
func (s *ScalableBloomFilter) Saturated() bool {
	_, saturated := s.subFilters()
	return saturated
}

// Clear removes every key, going back to a single empty sub-filter, so that
// the filter grows again exactly as a new one would. It must not run
// concurrently with any other call, even on a concurrent filter.
func (s *ScalableBloomFilter) Clear() {
	if s.conc != nil {
		first := s.conc.chain.Load().filters[0]
		first.Clear()
		s.conc.chain.Store(&chain{filters: []*BloomFilter{first}, subs: []layout.Bits{first.bits()}})
		return
	}
	if len(s.filters) == 0 {
		return // a zero ScalableBloomFilter
	}
	s.filters[0].Clear()
	clear(s.filters[1:])
	clear(s.subs[1:])
	s.filters, s.subs = s.filters[:1], s.subs[:1]
	s.saturated = false
}

// Clone returns an independent copy of the filter, concurrent if s is (with
// its own locks).
func (s *ScalableBloomFilter) Clone() *ScalableBloomFilter {
	if filters, _ := s.subFilters(); len(filters) == 0 {
		panic(errZeroScalable)
	}
	c := s.snapshot()
	if s.conc != nil {
		c.makeConcurrent(newScalableLocks())
	}
	return c
}

// snapshot returns a plain (not concurrent) copy of s, made of the snapshots
// of its sub-filters.
func (s *ScalableBloomFilter) snapshot() *ScalableBloomFilter {
	c := *s
	filters, saturated := s.subFilters()
	c.conc, c.saturated = nil, saturated
	snaps := make([]*BloomFilter, len(filters))
	for i, f := range filters {
		snaps[i] = f.snapshot()
	}
	c.setFilters(snaps)
	return &c
}

// Equal reports whether s and other have the same parameters and the same
// sub-filters (see BloomFilter.Equal), which is when they encode to the same
// bytes. Whether they are concurrent does not matter.
func (s *ScalableBloomFilter) Equal(other *ScalableBloomFilter) bool {
	if s == nil || other == nil {
		return s == other
	}
	sf, _ := s.subFilters()
	of, _ := other.subFilters()
	if s.params() != other.params() || len(sf) != len(of) {
		return false
	}
	for i, f := range sf {
		if !f.Equal(of[i]) {
			return false
		}
	}
	return true
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

// Filter is what BloomFilter, ScalableBloomFilter and WindowFilter have in
// common, for code that handles any kind, such as the result of ReadAny.
// Only *BloomFilter, *ScalableBloomFilter and *WindowFilter implement it, so
// that methods can be added to it as all gain them; use a type switch for
// the rest.
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
	Layout() Layout
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

// Layout returns the layout of the filter's sub-filters, LayoutClassic or
// LayoutBlocked, or 0 for a zero ScalableBloomFilter.
func (s *ScalableBloomFilter) Layout() Layout {
	if filters, _ := s.subFilters(); len(filters) == 0 {
		return 0
	}
	return layoutOf(s.blocked)
}

// Blocked reports whether the filter's sub-filters have the blocked layout
// (see Blocked).
func (s *ScalableBloomFilter) Blocked() bool { return s.blocked }

// AddHash inserts the key whose 64-bit hash is h unless it tests present
// already: it is Add of the 8 little-endian bytes of h (see
// BloomFilter.TestHash for what a hashed key promises). It does not
// allocate unless it adds a sub-filter.
func (s *ScalableBloomFilter) AddHash(h uint64) {
	s.testAndAdd(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false: it is Test of the 8
// little-endian bytes of h. The filter mixes h with murmur3 and its seed, so
// a weak hash such as FNV-1a or sequential integers meets the error rate;
// keys whose hashes collide are one key to the filter, which adds about
// n/2^64 to the rate for n keys and a uniform 64-bit hash.
func (s *ScalableBloomFilter) TestHash(h uint64) bool {
	return s.test(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (s *ScalableBloomFilter) TestAndAddHash(h uint64) bool {
	return s.testAndAdd(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes, growing the
// filter like the loop of AddHash.
//
//go:noinline
func (s *ScalableBloomFilter) AddManyHashes(hashes []uint64) { scalableAddMany(s, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
//
//go:noinline
func (s *ScalableBloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return scalableTestMany(s, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
//
//go:noinline
func (s *ScalableBloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	scalableAddMany(s, hashes, results)
	return results
}

// Window filters.

// windowSettings collects the options that only NewWindow and ReadWindow
// take.
type windowSettings struct {
	every     time.Duration    // Every; 0 for a count window
	clock     func() time.Time // Clock; nil for time.Now
	policy    Overflow         // OnOverflow
	policySet bool
	gens      int // Generations; 0 to let NewWindow choose
}

// none returns an error if a window option was given to another
// constructor.
func (w *windowSettings) none() error {
	if w.every != 0 || w.clock != nil || w.policySet || w.gens != 0 {
		return paramError("Every, Clock, OnOverflow and Generations apply only to NewWindow and ReadWindow")
	}
	return nil
}

// Every makes NewWindow build a time window: every key added within the
// last d is kept (Test reports it present), whatever the calls in between,
// and a key is forgotten at most d*r/(r-1) after it was added, r being the
// number of generations; window, NewWindow's first argument, is then the
// number of keys expected within d, for which the window is sized. d must be
// positive and given at most once. See OnOverflow for what happens when
// more keys come.
func Every(d time.Duration) Option {
	return Option{func(s *settings) error {
		if s.win.every != 0 {
			return paramError("Every may be given only once")
		}
		if d <= 0 {
			return paramError("Every needs a positive duration, got %v", d)
		}
		s.win.every = d
		return nil
	}}
}

// Clock makes a time window read the time from now instead of time.Now,
// for tests and for replaying logs. It applies to NewWindow with Every and to
// ReadWindow; the clock is not part of the encoding. A clock that goes back
// does not rotate the window back: its generations stay as they are until
// the clock passes the newest one's end again.
func Clock(now func() time.Time) Option {
	return Option{func(s *settings) error {
		if s.win.clock != nil {
			return paramError("Clock may be given only once")
		}
		if now == nil {
			return paramError("Clock needs a function, got nil")
		}
		s.win.clock = now
		return nil
	}}
}

// Overflow is what a time window does when more keys come within a
// generation's time than the generation was sized for (window/(r-1) keys
// in d/(r-1)): then no bounded memory keeps both of its promises, and the
// policy chooses between the time kept (RotateEarly gives it up), the rate
// (Saturate) and the memory (Grow).
type Overflow uint8

// The overflow policies.
const (
	// RotateEarly, the default, starts a new generation when the newest is
	// full, as a count window does: the false-positive rate stays at or
	// below the target, and the window keeps at least its last window keys
	// but may keep less than its duration (RetainedSince reports after
	// when it keeps every key).
	RotateEarly Overflow = iota

	// Saturate keeps adding to the newest generation until its time is
	// up: every key of the duration is kept, and the false-positive rate
	// rises above the target (EstimatedErrorRate reports it).
	Saturate

	// Grow keeps both promises: when the newest generation is full
	// before its time is up, it appends an extension to it, a blocked
	// filter of its own, and adds there. Every key added within the
	// duration is kept, the false-positive rate stays at or below
	// ErrorRate at every moment, and the memory grows with the burst:
	// Bits reports it, Extensions counts the extensions. The extensions
	// of a generation are dropped when it leaves the window, so the
	// memory returns to the ring's once a burst is older than
	// Duration*r/(r-1).
	//
	// The rate is kept by construction: a generation's rate q (see
	// WindowFilter) is shared between its base, sized at q*7/8, and its
	// extensions, the j-th (j = 1, 2, ...) holding window/(r-1)*2^(j-1)
	// keys at q/8*2^-j, so that all of them together stay within q. A
	// burst of b times a generation's share takes about log2(b)+1
	// extensions, and a test of an absent key reads one cache line more
	// per extension in the window. The ring itself, sized at q*7/8, takes
	// 0.39 bit more per window key than under the other policies at 1%
	// (17.38 against 16.99), 0.46 at 0.1% (24.74 against 24.28).
	//
	// A generation has at most 16 extensions (2^16-1 times its share of
	// keys on top of its base), and all of them together at most MaxBits
	// bits; past that, the window rotates early, as under RotateEarly: the
	// rate is kept, and RetainedSince reports the shorter time kept.
	// Growing allocates the extension (O(its bits)) under the lock of a
	// Concurrent window.
	Grow
)

// String returns the name of p: "RotateEarly", "Saturate" or "Grow".
func (p Overflow) String() string {
	switch p {
	case RotateEarly:
		return "RotateEarly"
	case Saturate:
		return "Saturate"
	case Grow:
		return "Grow"
	}
	return fmt.Sprintf("Overflow(%d)", uint8(p))
}

// OnOverflow sets the overflow policy of a time window (default
// RotateEarly): RotateEarly, Saturate or Grow. It needs Every and may be
// given at most once.
func OnOverflow(p Overflow) Option {
	return Option{func(s *settings) error {
		if s.win.policySet {
			return paramError("OnOverflow may be given only once")
		}
		if p != RotateEarly && p != Saturate && p != Grow {
			return paramError("OnOverflow needs RotateEarly, Saturate or Grow, got %d", p)
		}
		s.win.policy, s.win.policySet = p, true
		return nil
	}}
}

// Generations sets the number r of generations of a window, in [2, 64]
// (default: the r in [2, 16] that takes the fewest bits, 7 or 8 at 1%). More
// generations waste less memory on the generation being filled and forget
// keys closer to the end of the window, at the cost of a probe per
// generation in Test.
func Generations(r int) Option {
	return Option{func(s *settings) error {
		if s.win.gens != 0 {
			return paramError("Generations may be given only once")
		}
		if r < 2 || r > window.MaxGens {
			return paramError("Generations must be in [2, %d], got %d", window.MaxGens, r)
		}
		s.win.gens = r
		return nil
	}}
}

// WindowFilter is a filter of the recent past: of the last window keys
// added (NewWindow), or of the keys added within the last d (with Every).
// It keeps two promises at every moment:
//
//   - No false negative for any of the last window keys added: Test reports
//     each of them present. (A key added again counts again, unless it was
//     already in the newest generation; keys added once each, as a
//     deduplicator adds them, are the last window distinct keys.) A time
//     window also keeps every key added within its duration, unless
//     RotateEarly had to rotate early, or Grow reached its limit (see
//     OnOverflow).
//   - A false-positive rate at or below ErrorRate: Test reports a key that
//     is not among the keys kept present with probability at most
//     ErrorRate. Under Saturate, a time window may break this one, and
//     EstimatedErrorRate says by how much.
//
// Under Grow a time window keeps both, and its memory grows with a burst
// instead (Bits reports it; see Grow).
//
// It is a ring of r generations, blocked filters of ceil(window/(r-1)) keys
// at 1-(1-ErrorRate)^(1/r) (about ErrorRate/r) each: keys go into the newest; when the newest is full (or
// its time, d/(r-1), is up) the oldest is cleared and becomes the newest.
// A key is forgotten after at most r*ceil(window/(r-1)) more keys (or
// d*r/(r-1) of time). At 1% it takes 17.0 bits per window key (r = 7), at
// 0.1% 24.3 (r = 8); under Grow 17.4 and 24.7 without a burst. Test reads
// the key's cache line in every generation, all at once, and one line per
// extension of a window under Grow; Add writes the newest one's.
//
// A zero WindowFilter is not usable: create one with NewWindow or
// ReadWindow; its methods panic. Without the Concurrent option it is not
// safe for concurrent use, though concurrent Test calls are safe. With
// Concurrent, every method may be called from any number of goroutines:
// adds, rotation, growth, Clear and decoding into it are serialized by a
// lock, and the tests (Test, TestMany and their String and Hash forms) take
// no lock: they read the generations with atomic loads beside the adds and
// write no shared memory (a lock's counter would bounce between the cores
// of concurrent readers). A test concurrent with a rotation
// may miss only keys of the generation being dropped, which leave the window
// then. The methods that read several counters for one answer (Count,
// EstimatedErrorRate, the encoders, Clone, ...) take the adds' lock.
//
// The binary encoding (all integers little-endian), in the style of format
// version 3: a 64-byte header: magic "BLMW", version uint16 (3), overflow
// policy uint8 (0 RotateEarly, 1 Saturate, 2 Grow), a zero byte, seed
// uint32, k uint32, bits per generation uint64 (a multiple of 512), window
// uint64, error rate float64, keys per generation uint64
// (ceil(window/(r-1))), r uint16, two zero bytes, section size uint32 (a
// power of two, 2^20 as written), four zero bytes, and the CRC-32C
// (Castagnoli) of the 60 bytes before it. Then a table: the generation
// period in nanoseconds int64 (0 for a count window), the rotations uint64,
// and for each generation, oldest first, its key count uint64 and its start
// int64 (Unix nanoseconds); under Grow only, then for each generation,
// oldest first, its number of extensions uint64 (at most 16), and for each
// extension, generations oldest first and each generation's extensions in
// the order they were made, a 32-byte record: its capacity in keys uint64,
// its bits uint64 (a multiple of 512), its k uint32, four zero bytes, its
// key count uint64 (a decoder checks the capacity, bits and k against the
// sizing of Grow). Then the table's CRC-32C, and zeros up to a multiple of
// 64 bytes. Then the words of the generations, oldest first, each a blocked
// filter's words; under Grow, the words of the extensions follow, in the
// order of their records; and the CRC-32C of each section of all those
// words. The text encoding is the standard base64 of the binary one.
type WindowFilter struct {
	f     *window.Filter   // nil for a Concurrent window: conc.ring holds it
	conc  *windowConc      // Concurrent
	clock func() time.Time // Clock's; nil for time.Now
}

// windowConc is the state of a Concurrent window: the lock of its writers
// and its ring (Concurrent, see internal/window's conc.go), which decoding
// into the window replaces while tests, which take no lock, may be loading
// it.
type windowConc struct {
	mu   sync.Mutex
	ring atomic.Pointer[window.Filter]
}

// newWindowConc returns the state of a Concurrent window of the ring f.
func newWindowConc(f *window.Filter) *windowConc {
	f.SetConcurrent()
	c := new(windowConc)
	c.ring.Store(f)
	return c
}

// setRing makes f the ring of w, as decoding into w does, in w's mode.
func (w *WindowFilter) setRing(f *window.Filter) {
	if c := w.conc; c != nil {
		f.SetConcurrent()
		c.mu.Lock()
		c.ring.Store(f)
		c.mu.Unlock()
		return
	}
	w.f = f
}

const errZeroWindow = "bloom: use of a zero WindowFilter (create one with NewWindow)"

// NewWindow returns an empty window filter that keeps the last window keys
// added at a false-positive rate of at most errorRate (see WindowFilter),
// or with Every(d) the keys of the last d, sized for window keys in d.
// Options: Seed, Concurrent, Blocked (the only layout), Generations,
// Every, OnOverflow, Clock. It returns an error wrapping
// ErrInvalidParameter for a window of 0, an errorRate not in (0, 1), a
// ring of more than MaxBits bits, Classic, growth options, and OnOverflow
// or Clock without Every.
func NewWindow(window uint64, errorRate float64, opts ...Option) (*WindowFilter, error) {
	s, c, err := planWindow(window, errorRate, opts)
	if err != nil {
		return nil, err
	}
	w := &WindowFilter{clock: s.win.clock}
	f := newWindowRing(c, w.now(c.Period))
	if s.concurrent {
		w.conc = newWindowConc(f)
	} else {
		w.f = f
	}
	return w, nil
}

// planWindow checks NewWindow's arguments and returns its settings and the
// configuration of its ring (WindowSize reports it).
func planWindow(keys uint64, errorRate float64, opts []Option) (settings, window.Config, error) {
	s, err := newSettings(opts)
	if err != nil {
		return s, window.Config{}, err
	}
	if err := s.windowOnly(); err != nil {
		return s, window.Config{}, err
	}
	if s.win.every == 0 && (s.win.policySet || s.win.clock != nil) {
		return s, window.Config{}, paramError("OnOverflow and Clock need Every")
	}
	if keys == 0 {
		return s, window.Config{}, paramError("window must be at least 1 key, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return s, window.Config{}, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	r, m, k, err := windowSize(keys, errorRate, s.win.gens, s.win.every != 0 && s.win.policy == Grow)
	if err != nil {
		return s, window.Config{}, err
	}
	return s, windowConfig(keys, errorRate, r, m, k, s), nil
}

// windowConfig is the configuration of NewWindow's ring.
func windowConfig(keys uint64, errorRate float64, r int, m uint64, k uint, s settings) window.Config {
	c := window.Config{Window: keys, ErrorRate: errorRate, Gens: r, GenCap: window.GenCapFor(keys, r), M: m, K: k, Seed: s.seed}
	if s.win.every != 0 {
		// A period rounded up, so that r-1 of them cover d.
		c.Period = (int64(s.win.every) + int64(r-2)) / int64(r-1)
		c.Policy = window.Policy(s.win.policy)
	}
	return c
}

// windowSizer sizes the extensions of a window under Grow (windowSizer),
// for internal/window.
func windowSizer(c window.Config, j int) (window.Ext, error) {
	capacity, m, k, err := windowExtSize(c.GenCap, c.ErrorRate, c.Gens, j)
	return window.Ext{Cap: capacity, M: m, K: k}, err
}

// windowExtensions returns the sizes of the extensions of a generation of
// the ring c under Grow, as far as windowSizer gives them and at most
// window.MaxExtensions: those a burst adds, in order.
func windowExtensions(c window.Config) []WindowExtension {
	var xs []WindowExtension
	for j := 1; j <= window.MaxExtensions; j++ {
		x, err := windowSizer(c, j)
		if err != nil {
			break
		}
		xs = append(xs, WindowExtension{Capacity: x.Cap, Bits: x.M, Hashes: x.K})
	}
	return xs
}

func newWindowRing(c window.Config, now int64) *window.Filter {
	return window.New(c, now, windowSizer)
}

// windowOnly returns an error for options that do not apply to windows.
func (s *settings) windowOnly() error {
	switch {
	case s.growth != growthNone || s.tightening != 0:
		return paramError("Linear, Exponential and Tightening apply only to NewScalable")
	case s.classic:
		return paramError("a WindowFilter's generations are blocked: Classic does not apply")
	}
	return nil
}

// now returns the time of a time window (period > 0) in Unix nanoseconds,
// and 0 for a count window, which reads no clock.
func (w *WindowFilter) now(period int64) int64 {
	if period == 0 {
		return 0
	}
	if w.clock != nil {
		return w.clock().UnixNano()
	}
	return time.Now().UnixNano()
}

// ring returns the ring of w, panicking for a zero WindowFilter. Of a
// Concurrent window, it returns the ring as it is now: a writer loads it
// again once it holds the lock.
func (w *WindowFilter) ring() *window.Filter {
	if f := w.load(); f != nil {
		return f
	}
	panic(errZeroWindow)
}

// load returns the ring of w, or nil for a zero WindowFilter.
func (w *WindowFilter) load() *window.Filter {
	if c := w.conc; c != nil {
		return c.ring.Load()
	}
	return w.f
}

// windowAdd is Add and TestAndAdd (test). It is not generic (the hashed
// calls pass a hash's 8 bytes, layout.HashBytes), as a generic function called
// from an inlined method made the caller's key escape: see addKey and
// TestWindowNoAllocsFromOtherPackage (1 allocation per Add of a stack
// array, 2 per batch, before).
func windowAdd(w *WindowFilter, key []byte, test bool) (present bool) {
	f := w.ring()
	h1, h2 := murmur.Sum128(key, f.Seed)
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g := c.ring.Load(); g != f { // decoded into meanwhile
			f = g
			h1, h2 = murmur.Sum128(key, f.Seed)
		}
	}
	var now int64
	if f.Period != 0 {
		now = w.now(f.Period)
		f.Advance(now)
	}
	if test {
		present = f.Test(h1, h2, f.Gens)
	}
	f.Add(h1, h2, now)
	return present
}

// windowTest is Test, not generic, as windowAdd. A Concurrent window's
// takes no lock (TestAtomic).
func windowTest(w *WindowFilter, key []byte) bool {
	f := w.ring()
	h1, h2 := murmur.Sum128(key, f.Seed)
	if w.conc != nil {
		return f.TestAtomic(h1, h2, w.now(f.Period))
	}
	live := f.Gens
	if f.Period != 0 {
		live = f.Live(w.now(f.Period))
	}
	return f.Test(h1, h2, live)
}

// Add inserts key into the newest generation: afterwards Test(key) reports
// true for at least the next window keys added (or the window's duration).
// It hashes key once and writes one cache line; when the newest generation
// is full it first clears the oldest, O(bits per generation/64) once per
// window/(r-1) keys, or under Grow appends an extension to the newest,
// O(bits of the extension/64), each twice the size of the one before.
func (w *WindowFilter) Add(key []byte) { windowAdd(w, key, false) }

// AddString is Add for a string key, without copying or allocating.
func (w *WindowFilter) AddString(key string) { windowAdd(w, bytesOf(key), false) }

// AddHash is Add for the key whose 64-bit hash is h: Add of its 8
// little-endian bytes (see BloomFilter.TestHash).
func (w *WindowFilter) AddHash(h uint64) { windowAdd(w, layout.HashBytes(&h), false) }

// Test reports whether key may be among the keys the window keeps: false
// means it is not (it was never added, or was forgotten); true means it
// probably is (wrong with a probability of at most ErrorRate). It reads the
// key's cache line in every generation, all at once.
func (w *WindowFilter) Test(key []byte) bool { return windowTest(w, key) }

// TestString is Test for a string key, without copying or allocating.
func (w *WindowFilter) TestString(key string) bool { return windowTest(w, bytesOf(key)) }

// TestHash is Test for the key whose 64-bit hash is h (see AddHash).
func (w *WindowFilter) TestHash(h uint64) bool { return windowTest(w, layout.HashBytes(&h)) }

// TestAndAdd reports whether key may be among the keys kept (as Test) and
// adds it (as Add), in one call: under Concurrent, one of several
// goroutines adding the same new key at once sees it absent.
func (w *WindowFilter) TestAndAdd(key []byte) bool { return windowAdd(w, key, true) }

// TestAndAddString is TestAndAdd for a string key, without copying or
// allocating.
func (w *WindowFilter) TestAndAddString(key string) bool { return windowAdd(w, bytesOf(key), true) }

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h.
func (w *WindowFilter) TestAndAddHash(h uint64) bool { return windowAdd(w, layout.HashBytes(&h), true) }

// windowAddMany is the batch add, with results for TestAndAddMany. The
// exported batch methods are go:noinline, as BloomFilter's are: a caller in
// another package that inlined one called this generic function's
// instantiation, and its keys escaped.
func windowAddMany[K layout.Key](w *WindowFilter, keys []K, results []bool) []bool {
	f := w.ring()
	if results != nil {
		results = batchResults(results, len(keys))
	}
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		f = c.ring.Load()
	}
	now := w.now(f.Period)
	f.Advance(now)
	window.AddMany(f, keys, results, now)
	return results
}

// windowTestMany is the batch test; a Concurrent window's takes no lock
// (TestManyAtomic).
func windowTestMany[K layout.Key](w *WindowFilter, keys []K, results []bool) []bool {
	f := w.ring()
	results = batchResults(results, len(keys))
	if w.conc != nil {
		window.TestManyAtomic(f, keys, results, w.now(f.Period))
		return results
	}
	window.TestMany(f, keys, results, f.Live(w.now(f.Period)))
	return results
}

// AddMany adds every key of keys, in order, like calling Add on each (with
// one reading of the clock for the whole batch), overlapping the cache
// misses of several keys.
//
//go:noinline
func (w *WindowFilter) AddMany(keys [][]byte) { windowAddMany(w, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
//
//go:noinline
func (w *WindowFilter) AddManyStrings(keys []string) { windowAddMany(w, keys, nil) }

// AddManyHashes is AddMany for keys given as 64-bit hashes (see AddHash).
//
//go:noinline
func (w *WindowFilter) AddManyHashes(hashes []uint64) { windowAddMany(w, hashes, nil) }

// TestMany reports, for every key of keys, whether it may be among the keys
// kept, as Test does: it fills results[:len(keys)] (allocating it if
// shorter) and returns it. It hashes and prefetches keys rounds ahead of
// those it tests, in every generation.
//
//go:noinline
func (w *WindowFilter) TestMany(keys [][]byte, results []bool) []bool {
	return windowTestMany(w, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
func (w *WindowFilter) TestManyStrings(keys []string, results []bool) []bool {
	return windowTestMany(w, keys, results)
}

// TestManyHashes is TestMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return windowTestMany(w, hashes, results)
}

// TestAndAddMany adds every key of keys in order and reports for each what
// TestAndAdd would have, filling and returning results like TestMany.
//
//go:noinline
func (w *WindowFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)))
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyStrings(keys []string, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)))
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	return windowAddMany(w, hashes, batchResults(results, len(hashes)))
}

// read runs fn on the ring at the window's time; on a Concurrent window,
// under the writers' lock, for a consistent snapshot.
func (w *WindowFilter) read(fn func(f *window.Filter, now int64)) {
	f := w.ring()
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		f = c.ring.Load()
	}
	fn(f, w.now(f.Period))
}

// Window returns the number of keys the window keeps (NewWindow's window).
func (w *WindowFilter) Window() uint64 { return w.ring().Window }

// Capacity returns Window, for the Filter interface.
func (w *WindowFilter) Capacity() uint64 { return w.Window() }

// ErrorRate returns the target false-positive rate, kept at every moment.
func (w *WindowFilter) ErrorRate() float64 { return w.ring().Config.ErrorRate }

// Seed returns the murmur3 seed.
func (w *WindowFilter) Seed() uint32 { return w.ring().Seed }

// Generations returns r, the number of generations.
func (w *WindowFilter) Generations() int { return w.ring().Gens }

// GenerationCapacity returns the keys of one generation, window/(r-1)
// rounded up.
func (w *WindowFilter) GenerationCapacity() uint64 { return w.ring().GenCap }

// Hashes returns k, the bit positions each key sets in a generation.
func (w *WindowFilter) Hashes() uint { return w.ring().K }

// Bits returns the size of the window in bits as it stands: all
// generations, and under Grow their extensions, which come with a burst and
// go with its generation (freed by the first add, batch add or Clear after
// the generation left the window). The window takes Bits()/8 bytes, plus 16
// bytes per generation and 56 per extension (and, Concurrent, 8 more per
// generation and at most 64 more per extension). On a Concurrent window it
// takes the adds' lock, for O(1).
func (w *WindowFilter) Bits() (n uint64) {
	w.read(func(f *window.Filter, _ int64) { n = f.Bits() })
	return n
}

// Extensions returns the number of extensions the generations of a window
// under Grow have (see Grow): 0 unless a burst is in the window, and always
// 0 under the other policies. On a Concurrent window it takes the adds'
// lock, for O(1).
func (w *WindowFilter) Extensions() (n int) {
	w.read(func(f *window.Filter, _ int64) { n = f.Extensions() })
	return n
}

// Overflow returns the overflow policy of a time window (see OnOverflow),
// and RotateEarly for a count window, which rotates on count.
func (w *WindowFilter) Overflow() Overflow { return Overflow(w.ring().Policy) }

// Duration returns how long a time window keeps keys, (r-1) times the
// period of a generation (at least Every's d), and 0 for a count window.
func (w *WindowFilter) Duration() time.Duration {
	f := w.ring()
	return time.Duration(f.Period * int64(f.Gens-1))
}

// Count returns the keys counted in the generations that are still in the
// window, extensions included: those whose Add set a bit in the sub-filter
// it went to. It is at
// least the number of distinct keys the window keeps, less the false
// positives of the newest generation, and counts a key added again in a
// later generation again. O(r); on a Concurrent window it takes the adds'
// lock for that long.
func (w *WindowFilter) Count() (n uint64) {
	w.read(func(f *window.Filter, now int64) { n = f.Count(now) })
	return n
}

// Rotations returns the number of times the window dropped its oldest
// generation since it was made or cleared. On a Concurrent window it takes
// the adds' lock, for O(1).
func (w *WindowFilter) Rotations() (n uint64) {
	w.read(func(f *window.Filter, now int64) { n = f.Rotations() })
	return n
}

// RetainedSince returns a time after which a time window keeps every key
// added: Test reports present every key added strictly after it. It is the
// start of the oldest generation still in the window: once the window has
// run for Duration, between Duration and Duration*r/(r-1) ago, or later when
// RotateEarly rotated early (or Grow, past its limit). A key added at that very instant may be gone: a window
// that rotated early at t put the keys of t before the rotation in the
// generation it drops first. It returns the zero Time for a count window.
// On a Concurrent window it takes the adds' lock, for O(1).
func (w *WindowFilter) RetainedSince() (t time.Time) {
	w.read(func(f *window.Filter, now int64) {
		if f.Period != 0 {
			t = time.Unix(0, f.OldestStart(now))
		}
	})
	return t
}

// FillRatio returns the fraction of the window's bits that are set, in
// [0, 1]. O(Bits/64); on a Concurrent window it holds the adds' lock for
// that long.
func (w *WindowFilter) FillRatio() (r float64) {
	w.read(func(f *window.Filter, now int64) { r = float64(f.SetBits(now)) / float64(f.Bits()) })
	return r
}

// EstimatedCount returns the number of distinct keys the window most
// likely holds, from the bits of each generation and extension
// (EstimateBlockedCount), summed: a key in two generations counts twice.
// O(Bits/64); on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) EstimatedCount() uint64 {
	var n float64
	w.read(func(f *window.Filter, now int64) {
		for g := range f.Live(now) {
			f.EachSub(g, func(m uint64, k uint, set uint64) { n += EstimateBlockedCount(m, k, set) })
		}
	})
	if n >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(n))
}

// EstimatedErrorRate returns the probability that Test reports an absent
// key present, from the bits of the generations and their extensions as
// they stand: at most ErrorRate unless a time window Saturates. O(Bits/64);
// on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) EstimatedErrorRate() (p float64) {
	w.read(func(f *window.Filter, now int64) { p = f.ErrorRate(now) })
	return p
}

// Clear empties the window, keeping the size of its ring and dropping the
// extensions of a window under Grow; a time window restarts at the current
// time. O(Bits/64), under the adds' lock on a Concurrent window, whose
// tests concurrent with Clear may still find keys added before it.
func (w *WindowFilter) Clear() {
	w.read(func(f *window.Filter, now int64) { f.Clear(now) })
}

// Clone returns an independent copy of the window, with its mode and clock.
// O(Bits/64); on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) Clone() *WindowFilter {
	c := &WindowFilter{clock: w.clock}
	w.read(func(f *window.Filter, _ int64) { c.f = f.Clone() })
	if w.conc != nil {
		c.conc, c.f = newWindowConc(c.f), nil
	}
	return c
}

// Equal reports whether w and other hold the same window: the same
// parameters, and generations, oldest first, with the same bits, counts and
// start times, whatever their mode and clock; that is what the encoding
// holds. Two windows built alike and fed the same keys at the same times
// are equal. O(Bits/64); it holds the adds' lock of a Concurrent window
// for that long (of one of two Concurrent windows, compared with a Clone
// of the other).
func (w *WindowFilter) Equal(other *WindowFilter) (eq bool) {
	if w == other {
		return true
	}
	if w.load() == nil || other.load() == nil {
		return w.load() == other.load()
	}
	if w.conc != nil && other.conc != nil {
		// Holding both locks at once could deadlock beside
		// other.Equal(w): compare a copy of w.
		f := w.Clone().load()
		other.read(func(g *window.Filter, _ int64) { eq = f.Equal(g) })
		return eq
	}
	a, b := w, other // a may lock, b does not
	if a.conc == nil {
		a, b = b, a
	}
	a.read(func(g *window.Filter, _ int64) { eq = g.Equal(b.f) })
	return eq
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
	if s.win.every != 0 || s.win.policySet || s.win.gens != 0 {
		return nil, paramError("Every, OnOverflow and Generations contradict an encoded window")
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
	w := &WindowFilter{f: f, clock: s.win.clock}
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

// Layout returns LayoutBlocked: every generation is a blocked filter.
func (w *WindowFilter) Layout() Layout { return LayoutBlocked }

func (*WindowFilter) isFilter() {}

// windowExtSize stops at extension 16, as internal/window does.
const _ = uint(window.MaxExtensions-16) + uint(16-window.MaxExtensions)
