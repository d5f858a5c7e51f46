package bloom

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

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
	gens      int               // Generations; 0 to let NewWindow choose
	satLimit  float64           // SaturationLimit; 0 for the default
	onEvent   func(WindowEvent) // OnEvent
}

// none returns an error if a window option was given to another
// constructor.
func (w *windowSettings) none() error {
	if w.every != 0 || w.clock != nil || w.policySet || w.gens != 0 || w.satLimit != 0 || w.onEvent != nil {
		return paramError("Every, Clock, OnOverflow, Generations, SaturationLimit and OnEvent apply only to NewWindow and ReadWindow")
	}
	return nil
}

// Every makes NewWindow build a time window: every key added within the
// last d is kept (Test reports it present), whatever the calls in between,
// and a key is forgotten at most d*r/(r-1) after it was added, r being the
// number of generations; window, NewWindow's first argument, is then the
// number of keys expected within d, for which the window is sized. d must be
// in (0, MaxEvery] and given at most once. See OnOverflow for what happens
// when more keys come.
func Every(d time.Duration) Option {
	return Option{func(s *settings) error {
		if s.win.every != 0 {
			return paramError("Every may be given only once")
		}
		if d <= 0 || d > MaxEvery {
			return paramError("Every needs a duration in (0, %v] (MaxEvery), got %v", MaxEvery, d)
		}
		s.win.every = d
		return nil
	}}
}

// MaxEvery is the longest duration Every takes: 2^60 ns, about 36.5
// years, so that the arithmetic of a window's clock never overflows.
const MaxEvery = time.Duration(1 << 60)

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
	// of its duration (see WindowFilter) but may keep less than its
	// duration (RetainedSince reports after when it keeps every key; each
	// early rotation is a RotatedEarly event).
	RotateEarly Overflow = iota

	// Saturate keeps adding to the newest generation until its time is
	// up: every key of the duration is kept, and the false-positive rate
	// rises above the target (EstimatedErrorRate reports it), up to a
	// ceiling, SaturationLimit (by default 10 times the error rate, at
	// most 0.5): past it the window rotates early, as RotateEarly does
	// (a SaturatedPastLimit event), instead of reporting nearly every key
	// present.
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

// SaturationLimit sets the ceiling of a time window under Saturate: the
// false-positive rate, in [errorRate, 1), past which the window rotates
// early (a SaturatedPastLimit event) instead of taking more keys into its
// newest generation. Default: 10 times NewWindow's errorRate, at most 0.5
// (and at least errorRate). The window rotates once its newest generation
// holds the keys at which r generations as full would reach rate (from
// the blocked filter's rate model, BlockedFalsePositiveRate: 1.54 times a
// generation's share at 1% and the default 0.1), so that the rate stays at
// or below rate (measured: 0.078 after a burst of 12 shares, against
// 0.988 without a ceiling), unless the floor of WindowFilter forbids the
// rotation, as it may under RotateEarly (docs/window.md gives the worst
// case). It is saved in the encoding (as a float32). It needs
// OnOverflow(Saturate) and may be given at most once.
func SaturationLimit(rate float64) Option {
	return Option{func(s *settings) error {
		if s.win.satLimit != 0 {
			return paramError("SaturationLimit may be given only once")
		}
		if !(rate > 0 && rate < 1) {
			return paramError("SaturationLimit needs a rate in [errorRate, 1), got %v", rate)
		}
		s.win.satLimit = rate
		return nil
	}}
}

