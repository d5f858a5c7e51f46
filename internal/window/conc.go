package window

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// A Concurrent window: one writer, lock-free readers.
//
// The root package serializes everything that changes a Concurrent ring
// (adds, Advance, growth, Clear, decoding) with one sync.Mutex, and its
// tests take no lock: TestAtomic and TestManyAtomic read the ring with
// atomic loads only. The writer keeps its own state (newest, counts,
// exts, nExt) in plain fields, which only it reads, and publishes to the
// readers, with atomic stores:
//
//   - the words of the generations and extensions: it sets bits with
//     atomic ORs (setAtomic) and clears a generation with atomic stores;
//   - starts[g], the start of each generation (hold moves the newest's up);
//   - concState.newest, the index of the newest generation, stored after
//     that generation was cleared and its start stored;
//   - concState.view[g], each generation's extensions as an immutable
//     slice, replaced whole when the generation grows or drops them, and
//     concState.nExt, the count of them all, stored after the views.
//
// A reader loads newest n first, then the starts of n, n-1, ... in turn
// (loadView), and probes the generations before the first that has expired
// at its now (window.go: every key of generation g was added before
// starts[g]+Period, so that g holds no key of the window's duration from
// starts[g]+Gens*Period on).
//
// Why a lock-free test keeps the two promises, linearizably.
//
// No false negative. A key x whose add completed before the test began is
// in a generation G that the writer published (its start, then newest,
// and for an extension its view, then nExt) before it set x's bits, so the
// reader's loads see a newest n at least as recent as G, x's bits, and a
// view that holds G's extensions. While x is in the floor (among the last
// Window keys added and, in a time window, added within the duration), G
// is not cleared: a generation is cleared only by the rotation that drops
// it, and a rotation drops only a generation none of whose keys is in the
// floor (droppable). So a test that races a rotation can only miss keys
// of the generation being dropped, which leave the floor before that
// instant: the test is linearized just after that rotation. The reader
// skips a generation only if the start it loaded says it has expired. A
// start it loads is never older than the one the writer stored before it
// set the bits of a key of that generation (hold moves the newest's start
// up with an atomic store before the key's bits are set), so a key x it
// skips that way was added more than the duration before the reader's now.
// The generations newer than n hold only keys added after the test began.
// A slot the reader finds reused by a later rotation (a newer start) is
// probed, which at worst finds keys added after the test began; and if it
// stops at such a slot that has expired, every slot older than it in the
// reader's order was reused or dropped before it, as rotations take the
// slots oldest first.
//
// The rate. Each slot the reader probes holds at most what the writer put
// in it; only the slot the writer is reusing, read word by word while it
// is cleared and refilled, may show a test that races that rotation bits
// of both its dropped keys and of new ones.
//
// TestWindowConcurrentPromises (root package) checks the promise of no
// false negative against a writer that rotates (by count, by time, and
// with extensions under Grow). It failed, with false negatives, when
// rotateAtomic published newest before it cleared the generation and
// stored its start, and, as a data race under -race, when testExtsAtomic
// read the writer's exts instead of the published views.

// concState is what the readers of a Concurrent ring read besides the
// words and starts: the published newest and extensions.
type concState struct {
	newest atomic.Int64                    // Filter.newest, published
	nExt   atomic.Int64                    // Filter.nExt, published after the views
	view   []atomic.Pointer[[]layout.Bits] // each generation's extensions; nil for none
}

// SetConcurrent makes f a Concurrent ring: from then on its writer sets and
// clears bits with atomic stores and publishes its state for TestAtomic and
// TestManyAtomic. Call it before f is shared.
func (f *Filter) SetConcurrent() {
	if f.cs != nil {
		return
	}
	f.cs = &concState{view: make([]atomic.Pointer[[]layout.Bits], f.Gens)}
	for g := range f.exts {
		f.publishExts(g)
	}
	f.cs.newest.Store(int64(f.newest))
}

// Concurrent reports whether SetConcurrent was called.
func (f *Filter) Concurrent() bool { return f.cs != nil }

// publishExts publishes the extensions of generation g and their count to
// the readers of a Concurrent ring: a new immutable slice, so that a reader
// sees the old list or the new one, never one half appended.
func (f *Filter) publishExts(g int) {
	if f.cs == nil {
		return
	}
	var v *[]layout.Bits
	if x := f.exts[g]; len(x) != 0 {
		bs := make([]layout.Bits, len(x))
		for i, e := range x {
			bs[i] = layout.Bits{Words: e.words, M: e.M, K: e.K}
		}
		v = &bs
	}
	f.cs.view[g].Store(v)
	f.cs.nExt.Store(int64(f.nExt))
}

// rotateAtomic is rotate's clearing of generation g and publication of it
// as the newest, started at start: words and start first, newest last.
func (f *Filter) rotateAtomic(g int, start int64) {
	zeroAtomic(f.gen(g))
	atomic.StoreInt64(&f.starts[g], start)
	f.cs.newest.Store(int64(g))
}

