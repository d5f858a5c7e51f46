package blocked

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// The test of the sub-filters of a blocked ScalableBloomFilter, and the
// round of its batch calls, whose keys need a block in every sub-filter.

const (
	// ChainRound and ChainAhead are round and ahead for a blocked
	// ScalableBloomFilter: keys one at a time, four ahead.
	ChainRound = 1
	ChainAhead = 4

	// chainPrefetchBits is the size from which the batch calls of a
	// ScalableBloomFilter prefetch a sub-filter's blocks: smaller
	// sub-filters fit the 32 KiB L1 cache of a core.
	chainPrefetchBits = 1 << 18
)

// The rounds of the blocked ScalableBloomFilter's batch calls were chosen
// like those of batch.go, on a filter grown from 1,000 to 10^7 keys at
// p = 0.01 (21 sub-filters of 2-8,700 KiB), TestMany of absent keys against
// the loop of Test of one classic filter of 10^7 keys, interleaved (time
// ratios, medians of 7 or 9 repetitions, in four runs). Prefetching only
// the sub-filters from 2^23 bits (1 MiB, the L2 cache), as the first version
// did, measured 2.3-2.5x in rounds of 16 or 4; from 2^18 bits, keys one at
// a time four ahead, 1.3-1.7x, and 1.0-1.2x once the first pass of
// AnyHolds read two bits per sub-filter instead of the whole block (the
// first version, which built each distinct k's mask with Mask, measured
// the same as the single walk of blockSeq: the misses dominate). With that
// first pass: rounds of 1 four ahead 0.97-1.21x, of 2 two to four ahead
// 1.08-1.14x, of 4 one or two ahead 1.22-1.33x, of 8 two ahead 1.00-1.69x,
// of 16 two ahead from 2^23 bits 1.28x; from 2^16 bits about the same as
// from 2^18, from 2^20 1.72x, every sub-filter 1.30x.

// ChainFlight is a round of a blocked ScalableBloomFilter's batch call in
// its pipeline: N keys hashed to H.
type ChainFlight struct {
	N int
	H [ChainRound]layout.Hash
}

// LaunchChain hashes keys, at most ChainRound, with seed into r and
// prefetches their blocks in every sub-filter of subs of at least
// chainPrefetchBits bits, in one call to prefetch.Pointers rather than one
// prefetch.Words per sub-filter (0.82-0.88x the time per absent key, two
// runs side by side).
func LaunchChain[K layout.Key](r *ChainFlight, subs []layout.Bits, seed uint32, keys []K) {
	r.N = len(keys)
	layout.HashRound(r.H[:], keys, seed)
	var ps [64]*uint64
	n := 0
	for j := range subs {
		b := &subs[j]
		if b.M < chainPrefetchBits {
			continue
		}
		blocks := b.M / BlockBits
		for i := range r.N {
			if n == len(ps) {
				prefetch.Pointers(ps[:])
				n = 0
			}
			ps[n] = &b.Words[blockOf(r.H[i].H1, blocks)*8]
			n++
		}
	}
	prefetch.Pointers(ps[:n])
}

// ChainTestMany sets results[i], for every key of keys hashed with seed, to
// whether any of subs, the sub-filters of a ScalableBloomFilter, holds it,
// as AnyHolds reports it: a pipeline that hashes keys and prefetches their
// blocks in every sub-filter ChainAhead keys ahead of the one it tests.
// results is at least as long as keys.
func ChainTestMany[K layout.Key](subs []layout.Bits, seed uint32, keys []K, results []bool) {
	var ring [ChainAhead + 1]ChainFlight // round t is in ring[t%(ChainAhead+1)]
	rounds := (len(keys) + ChainRound - 1) / ChainRound
	for t := range rounds + ChainAhead {
		if t < rounds {
			lo := t * ChainRound
			LaunchChain(&ring[t%(ChainAhead+1)], subs, seed, keys[lo:min(lo+ChainRound, len(keys))])
		}
		if t < ChainAhead {
			continue
		}
		r := &ring[(t-ChainAhead)%(ChainAhead+1)]
		out := results[(t-ChainAhead)*ChainRound:][:r.N]
		for i := range out {
			out[i] = AnyHolds(subs, r.H[i].H1, r.H[i].H2)
		}
	}
}

