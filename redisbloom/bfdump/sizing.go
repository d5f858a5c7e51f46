package bfdump

import (
	"fmt"
	"math"

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
	bpe := -(math.Log(rate) / ln2Squared)
	if bpe < 0 {
		bpe = -bpe
	}
	return bpe
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
	fbits := float64(entries) * bpe
	if fbits >= float64(MaxBits) {
		return 0, 0, 0, fmt.Errorf("%w: bfdump: %d keys at rate %v need %.4g bits, more than MaxBits (%d)", bloom.ErrInvalidParameter, entries, rate, fbits, MaxBits)
	}
	b := max(uint64(fbits), 1) // at least one bit, as bloom_init guards
	bytes := b / 8
	if b%64 != 0 {
		bytes = (b/64 + 1) * 8
	}
	k = hashesOf(bpe)
	if k > MaxHashes {
		return 0, 0, 0, fmt.Errorf("%w: bfdump: rate %v needs more than MaxHashes (%d) hash functions", bloom.ErrInvalidParameter, rate, MaxHashes)
	}
	return bytes * 8, k, bpe, nil
}

// Size returns the geometry New gives a sub-filter of capacity keys at
// errorRate: the smallest bits, a multiple of 8, for which the
// hashes = ceil(ln2 * bits/capacity) that RedisBloom accepts with it give
// FalsePositiveRate(bits, hashes, capacity) <= errorRate.
//
// It returns an error wrapping bloom.ErrInvalidParameter when capacity is 0,
// errorRate is not in (0, 1), or the target needs more than MaxBits bits.
func Size(capacity uint64, errorRate float64) (bits uint64, hashes uint32, err error) {
	if capacity == 0 {
		return 0, 0, fmt.Errorf("%w: bfdump: capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, fmt.Errorf("%w: bfdump: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	n := float64(capacity)
	kOf := func(m uint64) uint32 { return hashesOf(float64(m) / n) }
	// No m below the closed form's optimum meets the rate (Bose et al.:
	// the closed form at the real-valued optimal k is a lower bound).
	lo := bloom.OptimalBits(capacity, errorRate)
	if lo > MaxBits {
		return 0, 0, fmt.Errorf("%w: bfdump: %d keys at rate %v need more than MaxBits (%d) bits", bloom.ErrInvalidParameter, capacity, errorRate, MaxBits)
	}
	lo = max(lo+7, 8) &^ 7
	for lo <= MaxBits {
		k := kOf(lo)
		if k > MaxHashes {
			break
		}
		// hi: the largest multiple of 8 with the same hash count as lo.
		hi := uint64(float64(k)*n/ln2) &^ 7
		for hi > lo && kOf(hi) > k {
			hi -= 8
		}
		for kOf(hi+8) == k {
			hi += 8
		}
		hi = min(hi, MaxBits&^7)
		// For one hash count the rate falls as bits grow: bisect.
		if FalsePositiveRate(hi, uint(k), capacity) <= errorRate {
			for lo < hi {
				mid := (lo + (hi-lo)/2) &^ 7
				if FalsePositiveRate(mid, uint(k), capacity) <= errorRate {
					hi = mid
				} else {
					lo = mid + 8
				}
			}
			return lo, k, nil
		}
		lo = hi + 8
	}
	return 0, 0, fmt.Errorf("%w: bfdump: %d keys at rate %v need more than MaxBits (%d) bits", bloom.ErrInvalidParameter, capacity, errorRate, MaxBits)
}

// FalsePositiveRate returns the probability that a sub-filter of bits bits
// and hashes hash functions, holding n keys, reports an absent key present.
func FalsePositiveRate(bits uint64, hashes uint, n uint64) float64 {
	return bloom.FalsePositiveRate(bits, hashes, n)
}
