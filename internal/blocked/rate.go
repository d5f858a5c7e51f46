package blocked

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"
)

// This file holds the false-positive rate of the blocked layout, which
// bloom.BlockedFalsePositiveRate returns and bloom.BlockedSize sizes by.
//
// The blocked layout (see bloom.Blocked) keeps the k positions of a key in
// one block of BlockBits bits, chosen uniformly among the m/BlockBits blocks;
// the k positions within the block are distinct, a uniform k-subset of its
// bits. Its false-positive rate is a mixture over the number J of keys that
// share the tested key's block:
//
//   - F. Putze, P. Sanders and J. Singler, "Cache-, Hash- and Space-Efficient
//     Bloom Filters", ACM Journal of Experimental Algorithmics 14, 2009,
//     section 3: p = sum_j P(J = j) p_in(j), with J Poisson of mean nB/m and
//     p_in(j) the rate of a classic filter of B bits holding j keys.
//
// Rate uses the exact form of that mixture: J is binomial (n keys, each in
// the tested block with probability B/m), of which the Poisson is the limit
// for many blocks; for one block (a filter of BlockBits bits) J is n. And
// p_in(j) is exact for k distinct positions per key: E[C(X, k)/C(B, k)]
// with X the number of bits that j keys set in B bits, whose distribution a
// recurrence over the positions gives (as for the classic layout, Bose et
// al. 2008), rather than a closed form. Distinct
// positions need fewer bits than k independent ones, which may repeat: 9.89
// instead of 9.92 bits per key at 1%, 15.48 instead of 15.55 at 0.1%.

// inBlockRates caches, per hash count k, p_in(j) = E[C(X, k)/C(512, k)] for
// j keys in a block, j = 0, 1, ..., as far as a caller has needed them. The
// values are pure functions of (k, j); the cache only spares recomputing
// them, which costs O(512 k) per j. Readers take no lock: the values of each
// k computed so far are published as an inBlockRateSet, never changed once
// stored, which only the goroutine extending them, under that k's mutex,
// replaces. Concurrent decoders and constructors used to wait on one global
// mutex here.
var inBlockRates [layout.MaxHashes + 1]inBlockCache

// inBlockCache is the cache of one hash count.
type inBlockCache struct {
	set   atomic.Pointer[inBlockRateSet] // nil until first needed
	mu    sync.Mutex                     // held while extending
	table *inBlockTable                  // what extends set, nil once full; guarded by mu
}

// inBlockRateSet holds p_in(j) for j < len(rates), for one k.
type inBlockRateSet struct {
	rates []float64 // rates[j] = p_in(j)
	full  bool      // P(X < 512) < 2^-60 after len(rates)-1 keys: the later rates round to 1
}

// The rates of every k, once full, take 0.9 MB in all (24,465 rates for
// k = 1, 407 for k = 57), kept in 1.24 MB; computing all of them allocates
// 3.06 MB, once per process (TestInBlockRatesMemory).

// inBlockChunk is the most rates one extension adds beyond those asked for.
// A caller walking j upwards then takes k's mutex about once per chunk, not
// per j, while one that asks for a few rates of a k never needed before gets
// about those: computing 64 rates of each k a sizing tries cost up to 0.1 s.
const inBlockChunk = 64

// inBlockTable is the state from which the rates of one k are extended: the
// distribution of the set bits after the positions of the last key.
type inBlockTable struct {
	k      uint
	dist   [BlockBits + 1]float64 // P(X = x) after len(rates)-1 keys
	pow    [BlockBits + 1]float64 // C(x, k)/C(512, k)
	lo, hi int                    // dist[x] is 0 outside [lo, hi]
}