// clearAtomic is Clear's clearing of the words and starts, restarted at
// now, and publication of generation 0 as the newest.
func (f *Filter) clearAtomic(now int64) {
	zeroAtomic(f.words)
	for i := range f.starts {
		atomic.StoreInt64(&f.starts[i], now)
	}
	f.cs.newest.Store(0)
}

func zeroAtomic(w []uint64) {
	for i := range w {
		atomic.StoreUint64(&w[i], 0)
	}
}

// setAtomic is blocked.Add for the one writer of a Concurrent ring: it sets
// the key's bits with atomic ORs where some are clear and reports whether
// none was (then it wrote nothing).
func setAtomic(w []uint64, m uint64, k uint, h1, h2 uint64) (present bool) {
	blk := blocked.Block(w, m, h1)
	mask := blocked.Mask(h2, k)
	present = true
	for i := range blk {
		if mask[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			atomic.OrUint64(&blk[i], mask[i])
			present = false
		}
	}
	return present
}

// loadView returns the newest generation of a Concurrent ring and how many
// generations are live at now (Live), from atomic loads in the order the
// writer published them: newest, then the starts from the newest back.
func (f *Filter) loadView(now int64) (newest, live int) {
	newest = int(f.cs.newest.Load())
	if f.Period == 0 {
		return newest, f.Gens
	}
	g := newest
	for j := range f.Gens {
		s := atomic.LoadInt64(&f.starts[g])
		if now >= s && uint64(now)-uint64(s) >= f.span {
			return newest, j
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return newest, f.Gens
}

// TestAtomic is Test for a Concurrent ring at now (unix ns; any value for a
// count window), with no lock: it may run beside the writer.
func (f *Filter) TestAtomic(h1, h2 uint64, now int64) bool {
	n, live := f.loadView(now)
	i := f.block(h1)
	p0 := h2 & (blocked.BlockBits - 1)
	var idx [MaxGens]uint64
	g := n
	for j := range live {
		idx[j] = uint64(g)*f.gw + i + p0>>6
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	prefetch.Words(f.words, idx[:live])
	ext := f.cs.nExt.Load() != 0
	if ext {
		f.prefetchExtsAtomic(h1, h2, n, live)
	}
	return f.probeAtomic(h1, h2, n, live, ext)
}

// prefetchExtsAtomic is prefetchExts from the published views.
func (f *Filter) prefetchExtsAtomic(h1, h2 uint64, n, live int) {
	var ps [32]*uint64
	c := 0
	w0 := h2 & (blocked.BlockBits - 1) >> 6
	g := n
	for range live {
		if v := f.cs.view[g].Load(); v != nil {
			for _, e := range *v {
				b, _ := bits.Mul64(h1, e.M/blocked.BlockBits)
				ps[c] = &e.Words[b*8+w0]
				if c++; c == len(ps) {
					prefetch.Pointers(ps[:])
					c = 0
				}
			}
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	prefetch.Pointers(ps[:c])
}

// probeAtomic is probe with atomic loads, for the generations n, n-1, ...,
// n-live+1 of a Concurrent ring, and their extensions if ext (nExt was
// loaded non-zero).
func (f *Filter) probeAtomic(h1, h2 uint64, n, live int, ext bool) bool {
	i := f.block(h1)
	k := f.K
	p0, p1 := h2&(blocked.BlockBits-1), h2>>9&(blocked.BlockBits-1)
	if k == 1 {
		p1 = p0
	}
	w := f.words
	var alive uint64
	g := n
	for j := range live {
		b := uint64(g)*f.gw + i
		alive |= (atomic.LoadUint64(&w[b+p0>>6]) >> (p0 & 63) & (atomic.LoadUint64(&w[b+p1>>6]) >> (p1 & 63)) & 1) << j
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	if alive != 0 {
		mask := blocked.Mask(h2, k)
		for ; alive != 0; alive &= alive - 1 {
			g := n - bits.TrailingZeros64(alive)
			if g < 0 {
				g += f.Gens
			}
			if holdsAtomic((*[8]uint64)(w[uint64(g)*f.gw+i:]), &mask) {
				return true
			}
		}
	}
	return ext && f.testExtsAtomic(h1, h2, n, live)
}

// testExtsAtomic is testExts from the published views.
func (f *Filter) testExtsAtomic(h1, h2 uint64, n, live int) bool {
	g := n
	for range live {
		if v := f.cs.view[g].Load(); v != nil {
			for _, e := range *v {
				if blocked.TestAtomic(e.Words, e.M, e.K, h1, h2) {
					return true
				}
			}
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return false
}

// holdsAtomic reports whether blk, loaded atomically, has every bit of mask.
func holdsAtomic(blk, mask *[8]uint64) bool {
	var miss uint64
	for i := range blk {
		miss |= mask[i] &^ atomic.LoadUint64(&blk[i])
	}
	return miss == 0
}
