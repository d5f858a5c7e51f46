package bfdump

import (
	"fmt"
	"math"
	"math/big"

	"github.com/bloomfilters/bloom"
)

// This file holds the sizing math: RedisBloom's own (bloom_init in its
// deps/bloom/bloom.c, for the options BF.RESERVE sets), and ours.

// ln2 and ln2Squared are the constants of bloom.c (LN2, and the denominator
// of calc_bpe): ln 2 and (ln 2)^2 cut to 15 digits. Writing them as bloom.c
// does matters: a last-bit difference in the bits per entry changes the
// header RedisBloom writes, and may change the bits.
const (
	ln2        = 0.693147180559945
	ln2Squared = 0.480453013918201
)

// reserveRateCap is BF_ERROR_RATE_CAP (config.h): BF.RESERVE lowers larger
// error rates to it.
const reserveRateCap = 0.25

// calcBPE is bloom.c's calc_bpe: the bits per entry of the closed form,
// -ln(p)/(ln 2)^2.
func calcBPE(rate float64) float64 {
	bpe := -(logRounded(rate) / ln2Squared)
	if bpe < 0 {
		bpe = -bpe
	}
	return bpe
}

// logRounded returns ln x, for x > 0 and finite, correctly rounded to the
// nearest float64. The header RedisBloom writes holds -ln(p)/(ln 2)^2 as
// computed by the server's C library: glibc's log, which is within 0.52
// ulp and so rounds correctly for all but about 1 in 10,000 rates
// (TestLogRounded), where Go's math.Log, within 1 ulp, differs for about 1
// in 70, 0.01 among them. It sums the series of atanh in 160-bit
// arithmetic, some microseconds per call; it is called once per sub-filter.
func logRounded(x float64) float64 {
	const prec = 160
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [1/2, 1)
	if frac < math.Sqrt2/2 {
		frac, exp = frac*2, exp-1 // frac in [sqrt(1/2), sqrt(2))
	}
	num := func() *big.Float { return new(big.Float).SetPrec(prec) }
	// atanh(s) = s + s^3/3 + s^5/5 + ..., for |s| <= 1/3.
	atanh := func(s *big.Float) *big.Float {
		s2, sum, pow, term := num().Mul(s, s), num().Set(s), num().Set(s), num()
		for i := int64(3); ; i += 2 {
			pow.Mul(pow, s2)
			term.Quo(pow, num().SetInt64(i))
			if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-prec-8 {
				return sum
			}
			sum.Add(sum, term)
		}
	}
	// ln x = exp ln 2 + ln frac = 2 (exp atanh(1/3) + atanh((frac-1)/(frac+1))).
	one, m := num().SetInt64(1), num().SetFloat64(frac)
	r := num().Mul(atanh(num().Quo(one, num().SetInt64(3))), num().SetInt64(int64(exp)))
	r.Add(r, atanh(num().Quo(num().Sub(m, one), num().Add(m, one))))
	r.Mul(r, num().SetInt64(2))
	f, _ := r.Float64()
	return f
}

// hashesOf returns (int)ceil(LN2 * bpe), the hash count RedisBloom derives
// from (and checks against) the bits per entry, or MaxHashes+1 when that is
// above MaxHashes and 0 when it is not positive or bpe is NaN.
func hashesOf(bpe float64) uint32 {
	k := math.Ceil(ln2 * bpe)
	switch {
	case !(k > 0):
		return 0
	case k > MaxHashes:
		return MaxHashes + 1
	}
	return uint32(k)
}

// bpeFor returns the largest bits per entry for which RedisBloom computes k
// hash functions (hashesOf(bpe) == k), k in [1, MaxHashes].
func bpeFor(k uint32) float64 {
	bpe := float64(k) / ln2
	for hashesOf(bpe) > k {
		bpe = math.Nextafter(bpe, 0)
	}
	for hashesOf(math.Nextafter(bpe, math.Inf(1))) == k {
		bpe = math.Nextafter(bpe, math.Inf(1))
	}
	return bpe
}

// ReserveSize returns the geometry RedisBloom gives a sub-filter of capacity
// keys at errorRate (its own rate: BF.RESERVE halves the rate asked for the
// first sub-filter of a scaling filter). It is bloom_init with the options
// BF.RESERVE sets:
//
//	bpe    = -ln(errorRate) / (ln 2)^2
//	bits   = floor(capacity * bpe), rounded up to a multiple of 64
//	hashes = ceil(ln2 * bpe)
//
// These are the closed form's optimum, which the exact rate of a filter of a
// few hundred keys or fewer exceeds, and the positions (a + i*b) mod m
// exceed it further where m is small (see FalsePositiveRate): at 100 keys
// and 1e-5 the filter's rate is about 13 times the target; at 10 keys and
// 1e-4, about 80 times. New sizes for the target instead.
//
// It returns an error wrapping bloom.ErrInvalidParameter when capacity is 0,
// errorRate is not in (0, 1), or the sub-filter would have more than
// MaxBits bits or MaxHashes hash functions.
func ReserveSize(capacity uint64, errorRate float64) (bits uint64, hashes uint, err error) {
	m, k, _, err := reserveGeometry(capacity, errorRate)
	return m, uint(k), err
}