// extend appends p_in(j) to rates, which holds the rates computed so far,
// until it holds index j and at least want rates, or the rates are full.
//
// dist is 0, exactly, outside [lo, hi]: the first key sets k bits, so
// x < k is impossible after it, and later its tails fall to 0. The loops skip
// those entries, whose updates and terms are exact zeros. Probabilities that
// fall below the smallest normal float64 (2^-1022) are set to 0: arithmetic
// on subnormal numbers is some 100 times slower on x86, and made the tails
// cost most of the time, while no rate depends on them. With both, the rates
// of every k, up to the point where they are full, are the same, bit for
// bit, as those of the loops over all 513 entries without flushing
// (TestInBlockRatesExact), and all 64 tables cost 0.26 s instead of 2.3 s.
func (t *inBlockTable) extend(rates []float64, j, want uint64) ([]float64, bool) {
	for uint64(len(rates)) <= j || uint64(len(rates)) < want {
		// One more key: k distinct positions. Its i-th is uniform over the
		// 512-i bits its earlier ones left, of which x-i are set if x bits
		// are set in all.
		for i := range int(t.k) {
			d := float64(BlockBits - i)
			t.hi = min(t.hi+1, BlockBits)
			for x := t.hi; x >= max(t.lo, 1); x-- {
				p := t.dist[x]*float64(max(x-i, 0))/d + t.dist[x-1]*float64(BlockBits-x+1)/d
				if p < 0x1p-1022 {
					p = 0 // subnormal: see above
				}
				t.dist[x] = p
			}
			t.dist[0] = 0
			t.lo = max(t.lo, 1)
			for t.lo < t.hi && t.dist[t.lo] == 0 {
				t.lo++
			}
			for t.hi > t.lo && t.dist[t.hi] == 0 {
				t.hi--
			}
		}
		var r, notFull float64
		for x := t.lo; x <= t.hi; x++ {
			r += t.dist[x] * t.pow[x]
		}
		for x := t.lo; x <= min(t.hi, BlockBits-1); x++ {
			notFull += t.dist[x]
		}
		if len(rates) == cap(rates) {
			// Double the capacity: append alone grows a long slice by
			// about 1.25 times, and all the copies it left behind for the
			// 24,465 rates of k = 1 came to 4.5 times their size.
			// (Not slices.Grow: under the race detector its
			// append(s, make(n)...) allocates the n zeros too.)
			grown := make([]float64, len(rates), max(2*len(rates), inBlockChunk))
			copy(grown, rates)
			rates = grown
		}
		rates = append(rates, r)
		if notFull < 0x1p-60 {
			return rates, true
		}
	}
	return rates, false
}

// inBlockSet returns the rates of hash count k (1 <= k <= bloom.MaxHashes)
// known so far, at least p_in(0).
func inBlockSet(k uint) *inBlockRateSet {
	if set := inBlockRates[k].set.Load(); set != nil {
		return set
	}
	return extendInBlock(k, 0)
}

// extendInBlock returns the rates of hash count k extended to hold p_in(j),
// or to full, computing what is missing under k's mutex.
func extendInBlock(k uint, j uint64) *inBlockRateSet {
	c := &inBlockRates[k]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set.Load() == nil {
		t := &inBlockTable{k: k}
		t.dist[0] = 1
		// The tested key's k distinct positions all fall on the x set bits
		// with probability C(x, k)/C(512, k).
		for x := range t.pow {
			t.pow[x] = 1
			for i := range int(k) {
				t.pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
			}
		}
		c.table = t
		c.set.Store(&inBlockRateSet{rates: []float64{0}})
	}
	cur := c.set.Load()
	if cur.full || uint64(len(cur.rates)) > j {
		return cur
	}
	// Readers of cur see only its first len(cur.rates) rates, which append
	// leaves alone.
	// Half as many again as there are, at most inBlockChunk more.
	rates, full := c.table.extend(cur.rates, j, uint64(len(cur.rates))+min(uint64(len(cur.rates))/2, inBlockChunk))
	if full {
		// Nothing extends these rates again: drop the table (8 KB).
		c.table = nil
	}
	next := &inBlockRateSet{rates: rates, full: full}
	c.set.Store(next)
	return next
}

// inBlockView reads the rates of one hash count, extending them as needed.
type inBlockView struct {
	k   uint
	set *inBlockRateSet
}

