// Package window is the window filter of bloom.WindowFilter: a ring of
// generations, each a blocked filter (internal/blocked) of the same m bits
// and k hash functions, keys added to the newest, the oldest cleared and
// made the newest when the newest holds its share of the window (or, with
// a period, when its time is up). A test probes the key's block in every
// generation side by side: the block index is the same in every
// generation, as they have the same size, so one hash gives r independent
// cache misses, issued together.
//
// The two promises and why they hold (the root package's doc states them):
//
//   - No false negative among the last Window keys added. A generation is
//     rotated out only when the newest holds GenCap counted keys, and every
//     generation between them does too; the r-1 older generations and the
//     newest so hold the last (r-1)*GenCap >= Window counted additions.
//     An addition is counted when it sets a bit in the newest generation;
//     one that sets none changes no bit, and the key tests present there.
//   - A false-positive rate at or below ErrorRate at every moment: each
//     generation holds at most GenCap keys and is sized for them at
//     q = 1-(1-ErrorRate)^(1/r) (m, k from the blocked sizing of the root
//     package, windowSize), and a key absent from all r is reported present
//     with probability at most 1-(1-q)^r = ErrorRate: its positions are the
//     same in every generation and the generations hold independent keys.
//
// Under Grow, a generation of a time window is a base (the ring's M bits)
// and a chain of extensions, each a blocked filter of its own size, sized
// by the root package (a Sizer): when the newest sub-filter of the newest
// generation holds its capacity before the period is over, an extension
// is appended to it instead of rotating. The root sizes the base at
// q*(1-eps) and extension j at q*eps*2^-j, so that the rates of a
// generation's sub-filters sum to less than q: the union bound keeps each
// generation at or below q, and the ring at or below ErrorRate. Past
// MaxExtensions, or MaxBits in all, the window rotates early instead.
//
// This file holds the state, rotation and the single-key add and test;
// batch.go the batch pipelines; conc.go the Concurrent ring (one writer,
// tests with no lock, and why they keep both promises); encoding.go the
// binary format.
package window