// reserveGeometry is ReserveSize with the bits per entry RedisBloom records.
func reserveGeometry(entries uint64, rate float64) (m uint64, k uint32, bpe float64, err error) {
	if entries < 1 || !(rate > 0 && rate < 1) {
		return 0, 0, 0, fmt.Errorf("%w: bfdump: capacity must be at least 1 and the error rate in (0, 1), got %d and %v", bloom.ErrInvalidParameter, entries, rate)
	}
	bpe = calcBPE(rate)
	m, ok := bloomInitBits(entries, bpe)
	if !ok {
		return 0, 0, 0, fmt.Errorf("%w: bfdump: %d keys at rate %v need %.4g bits, more than MaxBits (%d)", bloom.ErrInvalidParameter, entries, rate, float64(entries)*bpe, MaxBits)
	}
	k = hashesOf(bpe)
	if k > MaxHashes {
		return 0, 0, 0, fmt.Errorf("%w: bfdump: rate %v needs more than MaxHashes (%d) hash functions", bloom.ErrInvalidParameter, rate, MaxHashes)
	}
	return m, k, bpe, nil
}

// bloomInitBits returns the bits bloom_init gives entries keys at bpe bits
// per entry: floor(entries * bpe), at least 1, rounded up to a multiple of
// 64; and false if they reach MaxBits.
func bloomInitBits(entries uint64, bpe float64) (uint64, bool) {
	fbits := float64(entries) * bpe
	if !(fbits < float64(MaxBits)) {
		return 0, false
	}
	b := max(uint64(fbits), 1) // at least one bit, as bloom_init guards
	return (b + 63) / 64 * 64, true
}

