package classic

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"
)

// DeepBits is the size from which a sub-filter gets four positions read in
// the first round of AnyHolds instead of two: 2^22 bits (512 KiB), from which
// its reads mostly miss the caches closest to the core. Measured on a filter
// grown to 10^7 keys (21 sub-filters, the 7 newest that large), together with
// testing the newest after the first round rather than before it: absent and
// present keys about 17% faster (BenchmarkScalable, medians of 3 alternating
// runs).
const DeepBits = 1 << 22

// testOne reports whether b, plain or Concurrent (conc), holds the key
// hashed to (h1, h2).
func testOne(b *layout.Bits, h1, h2 uint64, conc bool) bool {
	if conc {
		return TestAtomic(b.Words, b.M, b.K, h1, h2)
	}
	return Test(b.Words, b.M, b.K, h1, h2)
}

// AnyHolds reports whether any of subs, the sub-filters of a
// ScalableBloomFilter oldest first (Concurrent ones if conc), holds the key
// hashed to (h1, h2). Sub-filters of at least deep bits get more reads in
// the first round (DeepBits; tests vary it).
//
// It probes the filters side by side rather than one after the other. The
// first round reads the first two positions of every filter (four if it is
// deep), without a branch on the bits it reads, so that the cache misses of
// all filters are in flight at once. Then the newest filter, which holds most
// keys, is tested in full if it is still in the running: its first reads are
// already on their way. (If even the newest is below deep, all filters are
// small enough to stay in the caches, and the newest is tested first, alone,
// which is faster for the keys it holds.) The other filters still in the
// running go through further rounds, each reading the next two positions of
// each, again branch-free, dropping the filters where a zero turns up. An
// absent key, which must be ruled out by every filter, so costs a few rounds
// instead of a chain of dependent misses and mispredicted branches per
// filter: measured 1.9x faster than probing the filters in turn at 10^5 keys
// and about 1.5x at 10^7 (BenchmarkScalable, "TestAbsent/one-by-one").
//
// The positions depend on a filter only through m: one sequence, mixed once
// per position, serves all filters. Loads are atomic so that it also serves
// concurrent filters; on amd64 they are plain loads.
//
// The batch calls of a classic ScalableBloomFilter are the loops of
// AnyHolds, on purpose. Rounds that first prefetched the first two
// positions of every key in every sub-filter of at least DeepBits bits
// (and more in the newest) measured 0.85-0.97x of the loop on a filter
// grown to 10^7 keys (BenchmarkScalableBatch, rounds of 8): AnyHolds already
// has the misses of all sub-filters of one key in flight at once, about 28
// at 10^7 keys, which is as many as the machine serves, and the prefetches
// only added work.
func AnyHolds(subs []layout.Bits, h1, h2 uint64, deep uint64, conc bool) bool {
	for len(subs) > 64 {
		if AnyHolds(subs[len(subs)-64:], h1, h2, deep, conc) {
			return true
		}
		subs = subs[:len(subs)-64]
	}
	// A newest filter below deep is tested first and alone, as all of
	// them fit in the caches; otherwise after the first round.
	n := len(subs) - 1
	if subs[n].M < deep {
		if testOne(&subs[n], h1, h2, conc) {
			return true
		}
		n, subs = -1, subs[:n]
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
	m0, m1, m2, m3 := Mix(x0), Mix(x1), Mix(x2), Mix(x2+y)

	var alive uint64 // bit j: subs[j] may hold the key
	for j := range subs {
		b := &subs[j]
		hold := holdsPair(b, m0, m1, 0)
		if b.M >= deep && b.K > 2 {
			hold &= holdsPair(b, m2, m3, 2)
		}
		alive |= hold << j
	}
	if n >= 0 && alive>>n&1 != 0 {
		if testOne(&subs[n], h1, h2, conc) {
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
		m0, m1 := Mix(x0), Mix(x1)
		var next uint64
		for a := alive; a != 0; a &= a - 1 {
			j := bits.TrailingZeros64(a)
			b := &subs[j]
			if r >= b.K {
				return true // all k positions of subs[j] are set
			}
			next |= holdsPair(b, m0, m1, r) << j
		}
		alive = next
		c += golden
		x0 = x1 + y
		y += c
	}
	return false
}

// holdsPair returns 1 if b has positions r and r+1 set, 0 if not, given
// their values mixed (Mix) before the multiply-shift; r < b.K. If b has no
// position r+1, it reads position r twice. It loads atomically, for
// concurrent filters; on amd64 these are plain loads.
func holdsPair(b *layout.Bits, mixed0, mixed1 uint64, r uint) uint64 {
	p0, _ := bits.Mul64(mixed0, b.M)
	p1, _ := bits.Mul64(mixed1, b.M)
	if r+1 >= b.K {
		p1 = p0
	}
	return (atomic.LoadUint64(&b.Words[p0>>6]) >> (p0 & 63)) & (atomic.LoadUint64(&b.Words[p1>>6]) >> (p1 & 63)) & 1
}
