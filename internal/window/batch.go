package window

import (
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// The batch calls of a window. As in internal/blocked's batch.go, they run
// as a pipeline: round s+ahead is hashed and the blocks of its keys are
// prefetched (in every live generation for a test, in the newest for an
// add) while round s is tested or added key after key, in order, with the
// single-key code, so that answers and bits are those of the loop of
// single calls by construction. A rotation in the middle of a round only
// makes a prefetch useless.

const (
	// round is the keys of a round; ahead how many rounds ahead the
	// pipeline hashes and prefetches. A round of a test prefetches
	// round*Gens lines (128 for 8 generations), near what the line fill
	// buffers and the load queue of a core hold in flight.
	round = 16
	ahead = 2

	// batchMinBits is the size of a generation from which the batch calls
	// prefetch: smaller generations, all Gens of them, fit the L2 cache.
	batchMinBits = 1 << 20
)

// flight is a round in the pipeline: n keys hashed to h, and the first word
// of each key's block within a generation; for TestManyAtomic, the newest
// generation and the live ones as the round loaded them.
type flight struct {
	n            int
	h            [round]layout.Hash
	idx          [round]uint64
	newest, live int
}

// launch hashes keys, at most round, into r and prefetches their blocks in
// the gens newest generations.
func launch[K layout.Key](f *Filter, r *flight, keys []K, gens int) {
	r.n = len(keys)
	layout.HashRound(r.h[:], keys, f.Seed)
	for i := range r.n {
		r.idx[i] = f.block(r.h[i].H1)
	}
	if f.M < batchMinBits {
		return
	}
	g := f.newest
	for range gens {
		prefetch.Words(f.gen(g), r.idx[:r.n])
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	if f.nExt != 0 {
		for i := range r.n {
			f.prefetchExts(r.h[i].H1, r.h[i].H2, gens)
		}
	}
}

// launchAtomic is launch for TestManyAtomic: it loads the ring's newest
// generation and live ones at now into r (loadView), once per round, and
// prefetches from them.
func launchAtomic[K layout.Key](f *Filter, r *flight, keys []K, now int64) {
	r.n = len(keys)
	layout.HashRound(r.h[:], keys, f.Seed)
	for i := range r.n {
		r.idx[i] = f.block(r.h[i].H1)
	}
	r.newest, r.live = f.loadView(now)
	if f.M < batchMinBits {
		return
	}
	g := r.newest
	for range r.live {
		prefetch.Words(f.gen(g), r.idx[:r.n])
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	if f.cs.nExt.Load() != 0 {
		for i := range r.n {
			f.prefetchExtsAtomic(r.h[i].H1, r.h[i].H2, r.newest, r.live)
		}
	}
}

// TestMany sets results[i] to Test of keys[i] with live generations (see
// Live). results is at least as long as keys.
func TestMany[K layout.Key](f *Filter, keys []K, results []bool, live int) {
	var ring [ahead + 1]flight
	rounds := (len(keys) + round - 1) / round
	for s := range rounds + ahead {
		if s < rounds {
			lo := s * round
			launch(f, &ring[s%(ahead+1)], keys[lo:min(lo+round, len(keys))], live)
		}
		if s < ahead {
			continue
		}
		r := &ring[(s-ahead)%(ahead+1)]
		out := results[(s-ahead)*round:][:r.n]
		for i := range out {
			out[i] = f.probe(r.h[i].H1, r.h[i].H2, live)
		}
	}
}

// TestManyAtomic is TestMany for a Concurrent ring at now (unix ns; any value
// for a count window), with no lock, as TestAtomic: each round of keys is
// tested from the newest generation and live ones it loaded.
func TestManyAtomic[K layout.Key](f *Filter, keys []K, results []bool, now int64) {
	var ring [ahead + 1]flight
	rounds := (len(keys) + round - 1) / round
	for s := range rounds + ahead {
		if s < rounds {
			lo := s * round
			launchAtomic(f, &ring[s%(ahead+1)], keys[lo:min(lo+round, len(keys))], now)
		}
		if s < ahead {
			continue
		}
		r := &ring[(s-ahead)%(ahead+1)]
		out := results[(s-ahead)*round:][:r.n]
		ext := f.cs.nExt.Load() != 0
		for i := range out {
			out[i] = f.probeAtomic(r.h[i].H1, r.h[i].H2, r.newest, r.live, ext)
		}
	}
}

// Mode is what a batch add does with a key it finds present.
type Mode uint8

// The modes.
const (
	// AddAll adds every key (Add).
	AddAll Mode = iota
	// AddNew adds only the keys absent from the window (first-seen,
	// TestAndAdd).
	AddNew
	// AddRefresh adds every key, so that a present one goes into the
	// newest generation (last-seen, TestAndRefresh).
	AddRefresh
)

// AddMany adds keys in order at now, as Add does (the caller has called
// Advance), but under AddNew only those absent from the live generations,
// and if results is not nil sets results[i] to whether keys[i] was in any
// live generation before (as Test then Add would). results is not nil but
// under AddAll.
func AddMany[K layout.Key](f *Filter, keys []K, results []bool, now int64, mode Mode) {
	var ring [ahead + 1]flight
	gens := 1
	if results != nil {
		gens = f.Live(now)
	}
	rounds := (len(keys) + round - 1) / round
	for s := range rounds + ahead {
		if s < rounds {
			lo := s * round
			launch(f, &ring[s%(ahead+1)], keys[lo:min(lo+round, len(keys))], gens)
		}
		if s < ahead {
			continue
		}
		r := &ring[(s-ahead)%(ahead+1)]
		start := (s - ahead) * round
		for i := range r.n {
			h1, h2 := r.h[i].H1, r.h[i].H2
			if results != nil {
				in := f.probe(h1, h2, f.Live(now))
				results[start+i] = in
				if in && mode == AddNew {
					continue
				}
			}
			f.Add(h1, h2, now)
		}
	}
}

// alignedWords returns n zero words starting a cache line, so that every
// generation's blocks (M/64 words, a multiple of 8) are lines.
func alignedWords(n uint64) []uint64 { return hugepage.AlignedWords(n) }

// bitsOf returns generation g as internal/blocked takes it.
func (f *Filter) bitsOf(g int) layout.Bits { return layout.Bits{Words: f.gen(g), M: f.M, K: f.K} }