import (
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// Policy is what a time window does when its newest generation holds GenCap
// keys before its period is over.
type Policy uint8

// The policies.
const (
	// RotateEarly rotates on count as a count window does: the rate is
	// kept, the time the window retains shrinks (Filter.OldestStart says
	// from when it retains keys).
	RotateEarly Policy = iota
	// Saturate keeps adding to the newest generation until its period is
	// over: the time is kept, the rate rises (Filter.ErrorRate measures it).
	Saturate
	// Grow appends extensions to the newest generation: time and rate are
	// kept, the memory grows (Filter.Bits reports it) until the generation
	// rotates out; past MaxExtensions it rotates early.
	Grow

	numPolicies
)

// MaxGens is the largest number of generations a window has.
const MaxGens = 64

// MaxExtensions is the most extensions a generation has under Grow. With
// capacities doubling from GenCap (the root's sizing), 16 extensions hold
// 2^16-1 times a generation's share of keys on top of its base.
const MaxExtensions = 16

// MaxPeriodSpan is the most nanoseconds Gens periods of a time window may
// span, 2^61 (73 years): the root package's Every takes at most 2^60 ns
// (36.5 years), r/(r-1) of which is at most 2^61. The clock arithmetic of
// a window (a start plus span) then never overflows for starts within span
// of either end of int64, which a decoder checks.
const MaxPeriodSpan = 1 << 61

// Ext is the size of an extension: keys, bits (a positive multiple of
// BlockBits) and hash functions.
type Ext struct {
	Cap uint64
	M   uint64
	K   uint
}

// Sizer returns the size of extension j (j >= 1, the first appended being
// 1) of a generation of the window of c, or an error if there is none.
// It must give the same answer for the same (c, j).
type Sizer func(c Config, j int) (Ext, error)

// ext is an extension of a generation: its size, words and counted keys.
type ext struct {
	Ext
	words []uint64 // cache-line aligned
	count uint64
}

// Config is what a Filter is built from. The root package computes M and K
// with its blocked sizing for GenCap keys at 1-(1-ErrorRate)^(1/Gens).
type Config struct {
	Window    uint64  // keys the window promises to keep
	ErrorRate float64 // the target rate, at every moment
	Gens      int     // r, in [2, MaxGens]
	GenCap    uint64  // keys per generation, ceil(Window/(Gens-1))
	M         uint64  // bits per generation, a positive multiple of BlockBits
	K         uint    // hash functions
	Seed      uint32
	Period    int64  // nanoseconds a generation lasts; 0 for a count window
	Policy    Policy // for a time window
	// SatLimit is a time window's SaturationLimit under Saturate as
	// encoded (a float32's value), 0 for the default; the root package
	// turns it into SatCap.
	SatLimit float64
}

// GenCapFor returns the keys per generation of a window of r generations:
// ceil(window/(r-1)).
func GenCapFor(window uint64, r int) uint64 {
	q, rem := bits.Div64(0, window, uint64(r-1))
	if rem != 0 {
		q++
	}
	return q
}

// Filter is a window filter. It is not safe for concurrent use, except
// after SetConcurrent: then one writer at a time (the root package's
// Mutex) may call the methods that change it, while any number of
// goroutines call TestAtomic and TestManyAtomic, which take no lock (see
// conc.go).
type Filter struct {
	Config
	gw        uint64   // words per generation, M/64, a multiple of 8
	words     []uint64 // Gens generations of gw words, cache-line aligned
	counts    []uint64 // keys counted in each generation
	starts    []int64  // when each generation started (unix ns; time windows)
	newest    int      // index of the newest generation
	rotations uint64   // rotations since the filter was made or cleared
	span      uint64   // Gens*Period: a generation that started span ago holds no key of the window

	// SatCap is the keys past which the newest generation of a window
	// under Saturate rotates early (SaturatedPastLimit); 0 for no limit.
	SatCap uint64
	// OnEvent, if not nil, is called with each event, by the writer
	// (under the root's lock of a Concurrent ring).
	OnEvent func(Event)
	// Events counts the events by kind since the filter was made or read.
	Events [NumEvents]uint64

	// Grow only.
	sizer   Sizer   // sizes of the extensions
	sizes   []Ext   // sizer's answers for j = 1, 2, ..., as far as asked
	exts    [][]ext // each generation's extensions, oldest first; nil slices
	nExt    int     // extensions in all: 0 outside bursts, and Test skips them
	extBits uint64  // bits of the extensions

	cs *concState // nil unless SetConcurrent
}

// New returns an empty window of c, whose fields the caller has checked;
// now is the time it starts (unix ns; any value for a count window). sizer
// sizes the extensions of a time window under Grow; it may be nil for the
// other policies.
func New(c Config, now int64, sizer Sizer) *Filter {
	gw := c.M / 64
	f := &Filter{
		Config: c,
		gw:     gw,
		words:  alignedWords(uint64(c.Gens) * gw),
		counts: make([]uint64, c.Gens),
		starts: make([]int64, c.Gens),
		exts:   make([][]ext, c.Gens),
		sizer:  sizer,
	}
	for i := range f.starts {
		f.starts[i] = now
	}
	f.span = uint64(c.Gens) * uint64(c.Period)
	return f
}

// gen returns the words of generation g.
func (f *Filter) gen(g int) []uint64 {
	lo := uint64(g) * f.gw
	return f.words[lo : lo+f.gw : lo+f.gw]
}

// block returns the index of the first word, within a generation, of the
// block of a key whose hash has h1 as its first half.
func (f *Filter) block(h1 uint64) uint64 {
	b, _ := bits.Mul64(h1, f.gw/8)
	return b * 8
}

// EventKind is what weakened a promise of a window: see Event.
type EventKind uint8

// The events.
const (
	// RotatedEarly: a time window under RotateEarly rotated on count, so
	// that it keeps less than its duration.
	RotatedEarly EventKind = iota
	// SaturatedPastLimit: a window under Saturate reached SatCap and
	// rotated early.
	SaturatedPastLimit
	// GrowLimit: a window under Grow could not grow (MaxExtensions,
	// MaxBits) and rotated early.
	GrowLimit

	NumEvents
)

// Event is an event of a window at Time (unix ns), after which it reaches
// Retained ns back: every key added since then is kept.
type Event struct {
	Kind     EventKind
	Time     int64
	Retained int64
}

// event counts an event of kind k at now and calls OnEvent.
func (f *Filter) event(k EventKind, now int64) {
	f.Events[k]++
	if f.OnEvent != nil {
		f.OnEvent(Event{Kind: k, Time: now, Retained: max(now-f.OldestStart(now), 0)})
	}
}

// The floor. Every key of a generation g of a time window was added at a
// time before starts[g]+Period: Advance starts a generation at most a
// period before the adds it takes, and when it may not rotate it moves the
// newest generation's start up to now-Period+1 (hold). So at starts[g] +
// Gens*Period (span) every key of g is more than the window's duration,
// (Gens-1)*Period, old: g has expired, and tests skip it (Live).
//
// A rotation clears the oldest generation only when none of its keys is in
// the floor, the keys that are both among the last Window keys added and
// (time windows) added within the duration: when it has expired, or the
// generations newer than it hold Window counted keys (droppable). Right
// after a burst that rotated early every generation holds keys of one
// moment, and the next rotation by time would drop Window/(r-1) of the
// last Window keys; instead, the newest generation takes keys past its
// period and its share until the newer generations hold Window keys or
// the oldest expires. It then holds fewer than Window keys (the newer ones
// together hold fewer), which bounds what it does to the rate.

// expired reports whether generation g of a time window holds no key added
// within the window's duration at now.
func (f *Filter) expired(g int, now int64) bool {
	s := f.starts[g]
	return now >= s && uint64(now)-uint64(s) >= f.span
}

// droppable reports whether the oldest generation may be cleared at now
// without dropping a key of the floor: it is empty, or has expired, or the
// generations newer than it hold Window counted keys. O(Gens).
func (f *Filter) droppable(now int64) bool {
	old := f.newest + 1
	if old == f.Gens {
		old = 0
	}
	if f.counts[old] == 0 && len(f.exts[old]) == 0 {
		return true
	}
	if f.Period != 0 && f.expired(old, now) {
		return true
	}
	var n uint64
	g := f.newest
	for range f.Gens - 1 {
		n += f.counts[g]
		for _, e := range f.exts[g] {
			n += e.count
		}
		if n >= f.Window {
			return true
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return false
}

// rotate clears the oldest generation and makes it the newest, started at
// start, or at the newest's start if that is later (starts never go back,
// even with a clock that does). Concurrent, it publishes the new newest
// last (see conc.go). The caller has checked droppable.
func (f *Filter) rotate(start int64) {
	start = max(start, f.starts[f.newest])
	g := f.newest + 1
	if g == f.Gens {
		g = 0
	}
	f.dropExts(g)
	f.counts[g] = 0
	if f.cs != nil {
		f.rotateAtomic(g, start)
	} else {
		clear(f.gen(g))
		f.starts[g] = start
	}
	f.newest = g
	f.rotations++
}

// Advance rotates a time window for the time now (unix ns): once for every
// period that has passed since the newest generation started, each new one
// starting a period after the one before, so that generations keep their
// length whenever the calls come, as long as the floor lets it drop the
// oldest (droppable); if not, the newest generation goes on past its
// period (hold). It does nothing for a count window.
func (f *Filter) Advance(now int64) {
	e := f.elapsed(now)
	if e == 0 {
		return
	}
	// The last rotation starts its generation at start+e*Period, its
	// start from then on: a Concurrent reader that sees it the newest
	// must see that start with it (conc.go). No overflow: start+e*Period
	// is at most now, and i*Period at most span.
	start, p := uint64(f.starts[f.newest]), uint64(f.Period)
	n := min(e, uint64(f.Gens))
	for i := uint64(1); i <= n; i++ {
		if !f.droppable(now) {
			f.hold(now)
			return
		}
		s := start + i*p
		if i == n {
			s = start + e*p
		}
		f.rotate(int64(s))
	}
}

// hold keeps the newest generation of a time window, whose period is over
// at now, for the adds of now: it moves its start up to now-Period+1, so
// that every key it holds was added before its start plus a period.
func (f *Filter) hold(now int64) {
	s := now - (f.Period - 1) // now >= start+Period: no overflow
	if f.cs != nil {
		atomic.StoreInt64(&f.starts[f.newest], s)
		return
	}
	f.starts[f.newest] = s
}

// elapsed returns how many whole periods of a time window have passed, at
// now, since its newest generation started: the rotations Advance makes.
// Never negative, even for a clock that went back; 0 for a count window.
func (f *Filter) elapsed(now int64) uint64 {
	s := f.starts[f.newest]
	if f.Period == 0 || now < s {
		return 0
	}
	return (uint64(now) - uint64(s)) / uint64(f.Period)
}

// Live returns how many of the newest generations hold keys a test must
// see at now: all of them in a count window; in a time window those newer
// than the newest that has expired. O(Gens).
func (f *Filter) Live(now int64) int {
	if f.Period == 0 {
		return f.Gens
	}
	g := f.newest
	for j := range f.Gens {
		if f.expired(g, now) {
			return j
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return f.Gens
}

// Add adds the key hashed to (h1, h2) at now (unix ns) and reports whether
// it was already in the sub-filter it went to, the newest of the newest
// generation (then it changed nothing). The caller has called Advance.
func (f *Filter) Add(h1, h2 uint64, now int64) (present bool) {
	if f.counts[f.newest] >= f.GenCap {
		// The newest generation's base is full. A key already in it
		// needs no room, but finding out costs a test: rotating now is
		// as good for both promises (the r-1 older generations are
		// full).
		if f.Period != 0 && f.Policy == Grow {
			return f.addExt(h1, h2, now)
		}
		f.full(now)
	}
	// The mode chosen here, not through set, which does not inline: a
	// plain Add calls blocked.Add as it did before Concurrent rings.
	w := f.gen(f.newest)
	if f.cs != nil {
		present = setAtomic(w, f.M, f.K, h1, h2)
	} else {
		present = blocked.Add(w, f.M, f.K, h1, h2)
	}
	if !present {
		f.counts[f.newest]++
	}
	return present
}

// full is Add when the newest generation's base holds its share: a count
// window and RotateEarly rotate, Saturate rotates once it holds SatCap
// keys, if the floor lets them drop the oldest generation (droppable);
// otherwise the key goes into the newest past its share.
func (f *Filter) full(now int64) {
	switch {
	case f.Period == 0:
		if f.droppable(now) {
			f.rotate(now)
		}
	case f.Policy == RotateEarly:
		if f.droppable(now) {
			f.rotate(now)
			f.event(RotatedEarly, now)
		}
	case f.Policy == Saturate:
		if f.SatCap != 0 && f.counts[f.newest] >= f.SatCap && f.droppable(now) {
			f.rotate(now)
			f.event(SaturatedPastLimit, now)
		}
	}
}

// set is blocked.Add on the words w of a sub-filter of m bits and k hash
// functions, with atomic ORs when f is Concurrent.
func (f *Filter) set(w []uint64, m uint64, k uint, h1, h2 uint64) bool {
	if f.cs != nil {
		return setAtomic(w, m, k, h1, h2)
	}
	return blocked.Add(w, m, k, h1, h2)
}

// addExt is Add under Grow once the newest generation's base is full: into
// its newest extension, appending one when that is full too, or rotating
// early when the generation may not grow (MaxExtensions, MaxBits, or no
// size from the sizer) and the floor lets it (droppable); if it does not,
// the key goes into the newest extension (or the base) past its capacity.
func (f *Filter) addExt(h1, h2 uint64, now int64) bool {
	x := f.exts[f.newest]
	if len(x) == 0 || x[len(x)-1].count >= x[len(x)-1].Cap {
		if !f.grow() {
			if f.droppable(now) {
				f.rotate(now)
				f.event(GrowLimit, now)
			}
			if x = f.exts[f.newest]; len(x) == 0 {
				present := f.set(f.gen(f.newest), f.M, f.K, h1, h2)
				if !present {
					f.counts[f.newest]++
				}
				return present
			}
		}
		x = f.exts[f.newest]
	}
	e := &x[len(x)-1]
	present := f.set(e.words, e.M, e.K, h1, h2)
	if !present {
		e.count++
	}
	return present
}

// grow appends an extension to the newest generation and reports whether
// it could. O(bits of the extension/64), for the allocation.
func (f *Filter) grow() bool {
	g := f.newest
	j := len(f.exts[g]) + 1
	if j > MaxExtensions {
		return false
	}
	e, ok := f.extSize(j)
	if !ok || e.M > format.MaxBits-f.Bits() {
		return false
	}
	f.exts[g] = append(f.exts[g], ext{Ext: e, words: alignedWords(e.M / 64)})
	f.nExt++
	f.extBits += e.M
	f.publishExts(g)
	return true
}

// extSize returns the size of extension j, from the sizer once per j.
func (f *Filter) extSize(j int) (Ext, bool) {
	if j <= len(f.sizes) {
		return f.sizes[j-1], true
	}
	if f.sizer == nil || j != len(f.sizes)+1 {
		return Ext{}, false
	}
	e, err := f.sizer(f.Config, j)
	if err != nil || e.Cap == 0 || e.M == 0 || e.M%blocked.BlockBits != 0 || e.M > format.MaxBits || e.K < 1 || e.K > format.MaxHashes {
		return Ext{}, false
	}
	f.sizes = append(f.sizes, e)
	return e, true
}

// dropExts drops the extensions of generation g.
func (f *Filter) dropExts(g int) {
	for _, e := range f.exts[g] {
		f.extBits -= e.M
	}
	f.nExt -= len(f.exts[g])
	had := f.exts[g] != nil
	f.exts[g] = nil
	if had {
		f.publishExts(g)
	}
}

// Bits returns the bits of the ring and of every extension.
func (f *Filter) Bits() uint64 { return uint64(f.Gens)*f.M + f.extBits }

// Extensions returns the number of extensions, in all generations.
func (f *Filter) Extensions() int { return f.nExt }

// Test reports whether any of the newest live generations (see Live) holds
// the key hashed to (h1, h2). It prefetches the key's line in every
// generation, then a first pass reads the key's first two in-block
// candidates in every generation, with no branch between them; the generations still in the running are
// then tested in full, newest first.
func (f *Filter) Test(h1, h2 uint64, live int) bool {
	i := f.block(h1)
	p0 := h2 & (blocked.BlockBits - 1)
	w := f.words
	// Prefetches of the key's line in every live generation first: unlike
	// loads, they hold no slot of the load queue while they wait, so all
	// r misses are in flight at once. Against the loads alone, Test of
	// absent keys at 10^7 keys, 1%, went from 6.11, 4.07, 2.98 to 2.70,
	// 2.93, 3.01 times the blocked BloomFilter's time (BenchmarkWindowRatio,
	// three alternated runs of each build).
	var idx [MaxGens]uint64
	g := f.newest
	for j := range live {
		idx[j] = uint64(g)*f.gw + i + p0>>6
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	prefetch.Words(w, idx[:live])
	if f.nExt != 0 {
		f.prefetchExts(h1, h2, live)
	}
	return f.probe(h1, h2, live)
}

// prefetchExts prefetches the key's line in every extension of the newest
// live generations, so that their misses overlap those of the ring.
func (f *Filter) prefetchExts(h1, h2 uint64, live int) {
	var ps [32]*uint64
	n := 0
	w0 := h2 & (blocked.BlockBits - 1) >> 6 // the first candidate's word
	g := f.newest
	for range live {
		for i := range f.exts[g] {
			e := &f.exts[g][i]
			b, _ := bits.Mul64(h1, e.M/blocked.BlockBits) // blocked.Block's
			ps[n] = &e.words[b*8+w0]
			if n++; n == len(ps) {
				prefetch.Pointers(ps[:])
				n = 0
			}
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	prefetch.Pointers(ps[:n])
}

// probe is Test without its prefetches, for the batch calls, whose
// pipeline has prefetched the key's lines.
func (f *Filter) probe(h1, h2 uint64, live int) bool {
	i := f.block(h1)
	k := f.K
	p0, p1 := h2&(blocked.BlockBits-1), h2>>9&(blocked.BlockBits-1)
	if k == 1 {
		p1 = p0
	}
	w := f.words
	var alive uint64 // bit j: the generation j after the newest, backwards
	g := f.newest
	for j := range live {
		b := uint64(g)*f.gw + i
		alive |= (w[b+p0>>6] >> (p0 & 63) & (w[b+p1>>6] >> (p1 & 63)) & 1) << j
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	for ; alive != 0; alive &= alive - 1 {
		g := f.newest - bits.TrailingZeros64(alive)
		if g < 0 {
			g += f.Gens
		}
		if f.holds((*[8]uint64)(w[uint64(g)*f.gw+i:]), h2) {
			return true
		}
	}
	return f.nExt != 0 && f.testExts(h1, h2, live)
}

// testExts reports whether an extension of the newest live generations
// holds the key: the single-key test of internal/blocked on each, newest
// generation first. They exist only while a burst is in the window.
func (f *Filter) testExts(h1, h2 uint64, live int) bool {
	g := f.newest
	for range live {
		for i := range f.exts[g] {
			e := &f.exts[g][i]
			if blocked.Test(e.words, e.M, e.K, h1, h2) {
				return true
			}
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return false
}

// holds reports whether blk holds the key whose second half of hash is h2,
// the first two candidates aside (Test's first pass read them): the test
// of internal/blocked after its FirstTwo.
func (f *Filter) holds(blk *[8]uint64, h2 uint64) bool {
	k := f.K
	if blocked.Later3(blk, h2, k)&blocked.Later6(blk, h2, k)&1 == 0 {
		return false
	}
	return k <= blocked.FieldsPerWord && blocked.DistinctFields(h2&blocked.FieldBits, k) || blocked.Rest(blk, h2, k)
}

// Count returns the keys counted in the live generations at now: an upper
// bound on the distinct keys the window holds (a key added again after it
// left the newest generation counts again).
func (f *Filter) Count(now int64) uint64 {
	var n uint64
	g := f.newest
	for range f.Live(now) {
		n += f.counts[g]
		for _, e := range f.exts[g] {
			n += e.count
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return n
}

// NewestCount returns the keys counted in the newest generation.
func (f *Filter) NewestCount() uint64 { return f.counts[f.newest] }

// Rotations returns the rotations since the filter was made or cleared.
func (f *Filter) Rotations() uint64 { return f.rotations }

// OldestStart returns when the oldest live generation at now started (unix
// ns): a time window holds every key added since then.
func (f *Filter) OldestStart(now int64) int64 {
	g := f.newest - f.Live(now) + 1
	if g < 0 {
		g += f.Gens
	}
	if f.Live(now) == 0 {
		return now
	}
	return f.starts[g]
}

// ErrorRate returns the false-positive rate of the live generations at now
// as their bits stand: 1 - prod(1 - rate_g), each generation's rate from its
// blocks (blocked.ErrorRate). O(Gens*M/64).
func (f *Filter) ErrorRate(now int64) float64 {
	miss := 1.0
	g := f.newest
	for range f.Live(now) {
		miss *= 1 - blocked.ErrorRate(f.bitsOf(g), false)
		for _, e := range f.exts[g] {
			miss *= 1 - blocked.ErrorRate(layout.Bits{Words: e.words, M: e.M, K: e.K}, false)
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return 1 - miss
}

// SetBits returns the bits set in the live generations at now.
func (f *Filter) SetBits(now int64) uint64 {
	var n int
	g := f.newest
	for range f.Live(now) {
		for _, x := range f.gen(g) {
			n += bits.OnesCount64(x)
		}
		for _, e := range f.exts[g] {
			for _, x := range e.words {
				n += bits.OnesCount64(x)
			}
		}
		if g--; g < 0 {
			g = f.Gens - 1
		}
	}
	return uint64(n)
}

// Clear empties every generation and drops every extension, restarting
// them at now.
func (f *Filter) Clear(now int64) {
	for g := range f.exts {
		f.dropExts(g)
	}
	clear(f.counts)
	f.newest, f.rotations = 0, 0
	if f.cs != nil {
		f.clearAtomic(now)
		return
	}
	clear(f.words)
	for i := range f.starts {
		f.starts[i] = now
	}
}

// Clone returns an independent copy of f, Concurrent if f is. Concurrent,
// its caller holds the writer's lock.
func (f *Filter) Clone() *Filter {
	c := *f
	c.cs = nil
	c.words = alignedWords(uint64(len(f.words)))
	copy(c.words, f.words)
	c.counts = append([]uint64(nil), f.counts...)
	c.starts = append([]int64(nil), f.starts...)
	c.sizes = append([]Ext(nil), f.sizes...)
	c.exts = make([][]ext, len(f.exts))
	for g, x := range f.exts {
		for _, e := range x {
			w := alignedWords(uint64(len(e.words)))
			copy(w, e.words)
			c.exts[g] = append(c.exts[g], ext{Ext: e.Ext, words: w, count: e.count})
		}
	}
	if f.cs != nil {
		c.SetConcurrent()
	}
	return &c
}

// Equal reports whether f and o have the same configuration and state:
// what the encoding holds. Generations are compared oldest first, so that
// two windows fed the same keys are equal whatever slot is their newest.
func (f *Filter) Equal(o *Filter) bool {
	if f.Config != o.Config || f.rotations != o.rotations {
		return false
	}
	for j := range f.Gens {
		g, h := (f.newest+1+j)%f.Gens, (o.newest+1+j)%o.Gens
		if f.counts[g] != o.counts[h] || f.starts[g] != o.starts[h] {
			return false
		}
		if !slices.Equal(f.gen(g), o.gen(h)) || len(f.exts[g]) != len(o.exts[h]) {
			return false
		}
		for i, e := range f.exts[g] {
			d := o.exts[h][i]
			if e.Ext != d.Ext || e.count != d.count || !slices.Equal(e.words, d.words) {
				return false
			}
		}
	}
	return true
}

// EachSub calls fn with the bits, hash functions and bits set of each
// sub-filter of the generation j after the newest, backwards (0 for the
// newest): its base, then its extensions.
func (f *Filter) EachSub(j int, fn func(m uint64, k uint, set uint64)) {
	g := f.newest - j
	if g < 0 {
		g += f.Gens
	}
	fn(f.M, f.K, onesCount(f.gen(g)))
	for _, e := range f.exts[g] {
		fn(e.M, e.K, onesCount(e.words))
	}
}

func onesCount(w []uint64) uint64 {
	var n int
	for _, x := range w {
		n += bits.OnesCount64(x)
	}
	return uint64(n)
}