// blockSeq walks the in-block candidates of Mask one at a time, so that one
// walk gives the masks of several k: the mask of k positions is made of the
// first k distinct candidates, so it is the start of the walk that makes
// the mask of any larger k (TestBlockSeqMatchesMask).
type blockSeq struct {
	h2 uint64
	c  candidates
	n  uint // distinct positions in m
	m  [8]uint64
}

func newBlockSeq(h2 uint64) blockSeq {
	return blockSeq{h2: h2, c: newCandidates(h2)}
}

// maskOf returns the mask of the first k positions, Mask(h2, k), walking on
// from where the last call stopped if k is not smaller.
func (s *blockSeq) maskOf(k uint) *[8]uint64 {
	if k < s.n {
		*s = newBlockSeq(s.h2)
	}
	for s.n < k {
		p := s.c.next()
		if i, bit := p>>6, uint64(1)<<(p&63); s.m[i]&bit == 0 {
			s.m[i] |= bit
			s.n++
		}
	}
	return &s.m
}

// AnyHolds reports whether any of subs, the blocked sub-filters of a
// ScalableBloomFilter oldest first, holds the key hashed to (h1, h2). The
// first two in-block candidates of a key are the same in every filter, and
// for k >= 2 both are positions (the second may repeat the first): a first
// pass reads those two bits in every filter, without a branch on them, so
// that the cache misses of all filters are in flight at once and an absent
// key is usually ruled out there (each filter's bits are about half set at
// capacity). The filters still in the running are then tested in full,
// oldest first, the order in which their k grow, so that one walk of the
// key's in-block sequence (blockSeq) makes all their masks. Loads are
// atomic for concurrent filters (plain loads on amd64).
func AnyHolds(subs []layout.Bits, h1, h2 uint64) bool {
	seq := newBlockSeq(h2)
	p0, p1 := h2&(BlockBits-1), h2>>9&(BlockBits-1)
	for len(subs) > 0 {
		chunk := subs[:min(len(subs), 64)]
		subs = subs[len(chunk):]
		var alive uint64 // bit j: chunk[j] may hold the key
		for j := range chunk {
			b := &chunk[j]
			q := p1
			if b.K == 1 {
				q = p0
			}
			blk := Block(b.Words, b.M, h1)
			hold := atomic.LoadUint64(&blk[p0>>6]) >> (p0 & 63) & (atomic.LoadUint64(&blk[q>>6]) >> (q & 63)) & 1
			alive |= hold << j
		}
		for ; alive != 0; alive &= alive - 1 {
			b := &chunk[bits.TrailingZeros64(alive)]
			blk := Block(b.Words, b.M, h1)
			if holdsCandidates(blk, h2, b.K) && holdsMaskAtomic(blk, seq.maskOf(b.K)) {
				return true
			}
		}
	}
	return false
}

// holdsCandidates reports whether blk, loaded atomically, holds the third to
// the min(k, 7)th in-block candidates of h2, which are positions of the key
// whatever they are (see Test): false rules the key out without its mask.
// AnyHolds screens the filters left after its first pass with it, so that
// few absent keys walk their sequence (blockSeq).
func holdsCandidates(blk *[8]uint64, h2 uint64, k uint) bool {
	all := uint64(1)
	for p, n := h2>>18, int(min(k, fieldsPerWord))-2; n > 0; n-- {
		all &= atomic.LoadUint64(&blk[p>>6&7]) >> (p & 63)
		p >>= 9
	}
	return all&1 != 0
}
