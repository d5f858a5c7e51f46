package bloom

import (
	"fmt"
	"math"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
)

// This file holds only the sizing math: for a Bloom filter of m bits, k hash
// functions and n keys in either layout, the choice between the layouts
// (Layout, DefaultLayout), and, at its end, for the sub-filters of a
// ScalableBloomFilter. The false-positive rate of each layout, with its
// derivation, is worked out in that layout's package: internal/classic
// (rate.go) and internal/blocked (rate.go). Sources:
//
//   - A. Broder and M. Mitzenmacher, "Network Applications of Bloom Filters: A
//     Survey", Internet Mathematics 1(4), 2004, section 2.1: the classic
//     closed form of the false-positive rate and the optimal m and k.
//   - P. Bose, H. Guo, E. Kranakis, A. Maheshwari, P. Morin, J. Morrison,
//     M. Smid and Y. Tang, "On the false-positive rate of Bloom filters",
//     Information Processing Letters 108(4), 2008: the closed form is only a
//     lower bound of the rate, and the exact rate for k independent uniform
//     positions per key.
//   - K. Christensen, A. Roginsky and M. Jimeno, "A new analysis of the false
//     positive rate of a Bloom filter", Information Processing Letters
//     110(21), 2010: the exact rate as a sum over the number of set bits,
//     p = sum_i (i/m)^k P(X = i), with P(X = i) = i! C(m, i) S(kn, i) / m^(kn)
//     (S the Stirling numbers of the second kind).
//   - F. Putze, P. Sanders and J. Singler, "Cache-, Hash- and Space-Efficient
//     Bloom Filters", ACM Journal of Experimental Algorithmics 14, 2009,
//     section 3: the rate of the blocked layout.
//   - S. J. Swamidass and P. Baldi, "Mathematical correction for fingerprint
//     similarity measures to improve chemical retrieval", J. Chem. Inf.
//     Model. 47(3), 2007: the count estimate.

// The copies of these limits in internal/layout, which the layouts' rate
// functions use: the build fails (constant overflow) if they differ.
const (
	_ = uint64(MaxBits-layout.MaxBits) + uint64(layout.MaxBits-MaxBits)
	_ = uint(MaxHashes-layout.MaxHashes) + uint(layout.MaxHashes-MaxHashes)
)

// ln2Squared is (ln 2)^2.
const ln2Squared = math.Ln2 * math.Ln2

// OptimalBits returns the number of bits m that a Bloom filter needs to hold
// capacity keys at a false-positive rate of errorRate when it uses the
// optimal number of hash functions, by the classic closed form:
//
//	m = ceil(-n ln p / (ln 2)^2)        (Broder & Mitzenmacher, eq. 2.1 at k = (m/n) ln 2)
//
// It is a lower bound of what a filter needs: Size, and so New, add bits on
// top of it for the integer hash count and, for a few hundred keys or fewer,
// for the exact rate (see FalsePositiveRate). It returns 0 when capacity is 0
// or errorRate is not in (0, 1), and math.MaxUint64 when the result does not
// fit in a uint64.
func OptimalBits(capacity uint64, errorRate float64) uint64 {
	if capacity == 0 || !(errorRate > 0 && errorRate < 1) {
		return 0
	}
	m := math.Ceil(-float64(capacity) * math.Log(errorRate) / ln2Squared)
	if m >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(m)
}

// OptimalHashes returns the number of hash functions k, at least 1, that
// minimises FalsePositiveRate(bits, k, capacity). The real-valued optimum of
// the closed form is (m/n) ln 2; OptimalHashes starts from its integer
// neighbours and moves to fewer or more hash functions while that lowers the
// rate. It returns 1 when bits or capacity is 0. The result may exceed
// MaxHashes; Size never uses more than MaxHashes.
func OptimalHashes(bits, capacity uint64) uint {
	if bits == 0 || capacity == 0 {
		return 1
	}
	opt := float64(bits) / float64(capacity) * math.Ln2
	if opt > 1<<20 {
		// Far beyond any usable hash count; avoid a float-to-uint overflow.
		opt = 1 << 20
	}
	k, _ := bestHashes(bits, capacity, uint(opt), 1<<21, nil)
	return k
}