// Size returns the geometry New gives a sub-filter of capacity keys at
// errorRate: the smallest bits, of the form 8 * odd, for which some hash
// count gives FalsePositiveRate(bits, hashes, capacity) <= errorRate, and
// the hash count that gives the lowest rate there. Bits of the form 8 * odd
// (a whole number of bytes, as RedisBloom requires, and no factor 16) leave
// the fewest keys with few distinct positions (see FalsePositiveRate).
// Where the bits are many times the capacity, the best hash count is below
// RedisBloom's ceil(ln2 * bits/capacity); the filter then records bits per
// entry that give it, which RedisBloom accepts the same.
//
// For large filters the result is within a few bits of the classic sizing
// (14.4 bits per key at 10,000 keys and 1e-3). For few keys at a low rate,
// where RedisBloom's positions have a floor of about 1/bits that no hash
// count lowers, it needs more bits than the classic sizing: 124 bits per key
// at 10 keys and 1e-4 (RedisBloom's own 19.2 give 43 times the rate), 129 at
// 100 keys and 1e-5. With few bits set the floor falls as about
// 1.5 kn/m^2, so a target p needs at least about sqrt(1.5 kn/p) bits: more
// than MaxBits for 10^8 keys at 1e-15 (where the classic sizing needs
// 7.2e9), which Size refuses.
//
// It takes O(k log m) evaluations of FalsePositiveRate and allocates
// nothing. It returns an error wrapping bloom.ErrInvalidParameter when
// capacity is 0, errorRate is not in (0, 1), or the target needs more than
// MaxBits bits.
func Size(capacity uint64, errorRate float64) (bits uint64, hashes uint32, err error) {
	if capacity == 0 {
		return 0, 0, fmt.Errorf("%w: bfdump: capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, fmt.Errorf("%w: bfdump: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	// Beyond a few more than log2(1/p) hash functions the classic part of
	// the rate no longer falls, and the floor rises.
	kmax := uint32(min(MaxHashes, math.Ceil(-math.Log2(errorRate))+8))
	var bestRate float64
	for k := uint32(1); k <= kmax; k++ {
		lo := classicLowerBound(capacity, k, errorRate)
		if lo > MaxBits || (bits != 0 && lo > bits) {
			continue
		}
		m, ok := smallestBits(capacity, k, errorRate, lo)
		if !ok {
			continue
		}
		r := FalsePositiveRate(m, uint(k), capacity)
		if bits == 0 || m < bits || (m == bits && r < bestRate) {
			bits, hashes, bestRate = m, k, r
		}
	}
	if bits == 0 {
		return 0, 0, fmt.Errorf("%w: bfdump: %d keys at rate %v need more than MaxBits (%d) bits", bloom.ErrInvalidParameter, capacity, errorRate, MaxBits)
	}
	return bits, hashes, nil
}

// classicLowerBound returns the bits below which k hash functions cannot
// give n keys a rate of p even by the closed form (1 - e^(-kn/m))^k, a lower
// bound of the exact classic rate (Bose et al. 2008): m >= -kn/ln(1-p^(1/k)).
// It returns math.MaxUint64 past what a uint64 holds.
func classicLowerBound(n uint64, k uint32, p float64) uint64 {
	m := -float64(k) * float64(n) / math.Log1p(-math.Pow(p, 1/float64(k)))
	if !(m < 1<<63) {
		return math.MaxUint64
	}
	return uint64(m)
}

// smallestBits returns the smallest bits of the form 8*odd, at least about
// lo and at most MaxBits, for which k hash functions give n keys a rate of
// at most p, and whether there is one. For one k the rate falls as bits of
// that form grow, so it searches by doubling, then bisection.
func smallestBits(n uint64, k uint32, p float64, lo uint64) (uint64, bool) {
	bitsOf := func(j uint64) uint64 { return 16*j + 8 }
	meets := func(j uint64) bool { return FalsePositiveRate(bitsOf(j), uint(k), n) <= p }
	last := (MaxBits - 8) / 16
	j := min(lo/16, last)
	if meets(j) {
		return bitsOf(j), true
	}
	a, b := j, j // invariant: !meets(a)
	for step := uint64(1); ; step *= 2 {
		if b == last {
			return 0, false
		}
		a, b = b, min(j+step, last)
		if meets(b) {
			break
		}
	}
	for a+1 < b {
		mid := a + (b-a)/2
		if meets(mid) {
			b = mid
		} else {
			a = mid
		}
	}
	return bitsOf(b), true
}

// FalsePositiveRate returns an estimate, meant to be at or above the true
// value, of the probability that a sub-filter of bits bits (m) and hashes
// hash functions (k), holding n keys, reports an absent key present with
// RedisBloom's positions x_i = ((a + i*b) mod 2^64) mod m.
//
// Those are not the k independent positions of the classic analysis. When
// m has the factor 2^t and b mod 2^t has order d < k (probability phi(d)/m
// for each d = 1, 2, 4, ... dividing m), a key's positions repeat with
// period d: a key with b mod m = 0 has a single position. (Odd factors of m
// do not repeat the same way: where the 64-bit sum a + i*b wraps around,
// about b/2^64 times per step, the position shifts by 2^64 mod m, which is
// 0 only for m a power of two, and the progression breaks.) And a key whose
// (a, b) mod m equal those of an added key, or are shifted or reversed
// along its progression, shares most of its positions with it. So
//
//	rate = (1 - P) * classic(m, k, n)
//	     + 3/2 * ( sum over d = 2^i dividing m, d < k, of phi(d)/m * f^d
//	             + 6n/m^2 )
//
// with classic the exact rate of k independent uniform positions
// (bloom.FalsePositiveRate), P the sum of those phi(d)/m,
// phi(2^i) = max(2^(i-1), 1) and f = 1 - (1 - 1/m)^(kn) the expected fill.
// The bracket is a floor of about 1/m that no hash count lowers. Against
// rates measured with MurmurHash64A positions (TestRateModel), the bracket
// alone was 0.9 to 1.2 times the measured rate for m a power of two where
// the floor dominates (m = 64, 256, 1024), hence the factor 3/2, and the
// estimate 1.1 to 2.2 times it for m a power of two and 1.5 to 16 times
// for other m, the most where the floor dominates (the wrap-around removes
// most short periods): there New spends more bits than the filter needs.
//
// RedisBloom's own sizing (ReserveSize) misses its target by the floor: at
// 10 keys and 1e-4, 192 bits (64 * 3) and 14 hash functions measured 4.2e-3
// where the classic rate is 1.2e-4.
func FalsePositiveRate(bits uint64, hashes uint, n uint64) float64 {
	if bits == 0 || hashes == 0 {
		return 1
	}
	m, k := float64(bits), uint64(hashes)
	fill := -math.Expm1(float64(hashes) * float64(n) * math.Log1p(-1/m))
	var p, floor float64
	for d := uint64(1); d < k && bits%d == 0; d *= 2 {
		w := float64(max(d/2, 1)) / m // phi(2^i) = 2^(i-1)
		p += w
		floor += w * math.Pow(fill, float64(d))
	}
	shared := 6 * float64(n) / (m * m)
	return min(1, (1-p)*bloom.FalsePositiveRate(bits, hashes, n)+1.5*(floor+shared))
}
