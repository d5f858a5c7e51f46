package bloom

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/window"
)

// windowSettings collects the options that only NewWindow and ReadWindow
// take.
type windowSettings struct {
	every     time.Duration    // Every; 0 for a count window
	clock     func() time.Time // Clock; nil for time.Now
	policy    Overflow         // OnOverflow
	policySet bool
	gens      int // Generations; 0 to let NewWindow choose
}

// none returns an error if a window option was given to another
// constructor.
func (w *windowSettings) none() error {
	if w.every != 0 || w.clock != nil || w.policySet || w.gens != 0 {
		return paramError("Every, Clock, OnOverflow and Generations apply only to NewWindow and ReadWindow")
	}
	return nil
}

// Every makes NewWindow build a time window: every key added within the
// last d is kept (Test reports it present), whatever the calls in between,
// and a key is forgotten at most d*r/(r-1) after it was added, r being the
// number of generations; window, NewWindow's first argument, is then the
// number of keys expected within d, for which the window is sized. d must be
// positive and given at most once. See OnOverflow for what happens when
// more keys come.
func Every(d time.Duration) Option {
	return Option{func(s *settings) error {
		if s.win.every != 0 {
			return paramError("Every may be given only once")
		}
		if d <= 0 {
			return paramError("Every needs a positive duration, got %v", d)
		}
		s.win.every = d
		return nil
	}}
}

// Clock makes a time window read the time from now instead of time.Now,
// for tests and for replaying logs. It applies to NewWindow with Every and to
// ReadWindow; the clock is not part of the encoding. A clock that goes back
// does not rotate the window back: its generations stay as they are until
// the clock passes the newest one's end again.
func Clock(now func() time.Time) Option {
	return Option{func(s *settings) error {
		if s.win.clock != nil {
			return paramError("Clock may be given only once")
		}
		if now == nil {
			return paramError("Clock needs a function, got nil")
		}
		s.win.clock = now
		return nil
	}}
}

// Overflow is what a time window does when more keys come within a
// generation's time than the generation was sized for (window/(r-1) keys
// in d/(r-1)): then no bounded memory keeps both of its promises, and the
// policy chooses between the time kept (RotateEarly gives it up), the rate
// (Saturate) and the memory (Grow).
type Overflow uint8

// The overflow policies.
const (
	// RotateEarly, the default, starts a new generation when the newest is
	// full, as a count window does: the false-positive rate stays at or
	// below the target, and the window keeps at least its last window keys
	// but may keep less than its duration (RetainedSince reports after
	// when it keeps every key).
	RotateEarly Overflow = iota

	// Saturate keeps adding to the newest generation until its time is
	// up: every key of the duration is kept, and the false-positive rate
	// rises above the target (EstimatedErrorRate reports it).
	Saturate

	// Grow keeps both promises: when the newest generation is full
	// before its time is up, it appends an extension to it, a blocked
	// filter of its own, and adds there. Every key added within the
	// duration is kept, the false-positive rate stays at or below
	// ErrorRate at every moment, and the memory grows with the burst:
	// Bits reports it, Extensions counts the extensions. The extensions
	// of a generation are dropped when it leaves the window, so the
	// memory returns to the ring's once a burst is older than
	// Duration*r/(r-1).
	//
	// The rate is kept by construction: a generation's rate q (see
	// WindowFilter) is shared between its base, sized at q*7/8, and its
	// extensions, the j-th (j = 1, 2, ...) holding window/(r-1)*2^(j-1)
	// keys at q/8*2^-j, so that all of them together stay within q. A
	// burst of b times a generation's share takes about log2(b)+1
	// extensions, and a test of an absent key reads one cache line more
	// per extension in the window. The ring itself, sized at q*7/8, takes
	// 0.39 bit more per window key than under the other policies at 1%
	// (17.38 against 16.99), 0.46 at 0.1% (24.74 against 24.28).
	//
	// A generation has at most 16 extensions (2^16-1 times its share of
	// keys on top of its base), and all of them together at most MaxBits
	// bits; past that, the window rotates early, as under RotateEarly: the
	// rate is kept, and RetainedSince reports the shorter time kept.
	// Growing allocates the extension (O(its bits)) under the lock of a
	// Concurrent window.
	Grow
)