// bestHashes returns the k in [1, limit] with the lowest rate
// FalsePositiveRate(m, k, n), and that rate, walking downhill from start.
// The rate is unimodal in k: from floor((m/n) ln 2) the walk stops at a
// neighbour with the closed form, while the exact rate of a small filter has
// its minimum up to a fifth lower (19 instead of 24 at m = 35, n = 1).
// w meters the work, if not nil (see workMeter).
func bestHashes(m, n uint64, start, limit uint, w *workMeter) (uint, float64) {
	if w == nil {
		return descendHashes(FalsePositiveRate, m, n, start, limit)
	}
	meter := w.budget()
	return descendHashes(func(m uint64, k uint, n uint64) float64 { return classic.Rate(m, k, n, meter) }, m, n, start, limit)
}

// descendHashes returns the k in [1, limit] with the lowest rate(m, k, n),
// and that rate, walking downhill from start; rate must be unimodal in k.
func descendHashes(rate func(m uint64, k uint, n uint64) float64, m, n uint64, start, limit uint) (uint, float64) {
	k := min(max(start, 1), limit)
	r := rate(m, k, n)
	for up := false; k < limit; up = true {
		next := rate(m, k+1, n)
		if next >= r {
			if up {
				return k, r
			}
			break
		}
		k, r = k+1, next
	}
	for k > 1 {
		next := rate(m, k-1, n)
		if next >= r {
			break
		}
		k, r = k-1, next
	}
	return k, r
}

// FalsePositiveRate returns the probability that a filter of bits bits and
// hashes hash functions, holding n distinct keys, reports an absent key as
// present, when the hashes positions of every key are independent and
// uniform over the bits (which the positions of AppendLocations follow):
//
//	p = E[(X/m)^k],  X the number of bits set by the kn positions of the n keys
//
// (Bose et al. 2008; Christensen, Roginsky and Jimeno 2010). For a large
// filter it is the classic closed form
//
//	p = (1 - e^(-kn/m))^k        (Broder & Mitzenmacher, section 2.1)
//
// which is optimistic for small filters: 9.2x at 34 bits, 24 hash functions and
// one key. FalsePositiveRate returns the closed form where it is within
// 1e-4 of the exact rate, and the exact rate elsewhere (for hashes up to
// 4*MaxHashes), in O(k^2 (1 + kn/m)) steps: at most a few tenths of a
// millisecond for the hash counts a filter can use. It returns 1 when bits or
// hashes is 0.
func FalsePositiveRate(bits uint64, hashes uint, n uint64) float64 {
	return classic.Rate(bits, hashes, n, nil)
}

// EstimateCount returns the number of distinct keys that most likely set
// setBits of the bits bits of a filter with hashes hash functions:
//
//	n* = -(m/k) ln(1 - X/m)        (Swamidass & Baldi, 2007)
//
// It returns +Inf when every bit is set (the count cannot be estimated) and 0
// when bits or hashes is 0.
func EstimateCount(bits uint64, hashes uint, setBits uint64) float64 {
	if bits == 0 || hashes == 0 {
		return 0
	}
	if setBits >= bits {
		return math.Inf(1)
	}
	m := float64(bits)
	// log1p(-X/m) = ln(1 - X/m), accurate when X is small.
	return -m / float64(hashes) * math.Log1p(-float64(setBits)/m)
}

// Size returns the (bits, hashes) of the classic layout for capacity keys
// at errorRate, which New uses with Classic and where DefaultLayout is
// LayoutClassic. Where New picks the blocked layout (all but tiny filters
// at rates down to about 5e-4, so at 1% and 0.1%) it uses BlockedSize
// instead: up to 10% more bits (3.1% at 1%, 7.7% at 0.1%, from 10^4 keys).
// Size gives the smallest m for which k = min(OptimalHashes(m, capacity),
// MaxHashes) gives FalsePositiveRate(m, k, capacity) <= errorRate. Below
// about 1e-19 the optimal k passes MaxHashes; Size then uses MaxHashes and
// more bits, which reach any rate (some 154 bits per key at 1e-30). It takes
// O(log m) evaluations of FalsePositiveRate and allocates nothing. It returns
// an error wrapping ErrInvalidParameter when capacity is 0, errorRate is not
// in (0, 1), or the filter would need more than MaxBits bits; that error
// states the lowest rate MaxBits bits give capacity keys.
func Size(capacity uint64, errorRate float64) (uint64, uint, error) {
	return size(capacity, errorRate, nil)
}

