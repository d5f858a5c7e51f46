package classic

import (
	"math"

	"github.com/bloomfilters/bloom/internal/layout"
)

// This file holds the false-positive rate of the classic layout, for a filter
// of m bits, k hash functions and n keys, which bloom.FalsePositiveRate
// returns and bloom.Size sizes by. Sources:
//
//   - A. Broder and M. Mitzenmacher, "Network Applications of Bloom Filters: A
//     Survey", Internet Mathematics 1(4), 2004, section 2.1: the classic
//     closed form of the false-positive rate.
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

// Rate is bloom.FalsePositiveRate, its work metered by meter if not nil: the
// closed form where it is within closedFormTolerance of the exact rate, the
// exact rate elsewhere (for hashes up to maxExactHashes). It returns 1 when
// bits or hashes is 0.
func Rate(bits uint64, hashes uint, n uint64, meter *layout.Meter) float64 {
	if bits == 0 || hashes == 0 {
		return 1
	}
	closed := ClosedFormRate(bits, hashes, n)
	// Where the closed form's error is estimated below closedFormTolerance,
	// it is used; ExactRate costs O(k^2 (1 + kn/m)) and allocates nothing.
	if hashes <= maxExactHashes && n > 0 && float64(n)*float64(hashes) < 1<<53 &&
		closedFormGap(bits, hashes, n) > closedFormTolerance {
		return ExactRate(bits, hashes, n, meter)
	}
	return closed
}

// ClosedFormRate is the classic closed form (1 - e^(-kn/m))^k
// (Broder & Mitzenmacher, section 2.1); bits and hashes are not 0.
func ClosedFormRate(bits uint64, hashes uint, n uint64) float64 {
	k := float64(hashes)
	// -expm1(x) = 1 - e^x, computed without cancellation for small kn/m.
	return math.Pow(-math.Expm1(-k*float64(n)/float64(bits)), k)
}

// closedFormTolerance is the relative error of the closed form below which
// Rate uses it.
const closedFormTolerance = 1e-4

// maxExactHashes is the largest hash count for which Rate computes the
// exact rate: 4 bloom.MaxHashes, enough for bloom.OptimalHashes to compare
// rates around any hash count a filter can use. Larger counts get the
// closed form.
const maxExactHashes = 4 * layout.MaxHashes

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

// ExactRate returns E[(X/m)^k], the probability that k independent uniform
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
func ExactRate(m uint64, k uint, n uint64, meter *layout.Meter) float64 {
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
	meter.Spend(int64(k) * int64(top) / 16)
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
	for skip := ClosedFormRate(m, k, n) * 0x1p-60 / float64(k); first < top && pj[first] < skip; first++ {
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
		meter.Spend(1 + int64(top)/8)
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

// FullRate returns the expected false-positive rate of a sub-filter of a
// bloom.ScalableBloomFilter, of m bits and k hash functions, when its count
// reaches capacity.
//
// A sub-filter counts only keys that set a clear bit: a key whose k bits are
// already set tests present and is not added. So it fills past the point
// that capacity random keys would reach. With x the fraction of bits set
// after t random keys, x = 1 - e^(-kt/m), of which a fraction x^k were not
// counted, the count is
//
//	c(t) = integral from 0 to t of (1 - x^k) dt' = (m/k) sum_{j=1..k} x^j/j
//
// (substitute x for t'). FullRate solves c = capacity for x and returns x^k;
// with k = 1 that is capacity/m exactly. It is 1 if c never reaches
// capacity: c tends to (m/k) H_k as the filter fills.
func FullRate(capacity, m uint64, k uint) float64 {
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
