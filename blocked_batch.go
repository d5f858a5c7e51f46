package bloom

import (
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// Batch calls of blocked filters. A key's bits lie in one cache line, so a
// round needs one prefetch per key (per sub-filter of a ScalableBloomFilter):
// each round is hashed, the first word of every key's block is prefetched,
// all at once, and only then are the keys tested or added, one after the
// other, by the single-key code, so that the answers and the bits are those
// of the loop of single calls by construction.

// blockedRound is the round of the batch calls of a blocked filter, in keys.
// Rounds of 16 measured best among 8, 16 and 32 at 10^7 keys (BenchmarkBlockedBatch).
const blockedRound = 16

// prefetchBlocks prefetches the block of every key hashed to h in f; idx is
// scratch space at least as long as h.
func prefetchBlocks(f *BloomFilter, h []hashed, idx []uint64) {
	blocks := f.m / BlockBits
	for i := range h {
		idx[i] = blockOf(h[i].h1, blocks) * 8
	}
	prefetch.Words(f.words, idx[:len(h)])
}

func testManyBlocked[K keyType](f *BloomFilter, keys []K, results []bool) []bool {
	var (
		h   [blockedRound]hashed
		idx [blockedRound]uint64
	)
	for start := 0; start < len(keys); start += blockedRound {
		round := keys[start:min(start+blockedRound, len(keys))]
		hashRound(h[:], round, f.seed)
		prefetchBlocks(f, h[:len(round)], idx[:])
		out := results[start : start+len(round)]
		for i := range out {
			if f.conc == nil {
				out[i] = f.testBlocked(h[i].h1, h[i].h2)
			} else {
				out[i] = f.testBlockedConcurrent(h[i].h1, h[i].h2)
			}
		}
	}
	return results
}

// addManyBlocked is addMany for a blocked filter.
func addManyBlocked[K keyType](f *BloomFilter, keys []K, results []bool) {
	var (
		h   [blockedRound]hashed
		idx [blockedRound]uint64
	)
	for start := 0; start < len(keys); start += blockedRound {
		round := keys[start:min(start+blockedRound, len(keys))]
		hashRound(h[:], round, f.seed)
		prefetchBlocks(f, h[:len(round)], idx[:])
		for i := range round {
			present := f.add(h[i].h1, h[i].h2)
			if results != nil {
				results[start+i] = present
			}
		}
	}
}

// scalableTestManyBlocked is scalableTestMany for blocked sub-filters: each
// round prefetches the key's block in every sub-filter before it tests any
// key.
func scalableTestManyBlocked[K keyType](s *ScalableBloomFilter, keys []K, results []bool) []bool {
	var (
		h   [blockedRound]hashed
		idx [blockedRound]uint64
	)
	for start := 0; start < len(keys); start += blockedRound {
		round := keys[start:min(start+blockedRound, len(keys))]
		hashRound(h[:], round, s.seed)
		filters, _ := s.subFilters()
		for _, f := range filters {
			prefetchBlocks(f, h[:len(round)], idx[:])
		}
		out := results[start : start+len(round)]
		for i := range out {
			out[i] = s.test(h[i].h1, h[i].h2)
		}
	}
	return results
}

// scalableAddManyBlocked is scalableAddMany for blocked sub-filters, with the
// prefetches of scalableTestManyBlocked. Growth within a round happens where
// the loop of single calls grows: the keys go through testAndAdd in order.
func scalableAddManyBlocked[K keyType](s *ScalableBloomFilter, keys []K, results []bool) {
	var (
		h   [blockedRound]hashed
		idx [blockedRound]uint64
	)
	for start := 0; start < len(keys); start += blockedRound {
		round := keys[start:min(start+blockedRound, len(keys))]
		hashRound(h[:], round, s.seed)
		filters, _ := s.subFilters()
		for _, f := range filters {
			prefetchBlocks(f, h[:len(round)], idx[:])
		}
		for i := range round {
			present := s.testAndAdd(h[i].h1, h[i].h2)
			if results != nil {
				results[start+i] = present
			}
		}
	}
}