// String returns the name of p: "RotateEarly", "Saturate" or "Grow".
func (p Overflow) String() string {
	switch p {
	case RotateEarly:
		return "RotateEarly"
	case Saturate:
		return "Saturate"
	case Grow:
		return "Grow"
	}
	return fmt.Sprintf("Overflow(%d)", uint8(p))
}

// OnOverflow sets the overflow policy of a time window (default
// RotateEarly): RotateEarly, Saturate or Grow. It needs Every and may be
// given at most once.
func OnOverflow(p Overflow) Option {
	return Option{func(s *settings) error {
		if s.win.policySet {
			return paramError("OnOverflow may be given only once")
		}
		if p != RotateEarly && p != Saturate && p != Grow {
			return paramError("OnOverflow needs RotateEarly, Saturate or Grow, got %d", p)
		}
		s.win.policy, s.win.policySet = p, true
		return nil
	}}
}

// Generations sets the number r of generations of a window, in [2, 64]
// (default: the r in [2, 16] that takes the fewest bits, 7 or 8 at 1%). More
// generations waste less memory on the generation being filled and forget
// keys closer to the end of the window, at the cost of a probe per
// generation in Test.
func Generations(r int) Option {
	return Option{func(s *settings) error {
		if s.win.gens != 0 {
			return paramError("Generations may be given only once")
		}
		if r < 2 || r > window.MaxGens {
			return paramError("Generations must be in [2, %d], got %d", window.MaxGens, r)
		}
		s.win.gens = r
		return nil
	}}
}

// WindowFilter is a filter of the recent past: of the last window keys
// added (NewWindow), or of the keys added within the last d (with Every).
// It keeps two promises at every moment:
//
//   - No false negative for any of the last window keys added: Test reports
//     each of them present. (A key added again counts again, unless it was
//     already in the newest generation; keys added once each, as a
//     deduplicator adds them, are the last window distinct keys.) A time
//     window also keeps every key added within its duration, unless
//     RotateEarly had to rotate early, or Grow reached its limit (see
//     OnOverflow).
//   - A false-positive rate at or below ErrorRate: Test reports a key that
//     is not among the keys kept present with probability at most
//     ErrorRate. Under Saturate, a time window may break this one, and
//     EstimatedErrorRate says by how much.
//
// Under Grow a time window keeps both, and its memory grows with a burst
// instead (Bits reports it; see Grow).
//
// It is a ring of r generations, blocked filters of ceil(window/(r-1)) keys
// at 1-(1-ErrorRate)^(1/r) (about ErrorRate/r) each: keys go into the newest; when the newest is full (or
// its time, d/(r-1), is up) the oldest is cleared and becomes the newest.
// A key is forgotten after at most r*ceil(window/(r-1)) more keys (or
// d*r/(r-1) of time). At 1% it takes 17.0 bits per window key (r = 7), at
// 0.1% 24.3 (r = 8); under Grow 17.4 and 24.7 without a burst. Test reads
// the key's cache line in every generation, all at once, and one line per
// extension of a window under Grow; Add writes the newest one's.
//
// A zero WindowFilter is not usable: create one with NewWindow or
// ReadWindow; its methods panic. Without the Concurrent option it is not
// safe for concurrent use, though concurrent Test calls are safe. With
// Concurrent, every method may be called from any number of goroutines:
// adds, rotation, growth, Clear and decoding into it are serialized by a
// lock, and the tests (Test, TestMany and their String and Hash forms) take
// no lock: they read the generations with atomic loads beside the adds and
// write no shared memory (a lock's counter would bounce between the cores
// of concurrent readers). A test concurrent with a rotation
// may miss only keys of the generation being dropped, which leave the window
// then. The methods that read several counters for one answer (Count,
// EstimatedErrorRate, the encoders, Clone, ...) take the adds' lock.
//
// The binary encoding (all integers little-endian), in the style of format
// version 3: a 64-byte header: magic "BLMW", version uint16 (3), overflow
// policy uint8 (0 RotateEarly, 1 Saturate, 2 Grow), a zero byte, seed
// uint32, k uint32, bits per generation uint64 (a multiple of 512), window
// uint64, error rate float64, keys per generation uint64
// (ceil(window/(r-1))), r uint16, two zero bytes, section size uint32 (a
// power of two, 2^20 as written), four zero bytes, and the CRC-32C
// (Castagnoli) of the 60 bytes before it. Then a table: the generation
// period in nanoseconds int64 (0 for a count window), the rotations uint64,
// and for each generation, oldest first, its key count uint64 and its start
// int64 (Unix nanoseconds); under Grow only, then for each generation,
// oldest first, its number of extensions uint64 (at most 16), and for each
// extension, generations oldest first and each generation's extensions in
// the order they were made, a 32-byte record: its capacity in keys uint64,
// its bits uint64 (a multiple of 512), its k uint32, four zero bytes, its
// key count uint64 (a decoder checks the capacity, bits and k against the
// sizing of Grow). Then the table's CRC-32C, and zeros up to a multiple of
// 64 bytes. Then the words of the generations, oldest first, each a blocked
// filter's words; under Grow, the words of the extensions follow, in the
// order of their records; and the CRC-32C of each section of all those
// words. The text encoding is the standard base64 of the binary one.
type WindowFilter struct {
	f     *window.Filter   // nil for a Concurrent window: conc.ring holds it
	conc  *windowConc      // Concurrent
	clock func() time.Time // Clock's; nil for time.Now
}

