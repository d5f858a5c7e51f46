package bloom

import "math"

// This file holds only the pure sizing math. The formulas are the classic
// ones for a Bloom filter of m bits, k hash functions and n keys, as derived
// in A. Broder and M. Mitzenmacher, "Network Applications of Bloom Filters:
// A Survey", Internet Mathematics 1(4), 2004, section 2.1, and in
// S. J. Swamidass and P. Baldi, "Mathematical correction for fingerprint
// similarity measures to improve chemical retrieval", J. Chem. Inf. Model.
// 47(3), 2007 (the count estimate).

// ln2Squared is (ln 2)^2.
const ln2Squared = math.Ln2 * math.Ln2

// OptimalBits returns the number of bits m that a Bloom filter needs to hold
// capacity keys at a false-positive rate of errorRate when it uses the
// optimal number of hash functions:
//
//	m = ceil(-n ln p / (ln 2)^2)        (Broder & Mitzenmacher, eq. 2.1 at k = (m/n) ln 2)
//
// It returns 0 when capacity is 0 or errorRate is not in (0, 1), and
// math.MaxUint64 when the result does not fit in a uint64. New adds a few
// bits on top of this when the integer hash count would otherwise overshoot
// errorRate.
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

// OptimalHashes returns the number of hash functions k that minimises the
// false-positive rate of a filter of bits bits holding capacity keys. The
// real-valued optimum is (m/n) ln 2; OptimalHashes returns whichever of its
// two integer neighbours gives the lower FalsePositiveRate, and at least 1.
// It returns 1 when bits or capacity is 0.
func OptimalHashes(bits, capacity uint64) uint {
	if bits == 0 || capacity == 0 {
		return 1
	}
	opt := float64(bits) / float64(capacity) * math.Ln2
	if opt > 1<<20 {
		// Far beyond any usable hash count; avoid a float-to-uint overflow.
		opt = 1 << 20
	}
	lo := uint(math.Floor(opt))
	if lo < 1 {
		return 1
	}
	hi := lo + 1
	if FalsePositiveRate(bits, hi, capacity) < FalsePositiveRate(bits, lo, capacity) {
		return hi
	}
	return lo
}

// FalsePositiveRate returns the expected probability that a filter of bits
// bits and hashes hash functions, holding n distinct keys, reports an absent
// key as present:
//
//	p = (1 - e^(-kn/m))^k        (Broder & Mitzenmacher, section 2.1)
//
// It returns 1 when bits or hashes is 0.
func FalsePositiveRate(bits uint64, hashes uint, n uint64) float64 {
	if bits == 0 || hashes == 0 {
		return 1
	}
	k := float64(hashes)
	// -expm1(x) = 1 - e^x, computed without cancellation for small kn/m.
	return math.Pow(-math.Expm1(-k*float64(n)/float64(bits)), k)
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
// errorRate: the smallest m, at or above OptimalBits, for which the integer
// k = OptimalHashes(m, capacity) gives
// FalsePositiveRate(m, k, capacity) <= errorRate. It takes O(log m) evaluations
// of FalsePositiveRate and allocates nothing. It returns an error wrapping
// ErrInvalidParameter when capacity is 0, errorRate is not in (0, 1), or the
// filter would need more than MaxBits bits or MaxHashes hash functions.
func Size(capacity uint64, errorRate float64) (uint64, uint, error) {
	if capacity == 0 {
		return 0, 0, paramError("capacity must be at least 1, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	m := max(OptimalBits(capacity, errorRate), 1)
	if m > MaxBits {
		return 0, 0, paramError("capacity %d at errorRate %v needs %d bits, more than MaxBits (%d)", capacity, errorRate, m, MaxBits)
	}
	k := OptimalHashes(m, capacity)
	if FalsePositiveRate(m, k, capacity) > errorRate {
		// The textbook m assumes a real-valued k; with the integer k the rate
		// overshoots by a hair. For fixed k the rate falls as m grows, so find
		// the smallest m that meets the target: double the step, then bisect.
		lo, hi := m, m
		for step := uint64(1); FalsePositiveRate(hi, k, capacity) > errorRate; step *= 2 {
			lo = hi
			hi += step
			if hi > MaxBits {
				return 0, 0, paramError("capacity %d at errorRate %v needs more than MaxBits (%d) bits", capacity, errorRate, MaxBits)
			}
		}
		for lo+1 < hi { // invariant: rate(lo) > errorRate >= rate(hi)
			mid := lo + (hi-lo)/2
			if FalsePositiveRate(mid, k, capacity) > errorRate {
				lo = mid
			} else {
				hi = mid
			}
		}
		m = hi
		// OptimalHashes picks the k with the lowest rate for this m, so the
		// target still holds if it picks a different one.
		k = OptimalHashes(m, capacity)
	}
	if k > MaxHashes {
		return 0, 0, paramError("errorRate %v needs %d hash functions, more than MaxHashes (%d); use an errorRate of at least 1e-19", errorRate, k, MaxHashes)
	}
	return m, k, nil
}
