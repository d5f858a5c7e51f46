package bloom

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/format"
)

// This file holds only the sizing math: for a Bloom filter of m bits, k hash
// functions and n keys in either layout, and, at its end, for the sub-filters
// of a ScalableBloomFilter. Sources:
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
//   - S. J. Swamidass and P. Baldi, "Mathematical correction for fingerprint
//     similarity measures to improve chemical retrieval", J. Chem. Inf.
//     Model. 47(3), 2007: the count estimate.

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
	return descendHashes(func(m uint64, k uint, n uint64) float64 { return falsePositiveRate(m, k, n, w) }, m, n, start, limit)
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
	return falsePositiveRate(bits, hashes, n, nil)
}

// falsePositiveRate is FalsePositiveRate, its work metered by w if not nil.
func falsePositiveRate(bits uint64, hashes uint, n uint64, w *workMeter) float64 {
	if bits == 0 || hashes == 0 {
		return 1
	}
	closed := closedFormRate(bits, hashes, n)
	// Where the closed form's error is estimated below closedFormTolerance,
	// it is used; exactRate costs O(k^2 (1 + kn/m)) and allocates nothing.
	if hashes <= maxExactHashes && n > 0 && float64(n)*float64(hashes) < 1<<53 &&
		closedFormGap(bits, hashes, n) > closedFormTolerance {
		return exactRate(bits, hashes, n, w)
	}
	return closed
}

// closedFormRate is the classic closed form (1 - e^(-kn/m))^k
// (Broder & Mitzenmacher, section 2.1); bits and hashes are not 0.
func closedFormRate(bits uint64, hashes uint, n uint64) float64 {
	k := float64(hashes)
	// -expm1(x) = 1 - e^x, computed without cancellation for small kn/m.
	return math.Pow(-math.Expm1(-k*float64(n)/float64(bits)), k)
}

// closedFormTolerance is the relative error of the closed form below which
// FalsePositiveRate uses it.
const closedFormTolerance = 1e-4

// maxExactHashes is the largest hash count for which FalsePositiveRate
// computes the exact rate: 4 MaxHashes, enough for OptimalHashes to compare
// rates around any hash count a filter can use. Larger counts get the
// closed form.
const maxExactHashes = 4 * MaxHashes

// closedFormGap estimates the relative error exact/closed - 1 of the closed
// form, to second order in the fluctuations of X. With λ = kn/m, q = 1 - e^-λ
// and the variance of the fill m Var(X/m) ≈ e^-λ (1 - (1+λ) e^-λ), it adds
//
//   - the spread of X, through the convexity of x^k:
//     k(k-1)/2 Var(X/m) / q^2;
//   - the tested key's own positions coinciding, with probability about
//     k(k-1)/(2m), leaving k-1 positions to be set: k(k-1)/(2m) (1-q)/q;
//   - the mean fill 1 - (1 - 1/m)^(kn) exceeding q by about λ e^-λ/(2m):
//     k λ e^-λ / (2mq).
//
// Against the exact rate over k in [1, 256], m in [1, 10^8] and λ in
// [0.01, 8] it is within 1.5% of the true error where that error is below
// 1e-2 (TestClosedFormGap).
func closedFormGap(bits uint64, hashes uint, n uint64) float64 {
	k, m := float64(hashes), float64(bits)
	lambda := k * float64(n) / m
	e := math.Exp(-lambda)
	q := -math.Expm1(-lambda)
	return k*(k-1)/(2*m)*(e*(1-(1+lambda)*e)/(q*q)+e/q) + k*lambda*e/(2*m*q)
}