// WindowFilter is a filter of the recent past: of the last window keys
// added (NewWindow), or of the keys added within the last d (with Every), in
// memory fixed at creation. It keeps two promises at every moment:
//
//   - The floor: no false negative for any key that is both among the last
//     window keys added and, in a time window, added within d, after bursts
//     too. A time window under Saturate or Grow keeps every key added within
//     d, unless Saturate reached its SaturationLimit or Grow its limit.
//   - A false-positive rate at or below ErrorRate for keys not kept. Under
//     Saturate it may rise up to SaturationLimit; right after a burst has
//     rotated a time window early it may exceed ErrorRate for a while (the
//     floor comes first: docs/window.md gives the worst case).
//     EstimatedErrorRate says where it is.
//
// To deduplicate, call TestAndAdd (first-seen): it reports whether the key is
// in the window and adds it only if it is not, so a key that keeps coming
// back is reported new again once its first sighting has left the window.
// TestAndRefresh (last-seen) also moves a present key to the newest
// generation, so a key that keeps coming back stays suppressed; each refresh
// takes the room of a new key. OnEvent and Events tell when a window rotates
// early, saturates past its limit or stops growing.
//
// Cost: 17.0 bits per window key at 1%, 24.3 at 0.1%. Add writes one cache
// line; Test of an absent key reads one line in each of the r generations
// (7 at 1%), all at once. A key is forgotten after at most
// r*ceil(window/(r-1)) more keys (or d*r/(r-1) of time), later after a burst.
//
// A zero WindowFilter is not usable: its methods panic; create one with
// NewWindow or ReadWindow. Without the Concurrent option it is not safe for
// concurrent use, though concurrent Test calls are. With Concurrent every
// method may be called from any number of goroutines; exactly one caller of
// TestAndAdd hears "new" for a key, and Test takes no lock. docs/window.md
// says how it works; docs/format.md gives its encoding.
type WindowFilter struct {
	f       *window.Filter    // nil for a Concurrent window: conc.ring holds it
	conc    *windowConc       // Concurrent
	clock   func() time.Time  // Clock's; nil for time.Now
	onEvent func(WindowEvent) // OnEvent's; nil for none
}

// Concurrency of a Concurrent WindowFilter: adds, rotation, growth, Clear
// and decoding into it are serialized by a lock, and the tests (Test,
// TestMany and their String and Hash forms) take no lock: they read the
// generations with atomic loads beside the adds and write no shared memory
// (a lock's counter would bounce between the cores of concurrent readers).
// A test concurrent with a rotation may miss only keys of the generation
// being dropped, which leave the window then. The methods that read several
// counters for one answer (Count, EstimatedErrorRate, the encoders, Clone,
// ...) take the adds' lock.
//
// The ring: r generations, blocked filters of ceil(window/(r-1)) keys at
// 1-(1-ErrorRate)^(1/r) (about ErrorRate/r) each: keys go into the newest;
// when the newest is full (or its time, d/(r-1), is up) the oldest is
// cleared and becomes the newest, unless that would break the floor.
//
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
	w.hook(f)
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
	w := &WindowFilter{clock: s.win.clock, onEvent: s.win.onEvent}
	f := newWindowRing(c, w.now(c.Period))
	w.hook(f)
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
	if s.win.satLimit != 0 && (s.win.every == 0 || s.win.policy != Saturate) {
		return s, window.Config{}, paramError("SaturationLimit needs Every and OnOverflow(Saturate)")
	}
	if s.win.satLimit != 0 && s.win.satLimit < errorRate {
		return s, window.Config{}, paramError("SaturationLimit needs a rate in [errorRate, 1) = [%v, 1), got %v", errorRate, s.win.satLimit)
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
		if l := s.win.satLimit; l != 0 {
			c.SatLimit = float32Limit(l, errorRate)
		}
	}
	return c
}

// float32Limit returns the limit l as the encoding keeps it: the nearest
// float32 in [errorRate, 1).
func float32Limit(l, errorRate float64) float64 {
	f := float32(l)
	for float64(f) < errorRate {
		f = math.Nextafter32(f, 1)
	}
	for f >= 1 {
		f = math.Nextafter32(f, 0)
	}
	return float64(f)
}

// defaultSaturationLimit is SaturationLimit's default for a window at
// errorRate: ten times it, at most 0.5, and at least errorRate.
func defaultSaturationLimit(errorRate float64) float64 {
	return max(min(10*errorRate, 0.5), errorRate)
}