// windowConc is the state of a Concurrent window: the lock of its writers
// and its ring (Concurrent, see internal/window's conc.go), which decoding
// into the window replaces while tests, which take no lock, may be loading
// it.
type windowConc struct {
	mu   sync.Mutex
	ring atomic.Pointer[window.Filter]
}

// newWindowConc returns the state of a Concurrent window of the ring f.
func newWindowConc(f *window.Filter) *windowConc {
	f.SetConcurrent()
	c := new(windowConc)
	c.ring.Store(f)
	return c
}

// setRing makes f the ring of w, as decoding into w does, in w's mode.
func (w *WindowFilter) setRing(f *window.Filter) {
	if c := w.conc; c != nil {
		f.SetConcurrent()
		c.mu.Lock()
		c.ring.Store(f)
		c.mu.Unlock()
		return
	}
	w.f = f
}

const errZeroWindow = "bloom: use of a zero WindowFilter (create one with NewWindow)"

// NewWindow returns an empty window filter that keeps the last window keys
// added at a false-positive rate of at most errorRate (see WindowFilter),
// or with Every(d) the keys of the last d, sized for window keys in d.
// Options: Seed, Concurrent, Blocked (the only layout), Generations,
// Every, OnOverflow, Clock. It returns an error wrapping
// ErrInvalidParameter for a window of 0, an errorRate not in (0, 1), a
// ring of more than MaxBits bits, Classic, growth options, and OnOverflow
// or Clock without Every.
func NewWindow(window uint64, errorRate float64, opts ...Option) (*WindowFilter, error) {
	s, c, err := planWindow(window, errorRate, opts)
	if err != nil {
		return nil, err
	}
	w := &WindowFilter{clock: s.win.clock}
	f := newWindowRing(c, w.now(c.Period))
	if s.concurrent {
		w.conc = newWindowConc(f)
	} else {
		w.f = f
	}
	return w, nil
}

// planWindow checks NewWindow's arguments and returns its settings and the
// configuration of its ring (WindowSize reports it).
func planWindow(keys uint64, errorRate float64, opts []Option) (settings, window.Config, error) {
	s, err := newSettings(opts)
	if err != nil {
		return s, window.Config{}, err
	}
	if err := s.windowOnly(); err != nil {
		return s, window.Config{}, err
	}
	if s.win.every == 0 && (s.win.policySet || s.win.clock != nil) {
		return s, window.Config{}, paramError("OnOverflow and Clock need Every")
	}
	if keys == 0 {
		return s, window.Config{}, paramError("window must be at least 1 key, got 0")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return s, window.Config{}, paramError("errorRate must be in (0, 1), got %v", errorRate)
	}
	r, m, k, err := windowSize(keys, errorRate, s.win.gens, s.win.every != 0 && s.win.policy == Grow)
	if err != nil {
		return s, window.Config{}, err
	}
	return s, windowConfig(keys, errorRate, r, m, k, s), nil
}

