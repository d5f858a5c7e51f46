package bloom

import (
	"fmt"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/murmur"
)

// AppendLocations appends to dst the hashes bit positions, each in [0, bits),
// that a filter of bits bits, hashes hash functions and seed seed sets for key
// and returns the extended slice. They are exactly the positions Add sets and
// Test reads, in the same order, and they are part of the format promise:
// they never change within a format version. Positions may repeat.
//
// With (h1, h2) the 128-bit murmur3 hash of key with seed, and all
// arithmetic mod 2^64, position i is ((z_i * 0x94D049BB133111EB) * bits) >> 64
// with z_i = x_i ^ (x_i >> 32), x_0 = h1, x_{i+1} = x_i + y_i, y_0 = h2 and
// y_{i+1} = y_i + (i+1)*0x9E3779B97F4A7C15.
func AppendLocations(dst []uint64, key []byte, bits uint64, hashes uint, seed uint32) []uint64 {
	h1, h2 := murmur.Sum128(key, seed)
	return classic.AppendPositions(dst, h1, h2, bits, hashes)
}

// Blocked makes New, NewWithSize and NewScalable build filters of the blocked
// layout: all k bits of a key lie in one block of BlockBits (512) bits, one
// 64-byte cache line, so that Add and Test cost one cache miss per key
// instead of up to k. The price is memory: keys spread unevenly over the
// blocks, so a blocked filter needs more bits for the same error rate (9.89
// bits per key instead of 9.59 at 1%, 15.48 instead of 14.38 at 0.1%, 21.92
// instead of 19.17 at 0.01%), and it always has at least one block. New
// sizes it by BlockedSize, from the blocked false-positive rate
// (BlockedFalsePositiveRate), so that the error rate at capacity is still at
// most the one asked for. Choose it for filters larger than the CPU caches
// and error rates down to about 1e-4. New and NewScalable choose it by
// default where it costs at most 10% more memory (see DefaultLayout);
// NewWithSize only with this option.
//
// A key's block is the high half of its murmur3 hash h1 mapped onto the
// blocks with a multiply-shift; its k distinct positions within the block
// come from the low half h2 (see AppendBlockedLocations). The words of a
// blocked filter are aligned to 64 bytes in memory, so that each block is
// one cache line.
//
// Blocked filters are combined and compared only with blocked filters; the
// encoding records the layout (see the package doc: version 3, and version 2
// as written before it).
func Blocked() Option { return layoutOption(true) }

// Classic selects the classic layout: the k bits of a key anywhere in the
// filter (see AppendLocations), sized by FalsePositiveRate. New and
// NewScalable choose the blocked layout by default where it costs at most
// 10% more memory than the classic one for the requested size (error rates
// down to about 5e-4 for large filters; see DefaultLayout); Classic keeps
// the classic layout whatever the size, for the least memory at low error
// rates or to combine with classic filters. NewWithSize is classic without
// it. Given to a decoder or FromWords, it requires a classic encoding.
func Classic() Option { return layoutOption(false) }

// layoutOption is Blocked (isBlocked) or Classic: each may be given once,
// and not both.
func layoutOption(isBlocked bool) Option {
	name, other := "Classic", "Blocked"
	if isBlocked {
		name, other = other, name
	}
	return Option{func(s *settings) error {
		switch {
		case s.blocked == isBlocked && (s.blocked || s.classic):
			return paramError("%s may be given only once", name)
		case s.blocked || s.classic:
			return paramError("%s contradicts %s: give one of them", name, other)
		}
		s.blocked, s.classic = isBlocked, !isBlocked
		return nil
	}}
}

// AppendBlockedLocations appends to dst the hashes bit positions, each in
// [0, bits), that a blocked filter (see Blocked) of bits bits, hashes hash
// functions and seed seed sets for key, and returns the extended slice. They
// are exactly the positions Add sets and Test reads, and they are part of the
// format promise (version 2): they never change within a format version.
// They are distinct and lie in one block. bits must be a positive multiple of
// BlockBits and hashes in [1, MaxHashes]; otherwise dst is returned
// unchanged.
//
// With (h1, h2) the 128-bit murmur3 hash of key with seed and all arithmetic
// mod 2^64, the block is b = (h1 * (bits/512)) >> 64, and position i is
// 512*b + q_i, where q_0, q_1, ... are the candidates in [0, 512) with
// those equal to an earlier one left out: the 9-bit fields (x >> 9j) & 511,
// j = 0..6, of x = h2, then of x = splitmix64(h2 + t*0x9E3779B97F4A7C15) for
// t = 1, 2, ..., with splitmix64(z) the SplitMix64 finalizer
// z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
// z *= 0x94D049BB133111EB; z ^= z >> 31.
func AppendBlockedLocations(dst []uint64, key []byte, bits uint64, hashes uint, seed uint32) []uint64 {
	if bits < BlockBits || bits%BlockBits != 0 || hashes == 0 || hashes > MaxHashes {
		return dst
	}
	h1, h2 := murmur.Sum128(key, seed)
	return blocked.AppendPositions(dst, h1, h2, bits, hashes)
}

// blockedPremium is the most memory, relative to the classic layout, that
// New and NewScalable spend by default on the blocked layout's speed.
const blockedPremium = 1.10

// Layout is how a filter places a key's bits: LayoutClassic or LayoutBlocked
// (see Blocked). The zero Layout states no layout; only a zero BloomFilter
// or ScalableBloomFilter reports it.
type Layout uint8

// String returns "classic" or "blocked", or "Layout(n)" for any other value.
func (l Layout) String() string {
	switch l {
	case LayoutClassic:
		return "classic"
	case LayoutBlocked:
		return "blocked"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// layoutOf returns the layout of a filter that exists, blocked or not.
func layoutOf(isBlocked bool) Layout {
	if isBlocked {
		return LayoutBlocked
	}
	return LayoutClassic
}

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
