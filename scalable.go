package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/murmur"
)

// growth says how a ScalableBloomFilter sizes each new sub-filter.
type growth uint8

const (
	growthNone growth = iota
	growthLinear
	growthExponential
)

// The defaults, chosen by measurement (see README, "The scalable filter"):
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
// String, Hash and batch forms) and Clone; AppendBinary, MarshalBinary, AppendText,
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
	chain atomic.Pointer[chain] // replaces filters and saturated
	grow  sync.Mutex            // held while adding a sub-filter
	locks *lockTable            // serializes writers of the same key
}

// chain is the sub-filters of a concurrent ScalableBloomFilter. It is never
// changed once stored: growth stores a new one.
type chain struct {
	filters   []*BloomFilter // concurrent, without locks of their own
	saturated bool
}

// newScalableLocks returns the locks of a concurrent ScalableBloomFilter:
// the most a BloomFilter gets. They cannot grow with the filter: two writers
// of one key must take the same lock, and a goroutine holding a lock of the
// old table would not exclude one taking a lock of the new.
func newScalableLocks() *lockTable { return newLockTable(maxStripes * stripeWords) }

// subFilters returns the sub-filters, oldest first, and whether the filter is
// saturated.
func (s *ScalableBloomFilter) subFilters() ([]*BloomFilter, bool) {
	if s.conc != nil {
		c := s.conc.chain.Load()
		return c.filters, c.saturated
	}
	return s.filters, s.saturated
}

// makeConcurrent switches s, not yet shared, to concurrent mode with the
// given locks.
func (s *ScalableBloomFilter) makeConcurrent(locks *lockTable) {
	for _, f := range s.filters {
		f.makeConcurrent(nil)
	}
	s.conc = &scalableConcurrency{locks: locks}
	s.conc.chain.Store(&chain{filters: s.filters, saturated: s.saturated})
	s.filters, s.saturated = nil, false
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
	sf.filters = []*BloomFilter{first}
	if s.concurrent {
		sf.makeConcurrent(newScalableLocks())
	}
	return sf, nil
}

// subCapacity returns the capacity of sub-filter i, or false if it does not
// fit in a uint64.
func (s *ScalableBloomFilter) subCapacity(i int) (uint64, bool) {
	c := float64(s.initialCapacity)
	switch {
	case i == 0:
	case s.growth == growthLinear:
		c *= s.scale * float64(i)
	default:
		c *= math.Pow(s.scale, float64(i))
	}
	c = math.Round(c)
	if c >= float64(MaxBits) {
		return 0, false
	}
	return max(uint64(c), 1), true
}

// subErrorRate returns the error rate of sub-filter i, P(1-r)r^i.
func (s *ScalableBloomFilter) subErrorRate(i int) float64 {
	return s.errorRate * (1 - s.tightening) * math.Pow(s.tightening, float64(i))
}

// subSize returns the parameters of sub-filter i.
func (s *ScalableBloomFilter) subSize(i int) (capacity uint64, rate float64, m uint64, k uint, err error) {
	w := s.work
	if w == nil || i >= len(w.sizes) {
		return s.sizeSub(i)
	}
	// A decoder's check sizes the first sub-filters twice, in rateBound and
	// canBuild: once is enough.
	c := &w.sizes[i]
	if !c.done {
		c.capacity, c.rate, c.m, c.k, c.err = s.sizeSub(i)
		c.done = true
	}
	return c.capacity, c.rate, c.m, c.k, c.err
}

// sizeSub works out the parameters of sub-filter i (see subSize).
func (s *ScalableBloomFilter) sizeSub(i int) (capacity uint64, rate float64, m uint64, k uint, err error) {
	capacity, ok := s.subCapacity(i)
	if !ok {
		return 0, 0, 0, 0, paramError("sub-filter %d would need more than MaxBits bits", i)
	}
	rate = s.subErrorRate(i)
	if s.blocked {
		m, k, err = blockedSize(capacity, rate, s.work)
	} else {
		m, k, err = size(capacity, rate, s.work)
	}
	return capacity, rate, m, k, err
}

// nextSize returns the parameters of sub-filter i, given the bits the others
// use, or an error if it cannot be built. It allocates nothing: decoders rely
// on it to decide whether a filter can still grow.
//
// Sub-filter maxSubFilters cannot be built, whatever its size: the format
// holds no more, and growth that goes one sub-filter per key or so
// (Linear(1e-9) from one key, Exponential(1.0000001)) reached it well before
// MaxBits and wrote encodings that no decoder read.
func (s *ScalableBloomFilter) nextSize(i int, usedBits uint64) (capacity uint64, rate float64, m uint64, k uint, err error) {
	if i >= maxSubFilters {
		return 0, 0, 0, 0, paramError("sub-filter %d would exceed the %d sub-filters the format holds", i, maxSubFilters)
	}
	capacity, rate, m, k, err = s.subSize(i)
	if err == nil && usedBits+m > MaxBits {
		err = paramError("sub-filter %d would take the filter past MaxBits", i)
	}
	return capacity, rate, m, k, err
}