// windowConfig is the configuration of NewWindow's ring.
func windowConfig(keys uint64, errorRate float64, r int, m uint64, k uint, s settings) window.Config {
	c := window.Config{Window: keys, ErrorRate: errorRate, Gens: r, GenCap: window.GenCapFor(keys, r), M: m, K: k, Seed: s.seed}
	if s.win.every != 0 {
		// A period rounded up, so that r-1 of them cover d.
		c.Period = (int64(s.win.every) + int64(r-2)) / int64(r-1)
		c.Policy = window.Policy(s.win.policy)
	}
	return c
}

// windowSizer sizes the extensions of a window under Grow (windowSizer),
// for internal/window.
func windowSizer(c window.Config, j int) (window.Ext, error) {
	capacity, m, k, err := windowExtSize(c.GenCap, c.ErrorRate, c.Gens, j)
	return window.Ext{Cap: capacity, M: m, K: k}, err
}

// windowExtensions returns the sizes of the extensions of a generation of
// the ring c under Grow, as far as windowSizer gives them and at most
// window.MaxExtensions: those a burst adds, in order.
func windowExtensions(c window.Config) []WindowExtension {
	var xs []WindowExtension
	for j := 1; j <= window.MaxExtensions; j++ {
		x, err := windowSizer(c, j)
		if err != nil {
			break
		}
		xs = append(xs, WindowExtension{Capacity: x.Cap, Bits: x.M, Hashes: x.K})
	}
	return xs
}

func newWindowRing(c window.Config, now int64) *window.Filter {
	return window.New(c, now, windowSizer)
}

// windowOnly returns an error for options that do not apply to windows.
func (s *settings) windowOnly() error {
	switch {
	case s.growth != growthNone || s.tightening != 0:
		return paramError("Linear, Exponential and Tightening apply only to NewScalable")
	case s.classic:
		return paramError("a WindowFilter's generations are blocked: Classic does not apply")
	}
	return nil
}

// now returns the time of a time window (period > 0) in Unix nanoseconds,
// and 0 for a count window, which reads no clock.
func (w *WindowFilter) now(period int64) int64 {
	if period == 0 {
		return 0
	}
	if w.clock != nil {
		return w.clock().UnixNano()
	}
	return time.Now().UnixNano()
}

// ring returns the ring of w, panicking for a zero WindowFilter. Of a
// Concurrent window, it returns the ring as it is now: a writer loads it
// again once it holds the lock.
func (w *WindowFilter) ring() *window.Filter {
	if f := w.load(); f != nil {
		return f
	}
	panic(errZeroWindow)
}

// load returns the ring of w, or nil for a zero WindowFilter.
func (w *WindowFilter) load() *window.Filter {
	if c := w.conc; c != nil {
		return c.ring.Load()
	}
	return w.f
}

// windowAdd is Add and TestAndAdd (test). It is not generic (the hashed
// calls pass a hash's 8 bytes, layout.HashBytes), as a generic function called
// from an inlined method made the caller's key escape: see addKey and
// TestWindowNoAllocsFromOtherPackage (1 allocation per Add of a stack
// array, 2 per batch, before).
func windowAdd(w *WindowFilter, key []byte, test bool) (present bool) {
	f := w.ring()
	h1, h2 := murmur.Sum128(key, f.Seed)
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g := c.ring.Load(); g != f { // decoded into meanwhile
			f = g
			h1, h2 = murmur.Sum128(key, f.Seed)
		}
	}
	var now int64
	if f.Period != 0 {
		now = w.now(f.Period)
		f.Advance(now)
	}
	if test {
		present = f.Test(h1, h2, f.Gens)
	}
	f.Add(h1, h2, now)
	return present
}

// windowTest is Test, not generic, as windowAdd. A Concurrent window's
// takes no lock (TestAtomic).
func windowTest(w *WindowFilter, key []byte) bool {
	f := w.ring()
	h1, h2 := murmur.Sum128(key, f.Seed)
	if w.conc != nil {
		return f.TestAtomic(h1, h2, w.now(f.Period))
	}
	live := f.Gens
	if f.Period != 0 {
		live = f.Live(w.now(f.Period))
	}
	return f.Test(h1, h2, live)
}

