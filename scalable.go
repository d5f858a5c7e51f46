package bloom

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
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
// its false-positive rate at most ErrorRate, for a set whose size is not known
// up front. Test reports false only for keys never added (definitely absent);
// true means probably present, wrong for at most ErrorRate of absent keys. It
// chains BloomFilters as in Almeida et al., "Scalable Bloom Filters" (2007):
// when the newest is full a larger one, with a tighter rate, is added.
//
// Give NewScalable the number of keys you expect: a start too small never
// costs the rate, but grown from 1,000 to 10^7 keys (21 sub-filters) it takes
// about 2x the bits per key and 5-6x the time per absent Test of a
// BloomFilter sized for 10^7 (docs/scalable.md). A key that tests present is
// not added again, so duplicates do not make the filter grow; Count counts
// the keys that changed it.
//
// Cost: one hash per call; Add writes one sub-filter, Test reads newest-first
// and, for an absent key, reads every sub-filter (usually a handful).
// NewScalable refuses growth parameters whose full sub-filters would exceed
// ErrorRate by more than 1%, or that cannot build three sub-filters. Growth
// stops past MaxBits bits in all or 65,536 sub-filters; the filter then keeps
// adding to its newest sub-filter with no false negatives but a rising rate:
// Saturated reports it and EstimatedErrorRate says by how much.
//
// It has no Union or Merge: the OR of two sub-filters can hold twice their
// capacity and break the rate. To combine two, add the keys of one to the
// other.
//
// The zero value is not usable: Add, Test, TestAndAdd and Clone panic with a
// message naming NewScalable; the encoders return an error; the accessors and
// estimates return 0 and Clear does nothing.
//
// Without the Concurrent option it is not safe for concurrent use if any
// goroutine may modify it. With Concurrent, Add, Test, TestAndAdd and every
// accessor, estimate and encoder may run from any number of goroutines at
// once; exactly one caller of TestAndAdd hears "new" for a key, and a reader
// sees every key added before it started and perhaps some added meanwhile.
// Clear and the decoders must not run concurrently with other calls.
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

// How a concurrent filter grows: it builds the same sub-filters as a plain one that inserts
// as many keys. A key that tests absent, under the lock of its key as in
// BloomFilter, takes a slot in the newest sub-filter by compare-and-swap,
// never past its capacity, and counts once it has set a clear bit; if keys
// under other locks have set all its bits meanwhile, it is present, like a
// false positive in a serial run, and gives the slot back. The goroutine that
// finds every slot taken waits for those keys to settle and adds the next
// sub-filter under a mutex, once however many find it full at the same
// moment, while they wait for it. Test never waits: it reads the list of
// sub-filters, which growth replaces and never changes, with one atomic load.
//
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
//
// Deprecated: Layout says the same: s.Layout() == LayoutBlocked. Blocked
// keeps working until v1.
func (s *ScalableBloomFilter) Blocked() bool { return s.blocked }
