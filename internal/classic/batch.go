package classic

import (
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// The batch calls of a classic filter. On a filter of at least BatchMinBits
// bits the keys go in rounds of a few. TestMany hashes a round, prefetches
// the words that its keys' first positions fall in, all at once, and only
// then tests the keys; AddMany is a software pipeline that hashes and
// prefetches a few keys ahead of the one it adds. Either way the keys are
// then tested or added one after the other, in order, by the single-key
// code. So the cache misses of several keys overlap instead of coming one
// after another, and the semantics are those of the single calls by
// construction.

// The rounds of the batch calls, in keys, chosen by BenchmarkBatch at 10^7
// keys (p = 0.01), batches of 1,000 keys, with the other choices measured
// beside them, on the 2-vCPU AMD EPYC VM of docs/batch.md (speed-ups over the
// loop of single calls; the machine is shared, so they spread widely).
//
// TestMany: for absent keys, two-pass rounds of 16 were 2.1-2.8x faster
// than the loop of Test (10^8: 2.3-3.2x, median 3.1x); prefetching the first
// eight positions of every key at once only 1.4-1.7x, the first two only
// 1.9-2.0x. Present keys came out between 0.9x and 1.2x (10^8: 1.4-1.7x).
// Pipelining TestMany like AddMany (hash and prefetch the first two
// positions, screen those and prefetch the rest a few rounds later, test a
// few rounds after that) helps present keys, but not absent keys at 10^8:
// in rounds of 2 with stages 3 rounds apart, six runs each side by side
// with the rounds of 16, medians 3.05x / 2.35x (absent / present) at 10^7
// against 2.66x / 1.08x, but 2.49x / 1.72x at 10^8 against 3.10x / 1.44x;
// rounds of 4 or 8 traded present keys at 10^7 for absent keys at 10^8
// (rounds of 8: 2.9-3.3x / 1.3-1.7x at 10^7, 2.8-3.0x / 1.5-1.6x at 10^8).
// Prefetching all positions of every key in the first stage, which present
// keys need anyway, measured 1.5-2.2x / 1.5-1.7x at 10^7: absent keys then
// pay for seven lines instead of about two.
//
// AddMany: unpipelined rounds of 8 that prefetch up to eight positions per
// key measured 1.4-1.7x (of 16 1.45x, of 32 1.4x; PREFETCHW instead of
// PREFETCHT0 no difference). Pipelined, with keys hashed and prefetched 8
// ahead of the one added (rounds of 1), 2.9-3.3x, 6 or 12 ahead about the
// same, 16 ahead 2.9-3.2x, rounds of 2 four ahead 3.1-3.3x, rounds of 4 two
// ahead 1.7-2.1x, rounds of 8 or 16 one ahead 1.3-1.7x; at 10^8 8 ahead
// measured about the same as the unpipelined rounds of 8 (2.0-2.4x against
// 1.8-2.3x).
const (
	// testRound is the round of TestMany. Its first pass prefetches the
	// first two positions of every key, its second tests them without a
	// branch and prefetches up to addDepth positions of the keys still in
	// the running, and its third runs the single-key test on those.
	testRound = 16

	// addRound is the round of AddMany: it hashes a round and prefetches
	// up to addDepth positions of each of its keys addAhead rounds before
	// it adds it. Rounds of one key are best: the pipeline then keeps a
	// steady addAhead keys' worth of lines in flight.
	addRound = 1

	// addAhead is how many rounds ahead of the one being added AddMany
	// hashes and prefetches.
	addAhead = 8

	// addDepth is the number of positions of each key that AddMany
	// prefetches (all of them at k <= addDepth).
	addDepth = 8
)

// BatchMinBits is the size from which the batch calls go in rounds; smaller
// filters stay in the caches, where the rounds cost more than they save
// (TestMany of present keys measured 0.6x at 10^6 keys, 1.2 MiB), and get
// the loop of single calls. A variable only so that tests can run the
// rounds on small filters.
var BatchMinBits uint64 = 1 << 24

// The alive mask of a TestMany round has a bit per key.
var _ [64 - testRound]struct{}

// firstPair returns the first two positions of the key hashed to h in a
// filter of m bits and k hashes (the first one twice if k is 1).
func firstPair(h layout.Hash, m uint64, k uint) (p0, p1 uint64) {
	p0 = Locate(h.H1, m)
	p1 = p0
	if k > 1 {
		p1 = Locate(h.H1+h.H2, m)
	}
	return p0, p1
}

// appendWords appends to idx the words of positions from, from+1, ... below
// to of the key hashed to h in a filter of m bits.
func appendWords(idx []uint64, h layout.Hash, m uint64, from, to uint) []uint64 {
	x, y, c := h.H1, h.H2, uint64(0)
	for i := range to {
		if i >= from {
			idx = append(idx, Locate(x, m)>>6)
		}
		c += golden
		x += y
		y += c
	}
	return idx
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
	var (
		h     [testRound]layout.Hash
		pairs [testRound][2]uint64
		idx   [testRound * addDepth]uint64
	)
	w, m, k := b.Words, b.M, b.K
	for start := 0; start < len(keys); start += testRound {
		round := keys[start:min(start+testRound, len(keys))]
		out := results[start : start+len(round)]
		layout.HashRound(h[:], round, seed)
		// First pass: the words of the first two positions of every key.
		n := 0
		for i := range round {
			p0, p1 := firstPair(h[i], m, k)
			pairs[i] = [2]uint64{p0, p1}
			idx[n], idx[n+1] = p0>>6, p1>>6
			n += 2
		}
		prefetch.Words(w, idx[:n])
		// Second pass: rule out the keys with a clear bit among those two,
		// without a branch on the bits, and prefetch further positions of
		// the others. Loads are atomic for concurrent filters (plain loads
		// on amd64).
		var alive uint64
		n = 0
		for i := range round {
			p0, p1 := pairs[i][0], pairs[i][1]
			hold := atomic.LoadUint64(&w[p0>>6]) >> (p0 & 63) & (atomic.LoadUint64(&w[p1>>6]) >> (p1 & 63)) & 1
			alive |= hold << i
			if hold != 0 && k > 2 {
				n = len(appendWords(idx[n:n], h[i], m, 2, min(k, addDepth))) + n
			}
		}
		if n != 0 {
			prefetch.Words(w, idx[:n])
		}
		// Third pass: the single-key test of the keys still in the running.
		for i := range out {
			if alive>>i&1 == 0 {
				out[i] = false
			} else if !conc {
				out[i] = Test(b.Words, b.M, b.K, h[i].H1, h[i].H2)
			} else {
				out[i] = TestAtomic(b.Words, b.M, b.K, h[i].H1, h[i].H2)
			}
		}
	}
}

// addFlight is a round of AddMany in the pipeline: its keys are
// keys[start:start+n], hashed to h.
type addFlight struct {
	start, n int
	h        [addRound]layout.Hash
}

// AddMany adds keys, hashed with seed, to b in order; if results is not nil,
// it records in it what the single-key add returned for each (whether the
// key was present). A plain filter (l nil) counts the keys that set a bit in
// *count; a Concurrent one adds with AddLocked. The pipeline hashes and
// prefetches ahead, but adds the keys one by one in their order, with the
// single-key code, so it is the loop of single adds by construction.
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
	var (
		ring [addAhead + 1]addFlight // round s is in ring[s%(addAhead+1)]
		idx  [addRound * addDepth]uint64
	)
	depth := min(b.K, addDepth)
	rounds := (len(keys) + addRound - 1) / addRound
	for s := range rounds + addAhead {
		// Hash round s and prefetch its words.
		if s < rounds {
			r := &ring[s%(addAhead+1)]
			r.start = s * addRound
			r.n = min(addRound, len(keys)-r.start)
			layout.HashRound(r.h[:], keys[r.start:r.start+r.n], seed)
			n := 0
			for i := range r.n {
				n = len(appendWords(idx[n:n], r.h[i], b.M, 0, depth)) + n
			}
			prefetch.Words(b.Words, idx[:n])
		}
		// Add round s-addAhead, whose words were prefetched before.
		if s >= addAhead {
			r := &ring[(s-addAhead)%(addAhead+1)]
			for i := range r.n {
				var present bool
				if l != nil {
					present = AddLocked(b.Words, b.M, b.K, r.h[i].H1, r.h[i].H2, l)
				} else if present = Add(b.Words, b.M, b.K, r.h[i].H1, r.h[i].H2); !present {
					*count++
				}
				if results != nil {
					results[r.start+i] = present
				}
			}
		}
	}
}