// windowSatCap returns the keys past which the newest generation of a
// window under Saturate rotates early: the most keys n for which r
// generations of n keys each have a rate (BlockedFalsePositiveRate) of at
// most the SaturationLimit, and at least GenCap; 0 for the other policies.
// O(log M) rate computations.
func windowSatCap(c window.Config) uint64 {
	if c.Period == 0 || c.Policy != window.Saturate {
		return 0
	}
	limit := c.SatLimit
	if limit == 0 {
		limit = defaultSaturationLimit(c.ErrorRate)
	}
	q := -math.Expm1(math.Log1p(-limit) / float64(c.Gens))
	lo, hi := c.GenCap, c.M // rate(hi keys) is about 1
	if BlockedFalsePositiveRate(c.M, c.K, lo) > q {
		return lo
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if BlockedFalsePositiveRate(c.M, c.K, mid) <= q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
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

// windowAdd is Add (window.AddAll), TestAndAdd (AddNew) and
// TestAndRefresh (AddRefresh). It is not generic (the hashed calls pass a
// hash's 8 bytes, layout.HashBytes), as a generic function called from an
// inlined method made the caller's key escape: see addKey and
// TestWindowNoAllocsFromOtherPackage (1 allocation per Add of a stack
// array, 2 per batch, before).
func windowAdd(w *WindowFilter, key []byte, mode window.Mode) (present bool) {
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
	if mode != window.AddAll {
		present = f.Test(h1, h2, f.Live(now))
		if present && mode == window.AddNew {
			return true
		}
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
func (w *WindowFilter) Add(key []byte) { windowAdd(w, key, window.AddAll) }

// AddString is Add for a string key, without copying or allocating.
func (w *WindowFilter) AddString(key string) { windowAdd(w, bytesOf(key), window.AddAll) }

// Test reports whether key may be among the keys the window keeps: false
// means it is not (it was never added, or was forgotten); true means it
// probably is (wrong with a probability of at most ErrorRate). It reads the
// key's cache line in every generation, all at once.
func (w *WindowFilter) Test(key []byte) bool { return windowTest(w, key) }

// TestString is Test for a string key, without copying or allocating.
func (w *WindowFilter) TestString(key string) bool { return windowTest(w, bytesOf(key)) }

// TestAndAdd is the deduplicator's call, first-seen: it reports whether
// key may be among the keys kept (as Test), and adds it (as Add) only if it
// is not. A key that keeps coming back is so reported new (false) again
// once its first sighting has left the window: in a time window, between
// Duration and Duration*r/(r-1) after it (later after a burst: see the
// floor of WindowFilter); in a count window, after window to about
// window*r/(r-1) other new keys. A key reported present by a false
// positive is not added. Under Concurrent, of several goroutines testing
// and adding the same new key at once exactly one sees it absent. It costs
// a Test, and an Add for a new key.
func (w *WindowFilter) TestAndAdd(key []byte) bool { return windowAdd(w, key, window.AddNew) }

// TestAndAddString is TestAndAdd for a string key, without copying or
// allocating.
func (w *WindowFilter) TestAndAddString(key string) bool {
	return windowAdd(w, bytesOf(key), window.AddNew)
}

// TestAndRefresh is last-seen: it reports whether key may be among the
// keys kept (as Test) and adds it (as Add) whether or not it is, so that a
// present key goes into the newest generation (if it is not there
// already) and a key that keeps coming back stays in the window, reported
// present, until it has been away for the window: for alerts that keep
// firing. Each refresh of a key from an older generation takes room, as a
// new key does: in a count window, a recurring key counts once per
// generation it is refreshed into, so that a window of n keys keeps fewer
// than n distinct ones when keys recur (a key refreshed in every
// generation counts r times). Under Concurrent it is atomic like
// TestAndAdd. It costs a Test and an Add.
func (w *WindowFilter) TestAndRefresh(key []byte) bool { return windowAdd(w, key, window.AddRefresh) }

// TestAndRefreshString is TestAndRefresh for a string key, without copying
// or allocating.
func (w *WindowFilter) TestAndRefreshString(key string) bool {
	return windowAdd(w, bytesOf(key), window.AddRefresh)
}

// windowAddMany is the batch add, with results for TestAndAddMany. The
// exported batch methods are go:noinline, as BloomFilter's are: a caller in
// another package that inlined one called this generic function's
// instantiation, and its keys escaped.
func windowAddMany[K layout.Key](w *WindowFilter, keys []K, results []bool, mode window.Mode) []bool {
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
	window.AddMany(f, keys, results, now, mode)
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
func (w *WindowFilter) AddMany(keys [][]byte) { windowAddMany(w, keys, nil, window.AddAll) }

// AddManyStrings is AddMany for string keys, without copying them.
//
//go:noinline
func (w *WindowFilter) AddManyStrings(keys []string) { windowAddMany(w, keys, nil, window.AddAll) }

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

// TestAndAddMany is TestAndAdd on every key of keys, in order (with one
// reading of the clock for the whole batch): it fills results[:len(keys)]
// (allocating it if shorter) with what TestAndAdd would have reported, and
// returns it; a key that comes twice in keys is reported present the
// second time.
//
//go:noinline
func (w *WindowFilter) TestAndAddMany(keys [][]byte, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)), window.AddNew)
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyStrings(keys []string, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)), window.AddNew)
}