// size is Size, its work metered by w if not nil.
func size(capacity uint64, errorRate float64, w *workMeter) (uint64, uint, error) {
	if capacity == 0 {
		return 0, 0, paramError("capacity must be at least 1, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	// rate(m), the lowest rate m bits reach with at most MaxHashes hash
	// functions, falls as m grows: for each k the rate falls with m. The
	// search moves m little from one step to the next, so each step starts
	// looking for the best k from the one before.
	hint := uint(0)
	meets := func(m uint64) bool {
		if hint == 0 {
			hint = uint(min(float64(m)/float64(capacity)*math.Ln2, 1<<20))
		}
		var rate float64
		hint, rate = bestHashes(m, capacity, hint, MaxHashes, w)
		return rate <= errorRate
	}
	tooLarge := func() error {
		meets(MaxBits)
		floor := classic.Rate(MaxBits, hint, capacity, w.budget())
		return paramError("capacity %d at errorRate %v needs more than MaxBits (%d) bits; the lowest rate for %d keys is %.3g",
			capacity, errorRate, MaxBits, capacity, floor)
	}
	// The closed form at the real-valued optimal k is a lower bound of the
	// exact rate at any integer k (Bose et al.), so m is at least OptimalBits.
	lo := max(OptimalBits(capacity, errorRate), 1)
	if lo > MaxBits {
		return 0, 0, tooLarge()
	}
	if meets(lo) {
		return lo, hint, nil
	}
	// Double the step until the target is met, then bisect.
	hi := lo
	for step := uint64(1); ; step *= 2 {
		if hi == MaxBits {
			return 0, 0, tooLarge()
		}
		lo, hi = hi, min(hi+step, MaxBits)
		if meets(hi) {
			break
		}
	}
	k := hint
	for lo+1 < hi { // invariant: rate(lo) > errorRate >= rate(hi), with k at hi
		mid := lo + (hi-lo)/2
		if meets(mid) {
			hi, k = mid, hint
		} else {
			lo = mid
		}
	}
	return hi, k, nil
}

// legacySize is Size as it was before it used the exact rate: the smallest m
// at or above OptimalBits for which the k that the closed form makes optimal
// at OptimalBits meets errorRate by the closed form, with k then chosen again
// by the closed form, and an error beyond MaxBits or MaxHashes. The sub-filters
// of ScalableBloomFilters saved then have these sizes; decoders accept them.
func legacySize(capacity uint64, errorRate float64) (uint64, uint, error) {
	if capacity == 0 || !(errorRate > 0 && errorRate < 1) {
		return 0, 0, paramError("invalid capacity or errorRate")
	}
	rate := func(m uint64, k uint) float64 { return classic.ClosedFormRate(m, k, capacity) }
	optimalHashes := func(m uint64) uint {
		opt := min(float64(m)/float64(capacity)*math.Ln2, 1<<20)
		lo := uint(math.Floor(opt))
		if lo < 1 {
			return 1
		}
		if rate(m, lo+1) < rate(m, lo) {
			return lo + 1
		}
		return lo
	}
	m := max(OptimalBits(capacity, errorRate), 1)
	if m > MaxBits {
		return 0, 0, paramError("more than MaxBits")
	}
	k := optimalHashes(m)
	if rate(m, k) > errorRate {
		lo, hi := m, m
		for step := uint64(1); rate(hi, k) > errorRate; step *= 2 {
			lo = hi
			hi += step
			if hi > MaxBits {
				return 0, 0, paramError("more than MaxBits")
			}
		}
		for lo+1 < hi {
			mid := lo + (hi-lo)/2
			if rate(mid, k) > errorRate {
				lo = mid
			} else {
				hi = mid
			}
		}
		m = hi
		k = optimalHashes(m)
	}
	if k > MaxHashes {
		return 0, 0, paramError("more than MaxHashes")
	}
	return m, k, nil
}

// workMeter bounds the work of sizing in a decoder (see layout.Meter and
// ScalableBloomFilter.growthWithin), and keeps the sizes of the first
// sub-filters while it does.
type workMeter struct {
	meter layout.Meter

	// sizes keeps what ScalableBloomFilter.subSize returned for the first
	// sub-filters, which rateBound and canBuild both ask for.
	sizes [minSubFilters]subSizeResult
}

// budget returns the layout.Meter of w, which the layouts' rate functions
// charge, or nil when w is nil (nothing metered).
func (w *workMeter) budget() *layout.Meter {
	if w == nil {
		return nil
	}
	return &w.meter
}

// subSizeResult is what ScalableBloomFilter.subSize returned.
type subSizeResult struct {
	capacity uint64
	rate     float64
	m        uint64
	k        uint
	err      error
	done     bool
}

// BlockBits is the size of a block of a blocked filter (see Blocked), in
// bits: one 64-byte cache line.
const BlockBits = 512

// BlockedFalsePositiveRate returns the probability that a blocked filter (see
// Blocked) of bits bits (a whole number of blocks: bits/BlockBits blocks, the
// rest ignored) and hashes hash functions, holding n distinct keys, reports an
// absent key as present, when each key's block is uniform and its k
// positions within the block a uniform set of k distinct bits (which the
// positions of AppendBlockedLocations follow):
//
//	p = sum_j P(J = j) E[C(X_j, k)/C(512, k)]
//
// with J, the keys in the tested key's block, binomial(n, 1/blocks), and X_j
// the bits that j keys set in a block (Putze, Sanders and Singler 2009 with a
// Poisson J; the binomial is exact, also for one block).
// It is accurate to about 1e-12 and costs O(n/blocks + sqrt(n/blocks)) steps
// once the in-block rates of hashes are known (O(512 k) each, computed once
// per process). It is safe for concurrent use, and takes no lock once the
// rates it needs are known: calls wait for each other only while one of them
// computes rates of the same hash count that the other needs. It returns 1 when bits < BlockBits or hashes is 0 or above
// MaxHashes.
func BlockedFalsePositiveRate(bits uint64, hashes uint, n uint64) float64 {
	return blocked.Rate(bits, hashes, n, nil)
}

// bestBlockedHashes returns the k in [1, MaxHashes] with the lowest rate
// BlockedFalsePositiveRate(m, k, n), and that rate, walking downhill from
// start, like bestHashes.
func bestBlockedHashes(m, n uint64, start uint, w *workMeter) (uint, float64) {
	if w == nil {
		return descendHashes(BlockedFalsePositiveRate, m, n, start, MaxHashes)
	}
	meter := w.budget()
	return descendHashes(func(m uint64, k uint, n uint64) float64 { return blocked.Rate(m, k, n, meter) }, m, n, start, MaxHashes)
}

// BlockedSize returns the (bits, hashes) that New uses with Blocked for
// capacity keys at errorRate: the smallest whole number of blocks for which
// the k in [1, MaxHashes] with the lowest BlockedFalsePositiveRate gives a
// rate <= errorRate, and that k. At high bits per key that k is well below
// the classic (m/n) ln 2: 9 rather than 11 at 16 bits per key, since more
// positions in one block overlap. It takes O(log m) rate evaluations. It
// returns an error wrapping ErrInvalidParameter when capacity is 0,
// errorRate is not in (0, 1), or the filter would need more than MaxBits
// bits.
func BlockedSize(capacity uint64, errorRate float64) (uint64, uint, error) {
	return blockedSize(capacity, errorRate, nil)
}

// blockedSize is BlockedSize, its work metered by w if not nil.
func blockedSize(capacity uint64, errorRate float64, w *workMeter) (uint64, uint, error) {
	if capacity == 0 {
		return 0, 0, paramError("capacity must be at least 1, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	const maxBlocks = MaxBits / BlockBits
	hint := uint(0)
	meets := func(blocks uint64) bool {
		m := blocks * BlockBits
		if hint == 0 {
			hint = uint(min(float64(m)/float64(capacity)*math.Ln2, float64(MaxHashes)))
		}
		var rate float64
		hint, rate = bestBlockedHashes(m, capacity, hint, w)
		return rate <= errorRate
	}
	tooLarge := func() error {
		meets(maxBlocks)
		return paramError("capacity %d at errorRate %v needs more than MaxBits (%d) bits with Blocked; the lowest rate for %d keys is %.3g",
			capacity, errorRate, MaxBits, capacity, blocked.Rate(MaxBits, hint, capacity, w.budget()))
	}
	// Start from the classic size, which blocking needs more than for
	// many keys and less than for a few (the block is the minimum).
	start := min(max((OptimalBits(capacity, errorRate)+BlockBits-1)/BlockBits, 1), maxBlocks)
	var lo, hi uint64 // rate(lo) > errorRate >= rate(hi), lo = 0 standing for "none"
	if meets(start) {
		hi = start
		for step := uint64(1); ; step *= 2 {
			if hi == 1 {
				return BlockBits, hint, nil
			}
			next := hi - min(step, hi-1)
			if !meets(next) {
				lo = next
				break
			}
			hi = next
		}
	} else {
		hi = start
		for step := uint64(1); ; step *= 2 {
			if hi == maxBlocks {
				return 0, 0, tooLarge()
			}
			lo, hi = hi, min(hi+step, maxBlocks)
			if meets(hi) {
				break
			}
		}
	}
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if meets(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	k, _ := bestBlockedHashes(hi*BlockBits, capacity, hint, w)
	return hi * BlockBits, k, nil
}

// EstimateBlockedCount returns the number of distinct keys that most likely
// set setBits of the bits bits of a blocked filter with hashes hash
// functions: the n whose expected number of set bits is setBits,
//
//	n* = ln(1 - X/m) / ln(1 - k/(512 blocks))
//
// (a key sets k distinct bits of one block: a given bit stays clear with
// probability 1 - k/(512 blocks)). It returns +Inf when every bit is set and
// 0 when bits < BlockBits or hashes is 0 or above BlockBits.
func EstimateBlockedCount(bits uint64, hashes uint, setBits uint64) float64 {
	if bits < BlockBits || hashes == 0 || hashes > BlockBits {
		return 0
	}
	if setBits >= bits {
		return math.Inf(1)
	}
	blocks := float64(bits / BlockBits)
	return math.Log1p(-float64(setBits)/float64(bits)) / math.Log1p(-float64(hashes)/(BlockBits*blocks))
}

// The layouts.
const (
	// LayoutClassic spreads a key's k bits over the whole filter
	// (AppendLocations): the fewest bits for a rate. The Classic option
	// asks for it; New chooses it where DefaultLayout says.
	LayoutClassic Layout = 1

	// LayoutBlocked keeps a key's k bits in one 512-bit block
	// (AppendBlockedLocations): one cache miss per key. The Blocked option
	// asks for it; New chooses it where DefaultLayout says.
	LayoutBlocked Layout = 2
)

// estimatedCount returns EstimateCount rounded to a count, math.MaxUint64
// when every bit is set.
func estimatedCount(m uint64, k uint, set uint64) uint64 {
	e := EstimateCount(m, k, set)
	if e >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(e))
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

// The sizes of the sub-filters of a ScalableBloomFilter (Almeida et al.,
// see ScalableBloomFilter), the checks that its parameters can grow and keep
// its error rate, and the checks of a decoded filter's sub-filters against
// them.

// maxSubFilters is the most sub-filters a ScalableBloomFilter's encoding
// holds, and so the most it grows to.
const maxSubFilters = format.MaxSubFilters

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

// headerWork is the most work (in layout.Meter units: about 3.6 ms here) that
// a decoder spends checking the growth parameters of a header
// (growthWithin). Sound parameters take far less: Exponential(1.5),
// Tightening(0.9) at P from 0.1 to 1e-9 take 4,000-40,000 units classic and
// 9,000-14,000 blocked.
const headerWork = 120_000

// growthWithin is growthWorks for a decoder, which must not let a short
// hostile header cost it much: it stops after budget units of work (see
// layout.Meter), and then reports true. So it refuses only parameters that
// growthWorks refuses, and every filter NewScalable can make decodes; what
// it lets through when it stops short (a header costly to check, such as
// thousands of keys per block) can break the rate bound but has no false
// negatives. The count of work depends on the header alone, so a given
// encoding decodes, or not, everywhere. A blocked header at a high rate cost
// up to 0.12 s before (issue 21, item 6).
func (s *ScalableBloomFilter) growthWithin(budget int64) (works bool) {
	s.work = &workMeter{meter: layout.NewMeter(budget)}
	defer func() {
		s.work = nil
		if r := recover(); r != nil {
			if _, ok := r.(layout.OverBudget); !ok {
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
// the rate of sub-filter i at capacity (classic.FullRate, blocked.FullRate),
// which exceeds its target P(1-r)r^i. The excess is large where the target is: P = 0.5 with r = 0.1
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
// least a lower bound that blocked.FullRate reports as it goes, so 1 - miss
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
			e, above = blocked.FullRate(capacity, m, k, func(lo float64) bool { return 1-miss*(1-lo) > limit }, s.work.budget())
			if above {
				return 1 - miss*(1-e), true
			}
		} else {
			e = classic.FullRate(capacity, m, k)
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

// checkSubFilter verifies that f is exactly the i-th sub-filter s would build,
// or would have built before sizing used the exact rate (legacySize).
func (s *ScalableBloomFilter) checkSubFilter(i int, f *BloomFilter) error {
	capacity, rate, m, k, err := s.subSize(i)
	if (err != nil || f.m != m || f.k != k) && f.capacity == capacity && f.errorRate == rate && !s.blocked {
		m, k, err = legacySize(capacity, rate)
	}
	if err != nil || f.capacity != capacity || f.errorRate != rate || f.m != m || f.k != k || f.seed != s.seed || f.blocked != s.blocked {
		return format.Corrupt("sub-filter %d does not match the filter's parameters", i)
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