// minSubFilters is the number of sub-filters that the growth parameters must
// be able to build within MaxBits bits and MaxHashes hash functions: the
// first and two more. Fewer is not growth: Exponential(2.5e11) from one key
// asks for a 126 GiB second sub-filter, and Tightening(5e-324) gives the
// second a rate of 0.
const minSubFilters = 3

// canBuild reports whether the parameters of s build sub-filters 0 to n-1
// within MaxBits bits and MaxHashes hash functions. It allocates nothing.
func (s *ScalableBloomFilter) canBuild(n int) bool {
	var used uint64
	for i := range n {
		_, _, m, _, err := s.nextSize(i, used)
		if err != nil {
			return false
		}
		used += m
	}
	return true
}

// checkGrowth returns why the parameters of s cannot work, with the range that
// works, or "" if they can. NewScalable and the decoders refuse such
// parameters. It allocates nothing but the message.
func (s *ScalableBloomFilter) checkGrowth() string {
	if s.growthWorks() {
		return ""
	}
	if !s.canBuild(minSubFilters) {
		return s.explainGrowth()
	}
	// The sub-filters can be built, so growthWorks failed on the rate.
	limit := s.errorRate * (1 + rateSlack)
	msg := fmt.Sprintf("errorRate %v with Tightening %v: filled to capacity, the sub-filters would reach a false-positive rate of %.3g", s.errorRate, s.tightening, s.rateBound())
	t := *s
	t.tightening = math.Nextafter(1, 0)
	if t.rateBound() > limit {
		return msg + "; no Tightening keeps errorRate: use a lower errorRate"
	}
	lo := bisect(t.tightening, s.tightening, func(r float64) bool {
		t.tightening = r
		return t.canBuild(minSubFilters) && t.rateBound() <= limit
	})
	return fmt.Sprintf("%s; use a Tightening of at least %v", msg, round4(lo, true))
}

// growthWorks reports whether the parameters of s build minSubFilters
// sub-filters and keep the error rate when all are full: checkGrowth without
// the search for a bound that works. Decoders call it on every header, so it
// stops working out the bound as soon as the answer is known: the bound is at
// most 1, and it only grows as rateBound goes on (see rateBoundAbove).
//
// It works the bound out first: a hostile header is most often condemned by
// its first sub-filter, before the sizes of the next two are worked out.
func (s *ScalableBloomFilter) growthWorks() bool {
	if limit := s.errorRate * (1 + rateSlack); limit < 1 {
		if _, above := s.rateBoundAbove(limit); above {
			return false
		}
	}
	return s.canBuild(minSubFilters)
}

// headerWork is the most work (in workMeter units: about 3.6 ms here) that
// a decoder spends checking the growth parameters of a header
// (growthWithin). Sound parameters take far less: Exponential(1.5),
// Tightening(0.9) at P from 0.1 to 1e-9 take 4,000-40,000 units classic and
// 9,000-14,000 blocked.
const headerWork = 120_000

// growthWithin is growthWorks for a decoder, which must not let a short
// hostile header cost it much: it stops after budget units of work (see
// workMeter), and then reports true. So it refuses only parameters that
// growthWorks refuses, and every filter NewScalable can make decodes; what
// it lets through when it stops short (a header costly to check, such as
// thousands of keys per block) can break the rate bound but has no false
// negatives. The count of work depends on the header alone, so a given
// encoding decodes, or not, everywhere. A blocked header at a high rate cost
// up to 0.12 s before (issue 21, item 6).
func (s *ScalableBloomFilter) growthWithin(budget int64) (works bool) {
	s.work = &workMeter{left: budget}
	defer func() {
		s.work = nil
		if r := recover(); r != nil {
			if _, ok := r.(overBudget); !ok {
				panic(r)
			}
			works = true
		}
	}()
	return s.growthWorks()
}

// explainGrowth describes why s cannot build minSubFilters sub-filters and
// which scale or tightening would.
func (s *ScalableBloomFilter) explainGrowth() string {
	const need = "the filter must be able to add two sub-filters within MaxBits bits and MaxHashes hash functions"
	t := *s
	name, least := "Linear", math.SmallestNonzeroFloat64
	if s.growth == growthExponential {
		name, least = "Exponential", math.Nextafter(1, 2)
	}
	t.scale = least
	if t.canBuild(minSubFilters) {
		hi := bisect(least, s.scale, func(x float64) bool {
			t.scale = x
			return t.canBuild(minSubFilters)
		})
		return fmt.Sprintf("%s scale %v with initialCapacity %d and errorRate %v: %s; use a scale of at most %v", name, s.scale, s.initialCapacity, s.errorRate, need, round4(hi, false))
	}
	// The scale is not the cause: the sub-filters' error rates are.
	t.scale = s.scale
	half := 0.5 // the tightening that gives sub-filter 1 the largest rate
	t.tightening = half
	if !t.canBuild(minSubFilters) {
		return fmt.Sprintf("errorRate %v with initialCapacity %d: %s with any Tightening", s.errorRate, s.initialCapacity, need)
	}
	r := bisect(half, s.tightening, func(x float64) bool {
		t.tightening = x
		return t.canBuild(minSubFilters)
	})
	bound, up := "at least", true
	if s.tightening > half {
		bound, up = "at most", false
	}
	return fmt.Sprintf("Tightening %v with errorRate %v: %s; use a Tightening of %s %v", s.tightening, s.errorRate, need, bound, round4(r, up))
}