// TestAndRefreshMany is TestAndRefresh on every key of keys, in order,
// filling and returning results like TestAndAddMany.
//
//go:noinline
func (w *WindowFilter) TestAndRefreshMany(keys [][]byte, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)), window.AddRefresh)
}

// TestAndRefreshManyStrings is TestAndRefreshMany for string keys.
//
//go:noinline
func (w *WindowFilter) TestAndRefreshManyStrings(keys []string, results []bool) []bool {
	return windowAddMany(w, keys, batchResults(results, len(keys)), window.AddRefresh)
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
//
// Deprecated: Window says the same. Capacity keeps working until v1.
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

// Stats returns the window's size in bits (generations and extensions), its
// fill and estimates, as FillRatio, EstimatedCount and EstimatedErrorRate
// give them, all of one moment: on a Concurrent window it holds the adds'
// lock while it reads the bits. O(Bits/64). A zero WindowFilter panics.
func (w *WindowFilter) Stats() (st Stats) {
	var n float64
	w.read(func(f *window.Filter, now int64) {
		st.Bits = f.Bits()
		st.SetBits = f.SetBits(now)
		for g := range f.Live(now) {
			f.EachSub(g, func(m uint64, k uint, set uint64) { n += EstimateBlockedCount(m, k, set) })
		}
		st.EstimatedErrorRate = f.ErrorRate(now)
	})
	if st.Bits > 0 {
		st.FillRatio = float64(st.SetBits) / float64(st.Bits)
	}
	st.EstimatedCount = math.MaxUint64
	if n < math.MaxUint64 {
		st.EstimatedCount = uint64(math.Round(n))
	}
	return st
}

// Clear empties the window, keeping the size of its ring and dropping the
// extensions of a window under Grow; a time window restarts at the current
// time. O(Bits/64), under the adds' lock on a Concurrent window, whose
// tests concurrent with Clear may still find keys added before it.
func (w *WindowFilter) Clear() {
	w.read(func(f *window.Filter, now int64) { f.Clear(now) })
}

// Clone returns an independent copy of the window, with its mode, clock
// and OnEvent callback (its event counts start from the window's).
// O(Bits/64); on a Concurrent window it holds the adds' lock for that long.
func (w *WindowFilter) Clone() *WindowFilter {
	c := &WindowFilter{clock: w.clock, onEvent: w.onEvent}
	w.read(func(f *window.Filter, _ int64) { c.f = f.Clone() })
	c.hook(c.f)
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

// Layout returns LayoutBlocked: every generation is a blocked filter.
func (w *WindowFilter) Layout() Layout { return LayoutBlocked }

func (*WindowFilter) isFilter() {}

// windowExtSize stops at extension 16, as internal/window does.
const _ = uint(window.MaxExtensions-16) + uint(16-window.MaxExtensions)