// Add inserts key into the newest generation: afterwards Test(key) reports
// true for at least the next window keys added (or the window's duration).
// It hashes key once and writes one cache line; when the newest generation
// is full it first clears the oldest, O(bits per generation/64) once per
// window/(r-1) keys, or under Grow appends an extension to the newest,
// O(bits of the extension/64), each twice the size of the one before.
func (w *WindowFilter) Add(key []byte) { windowAdd(w, key, false) }

// AddString is Add for a string key, without copying or allocating.
func (w *WindowFilter) AddString(key string) { windowAdd(w, bytesOf(key), false) }

// AddHash is Add for the key whose 64-bit hash is h: Add of its 8
// little-endian bytes (see BloomFilter.TestHash).
func (w *WindowFilter) AddHash(h uint64) { windowAdd(w, layout.HashBytes(&h), false) }

// Test reports whether key may be among the keys the window keeps: false
// means it is not (it was never added, or was forgotten); true means it
// probably is (wrong with a probability of at most ErrorRate). It reads the
// key's cache line in every generation, all at once.
func (w *WindowFilter) Test(key []byte) bool { return windowTest(w, key) }

// TestString is Test for a string key, without copying or allocating.
func (w *WindowFilter) TestString(key string) bool { return windowTest(w, bytesOf(key)) }

// TestHash is Test for the key whose 64-bit hash is h (see AddHash).
func (w *WindowFilter) TestHash(h uint64) bool { return windowTest(w, layout.HashBytes(&h)) }

// TestAndAdd reports whether key may be among the keys kept (as Test) and
// adds it (as Add), in one call: under Concurrent, one of several
// goroutines adding the same new key at once sees it absent.
func (w *WindowFilter) TestAndAdd(key []byte) bool { return windowAdd(w, key, true) }

// TestAndAddString is TestAndAdd for a string key, without copying or
// allocating.
func (w *WindowFilter) TestAndAddString(key string) bool { return windowAdd(w, bytesOf(key), true) }

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h.
func (w *WindowFilter) TestAndAddHash(h uint64) bool { return windowAdd(w, layout.HashBytes(&h), true) }

// windowAddMany is the batch add, with results for TestAndAddMany. The
// exported batch methods are go:noinline, as BloomFilter's are: a caller in
// another package that inlined one called this generic function's
// instantiation, and its keys escaped.
func windowAddMany[K layout.Key](w *WindowFilter, keys []K, results []bool) []bool {
	f := w.ring()
	if results != nil {
		results = batchResults(results, len(keys))
	}
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		f = c.ring.Load()
	}
	now := w.now(f.Period)
	f.Advance(now)
	window.AddMany(f, keys, results, now)
	return results
}

// windowTestMany is the batch test; a Concurrent window's takes no lock
// (TestManyAtomic).
func windowTestMany[K layout.Key](w *WindowFilter, keys []K, results []bool) []bool {
	f := w.ring()
	results = batchResults(results, len(keys))
	if w.conc != nil {
		window.TestManyAtomic(f, keys, results, w.now(f.Period))
		return results
	}
	window.TestMany(f, keys, results, f.Live(w.now(f.Period)))
	return results
}

// AddMany adds every key of keys, in order, like calling Add on each (with
// one reading of the clock for the whole batch), overlapping the cache
// misses of several keys.
//
//go:noinline
func (w *WindowFilter) AddMany(keys [][]byte) { windowAddMany(w, keys, nil) }

// AddManyStrings is AddMany for string keys, without copying them.
//
//go:noinline
func (w *WindowFilter) AddManyStrings(keys []string) { windowAddMany(w, keys, nil) }

// AddManyHashes is AddMany for keys given as 64-bit hashes (see AddHash).
//
//go:noinline
func (w *WindowFilter) AddManyHashes(hashes []uint64) { windowAddMany(w, hashes, nil) }

// TestMany reports, for every key of keys, whether it may be among the keys
// kept, as Test does: it fills results[:len(keys)] (allocating it if
// shorter) and returns it. It hashes and prefetches keys rounds ahead of
// those it tests, in every generation.
//
//go:noinline
func (w *WindowFilter) TestMany(keys [][]byte, results []bool) []bool {
	return windowTestMany(w, keys, results)
}

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
func (w *WindowFilter) TestManyStrings(keys []string, results []bool) []bool {
	return windowTestMany(w, keys, results)
}