// at returns p_in(j): 1 past the point where the rates are full.
func (v *inBlockView) at(j uint64) float64 {
	if j >= uint64(len(v.set.rates)) && !v.set.full {
		v.set = extendInBlock(v.k, j)
	}
	if j >= uint64(len(v.set.rates)) {
		return 1
	}
	return v.set.rates[j]
}

// Rate is bloom.BlockedFalsePositiveRate, its work metered by meter if not
// nil: it returns 1 when bits < BlockBits or hashes is 0 or above
// bloom.MaxHashes.
func Rate(bits uint64, hashes uint, n uint64, meter *layout.Meter) float64 {
	if bits < BlockBits || hashes == 0 || hashes > layout.MaxHashes {
		return 1
	}
	if n == 0 {
		return 0
	}
	// The view extends the rates it needs as the loop below reaches
	// them. It always holds p_in(j-1) when the loop is at j, and the rates
	// of one k become full at one length, so the test of t.set.full below
	// answers as it would with every rate computed beforehand.
	t := inBlockView{k: hashes, set: inBlockSet(hashes)}
	blocks := bits / BlockBits
	if blocks == 1 {
		return t.at(n)
	}
	// The binomial weights w_j = C(n, j) q^j (1-q)^(n-j), q = 1/blocks, in
	// logarithms: w_{j+1}/w_j = (n-j)/(j+1) * 1/(blocks-1).
	b := float64(blocks)
	lw := float64(n) * math.Log1p(-1/b)
	lodds := -math.Log(b - 1)
	mean := float64(n) / b
	var sum, mass float64
	for j := uint64(0); ; j++ {
		meter.Spend(1)
		if j > 0 {
			lw += math.Log(float64(n-j+1)/float64(j)) + lodds
		}
		w := math.Exp(lw)
		if t.set.full && j >= uint64(len(t.set.rates)) && float64(j) < mean {
			// Every block with j keys or more is full: the rest is
			// P(J >= j).
			return sum + max(1-mass, 0)
		}
		sum += w * t.at(j)
		mass += w
		if j == n {
			return sum
		}
		if float64(j) >= mean {
			// Past the mode the weights fall, and their ratio too: what
			// follows is at most w r/(1-r), and p_in <= 1.
			r := float64(n-j) / float64(j+1) / (b - 1)
			if r < 1 && w*r/(1-r) <= sum*0x1p-60 {
				return sum
			}
			if w == 0 && sum == 0 {
				return 0
			}
		}
	}
}

// FullRate is classic.FullRate for a blocked sub-filter: its false-positive
// rate when its count reaches capacity, a little above, never below. After t
// random keys the rate is r(t) = Rate(m, k, t) (keys
// that test present set no bit, so the bits are those of t keys), and the
// count is c(t) = integral of (1 - r) from 0 to t. It sums c in 64 steps of
// capacity/64 keys with r at the end of each step, which underestimates c as
// r grows, so the t found for c = capacity (interpolated within its step) is
// at or above the true one. It is 1 if c stops short of capacity.
//
// stop, if not nil, may end the work early: each step's r is at most the
// result (the result is the rate at a t no earlier than that step's end,
// and the rate grows with t), so once stop(lo) holds for lo, that r less a
// margin for rounding, FullRate returns lo and true. Otherwise it
// returns the result and false. meter, if not nil, meters the work.
func FullRate(capacity, m uint64, k uint, stop func(lo float64) bool, meter *layout.Meter) (float64, bool) {
	const steps = 64
	n := float64(capacity)
	dt := n / steps
	var c, t float64
	for {
		r := Rate(m, k, uint64(math.Ceil(t+dt)), meter)
		if r > 1-1e-6 || t > float64(layout.MaxBits) {
			return 1, false
		}
		if c+(1-r)*dt >= n {
			t += (n - c) / (1 - r)
			return Rate(m, k, uint64(math.Ceil(t)), meter), false
		}
		// The margin covers rounding in Rate, which is
		// accurate to about 1e-12, so that lo is below the result.
		if lo := r - 1e-9; stop != nil && lo > 0 && stop(lo) {
			return lo, true
		}
		c += (1 - r) * dt
		t += dt
	}
}
