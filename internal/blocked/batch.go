package blocked

import (
	"math/bits"

	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// The batch calls of a blocked filter. A key's bits lie in one cache line,
// so a key needs one prefetch. They run as a pipeline: round s+ahead is
// hashed and the blocks of its keys are prefetched, all at once, while round
// s, whose blocks were prefetched before, is tested or added, key after key
// in order, so that the answers and the bits are those of the loop of single
// calls by construction.

// The rounds of the blocked batch calls, chosen at 10^7 and 10^8 keys
// (p = 0.01, 9.9 bits per key), batches of 1,000 16-byte keys, every variant
// and the loop of Test interleaved chunk by chunk in one process, medians of
// 5 or 9 repetitions on the shared 2-vCPU machine of docs/batch.md (the other jobs
// on it move single figures by 15-30%, so only large differences count).
// Rounds of 16 keys two rounds ahead and of 8 keys two or four ahead came
// out within that noise of each other (16/2 took 0.63-0.99x the time of 8/2
// in two runs, 0.99-1.17x in a third); rounds of 32 one ahead 1.2-1.4x, of
// 16 three ahead 1.1-1.4x, of 2 eight ahead 1.0-1.5x. The loop of Test took
// 3.7-5.6x the time of the rounds for absent keys and 2.8-4.6x for present
// keys. The rounds of 16 this pipeline replaced, which hashed, prefetched
// and tested one round at a time with Test, measured 0.96-1.12x its time
// (10^7 and 10^8 keys, absent and present): within the noise. On this
// machine the batch calls are bound by the work per key (murmur3 a third of
// it, the block's test a fifth), not by the misses; the pipeline keeps them
// overlapped where the memory is slower.
//
// Testing the whole mask of every key (Mask) instead of first its two first
// candidates measured 0.8-1.3x, for absent keys mostly slower. Testing those
// two candidates of every key of a round first, without a branch, then the
// whole mask of the keys still in the running, measured 0.86-0.95x the time
// of testing both key by key with a branch after the two candidates for
// absent keys, and 0.92-1.13x for present keys (two runs, 9 repetitions).
const (
	// round is the round of the batch calls, in keys.
	round = 16

	// ahead is how many rounds ahead of the one being tested or added the
	// batch calls hash and prefetch.
	ahead = 2
)

// BatchMinBits is the size from which the batch calls go in rounds. Their
// rounds cost one prefetch per key: they already beat the loop of single
// calls on a filter of 10^6 keys, 1.2-1.9 MiB, once it no longer fits the
// 1 MiB L2 cache of the machine of docs/batch.md; smaller filters get the loop of
// single calls. A variable only so that tests can run the rounds on small
// filters.
var BatchMinBits uint64 = 1 << 23

// flight is a round of a batch call in the pipeline: n keys hashed to h,
// and the first word of each one's block.
type flight struct {
	n   int
	h   [round]layout.Hash
	idx [round]uint64
}

// launch hashes keys, at most round, into r and prefetches their blocks
// in b.
func launch[K layout.Key](r *flight, b layout.Bits, seed uint32, keys []K) {
	r.n = len(keys)
	layout.HashRound(r.h[:], keys, seed)
	blocks := b.M / BlockBits
	for i := range r.n {
		r.idx[i] = blockOf(r.h[i].H1, blocks) * 8
	}
	prefetch.Words(b.Words, r.idx[:r.n])
}

// TestMany sets results[i], for every key of keys hashed with seed, to
// whether b holds it, as Test (or TestAtomic if conc) reports it. results
// is at least as long as keys.
func TestMany[K layout.Key](b layout.Bits, seed uint32, keys []K, results []bool, conc bool) {
	if b.M < BatchMinBits {
		for i, key := range keys {
			h1, h2 := murmur.Sum128(layout.KeyBytes(&key), seed)
			if !conc {
				results[i] = Test(b.Words, b.M, b.K, h1, h2)
			} else {
				results[i] = TestAtomic(b.Words, b.M, b.K, h1, h2)
			}
		}
		return
	}
	var ring [ahead + 1]flight // round s is in ring[s%(ahead+1)]
	k := b.K
	rounds := (len(keys) + round - 1) / round
	for s := range rounds + ahead {
		if s < rounds {
			lo := s * round
			launch(&ring[s%(ahead+1)], b, seed, keys[lo:min(lo+round, len(keys))])
		}
		if s < ahead {
			continue
		}
		r := &ring[(s-ahead)%(ahead+1)]
		out := results[(s-ahead)*round:][:r.n]
		if conc {
			for i := range out {
				out[i] = TestAtomic(b.Words, b.M, b.K, r.h[i].H1, r.h[i].H2)
			}
			continue
		}
		if native := k-2 < FieldsPerWord-1 && Native() || Wide(k); native {
			// The whole test of every key in one call to the assembly, as
			// BloomFilter.testKey does: one branch per key, on the answer.
			w := b.Words
			for i := range out {
				out[i] = testNative((*[8]uint64)(w[r.idx[i]:][:8]), r.h[i].H2, k)
			}
			continue
		}
		// First pass: the first two in-block candidates of every key,
		// without a branch on the bits. For k >= 2 both are positions of
		// the key (the second may repeat the first), and they rule out
		// most absent keys. Second pass: the rest of the single-key test
		// for the keys still in the running (testTail; through Mask and
		// holdsMask instead, present keys cost 0.26-0.27x our classic Test
		// at 10^7 URL-like keys, p = 0.01, against 0.21x: three alternated
		// bench runs).
		var alive uint64
		w := b.Words
		for i := range out {
			h2, blk := r.h[i].H2, r.idx[i]
			p0, p1 := h2&(BlockBits-1), h2>>9&(BlockBits-1)
			if k == 1 {
				p1 = p0
			}
			alive |= (w[blk+p0>>6] >> (p0 & 63) & (w[blk+p1>>6] >> (p1 & 63)) & 1) << i
			out[i] = false
		}
		for ; alive != 0; alive &= alive - 1 {
			i := bits.TrailingZeros64(alive)
			out[i] = testTail((*[8]uint64)(w[r.idx[i]:]), r.h[i].H2, k)
		}
	}
}

// The alive mask of a round of TestMany has a bit per key.
var _ [64 - round]struct{}

// AddMany adds keys, hashed with seed, to b in order; if results is not nil,
// it records in it what the single-key add returned for each (whether the
// key was present). A plain filter (l nil) counts the keys that set a bit in
// *count; a Concurrent one adds with AddLocked.
func AddMany[K layout.Key](b layout.Bits, seed uint32, keys []K, results []bool, count *uint64, l *layout.Locks) {
	if b.M < BatchMinBits {
		for i, key := range keys {
			h1, h2 := murmur.Sum128(layout.KeyBytes(&key), seed)
			var present bool
			if l != nil {
				present = AddLocked(b.Words, b.M, b.K, h1, h2, l)
			} else if present = Add(b.Words, b.M, b.K, h1, h2); !present {
				*count++
			}
			if results != nil {
				results[i] = present
			}
		}
		return
	}
	var ring [ahead + 1]flight
	rounds := (len(keys) + round - 1) / round
	for s := range rounds + ahead {
		if s < rounds {
			lo := s * round
			launch(&ring[s%(ahead+1)], b, seed, keys[lo:min(lo+round, len(keys))])
		}
		if s < ahead {
			continue
		}
		r := &ring[(s-ahead)%(ahead+1)]
		start := (s - ahead) * round
		for i := range r.n {
			// Add written out, so that only b, which is in memory, and
			// not its fields, is kept across the calls. Add's frameless
			// fast path (AddFast) beat a mask from Mask and an or of all 8
			// words: 27-28 against 32-33 ns/key in 3 of 4 alternating runs
			// of BenchmarkBlockedBatch/Add/AddMany.
			h1, h2 := r.h[i].H1, r.h[i].H2
			var present, ok bool
			switch {
			case l != nil:
				present, ok = AddLocked(b.Words, b.M, b.K, h1, h2, l), true
			case Wide(b.K):
				// The block launch found (the one Block finds).
				present, ok = AddWide((*[8]uint64)(b.Words[r.idx[i]:][:8]), h2, b.K)
			case b.K-2 < FieldsPerWord-1 && Native():
				present, ok = AddFields((*[8]uint64)(b.Words[r.idx[i]:][:8]), h2, b.K)
			default:
				h1, h2, present, ok = AddFast(b.Words, b.K, h1, h2)
			}
			if !ok {
				present = AddRepeat(Block(b.Words, b.M, h1), h2, b.K)
			}
			if !present && l == nil {
				*count++
			}
			if results != nil {
				results[start+i] = present
			}
		}
	}
}