// TestManyHashes is TestMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return windowTestMany(w, hashes, results)
}

// TestAndAddMany adds every key of keys in order and reports for each what
// TestAndAdd would have, filling and returning results like TestMany.
//
//go:noinline
func (w *WindowFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)))
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyStrings(keys []string, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)))
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	return windowAddMany(w, hashes, batchResults(results, len(hashes)))
}

// read runs fn on the ring at the window's time; on a Concurrent window,
// under the writers' lock, for a consistent snapshot.
func (w *WindowFilter) read(fn func(f *window.Filter, now int64)) {
	f := w.ring()
	if c := w.conc; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		f = c.ring.Load()
	}
	fn(f, w.now(f.Period))
}

// Window returns the number of keys the window keeps (NewWindow's window).
func (w *WindowFilter) Window() uint64 { return w.ring().Window }

// Capacity returns Window, for the Filter interface.
func (w *WindowFilter) Capacity() uint64 { return w.Window() }

// ErrorRate returns the target false-positive rate, kept at every moment.
func (w *WindowFilter) ErrorRate() float64 { return w.ring().Config.ErrorRate }

// Seed returns the murmur3 seed.
func (w *WindowFilter) Seed() uint32 { return w.ring().Seed }

// Generations returns r, the number of generations.
func (w *WindowFilter) Generations() int { return w.ring().Gens }

// GenerationCapacity returns the keys of one generation, window/(r-1)
// rounded up.
func (w *WindowFilter) GenerationCapacity() uint64 { return w.ring().GenCap }

// Hashes returns k, the bit positions each key sets in a generation.
func (w *WindowFilter) Hashes() uint { return w.ring().K }

// Bits returns the size of the window in bits as it stands: all
// generations, and under Grow their extensions, which come with a burst and
// go with its generation (freed by the first add, batch add or Clear after
// the generation left the window). The window takes Bits()/8 bytes, plus 16
// bytes per generation and 56 per extension (and, Concurrent, 8 more per
// generation and at most 64 more per extension). On a Concurrent window it
// takes the adds' lock, for O(1).
func (w *WindowFilter) Bits() (n uint64) {
	w.read(func(f *window.Filter, _ int64) { n = f.Bits() })
	return n
}

// Extensions returns the number of extensions the generations of a window
// under Grow have (see Grow): 0 unless a burst is in the window, and always
// 0 under the other policies. On a Concurrent window it takes the adds'
// lock, for O(1).
func (w *WindowFilter) Extensions() (n int) {
	w.read(func(f *window.Filter, _ int64) { n = f.Extensions() })
	return n
}

// Overflow returns the overflow policy of a time window (see OnOverflow),
// and RotateEarly for a count window, which rotates on count.
func (w *WindowFilter) Overflow() Overflow { return Overflow(w.ring().Policy) }

// Duration returns how long a time window keeps keys, (r-1) times the
// period of a generation (at least Every's d), and 0 for a count window.
func (w *WindowFilter) Duration() time.Duration {
	f := w.ring()
	return time.Duration(f.Period * int64(f.Gens-1))
}

// Count returns the keys counted in the generations that are still in the
// window, extensions included: those whose Add set a bit in the sub-filter
// it went to. It is at
// least the number of distinct keys the window keeps, less the false
// positives of the newest generation, and counts a key added again in a
// later generation again. O(r); on a Concurrent window it takes the adds'
// lock for that long.
func (w *WindowFilter) Count() (n uint64) {
	w.read(func(f *window.Filter, now int64) { n = f.Count(now) })
	return n
}

// Rotations returns the number of times the window dropped its oldest
// generation since it was made or cleared. On a Concurrent window it takes
// the adds' lock, for O(1).
func (w *WindowFilter) Rotations() (n uint64) {
	w.read(func(f *window.Filter, now int64) { n = f.Rotations() })
	return n
}