// exactRate returns E[(X/m)^k], the probability that k independent uniform
// positions all fall on the X bits set by the t = kn independent uniform
// positions of n keys (Bose et al. 2008). It sums, over the number j of
// distinct positions of the tested key and the number L of the t positions
// that fall on those j bits, terms that are all positive:
//
//	p = sum_j P(J = j) sum_L C(t, L) (j/m)^L (1 - j/m)^(t-L) c(L, j)
//
//	P(J = j) = S(k, j) m!/(m-j)! / m^k   k positions on exactly j distinct bits
//	c(L, j)  = j! S(L, j) / j^L          L positions on j bits cover them all
//
// P(J = j) comes from the recurrence over the k positions
// P_i(j) = P_{i-1}(j) j/m + P_{i-1}(j-1) (m-j+1)/m, and c from the Stirling
// recurrence S(L, j) = j S(L-1, j) + S(L-1, j-1), which becomes
// c(L, j) = c(L-1, j) + ((j-1)/j)^(L-1) c(L-1, j-1). The binomial weights are
// carried from L to L+1 by the factor (t-L)/(L+1) j/(m-j), in logarithms
// while they are below e^-700. The sum over L stops once every j's terms are
// past their peak and the rest is below 2^-60 of the sum: each term is the
// product of a binomial weight and the distribution function of a
// coupon-collector time, both log-concave in L, so once a term is r < 1
// times the one before, what follows is at most r/(1-r) times it.
//
// Unlike the alternating inclusion-exclusion forms, nothing cancels: it is
// accurate to about 1e-14 (TestExactRateMatchesRecurrence checks it against
// the plain recurrence over the number of set bits). The cost is O(k^2) for
// P(J) and O(k) per L, with L up to about kλ plus a tail of a few times
// sqrt(kλ) + 40.
//
// m >= 1, 1 <= k <= maxExactHashes, 1 <= n and kn < 2^53. meter, if not
// nil, meters the work.
func exactRate(m uint64, k uint, n uint64, meter *workMeter) float64 {
	mf := float64(m)
	t := float64(n) * float64(k)
	top := min(uint64(k), m) // the most distinct positions a key can have
	var (
		pj        [maxExactHashes + 1]float64 // P(J = j)
		c         [maxExactHashes + 1]float64 // c(L, j)
		w         [maxExactHashes + 1]float64 // ((j-1)/j)^(L-1)
		b         [maxExactHashes + 1]float64 // the binomial weight, if lin[j]
		lb        [maxExactHashes + 1]float64 // its logarithm, until lin[j]
		rho, lrho [maxExactHashes + 1]float64 // j/(m-j) and its logarithm
		prev      [maxExactHashes + 1]float64 // the term of j at L-1
		lin       [maxExactHashes + 1]bool
	)
	meter.spend(int64(k) * int64(top) / 16)
	pj[0] = 1
	for i := uint64(1); i <= uint64(k); i++ {
		for j := min(i, top); j >= 1; j-- {
			pj[j] = pj[j]*float64(j)/mf + pj[j-1]*(mf-float64(j-1))/mf
		}
		pj[0] = 0
	}
	// all: the tested key can cover every bit (m <= k); then j = m takes
	// all t positions, and the sum runs to L = t.
	all := top == m
	// The terms of j add up to at most P(J = j), and the sum is at least the
	// closed form (Bose et al.): the j below first, whose P(J = j) are all
	// below 2^-60 of the closed form over k, change nothing.
	first := uint64(1)
	for skip := closedFormRate(m, k, n) * 0x1p-60 / float64(k); first < top && pj[first] < skip; first++ {
	}
	for j := first; j <= top; j++ {
		if j == m {
			break
		}
		lb[j] = t * math.Log1p(-float64(j)/mf) // L = 0: (1 - j/m)^t
		rho[j] = float64(j) / (mf - float64(j))
		lrho[j] = math.Log(rho[j])
		if lb[j] > -700 {
			b[j], lin[j] = math.Exp(lb[j]), true
		}
	}
	c[0] = 1
	sum := 0.0
	for L := uint64(0); ; L++ {
		meter.spend(1 + int64(top)/8)
		if L > 0 {
			for j := top; j >= 1; j-- {
				if L == 1 {
					w[j] = 1
				} else {
					w[j] *= float64(j-1) / float64(j)
				}
				c[j] += c[j-1] * w[j]
			}
			s := (t - float64(L-1)) / float64(L)
			ls := math.Log(s)
			for j := first; j <= top && j < m; j++ {
				switch {
				case lin[j]:
					b[j] *= s * rho[j]
				default:
					if lb[j] += ls + lrho[j]; lb[j] > -700 {
						b[j], lin[j] = math.Exp(lb[j]), true
					}
				}
			}
		}
		done := true
		for j := first; j <= top && j < m; j++ {
			if pj[j] == 0 {
				continue
			}
			term := pj[j] * b[j] * c[j]
			sum += term
			switch {
			case L < j || float64(L) < t*float64(j)/mf:
				done = false // before the peak
			case term == 0:
				// Past the peak and below the smallest float64.
			case prev[j] > 0 && term < prev[j]:
				if r := term / prev[j]; term*r/(1-r) > sum*0x1p-60 {
					done = false
				}
			default:
				done = false
			}
			prev[j] = term
		}
		if float64(L) >= t {
			if all {
				sum += pj[m] * c[m] // all t positions on the m bits
			}
			return sum
		}
		if done && !all {
			return sum
		}
	}
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

// Size returns the (bits, hashes) that New uses for capacity keys at
// errorRate: the smallest m for which k = min(OptimalHashes(m, capacity),
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
		floor := falsePositiveRate(MaxBits, hint, capacity, w)
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
	rate := func(m uint64, k uint) float64 { return closedFormRate(m, k, capacity) }
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

// The blocked layout (see Blocked) keeps the k positions of a key in one
// block of BlockBits bits, chosen uniformly among the m/BlockBits blocks; the
// k positions within the block are distinct, a uniform k-subset of its bits.
// Its false-positive rate is a mixture over the number J of keys that share
// the tested key's block:
//
//   - F. Putze, P. Sanders and J. Singler, "Cache-, Hash- and Space-Efficient
//     Bloom Filters", ACM Journal of Experimental Algorithmics 14, 2009,
//     section 3: p = sum_j P(J = j) p_in(j), with J Poisson of mean nB/m and
//     p_in(j) the rate of a classic filter of B bits holding j keys.
//
// BlockedFalsePositiveRate uses the exact form of that mixture: J is
// binomial (n keys, each in the tested block with probability B/m), of which
// the Poisson is the limit for many blocks; for one block (a filter of
// BlockBits bits) J is n. And p_in(j) is exact for k distinct positions per
// key: E[C(X, k)/C(B, k)] with X the number of bits that j keys set in B
// bits, whose distribution a recurrence over the positions gives (as for the
// classic layout, Bose et al. 2008), rather than a closed form. Distinct
// positions need fewer bits than k independent ones, which may repeat: 9.89
// instead of 9.92 bits per key at 1%, 15.48 instead of 15.55 at 0.1%.

// workMeter bounds the work of sizing in a decoder, which a hostile header
// could otherwise make cost a tenth of a second (see
// ScalableBloomFilter.growthWithin). It counts the terms of the sums that
// dominate that work, each an exp and a log or so, about 30 ns on the 2-vCPU
// machine of docs/blocked.md: one term of blockedRate, and one step over L of
// exactRate plus one per 8 of its entries.
//
// It does not count the in-block tables (inBlockRates), whose cost depends on
// what the process has computed before: counting it would make whether a
// header passes depend on the process's history, not on the header alone.
// They are computed once per process, 0.26 s for all of them here, and a
// header pays for those it is the first to need.
type workMeter struct {
	left int64

	// sizes keeps what ScalableBloomFilter.subSize returned for the first
	// sub-filters, which rateBound and canBuild both ask for.
	sizes [minSubFilters]subSizeResult
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

// overBudget is the value a workMeter panics with when it runs out.
type overBudget struct{}

// spend charges n units of work, and panics with overBudget when the budget
// is exhausted. A nil workMeter meters nothing.
func (w *workMeter) spend(n int64) {
	if w == nil {
		return
	}
	if w.left -= n; w.left < 0 {
		panic(overBudget{})
	}
}

// BlockBits is the size of a block of a blocked filter (see Blocked), in
// bits: one 64-byte cache line.
const BlockBits = 512

// inBlockRates caches, per hash count k, p_in(j) = E[C(X, k)/C(512, k)] for
// j keys in a block, j = 0, 1, ..., as far as a caller has needed them. The
// values are pure functions of (k, j); the cache only spares recomputing
// them, which costs O(512 k) per j. Readers take no lock: the values of each
// k computed so far are published as an inBlockRateSet, never changed once
// stored, which only the goroutine extending them, under that k's mutex,
// replaces. Concurrent decoders and constructors used to wait on one global
// mutex here.
var inBlockRates [MaxHashes + 1]inBlockCache

// inBlockCache is the cache of one hash count.
type inBlockCache struct {
	set   atomic.Pointer[inBlockRateSet] // nil until first needed
	mu    sync.Mutex                     // held while extending
	table *inBlockTable                  // what extends set; guarded by mu
}

// inBlockRateSet holds p_in(j) for j < len(rates), for one k.
type inBlockRateSet struct {
	rates []float64 // rates[j] = p_in(j)
	full  bool      // P(X < 512) < 2^-60 after len(rates)-1 keys: the later rates round to 1
}

// inBlockChunk is the most rates one extension adds beyond those asked for.
// A caller walking j upwards then takes k's mutex about once per chunk, not
// per j, while one that asks for a few rates of a k never needed before gets
// about those: computing 64 rates of each k a sizing tries cost up to 0.1 s.
const inBlockChunk = 64

// inBlockTable is the state from which the rates of one k are extended: the
// distribution of the set bits after the positions of the last key.
type inBlockTable struct {
	k      uint
	dist   [BlockBits + 1]float64 // P(X = x) after len(rates)-1 keys
	pow    [BlockBits + 1]float64 // C(x, k)/C(512, k)
	lo, hi int                    // dist[x] is 0 outside [lo, hi]
}

// extend appends p_in(j) to rates, which holds the rates computed so far,
// until it holds index j and at least want rates, or the rates are full.
//
// dist is 0, exactly, outside [lo, hi]: the first key sets k bits, so
// x < k is impossible after it, and later its tails fall to 0. The loops skip
// those entries, whose updates and terms are exact zeros. Probabilities that
// fall below the smallest normal float64 (2^-1022) are set to 0: arithmetic
// on subnormal numbers is some 100 times slower on x86, and made the tails
// cost most of the time, while no rate depends on them. With both, the rates
// of every k, up to the point where they are full, are the same, bit for
// bit, as those of the loops over all 513 entries without flushing
// (TestInBlockRatesExact), and all 64 tables cost 0.26 s instead of 2.3 s.
func (t *inBlockTable) extend(rates []float64, j, want uint64) ([]float64, bool) {
	for uint64(len(rates)) <= j || uint64(len(rates)) < want {
		// One more key: k distinct positions. Its i-th is uniform over the
		// 512-i bits its earlier ones left, of which x-i are set if x bits
		// are set in all.
		for i := range int(t.k) {
			d := float64(BlockBits - i)
			t.hi = min(t.hi+1, BlockBits)
			for x := t.hi; x >= max(t.lo, 1); x-- {
				p := t.dist[x]*float64(max(x-i, 0))/d + t.dist[x-1]*float64(BlockBits-x+1)/d
				if p < 0x1p-1022 {
					p = 0 // subnormal: see above
				}
				t.dist[x] = p
			}
			t.dist[0] = 0
			t.lo = max(t.lo, 1)
			for t.lo < t.hi && t.dist[t.lo] == 0 {
				t.lo++
			}
			for t.hi > t.lo && t.dist[t.hi] == 0 {
				t.hi--
			}
		}
		var r, notFull float64
		for x := t.lo; x <= t.hi; x++ {
			r += t.dist[x] * t.pow[x]
		}
		for x := t.lo; x <= min(t.hi, BlockBits-1); x++ {
			notFull += t.dist[x]
		}
		rates = append(rates, r)
		if notFull < 0x1p-60 {
			return rates, true
		}
	}
	return rates, false
}

// inBlockSet returns the rates of hash count k (1 <= k <= MaxHashes) known
// so far, at least p_in(0).
func inBlockSet(k uint) *inBlockRateSet {
	if set := inBlockRates[k].set.Load(); set != nil {
		return set
	}
	return extendInBlock(k, 0)
}

// extendInBlock returns the rates of hash count k extended to hold p_in(j),
// or to full, computing what is missing under k's mutex.
func extendInBlock(k uint, j uint64) *inBlockRateSet {
	c := &inBlockRates[k]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.table == nil {
		t := &inBlockTable{k: k}
		t.dist[0] = 1
		// The tested key's k distinct positions all fall on the x set bits
		// with probability C(x, k)/C(512, k).
		for x := range t.pow {
			t.pow[x] = 1
			for i := range int(k) {
				t.pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
			}
		}
		c.table = t
		c.set.Store(&inBlockRateSet{rates: []float64{0}})
	}
	cur := c.set.Load()
	if cur.full || uint64(len(cur.rates)) > j {
		return cur
	}
	// Readers of cur see only its first len(cur.rates) rates, which append
	// leaves alone.
	// Half as many again as there are, at most inBlockChunk more.
	rates, full := c.table.extend(cur.rates, j, uint64(len(cur.rates))+min(uint64(len(cur.rates))/2, inBlockChunk))
	next := &inBlockRateSet{rates: rates, full: full}
	c.set.Store(next)
	return next
}

// inBlockView reads the rates of one hash count, extending them as needed.
type inBlockView struct {
	k   uint
	set *inBlockRateSet
}

// at returns p_in(j): 1 past the point where the rates are full.
func (v *inBlockView) at(j uint64) float64 {
	if j >= uint64(len(v.set.rates)) && !v.set.full {
		v.set = extendInBlock(v.k, j)
	}
	if j >= uint64(len(v.set.rates)) {
		return 1
	}
	return v.set.rates[j]
}

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
	return blockedRate(bits, hashes, n, nil)
}

// blockedRate is BlockedFalsePositiveRate, its work metered by w if not nil.
func blockedRate(bits uint64, hashes uint, n uint64, w *workMeter) float64 {
	if bits < BlockBits || hashes == 0 || hashes > MaxHashes {
		return 1
	}
	if n == 0 {
		return 0
	}
	// The view extends the rates it needs as the loop below reaches
	// them. It always holds p_in(j-1) when the loop is at j, and the rates
	// of one k become full at one length, so the test of t.set.full below
	// answers as it would with every rate computed beforehand.
	t := inBlockView{k: hashes, set: inBlockSet(hashes)}
	blocks := bits / BlockBits
	if blocks == 1 {
		return t.at(n)
	}
	// The binomial weights w_j = C(n, j) q^j (1-q)^(n-j), q = 1/blocks, in
	// logarithms: w_{j+1}/w_j = (n-j)/(j+1) * 1/(blocks-1).
	b := float64(blocks)
	lw := float64(n) * math.Log1p(-1/b)
	lodds := -math.Log(b - 1)
	mean := float64(n) / b
	var sum, mass float64
	for j := uint64(0); ; j++ {
		w.spend(1)
		if j > 0 {
			lw += math.Log(float64(n-j+1)/float64(j)) + lodds
		}
		w := math.Exp(lw)
		if t.set.full && j >= uint64(len(t.set.rates)) && float64(j) < mean {
			// Every block with j keys or more is full: the rest is
			// P(J >= j).
			return sum + max(1-mass, 0)
		}
		sum += w * t.at(j)
		mass += w
		if j == n {
			return sum
		}
		if float64(j) >= mean {
			// Past the mode the weights fall, and their ratio too: what
			// follows is at most w r/(1-r), and p_in <= 1.
			r := float64(n-j) / float64(j+1) / (b - 1)
			if r < 1 && w*r/(1-r) <= sum*0x1p-60 {
				return sum
			}
			if w == 0 && sum == 0 {
				return 0
			}
		}
	}
}

// bestBlockedHashes returns the k in [1, MaxHashes] with the lowest rate
// BlockedFalsePositiveRate(m, k, n), and that rate, walking downhill from
// start, like bestHashes.
func bestBlockedHashes(m, n uint64, start uint, w *workMeter) (uint, float64) {
	if w == nil {
		return descendHashes(BlockedFalsePositiveRate, m, n, start, MaxHashes)
	}
	return descendHashes(func(m uint64, k uint, n uint64) float64 { return blockedRate(m, k, n, w) }, m, n, start, MaxHashes)
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
			capacity, errorRate, MaxBits, capacity, blockedRate(MaxBits, hint, capacity, w))
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

// blockedPremium is the most memory, relative to the classic layout, that
// New and NewScalable spend by default on the blocked layout's speed.
const blockedPremium = 1.10

// DefaultLayout returns the layout that New gives a filter for capacity keys
// at errorRate when neither Blocked nor Classic is given: LayoutBlocked where
// BlockedSize needs at most 10% more bits than Size, LayoutClassic otherwise
// (and where either sizing fails). For 10^4 keys and more that is blocked
// for error rates down to about 5e-4 (+9.4% at 5e-4, +3.1% at 1%) and classic
// below (+11% at 3e-4, +14% at 1e-4); tiny filters, which would get whole
// 512-bit blocks, are classic. NewScalable applies it to its first
// sub-filter. Its cost is that of Size and BlockedSize.
func DefaultLayout(capacity uint64, errorRate float64) Layout {
	return layoutOf(defaultBlocked(capacity, errorRate))
}

func defaultBlocked(capacity uint64, errorRate float64) bool {
	cm, _, err := Size(capacity, errorRate)
	if err != nil {
		return false
	}
	bm, _, err := BlockedSize(capacity, errorRate)
	if err != nil {
		return false
	}
	return float64(bm) <= blockedPremium*float64(cm)
}

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

// Window sizing.

// windowMaxAutoGens is the most generations NewWindow picks by itself.
const windowMaxAutoGens = 16

// windowSize returns the generations r of a window of keys keys at
// errorRate and the bits and hashes of each: r blocked generations
// (BlockedSize) of ceil(keys/(r-1)) keys each at q = 1-(1-errorRate)^(1/r),
// so that their union's rate, 1-(1-q)^r, is errorRate. That product is
// exact: a key's positions are the same in every generation, and the
// generations hold independent keys, so given the positions the r events
// "all set in generation g" are independent, each of probability q.
// Given r = 0 it picks the r in [2, 16] whose ring takes the fewest bits:
// 7 at 1%, 16.99 bits per window key. It returns an error wrapping
// ErrInvalidParameter where BlockedSize does, and for a ring of more than
// MaxBits bits.
func windowSize(keys uint64, errorRate float64, r int) (int, uint64, uint, error) {
	lo, hi := r, r
	if r == 0 {
		lo, hi = 2, windowMaxAutoGens
	}
	best, bestM, bestK := 0, uint64(0), uint(0)
	var err error
	for g := lo; g <= hi; g++ {
		genCap := keys / uint64(g-1) // rounded up: internal/window's GenCapFor
		if keys%uint64(g-1) != 0 {
			genCap++
		}
		m, k, e := BlockedSize(genCap, -math.Expm1(math.Log1p(-errorRate)/float64(g)))
		if e != nil {
			err = e
			continue
		}
		if m > MaxBits/uint64(g) {
			err = paramError("a window of %d keys at errorRate %v needs more than MaxBits (%d) bits in %d generations", keys, errorRate, MaxBits, g)
			continue
		}
		if best == 0 || uint64(g)*m < uint64(best)*bestM {
			best, bestM, bestK = g, m, k
		}
	}
	if best == 0 {
		return 0, 0, 0, err
	}
	return best, bestM, bestK, nil
}