// round4 rounds x to 4 significant digits, up or down, so that a bound that
// an error message gives stays within the range that works.
func round4(x float64, up bool) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	if up {
		return math.Ceil(x*scale) / scale
	}
	return math.Floor(x*scale) / scale
}

// bisect returns the value nearest bad, between good and bad, for which ok
// holds, given ok(good) and not ok(bad), in float64 steps.
func bisect(good, bad float64, ok func(float64) bool) float64 {
	for range 200 {
		mid := good + (bad-good)/2
		if mid == good || mid == bad {
			break
		}
		if ok(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// rateSlack is how far above errorRate, relatively, rateBound may be. Every
// sub-filter exceeds its target a little (see rateBound), by about its
// target times a few parts: a filter whose rates are all tiny exceeds P by
// parts per million, which no measurement sees and which refusing would turn
// sound configurations away. What must be refused is the excess a high first
// rate brings: 24% at P = 0.5 with r = 0.1, 4.9% at P = 0.1 with r = 0.1.
const rateSlack = 0.01

// rateBoundFilters is the most sub-filters whose rate rateBound works out one
// by one; the rest are bounded together.
const rateBoundFilters = 32

// rateBound returns the false-positive rate of the filter with every
// sub-filter it can build filled to capacity: 1 - prod(1 - e_i), with e_i
// the rate of sub-filter i at capacity (fullRate), which exceeds its target
// P(1-r)r^i. The excess is large where the target is: P = 0.5 with r = 0.1
// gives the first sub-filter a target of 0.45 and one hash function, which
// reaches 0.6 at capacity, and the filter 0.62. The sub-filters after the
// first i worked out exceed their targets by at most the last ratio e_i/p_i
// (the excess falls with the rate), and their targets add up to P r^i; the
// loop stops once that ratio is within 1e-3 of 1 (a tenth of rateSlack), or after rateBoundFilters.
func (s *ScalableBloomFilter) rateBound() float64 {
	bound, _ := s.rateBoundAbove(math.Inf(1))
	return bound
}

// rateBoundAbove returns rateBound and false, or, once it knows that
// rateBound exceeds limit, a lower bound of it above limit and true, without
// working out the rest. Every factor of miss is at most 1 and each e_i at
// least a lower bound that blockedFullRate reports as it goes, so 1 - miss
// with e_i at its lower bound only grows; the floating-point operations are
// monotone too, so the answer is the one of the whole computation. A hostile
// blocked header used to cost a decoder up to 0.1 s here, working out
// sub-filters of rates near 1 that the first already condemned.
func (s *ScalableBloomFilter) rateBoundAbove(limit float64) (float64, bool) {
	miss, ratio := 1.0, 1.0
	var used uint64
	i := 0
	for ; i < rateBoundFilters && (i == 0 || ratio > 1+1e-3); i++ {
		capacity, rate, m, k, err := s.nextSize(i, used)
		if err != nil {
			return 1 - miss, 1-miss > limit // saturated: no bound beyond, as documented
		}
		used += m
		var e float64
		if s.blocked {
			// A lower bound lo of e_i makes the bound exceed limit if
			// 1 - miss*(1-lo) does.
			var above bool
			e, above = blockedFullRate(capacity, m, k, func(lo float64) bool { return 1-miss*(1-lo) > limit }, s.work)
			if above {
				return 1 - miss*(1-e), true
			}
		} else {
			e = fullRate(capacity, m, k)
		}
		miss *= 1 - e
		if 1-miss > limit {
			return 1 - miss, true
		}
		ratio = max(e/rate, 1)
	}
	tail := s.errorRate * math.Pow(s.tightening, float64(i)) * ratio
	bound := 1 - miss*(1-min(tail, 1))
	return bound, bound > limit
}

// fullRate returns the expected false-positive rate of a sub-filter of m bits
// and k hash functions when its count reaches capacity.
//
// A sub-filter counts only keys that set a clear bit: a key whose k bits are
// already set tests present and is not added. So it fills past the point
// that capacity random keys would reach. With x the fraction of bits set
// after t random keys, x = 1 - e^(-kt/m), of which a fraction x^k were not
// counted, the count is
//
//	c(t) = integral from 0 to t of (1 - x^k) dt' = (m/k) sum_{j=1..k} x^j/j
//
// (substitute x for t'). fullRate solves c = capacity for x and returns x^k;
// with k = 1 that is capacity/m exactly. It is 1 if c never reaches
// capacity: c tends to (m/k) H_k as the filter fills.
func fullRate(capacity, m uint64, k uint) float64 {
	count := func(x float64) float64 {
		var sum, p float64 = 0, 1
		for j := 1; j <= int(k); j++ {
			p *= x
			sum += p / float64(j)
		}
		return float64(m) / float64(k) * sum
	}
	n := float64(capacity)
	if count(1) <= n {
		return 1
	}
	lo, hi := 0.0, 1.0 // count(lo) < n <= count(hi)
	for range 64 {
		mid := (lo + hi) / 2
		if count(mid) < n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Pow(hi, float64(k))
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
	s.filters = append(s.filters, f)
}

const errZeroScalable = "bloom: use of a zero ScalableBloomFilter (create one with NewScalable)"

func (s *ScalableBloomFilter) test(h1, h2 uint64) bool {
	if s.conc != nil {
		return s.conc.chain.Load().test(h1, h2)
	}
	if len(s.filters) == 0 {
		panic(errZeroScalable)
	}
	return anyHolds(s.filters, h1, h2, deepBits)
}

// test reports whether any sub-filter of c holds the key hashed to (h1, h2).
func (c *chain) test(h1, h2 uint64) bool {
	return anyHolds(c.filters, h1, h2, deepBits)
}

// deepBits is the size from which a sub-filter gets four positions read in
// the first round of anyHolds instead of two: 2^22 bits (512 KiB), from which
// its reads mostly miss the caches closest to the core. Measured on a filter
// grown to 10^7 keys (21 sub-filters, the 7 newest that large), together with
// testing the newest after the first round rather than before it: absent and
// present keys about 17% faster (BenchmarkScalable, medians of 3 alternating
// runs).
const deepBits = 1 << 22

// testOne reports whether f, plain or concurrent, holds the key hashed to
// (h1, h2).
func testOne(f *BloomFilter, h1, h2 uint64) bool {
	if f.conc != nil {
		return f.testConcurrent(h1, h2)
	}
	return f.test(h1, h2)
}

// anyHolds reports whether any of filters, oldest first, holds the key hashed
// to (h1, h2). Sub-filters of at least deep bits get more reads in the first
// round (deepBits; tests vary it).
//
// It probes the filters side by side rather than one after the other. The
// first round reads the first two positions of every filter (four if it is
// deep), without a branch on the bits it reads, so that the cache misses of
// all filters are in flight at once. Then the newest filter, which holds most
// keys, is tested in full if it is still in the running: its first reads are
// already on their way. (If even the newest is below deep, all filters are
// small enough to stay in the caches, and the newest is tested first, alone,
// which is faster for the keys it holds.) The other filters still in the running go through
// further rounds, each reading the next two positions of each, again
// branch-free, dropping the filters where a zero turns up. An absent key,
// which must be ruled out by every filter, so costs a few rounds instead of a
// chain of dependent misses and mispredicted branches per filter: measured
// 1.9x faster than probing the filters in turn at 10^5 keys and about 1.5x at
// 10^7 (BenchmarkScalable, "TestAbsent/one-by-one").
//
// The positions are those of AppendLocations, which depend on a filter only
// through m: one sequence, mixed once per position, serves all filters. Loads
// are atomic so that it also serves concurrent filters; on amd64 they are
// plain loads.
func anyHolds(filters []*BloomFilter, h1, h2 uint64, deep uint64) bool {
	if filters[0].blocked {
		return anyHoldsSeq(filters, h1, h2)
	}
	for len(filters) > 64 {
		if anyHolds(filters[len(filters)-64:], h1, h2, deep) {
			return true
		}
		filters = filters[:len(filters)-64]
	}
	// A newest filter below deep is tested first and alone, as all of
	// them fit in the caches; otherwise after the first round.
	n := len(filters) - 1
	if filters[n].m < deep {
		if testOne(filters[n], h1, h2) {
			return true
		}
		n, filters = -1, filters[:n]
	}

	// The first four positions before the multiply-shift; (x2, y, c) is
	// the state of the sequence at position 2.
	x0, y, c := h1, h2, uint64(0)
	c += golden
	x1 := x0 + y
	y += c
	c += golden
	x2 := x1 + y
	y += c
	m0, m1, m2, m3 := mix(x0), mix(x1), mix(x2), mix(x2+y)

	var alive uint64 // bit j: filters[j] may hold the key
	for j, f := range filters {
		hold := f.holdsPair(m0, m1, 0)
		if f.m >= deep && f.k > 2 {
			hold &= f.holdsPair(m2, m3, 2)
		}
		alive |= hold << j
	}
	if n >= 0 && alive>>n&1 != 0 {
		if testOne(filters[n], h1, h2) {
			return true
		}
		alive &^= 1 << n
	}

	// Later rounds: positions r and r+1, from r = 2. A deep filter reads
	// positions 2 and 3 again, from the cache.
	x0 = x2
	for r := uint(2); alive != 0; r += 2 {
		// x0 and x1 are the positions r and r+1 before the multiply-shift.
		c += golden
		x1 := x0 + y
		y += c
		m0, m1 := mix(x0), mix(x1)
		var next uint64
		for a := alive; a != 0; a &= a - 1 {
			j := bits.TrailingZeros64(a)
			f := filters[j]
			if r >= f.k {
				return true // all k positions of filters[j] are set
			}
			next |= f.holdsPair(m0, m1, r) << j
		}
		alive = next
		c += golden
		x0 = x1 + y
		y += c
	}
	return false
}

// holdsPair returns 1 if f has positions r and r+1 set, 0 if not, given
// their values mixed (mix) before the multiply-shift; r < f.k. If f has no
// position r+1, it reads position r twice. It loads atomically, for
// concurrent filters; on amd64 these are plain loads.
func (f *BloomFilter) holdsPair(mixed0, mixed1 uint64, r uint) uint64 {
	p0, _ := bits.Mul64(mixed0, f.m)
	p1, _ := bits.Mul64(mixed1, f.m)
	if r+1 >= f.k {
		p1 = p0
	}
	return (atomic.LoadUint64(&f.words[p0>>6]) >> (p0 & 63)) & (atomic.LoadUint64(&f.words[p1>>6]) >> (p1 & 63)) & 1
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
	c := s.conc.chain.Load()
	if c.test(h1, h2) {
		return true
	}
	mu := &s.conc.locks.of(h2).mu
	mu.Lock()
	c = s.conc.chain.Load() // holds every sub-filter the key may have gone into
	if c.test(h1, h2) {
		mu.Unlock()
		return true
	}
	newest := s.reserve(c)
	fresh := newest.setConcurrent(h1, h2, newest.unsetConcurrent(h1, h2))
	if fresh {
		newest.conc.count.Add(1)
	} else {
		// Keys under other locks set all its bits since it tested absent:
		// it is present now, a false positive as in a serial run, and
		// gives its slot back. Counting it would leave a count above the
		// set bits (with one hash function, two keys on one bit), which
		// an encoding cannot hold: it clamped an older sub-filter's count
		// below its capacity, and the decoder rejected it as not full.
		newest.conc.reserved.Add(^uint64(0))
	}
	mu.Unlock()
	return !fresh
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
		n := newest.conc.reserved.Load()
		if n < newest.capacity || c.saturated {
			if newest.conc.reserved.CompareAndSwap(n, n+1) {
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
	for last.conc.count.Load() < last.capacity {
		if last.conc.reserved.Load() < last.capacity {
			return c
		}
		runtime.Gosched()
	}
	next := &chain{filters: c.filters, saturated: true}
	if f, err := s.newSubFilter(len(c.filters), bitsOf(c.filters)); err == nil {
		// The full slice expression makes append copy: readers of c keep
		// an unchanged slice.
		next = &chain{filters: append(c.filters[:len(c.filters):len(c.filters)], f)}
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

// Batch calls: the batch calls of BloomFilter, for the chain of sub-filters.
// They are the loops of single calls, on purpose, so growth happens exactly
// where the loop grows. Rounds that first prefetched the first two positions
// of every key in every sub-filter of at least deepBits bits (and more in the
// newest) measured 0.85-0.97x of the loop on a filter grown to 10^7 keys
// (BenchmarkScalableBatch, rounds of 8): anyHolds already has the misses of
// all sub-filters of one key in flight at once, about 28 at 10^7 keys, which
// is as many as the machine serves, and the prefetches only added work.

func scalableTestMany[K keyType](s *ScalableBloomFilter, keys []K, results []bool) []bool {
	results = batchResults(results, len(keys))
	if s.blocked {
		return scalableTestManyBlocked(s, keys, results)
	}
	for i, key := range keys {
		results[i] = s.test(murmur.Sum128(keyBytes(&key), s.seed))
	}
	return results
}

// scalableAddMany adds keys in order; if results is not nil, it records in it
// what TestAndAdd would have returned for each.
func scalableAddMany[K keyType](s *ScalableBloomFilter, keys []K, results []bool) {
	if s.blocked {
		scalableAddManyBlocked(s, keys, results)
		return
	}
	for i, key := range keys {
		present := s.testAndAdd(murmur.Sum128(keyBytes(&key), s.seed))
		if results != nil {
			results[i] = present
		}
	}
}

// AddMany inserts every key of keys, in order, like calling Add on each: the
// filter grows where that loop would make it grow, and keys that test
// present, including repeats within keys, are not inserted again. It does
// not allocate unless it adds a sub-filter.
func (s *ScalableBloomFilter) AddMany(keys [][]byte) { scalableAddMany(s, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
func (s *ScalableBloomFilter) AddManyStrings(keys []string) { scalableAddMany(s, keys, nil) }

// TestMany reports, for every key of keys, whether it may be in the filter,
// with Test's meaning of true and false: results[i] is Test(keys[i]). It
// fills results[:len(keys)] and returns that slice, reusing the storage of
// results when cap(results) is at least len(keys) (then it does not
// allocate) and allocating a new slice otherwise, like every batch call of
// this package.
func (s *ScalableBloomFilter) TestMany(keys [][]byte, results []bool) []bool {
	return scalableTestMany(s, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
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
func (s *ScalableBloomFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	results = batchResults(results, len(keys))
	scalableAddMany(s, keys, results)
	return results
}

// TestAndAddManyStrings is TestAndAddMany for string keys, without copying
// them.
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
		s.conc.chain.Store(&chain{filters: []*BloomFilter{first}})
		return
	}
	if len(s.filters) == 0 {
		return // a zero ScalableBloomFilter
	}
	s.filters[0].Clear()
	clear(s.filters[1:])
	s.filters = s.filters[:1]
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
	c.filters = make([]*BloomFilter, len(filters))
	for i, f := range filters {
		c.filters[i] = f.snapshot()
	}
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
const (
	scalableMagic      = "BLMS"
	scalableHeaderSize = 56
	maxSubFilters      = 1 << 16
)

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

// v3Header returns the header of the encoding of s with the given
// sub-filters and saturation, taken from one call of subFilters.
func (s *ScalableBloomFilter) v3Header(filters []*BloomFilter, saturated bool) format.V3ScalableHeader {
	return format.V3ScalableHeader{
		Blocked: s.blocked, Saturated: saturated, Seed: s.seed, Growth: uint8(s.growth), Scale: s.scale,
		Tightening: s.tightening, InitialCapacity: s.initialCapacity, ErrorRate: s.errorRate, N: len(filters),
	}
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
	b = format.AppendV3ScalableHeader(b, s.v3Header(filters, saturated), offsets)
	for i, f := range filters {
		b = append(b, make([]byte, start+int(offsets[i])-len(b))...)
		b = format.AppendV3(b, f.v3Header(), f.words, f.conc != nil)
	}
	return b, nil
}

// MarshalBinary returns the binary encoding described in the package doc
// (encoding.BinaryMarshaler).
func (s *ScalableBloomFilter) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.EncodedSize()))
}

// parseScalableHeader validates the fixed header and returns an empty filter
// with its parameters and the number of sub-filters that follow.
func parseScalableHeader(b []byte) (*ScalableBloomFilter, int, error) {
	if string(b[:4]) != scalableMagic {
		return nil, 0, corrupt("bad magic %q", b[:4])
	}
	blocked := false
	switch v := binary.LittleEndian.Uint16(b[4:]); {
	case v == blockedVersion && b[13] == layoutBlocked:
		blocked = true
	case v == blockedVersion:
		return nil, 0, corrupt("unknown layout %d", b[13])
	case v != formatVersion:
		return nil, 0, corrupt("unsupported format version %d (want %d or %d)", v, formatVersion, blockedVersion)
	case b[13] != 0:
		return nil, 0, corrupt("non-zero reserved byte 13")
	}
	flags := binary.LittleEndian.Uint16(b[6:])
	if flags&^1 != 0 || b[14]|b[15] != 0 || binary.LittleEndian.Uint32(b[52:]) != 0 {
		return nil, 0, corrupt("unknown flags or non-zero reserved bytes")
	}
	s := &ScalableBloomFilter{
		seed:            binary.LittleEndian.Uint32(b[8:]),
		growth:          growth(b[12]),
		scale:           math.Float64frombits(binary.LittleEndian.Uint64(b[16:])),
		tightening:      math.Float64frombits(binary.LittleEndian.Uint64(b[24:])),
		initialCapacity: binary.LittleEndian.Uint64(b[32:]),
		errorRate:       math.Float64frombits(binary.LittleEndian.Uint64(b[40:])),
		saturated:       flags&1 != 0,
		blocked:         blocked,
	}
	n := binary.LittleEndian.Uint32(b[48:])
	if n == 0 || n > maxSubFilters {
		return nil, 0, corrupt("%d sub-filters", n)
	}
	if err := s.checkParams(); err != nil {
		return nil, 0, err
	}
	return s, int(n), nil
}

// checkParams checks the parameters of a decoded header, of any version.
func (s *ScalableBloomFilter) checkParams() error {
	switch {
	case s.growth == growthLinear && !(s.scale > 0 && !math.IsInf(s.scale, 0)),
		s.growth == growthExponential && !(s.scale > 1 && !math.IsInf(s.scale, 0)),
		s.growth != growthLinear && s.growth != growthExponential:
		return corrupt("bad growth %d with scale %v", s.growth, s.scale)
	case !(s.tightening > 0 && s.tightening < 1):
		return corrupt("tightening %v not in (0, 1)", s.tightening)
	case s.initialCapacity == 0:
		return corrupt("initial capacity 0")
	case !(s.errorRate > 0 && s.errorRate < 1):
		return corrupt("error rate %v not in (0, 1)", s.errorRate)
	}
	// growthWithin, not checkGrowth: the bound that checkGrowth's message
	// gives takes a bisection over many sizings, which would let a short
	// hostile input cost a decoder seconds (seen as stalls in
	// FuzzScalableUnmarshalBinary), and growthWorks alone up to 0.12 s.
	if !s.growthWithin(headerWork) {
		return corrupt("growth %d with scale %v, tightening %v and error rate %v cannot keep the error rate (NewScalable refuses them)", s.growth, s.scale, s.tightening, s.errorRate)
	}
	return nil
}

// fromV3Header returns an empty filter with the parameters of a version-3
// header, checked as checkParams does.
func fromV3Header(h format.V3ScalableHeader) (*ScalableBloomFilter, error) {
	s := &ScalableBloomFilter{
		seed: h.Seed, growth: growth(h.Growth), scale: h.Scale, tightening: h.Tightening,
		initialCapacity: h.InitialCapacity, errorRate: h.ErrorRate, saturated: h.Saturated, blocked: h.Blocked,
	}
	return s, s.checkParams()
}

// walkV3 validates the structure of data as a version-3 encoding (see
// format.WalkV3Scalable) and its parameters, and returns an empty filter with
// them and where its sub-filters lie.
func walkV3(data []byte) (*ScalableBloomFilter, []format.V3Sub, error) {
	if len(data) >= format.V3HeaderSize {
		// The parameters first, so that hostile ones cost no walk.
		if h, err := format.ParseV3ScalableHeader(data); err == nil {
			if _, err := fromV3Header(h); err != nil {
				return nil, nil, err
			}
		}
	}
	h, subs, err := format.WalkV3Scalable(data)
	if err != nil {
		return nil, nil, err
	}
	d, err := fromV3Header(h)
	return d, subs, err
}

// readV3 is readFrom for a version-3 encoding, whose first
// scalableHeaderSize bytes are in hb, from cr.
func (s *ScalableBloomFilter) readV3(cr *crcReader, src io.Reader, hb *[format.V3HeaderSize]byte) (int64, error) {
	if _, err := io.ReadFull(cr, hb[scalableHeaderSize:]); err != nil {
		return cr.n, noEOF(err)
	}
	h, err := format.ParseV3ScalableHeader(hb[:])
	if err != nil {
		return cr.n, err
	}
	d, err := fromV3Header(h)
	if err != nil {
		return cr.n, err
	}
	offsets, _, err := format.ReadV3Table(cr, h)
	if err != nil {
		return cr.n, err
	}
	for i, off := range offsets {
		// Each sub-filter starts on the next cache line: offsets[i] must
		// be where the previous one ends, rounded up.
		if want := format.AlignV3(uint64(cr.n)); off != want {
			return cr.n, corrupt("sub-filter %d at offset %d, want %d", i, off, want)
		}
		if _, err := format.ReadV3Padding(cr, off-uint64(cr.n)); err != nil {
			return cr.n, err
		}
		f, _, err := readFilter(cr, src, version3)
		if err != nil {
			return cr.n, err
		}
		if err := d.checkSubFilter(i, f); err != nil {
			return cr.n, err
		}
		d.filters = append(d.filters, f)
	}
	if err := d.finish(); err != nil {
		return cr.n, err
	}
	s.replace(d)
	return cr.n, nil
}

// checkSubFilter verifies that f is exactly the i-th sub-filter s would build,
// or would have built before sizing used the exact rate (legacySize).
func (s *ScalableBloomFilter) checkSubFilter(i int, f *BloomFilter) error {
	capacity, rate, m, k, err := s.subSize(i)
	if (err != nil || f.m != m || f.k != k) && f.capacity == capacity && f.errorRate == rate && !s.blocked {
		m, k, err = legacySize(capacity, rate)
	}
	if err != nil || f.capacity != capacity || f.errorRate != rate || f.m != m || f.k != k || f.seed != s.seed || f.blocked != s.blocked {
		return corrupt("sub-filter %d does not match the filter's parameters", i)
	}
	return nil
}

// legacySaturated reports whether s, with sizing as it was before it used
// the exact rate (legacySize), could not build its next sub-filter: the
// Saturated flag of a filter saved then. Such a filter stays saturated.
func (s *ScalableBloomFilter) legacySaturated() bool {
	if s.blocked {
		return false // blocked filters came after the exact sizing
	}
	i := len(s.filters)
	capacity, ok := s.subCapacity(i)
	if !ok {
		return true
	}
	m, _, err := legacySize(capacity, s.subErrorRate(i))
	return err != nil || s.Bits()+m > MaxBits
}

// finish validates the decoded filter as a whole.
func (s *ScalableBloomFilter) finish() error {
	for _, f := range s.filters[:len(s.filters)-1] {
		if f.count < f.capacity {
			return corrupt("a sub-filter other than the newest is not full")
		}
	}
	// Arithmetic only: building the next sub-filter to see whether it
	// fits would let a short input allocate up to MaxBits bits.
	if s.saturated && !s.legacySaturated() {
		if _, _, _, _, err := s.nextSize(len(s.filters), s.Bits()); err == nil {
			return corrupt("marked saturated but can still grow")
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
	if len(data) >= 6 && format.IsV3(data) {
		d, subs, err := walkV3(data)
		if err != nil {
			return err
		}
		d.filters = make([]*BloomFilter, 0, len(subs))
		for i, sub := range subs {
			h, words, err := format.DecodeV3(data[sub.Off:sub.Off+sub.H.Size()], allocWords(sub.H.Blocked))
			if err != nil {
				return fmt.Errorf("sub-filter %d: %w", i, err)
			}
			f, err := fromV3(h, words)
			if err != nil {
				return err
			}
			if err := d.checkSubFilter(i, f); err != nil {
				return err
			}
			d.filters = append(d.filters, f)
		}
		if err := d.finish(); err != nil {
			return err
		}
		s.replace(d)
		return nil
	}
	if len(data) < scalableHeaderSize+crcSize {
		return io.ErrUnexpectedEOF
	}
	d, n, err := parseScalableHeader(data)
	if err != nil {
		return err
	}
	// Walk the sub-filter headers to check the length before anything else,
	// so that a truncated input is io.ErrUnexpectedEOF and nothing is
	// allocated for sizes the input does not hold.
	sizes := make([]uint64, 0, min(n, len(data)/(headerSize+8+crcSize)))
	off := uint64(scalableHeaderSize)
	for range n {
		if uint64(len(data)) < off+headerSize {
			return io.ErrUnexpectedEOF
		}
		h, err := parseHeader(data[off:])
		if err != nil {
			return err
		}
		size := headerSize + 8*h.words() + crcSize
		sizes = append(sizes, size)
		off += size
	}
	switch {
	case uint64(len(data)) < off+crcSize:
		return io.ErrUnexpectedEOF
	case uint64(len(data)) > off+crcSize:
		return corrupt("%d trailing bytes", uint64(len(data))-off-crcSize)
	}
	if crc32.Checksum(data[:off], castagnoli) != binary.LittleEndian.Uint32(data[off:]) {
		return corrupt("checksum mismatch")
	}
	d.filters = make([]*BloomFilter, 0, n)
	rest := data[scalableHeaderSize:off]
	for i, size := range sizes {
		f, err := decode(rest[:size])
		if err != nil {
			return err
		}
		if err := d.checkSubFilter(i, f); err != nil {
			return err
		}
		d.filters = append(d.filters, f)
		rest = rest[size:]
	}
	if err := d.finish(); err != nil {
		return err
	}
	s.replace(d)
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
	n, err := w.Write(format.AppendV3ScalableHeader(nil, s.v3Header(filters, saturated), offsets))
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
		n64, err = format.WriteV3(w, f.v3Header(), f.words, f.conc != nil)
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
	cr := &crcReader{r: r}
	var hb [format.V3HeaderSize]byte
	if _, err := io.ReadFull(cr, hb[:scalableHeaderSize]); err != nil {
		return cr.n, noEOF(err)
	}
	if format.IsV3(hb[:]) {
		cr.noCRC = true
		return s.readV3(cr, src, &hb)
	}
	d, n, err := parseScalableHeader(hb[:scalableHeaderSize])
	if err != nil {
		return cr.n, err
	}
	for i := range n {
		f, _, err := readFilter(cr, src, version1or2)
		if err != nil {
			return cr.n, err
		}
		if err := d.checkSubFilter(i, f); err != nil {
			return cr.n, err
		}
		d.filters = append(d.filters, f)
	}
	want := cr.crc
	var cb [crcSize]byte
	if _, err := io.ReadFull(cr, cb[:]); err != nil {
		return cr.n, noEOF(err)
	}
	if binary.LittleEndian.Uint32(cb[:]) != want {
		return cr.n, corrupt("checksum mismatch")
	}
	if err := d.finish(); err != nil {
		return cr.n, err
	}
	s.replace(d)
	return cr.n, nil
}

// crcReader counts and, unless noCRC, checksums what passes through it.
// Version 3 has no checksum of the whole encoding: its sub-filters carry
// their own.
type crcReader struct {
	r     io.Reader
	n     int64
	crc   uint32
	noCRC bool
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if !c.noCRC {
		c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	}
	return n, err
}

// AddHash inserts the key whose 64-bit hash is h unless it tests present
// already: it is Add of the 8 little-endian bytes of h (see
// BloomFilter.TestHash for what a hashed key promises). It does not
// allocate unless it adds a sub-filter.
func (s *ScalableBloomFilter) AddHash(h uint64) {
	s.testAndAdd(murmur.Sum128(keyBytes(&h), s.seed))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false: it is Test of the 8
// little-endian bytes of h. The filter mixes h with murmur3 and its seed, so
// a weak hash such as FNV-1a or sequential integers meets the error rate;
// keys whose hashes collide are one key to the filter, which adds about
// n/2^64 to the rate for n keys and a uniform 64-bit hash.
func (s *ScalableBloomFilter) TestHash(h uint64) bool {
	return s.test(murmur.Sum128(keyBytes(&h), s.seed))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (s *ScalableBloomFilter) TestAndAddHash(h uint64) bool {
	return s.testAndAdd(murmur.Sum128(keyBytes(&h), s.seed))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes, growing the
// filter like the loop of AddHash.
func (s *ScalableBloomFilter) AddManyHashes(hashes []uint64) { scalableAddMany(s, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
func (s *ScalableBloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return scalableTestMany(s, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
func (s *ScalableBloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	scalableAddMany(s, hashes, results)
	return results
}