// RetainedSince returns a time after which a time window keeps every key
// added: Test reports present every key added strictly after it. It is the
// start of the oldest generation still in the window: once the window has
// run for Duration, between Duration and Duration*r/(r-1) ago, or later when
// RotateEarly rotated early (or Grow, past its limit). A key added at that very instant may be gone: a window
// that rotated early at t put the keys of t before the rotation in the
// generation it drops first. It returns the zero Time for a count window.
// On a Concurrent window it takes the adds' lock, for O(1).
func (w *WindowFilter) RetainedSince() (t time.Time) {
	w.read(func(f *window.Filter, now int64) {
		if f.Period != 0 {
			t = time.Unix(0, f.OldestStart(now))
		}
	})
	return t
}

// FillRatio returns the fraction of the window's bits that are set, in
// [0, 1]. O(Bits/64); on a Concurrent window it holds the adds' lock for
// that long.
func (w *WindowFilter) FillRatio() (r float64) {
	w.read(func(f *window.Filter, now int64) { r = float64(f.SetBits(now)) / float64(f.Bits()) })
	return r
}

// EstimatedCount returns the number of distinct keys the window most
// likely holds, from the bits of each generation and extension
// (EstimateBlockedCount), summed: a key in two generations counts twice.
// O(Bits/64); on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) EstimatedCount() uint64 {
	var n float64
	w.read(func(f *window.Filter, now int64) {
		for g := range f.Live(now) {
			f.EachSub(g, func(m uint64, k uint, set uint64) { n += EstimateBlockedCount(m, k, set) })
		}
	})
	if n >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(n))
}

// EstimatedErrorRate returns the probability that Test reports an absent
// key present, from the bits of the generations and their extensions as
// they stand: at most ErrorRate unless a time window Saturates. O(Bits/64);
// on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) EstimatedErrorRate() (p float64) {
	w.read(func(f *window.Filter, now int64) { p = f.ErrorRate(now) })
	return p
}

// Clear empties the window, keeping the size of its ring and dropping the
// extensions of a window under Grow; a time window restarts at the current
// time. O(Bits/64), under the adds' lock on a Concurrent window, whose
// tests concurrent with Clear may still find keys added before it.
func (w *WindowFilter) Clear() {
	w.read(func(f *window.Filter, now int64) { f.Clear(now) })
}

// Clone returns an independent copy of the window, with its mode and clock.
// O(Bits/64); on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) Clone() *WindowFilter {
	c := &WindowFilter{clock: w.clock}
	w.read(func(f *window.Filter, _ int64) { c.f = f.Clone() })
	if w.conc != nil {
		c.conc, c.f = newWindowConc(c.f), nil
	}
	return c
}

// Equal reports whether w and other hold the same window: the same
// parameters, and generations, oldest first, with the same bits, counts and
// start times, whatever their mode and clock; that is what the encoding
// holds. Two windows built alike and fed the same keys at the same times
// are equal. O(Bits/64); it holds the adds' lock of a Concurrent window
// for that long (of one of two Concurrent windows, compared with a Clone
// of the other).
func (w *WindowFilter) Equal(other *WindowFilter) (eq bool) {
	if w == other {
		return true
	}
	if w.load() == nil || other.load() == nil {
		return w.load() == other.load()
	}
	if w.conc != nil && other.conc != nil {
		// Holding both locks at once could deadlock beside
		// other.Equal(w): compare a copy of w.
		f := w.Clone().load()
		other.read(func(g *window.Filter, _ int64) { eq = f.Equal(g) })
		return eq
	}
	a, b := w, other // a may lock, b does not
	if a.conc == nil {
		a, b = b, a
	}
	a.read(func(g *window.Filter, _ int64) { eq = g.Equal(b.f) })
	return eq
}

// EncodedSize returns the length in bytes of the binary encoding, which
// grows and shrinks with the extensions of a window under Grow. On a
// Concurrent window it takes the adds' lock.
func (w *WindowFilter) EncodedSize() (n int) {
	w.read(func(f *window.Filter, _ int64) { n = int(f.EncodedSize()) })
	return n
}

// AppendBinary appends the binary encoding of the window (see
// WindowFilter) to b (encoding.BinaryAppender). O(Bits/64); on a
// Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) AppendBinary(b []byte) ([]byte, error) {
	w.read(func(f *window.Filter, _ int64) { b = f.AppendBinary(b) })
	return b, nil
}

// MarshalBinary returns the binary encoding of the window, as AppendBinary
// (and at the same cost).
func (w *WindowFilter) MarshalBinary() ([]byte, error) {
	return w.AppendBinary(make([]byte, 0, w.EncodedSize()))
}

// UnmarshalBinary decodes a window encoded by MarshalBinary into w, keeping
// w's mode and clock (a zero WindowFilter becomes a plain one reading
// time.Now). It validates the header, the table and the length before it
// allocates, checks every checksum, never panics, and leaves w unchanged
// on error, which wraps ErrCorrupt or is io.ErrUnexpectedEOF. On a
// Concurrent window it may run beside other calls, which see the window
// before or after it (it takes the adds' lock to replace the ring);
// otherwise it must not run concurrently with other calls.
func (w *WindowFilter) UnmarshalBinary(data []byte) error {
	f, err := window.Decode(data, windowSizer)
	if err != nil {
		return err
	}
	w.setRing(f)
	return nil
}

// WriteTo writes the binary encoding of the window to w (io.WriterTo)
// through a buffer of at most 64 KiB. On a Concurrent window it holds the
// adds' lock until the last byte is written, so that the encoding is of one
// moment: a slow writer delays the adds, not the tests.
func (w *WindowFilter) WriteTo(dst io.Writer) (n int64, err error) {
	w.read(func(f *window.Filter, _ int64) { n, err = f.WriteTo(dst) })
	return n, err
}

// ReadFrom decodes one window written by WriteTo or MarshalBinary from r
// into w (io.ReaderFrom), with the guarantees of UnmarshalBinary, reading
// no byte past it and allocating only what r has supplied or shown that it
// holds.
func (w *WindowFilter) ReadFrom(r io.Reader) (int64, error) {
	f, n, err := window.Read(r, r, nil, windowSizer)
	if err != nil {
		return n, err
	}
	w.setRing(f)
	return n, nil
}

// ReadWindow reads one window written by WriteTo or MarshalBinary from r,
// with the guarantees of ReadFrom, built with opts: Concurrent, Clock, and
// Seed if it agrees with the encoded one. A stream that ends before the
// first byte gives io.EOF.
func ReadWindow(r io.Reader, opts ...Option) (*WindowFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return readWindow(r, nil, s)
}

// readWindow is ReadWindow after prefix has been read from r.
func readWindow(r io.Reader, prefix []byte, s settings) (*WindowFilter, error) {
	if err := s.windowOnly(); err != nil {
		return nil, err
	}
	if s.win.every != 0 || s.win.policySet || s.win.gens != 0 {
		return nil, paramError("Every, OnOverflow and Generations contradict an encoded window")
	}
	if len(prefix) == 0 {
		var b [1]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, err // io.EOF before the first byte
		}
		prefix = b[:]
	}
	f, _, err := window.Read(r, r, prefix, windowSizer)
	if err != nil {
		return nil, err
	}
	if s.seedSet && s.seed != f.Seed {
		return nil, paramError("Seed %#x contradicts the encoded seed %#x", s.seed, f.Seed)
	}
	w := &WindowFilter{f: f, clock: s.win.clock}
	if s.concurrent {
		w.conc, w.f = newWindowConc(f), nil
	}
	return w, nil
}

// AppendText appends the text encoding of the window, the standard base64
// of its binary encoding, to b (encoding.TextAppender).
func (w *WindowFilter) AppendText(b []byte) ([]byte, error) {
	data, err := w.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the window
// (encoding.TextMarshaler).
func (w *WindowFilter) MarshalText() ([]byte, error) { return w.AppendText(nil) }

// UnmarshalText decodes a window encoded by MarshalText into w, with the
// guarantees of UnmarshalBinary: the header is checked before the decoded
// bytes are allocated.
func (w *WindowFilter) UnmarshalText(text []byte) error {
	data, err := format.DecodeText(text, window.HeaderLen, window.Least)
	if err != nil {
		return err
	}
	return w.UnmarshalBinary(data)
}

// Layout returns LayoutBlocked: every generation is a blocked filter.
func (w *WindowFilter) Layout() Layout { return LayoutBlocked }

func (*WindowFilter) isFilter() {}

// windowExtSize stops at extension 16, as internal/window does.
const _ = uint(window.MaxExtensions-16) + uint(16-window.MaxExtensions)
