package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// The tests of issue 30 on Redis: first-seen TestAndAdd, last-seen
// TestAndRefresh, the floor kept after bursts, the Saturate ceiling, the
// events, and the extension fields of a window under Grow checked as the
// count fields are.

// fakeMicros is a settable clock in Unix microseconds for NewWindowOnClock.
type fakeMicros struct {
	mu sync.Mutex
	us int64
}

func (c *fakeMicros) now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.us
}

func (c *fakeMicros) add(d time.Duration) {
	c.mu.Lock()
	c.us += d.Microseconds()
	c.mu.Unlock()
}

func (c *fakeMicros) time() time.Time { return time.UnixMicro(c.now()) }

// redisFloor is the floor of a window, as the in-memory tests keep it: the
// keys added, in order, and when; check fails unless the window reports
// present every key that is among the last window added and, in a time
// window, added within d (under Saturate and Grow, all), at now.
type redisFloor struct {
	t      *testing.T
	window int
	d      time.Duration // 0 for a count window
	all    bool          // Saturate, Grow: every key within d
	keys   [][]byte
	at     []time.Time
	latest []time.Time // latest[i]: the latest of at[:i+1]
}

func (fl *redisFloor) added(key []byte, at time.Time) {
	latest := at
	if n := len(fl.latest); n > 0 && fl.latest[n-1].After(at) {
		latest = fl.latest[n-1]
	}
	fl.keys = append(fl.keys, key)
	fl.at = append(fl.at, at)
	fl.latest = append(fl.latest, latest)
}

// check tests the floor's keys in one TestMany; limitHit says that a
// SaturatedPastLimit or GrowLimit event happened (then only the floor of
// RotateEarly holds).
func (fl *redisFloor) check(w *redisbloom.WindowFilter, now time.Time, limitHit bool, step string) {
	fl.t.Helper()
	all := fl.all && !limitHit
	n := len(fl.keys)
	var seen time.Time
	var idx []int
	for i := n - 1; i >= 0; i-- {
		last := n-i <= fl.window
		if !last && (!all || now.Sub(fl.latest[i]) >= fl.d) {
			break
		}
		if fl.at[i].After(seen) {
			seen = fl.at[i]
		}
		within := fl.d == 0 || now.Sub(fl.at[i]) < fl.d && seen.Sub(fl.at[i]) < fl.d
		if within && (last || all) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	keys := make([][]byte, len(idx))
	for j, i := range idx {
		keys[j] = fl.keys[i]
	}
	present, err := w.TestMany(context.Background(), keys)
	if err != nil {
		fl.t.Fatalf("%s: %v", step, err)
	}
	absent := 0
	first := -1
	for j, ok := range present {
		if !ok {
			absent++
			first = idx[j]
		}
	}
	if absent > 0 {
		fl.t.Fatalf("%s: %d of the floor's %d keys absent, such as %q (add %d of %d, %v before now, window %d, d %v)",
			step, absent, len(keys), fl.keys[first], first, n, now.Sub(fl.at[first]), fl.window, fl.d)
	}
}

// TestWindowBurstFloorRepro is issue 30's repro on the server's clock:
// NewWindow(ctx, rdb, name, 100, 0.01, Generations(4), Every(3s)), AddMany
// of 300 keys, 1.1 s, one Add: every one of the last 99 keys of the burst
// (within the window's 3 s and among its last 100 keys) must test present.
// Before the floor was kept, 3 of them were absent with a nil error.
func TestWindowBurstFloorRepro(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	w, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.Generations(4), bloom.Every(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	burst := keyRange("burst-", 0, 300)
	if err := w.AddMany(ctx, burst); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := w.Add(ctx, []byte("one more")); err != nil {
		t.Fatal(err)
	}
	last := burst[len(burst)-99:]
	present, err := w.TestMany(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	absent := 0
	for _, ok := range present {
		if !ok {
			absent++
		}
	}
	if absent != 0 {
		t.Fatalf("%d of the last 99 keys of the burst absent, 1.1 s after it in a window of 3 s", absent)
	}
}

// TestWindowBurstFloor is the burst of issue 30, item 2, on the tests'
// clock: a window of 200 keys, Every(1s), 600 keys within half a period,
// the clock moved one period, one more Add: the floor (the last 200 keys,
// added about 190 ms before) holds then, and at every step of the next
// twelve periods (a key added every tenth of a period), with single adds
// and batches. Before the floor was kept, keys of the burst were absent
// one period after it.
func TestWindowBurstFloor(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			clock := &fakeMicros{us: 1_700_000_000_000_000}
			w, err := redisbloom.NewWindowOnClock(ctx, rdb, windowName(t, rdb), 200, 0.01, clock.now, bloom.Every(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			period := w.Duration() / time.Duration(w.Generations()-1)
			fl := &redisFloor{t: t, window: 200, d: time.Second}
			next := 0
			add := func(n int) {
				keys := keyRange("bf-", next, next+n)
				next += n
				if batch {
					if err := w.AddMany(ctx, keys); err != nil {
						t.Fatal(err)
					}
				} else {
					for _, k := range keys {
						if err := w.Add(ctx, k); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, k := range keys {
					fl.added(k, clock.time())
				}
			}
			for range 6 {
				add(100)
				clock.add(period / 12)
			}
			clock.add(period)
			add(1)
			fl.check(w, clock.time(), false, "one period after the burst")
			for i := range 120 {
				clock.add(period / 10)
				fl.check(w, clock.time(), false, fmt.Sprintf("%d tenths of a period after", i+1))
				add(1)
				fl.check(w, clock.time(), false, fmt.Sprintf("an add %d tenths of a period after", i+1))
			}
		})
	}
}

// TestWindowFloorRedisProperty is the floor checked after every step of
// random runs on Redis: windows of r = 2, 5, 16 generations (more without
// -short) under every policy and by count, fed at random paces with bursts
// of up to 12 times a generation's share in an instant, the clock jumping
// forwards (up to beyond the window) and back, with Add, AddMany,
// TestAndAdd, TestAndAddMany, TestAndRefresh and TestAndRefreshMany. After
// every step the floor holds (redisFloor). Before the floor was kept it
// failed under RotateEarly.
func TestWindowFloorRedisProperty(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	rs := []int{2, 3, 4, 5, 6, 8, 12, 16}
	steps := 400
	if testing.Short() {
		rs, steps = []int{2, 5, 16}, 80
	}
	type pol struct {
		name  string
		opts  []bloom.Option
		timed bool
		all   bool
	}
	pols := []pol{
		{"count", nil, false, false},
		{"RotateEarly", []bloom.Option{bloom.OnOverflow(bloom.RotateEarly)}, true, false},
		{"Saturate", []bloom.Option{bloom.OnOverflow(bloom.Saturate)}, true, true},
		{"Grow", []bloom.Option{bloom.OnOverflow(bloom.Grow)}, true, true},
	}
	for _, r := range rs {
		for _, p := range pols {
			t.Run(fmt.Sprintf("r=%d/%s", r, p.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(r), uint64(len(p.name))))
				clock := &fakeMicros{us: 1_800_000_000_000_000}
				const window = 60
				const d = time.Hour
				opts := append([]bloom.Option{bloom.Generations(r), bloom.Seed(uint32(r))}, p.opts...)
				if p.timed {
					opts = append(opts, bloom.Every(d))
				}
				w, err := redisbloom.NewWindowOnClock(ctx, rdb, windowName(t, rdb), window, 0.01, clock.now, opts...)
				if err != nil {
					t.Fatal(err)
				}
				limitHit := false
				w = w.OnEvent(func(e bloom.WindowEvent) {
					if e.Kind != bloom.RotatedEarly {
						limitHit = true
					}
				})
				fl := &redisFloor{t: t, window: window, all: p.all}
				if p.timed {
					fl.d = d
				}
				period := w.Duration() / time.Duration(max(r-1, 1))
				share := int(w.GenerationCapacity())
				next := 0
				for step := range steps {
					switch x := rng.IntN(100); {
					case !p.timed:
					case x < 60:
						clock.add(time.Duration(rng.Int64N(int64(period) / int64(share))))
					case x < 80:
						clock.add(time.Duration(rng.Int64N(int64(period))))
					case x < 88:
						clock.add(time.Duration(rng.Int64N(int64(d) * 2)))
					case x < 95:
						clock.add(-time.Duration(rng.Int64N(int64(period) * 3)))
					}
					n := 1 + rng.IntN(3)
					if rng.IntN(25) == 0 {
						n = rng.IntN(12*share) + 1 // a burst in an instant
					}
					keys := make([][]byte, n)
					for i := range keys {
						if next > 0 && rng.IntN(8) == 0 {
							keys[i] = keyOf("fp-", rng.IntN(next))
						} else {
							keys[i] = keyOf("fp-", next)
							next++
						}
					}
					var present []bool
					var err error
					switch mode := rng.IntN(6); {
					case mode == 0 || n == 1 && mode < 3:
						present = make([]bool, n)
						for i, k := range keys {
							switch mode {
							case 0:
								err = w.Add(ctx, k)
							case 1:
								present[i], err = w.TestAndAdd(ctx, k)
							default:
								present[i], err = w.TestAndRefresh(ctx, k)
							}
							if err != nil {
								break
							}
						}
						if mode == 1 {
							// first-seen: a key present was not added
							// (a repeat within the call was, once).
							for i := range keys {
								if present[i] {
									keys[i] = nil
								}
							}
						}
					case mode == 1 || mode == 3:
						present, err = w.TestAndAddMany(ctx, keys)
						for i := range keys {
							if err == nil && present[i] {
								keys[i] = nil
							}
						}
					case mode == 2 || mode == 4:
						_, err = w.TestAndRefreshMany(ctx, keys)
					default:
						err = w.AddMany(ctx, keys)
					}
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					for _, k := range keys {
						if k != nil {
							fl.added(k, clock.time())
						}
					}
					fl.check(w, clock.time(), limitHit, fmt.Sprintf("step %d (%d keys)", step, n))
				}
			})
		}
	}
}

// TestWindowRecurringKeyRedis: a key met every 100 new keys in a count
// window of 1,000, checked with TestAndAdd, is reported new again once its
// first sighting has left the window (between 1,000 and r/(r-1) x 1,000
// keys added after it, plus the 100 of the pace; a new key reported
// present by a false positive is not added, and the recurring key itself
// may be one after it left), and never sooner; with
// TestAndRefresh it is never new again while it keeps recurring, and new
// again once it has been away for the window. Before TestAndAdd was
// first-seen it was never reported new again.
func TestWindowRecurringKeyRedis(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, refresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("refresh=%v", refresh), func(t *testing.T) {
			w, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			limit := int(w.GenerationCapacity())*w.Generations() + 100
			recurring := []byte("recurring")
			lastNew, news, counted, late := 0, 0, 0, 0
			for round := range 60 {
				keys := keyRange("r"+strconv.Itoa(round)+"-", 0, 100)
				var present []bool
				if refresh {
					present, err = w.TestAndRefreshMany(ctx, keys)
				} else {
					present, err = w.TestAndAddMany(ctx, keys)
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range present {
					if !p {
						counted++ // added: a false positive is not
					}
				}
				var p bool
				if refresh {
					p, err = w.TestAndRefresh(ctx, recurring)
				} else {
					p, err = w.TestAndAdd(ctx, recurring)
				}
				if err != nil {
					t.Fatal(err)
				}
				newKeys := counted
				if !p {
					if news > 0 && newKeys-lastNew <= 1000 {
						t.Fatalf("reported new again %d new keys after the last time: within the window of 1,000", newKeys-lastNew)
					}
					news++
					lastNew = newKeys
				} else if !refresh && newKeys-lastNew > limit {
					// Forgotten, but a false positive in a generation
					// that stays for up to r rounds.
					late++
				}
			}
			if refresh && news != 1 {
				t.Fatalf("TestAndRefresh: the recurring key reported new %d times, want once", news)
			}
			if !refresh && (news < 4 || late > w.Generations()) {
				t.Fatalf("TestAndAdd: the recurring key reported new %d times in 6,000 new keys, present %d times after it left", news, late)
			}
			if refresh {
				// Away for more than the window: new again.
				if err := w.AddMany(ctx, keyRange("away-", 0, limit)); err != nil {
					t.Fatal(err)
				}
				if p, err := w.TestAndRefresh(ctx, recurring); err != nil || p {
					t.Fatalf("TestAndRefresh after %d other keys: %v, %v; want false", limit, p, err)
				}
			}
			t.Logf("reported new %d times; present %d times after it left (a false positive)", news, late)
		})
	}
}

// TestWindowFirstSeenClients: 8 clients, each with its own connection,
// TestAndAdd the same keys in the same order in a time window of an hour
// (the count window's race is TestWindowConcurrentRotation): each key is
// new for exactly one client (none for a false positive), the window
// counts exactly the keys reported new, and every key is present after.
// Before TestAndAdd was first-seen, every client that found a key in an
// older generation added it again (counted again).
func TestWindowFirstSeenClients(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const window = 3000
	w, err := redisbloom.NewWindow(ctx, rdb, name, window, 0.01, bloom.Every(time.Hour), bloom.Generations(4))
	if err != nil {
		t.Fatal(err)
	}
	handles := make([]*redisbloom.WindowFilter, 8)
	for c := range handles {
		own := newClient(t, serverAddr(t), func(o *redis.Options) {
			o.PoolSize, o.MaxRetries, o.ReadTimeout = 1, -1, 30*time.Second
		})
		if handles[c], err = redisbloom.OpenWindow(ctx, own, name); err != nil {
			t.Fatal(err)
		}
	}
	keys := keyRange("fs-", 0, window)
	news := windowRace(t, handles, keys, 500, nil)
	total := 0
	for i, n := range news {
		if n > 1 {
			t.Fatalf("key %q reported new %d times", keys[i], n)
		}
		total += n
	}
	if total < window*97/100 {
		t.Fatalf("only %d of %d keys reported new", total, window)
	}
	count, err := w.Count(ctx)
	if err != nil || count != uint64(total) {
		t.Fatalf("Count %d (%v), %d keys reported new: a key present was added again", count, err, total)
	}
	present, err := w.TestMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range present {
		if !ok {
			t.Fatalf("key %q absent after the race", keys[i])
		}
	}
}

// TestWindowSaturationLimitRedis: a time window under Saturate (a day, the
// default limit 10 x 1% and bloom.SaturationLimit(0.03)) fed 12 times a
// generation's share within one period keeps its measured false-positive
// rate under the limit (within four standard deviations) right after and
// a period later, keeps the last 1,000 keys, and reports SaturatedPastLimit
// events to the handle's OnEvent and in Events. Before the ceiling, the
// rate was 0.99.
func TestWindowSaturationLimitRedis(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, limit := range []float64{0, 0.03} {
		t.Run(fmt.Sprintf("limit=%g", limit), func(t *testing.T) {
			clock := &fakeMicros{us: 1_700_000_000_000_000}
			opts := []bloom.Option{bloom.Every(24 * time.Hour), bloom.OnOverflow(bloom.Saturate)}
			want := 0.1
			if limit != 0 {
				opts, want = append(opts, bloom.SaturationLimit(limit)), limit
			}
			name := windowName(t, rdb)
			w, err := redisbloom.NewWindowOnClock(ctx, rdb, name, 1000, 0.01, clock.now, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var events []bloom.WindowEvent
			w = w.OnEvent(func(e bloom.WindowEvent) { events = append(events, e) })
			n := 12 * int(w.GenerationCapacity())
			burst := keyRange("sat-", 0, n)
			for lo := 0; lo < n; lo += 100 {
				if err := w.AddMany(ctx, burst[lo:min(lo+100, n)]); err != nil {
					t.Fatal(err)
				}
				clock.add(time.Second)
			}
			probes := 40000
			if testing.Short() {
				probes = 20000
			}
			for _, when := range []string{"right after the burst", "a period later"} {
				rate, _ := falsePositives(t, func(k [][]byte) ([]bool, error) { return w.TestMany(ctx, k) }, want, probes)
				if sd := math.Sqrt(want / float64(probes)); rate > want+4*sd {
					t.Fatalf("%s: false-positive rate %.4f above the limit %v", when, rate, want)
				}
				t.Logf("%s: false-positive rate %.4f (limit %v)", when, rate, want)
				present, err := w.TestMany(ctx, burst[n-1000:])
				if err != nil {
					t.Fatal(err)
				}
				for i, ok := range present {
					if !ok {
						t.Fatalf("%s: key %q, one of the last 1,000, absent", when, burst[n-1000+i])
					}
				}
				clock.add(w.Duration() / time.Duration(w.Generations()-1))
			}
			ev, err := w.Events(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.SaturatedPastLimit == 0 || ev.SaturatedPastLimit != uint64(len(events)) || ev.RotatedEarly != 0 || ev.GrowLimit != 0 {
				t.Fatalf("Events %+v, %d OnEvent calls", ev, len(events))
			}
			if e := events[0]; e.Kind != bloom.SaturatedPastLimit || e.Time.IsZero() || e.Retained < 0 || e.Retained > w.Duration() {
				t.Fatalf("first event %+v", e)
			}
			// Another client with another limit is refused; one opening
			// the window gets its limit (the same answers).
			other := []bloom.Option{bloom.Every(24 * time.Hour), bloom.OnOverflow(bloom.Saturate), bloom.SaturationLimit(0.2)}
			if _, err := redisbloom.NewWindow(ctx, rdb, name, 1000, 0.01, other...); !errors.Is(err, bloom.ErrIncompatible) {
				t.Fatalf("NewWindow with another SaturationLimit: %v, want bloom.ErrIncompatible", err)
			}
			again, err := redisbloom.OpenWindow(ctx, rdb, name)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := redisbloom.WindowSatCap(again), redisbloom.WindowSatCap(w); a != b || a <= w.GenerationCapacity() {
				t.Fatalf("saturation cap %d through OpenWindow, %d through NewWindow (a generation holds %d)", a, b, w.GenerationCapacity())
			}
			if limit != 0 {
				if def, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 1000, 0.01, opts[:2]...); err != nil || redisbloom.WindowSatCap(def) <= redisbloom.WindowSatCap(w) {
					t.Fatalf("the default limit's cap is not above limit %v's (%v)", limit, err)
				}
			}
		})
	}
	if _, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.Every(time.Hour), bloom.SaturationLimit(0.1)); err == nil {
		t.Error("SaturationLimit without Saturate accepted")
	}
	if _, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.OnEvent(func(bloom.WindowEvent) {})); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("bloom.OnEvent: %v, want bloom.ErrInvalidParameter (it cannot apply to a Redis window)", err)
	}
}

// TestWindowEventsRedis: a burst rotates a time window under RotateEarly
// early: RotatedEarly events, reported to the OnEvent of the handle that
// caused them (not to another handle's), each with the server's time of
// the call and what the window still reaches back; Events counts them for
// every client; a count window reports none.
func TestWindowEventsRedis(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	clock := &fakeMicros{us: 1_700_000_000_000_000}
	name := windowName(t, rdb)
	w, err := redisbloom.NewWindowOnClock(ctx, rdb, name, 100, 0.01, clock.now, bloom.Every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got, other []bloom.WindowEvent
	w = w.OnEvent(func(e bloom.WindowEvent) { got = append(got, e) })
	o, err := redisbloom.OpenWindow(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	o = o.OnEvent(func(e bloom.WindowEvent) { other = append(other, e) })
	for i := range 50 {
		if err := w.Add(ctx, keyOf("ev-", i)); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Minute)
	}
	if ev, err := w.Events(ctx); err != nil || len(got) != 0 || ev != (bloom.WindowEvents{}) {
		t.Fatalf("events without a burst: %v, Events %+v, %v", got, ev, err)
	}
	if err := w.AddMany(ctx, keyRange("ev2-", 0, 1000)); err != nil {
		t.Fatal(err)
	}
	ev, err := o.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || ev.RotatedEarly != uint64(len(got)) || len(other) != 0 || ev.SaturatedPastLimit != 0 || ev.GrowLimit != 0 {
		t.Fatalf("%d events to the adding handle, %d to the other, Events %+v", len(got), len(other), ev)
	}
	e := got[len(got)-1]
	if e.Kind != bloom.RotatedEarly || !e.Time.Equal(clock.time()) || e.Retained >= w.Duration() || e.Retained < 0 {
		t.Fatalf("last event %+v at %v", e, clock.time())
	}
	// The copy in memory agrees on what the window keeps after it.
	mem, err := w.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if since := mem.RetainedSince(); !since.IsZero() && clock.time().Sub(since) != e.Retained {
		t.Logf("RetainedSince of the copy %v (the copy reads the real clock)", since)
	}

	c, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	c = c.OnEvent(func(bloom.WindowEvent) { t.Error("an event in a count window") })
	if err := c.AddMany(ctx, keyRange("c-", 0, 2000)); err != nil {
		t.Fatal(err)
	}
	if ev, err := c.Events(ctx); err != nil || ev != (bloom.WindowEvents{}) {
		t.Fatalf("count window: Events %+v, %v", ev, err)
	}
}

// TestWindowGrowExtensionFields is item 5's Redis edge: a window under Grow
// whose extension field x<s> of a live generation is deleted or holds "",
// "x", "-1", "1e300", "1,,2", or lists fewer extensions than exist (an
// extension key the metadata does not list), gives ErrCorrupt from every
// call, as the c<s> fields do, never "absent". Before, 99 of 100 keys of
// the burst answered absent with a nil error.
func TestWindowGrowExtensionFields(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		value string // "" with del: the field deleted
		del   bool
		fewer bool // the field lists one extension fewer
	}{
		{"deleted", "", true, false},
		{"empty", "", false, false},
		{"x", "x", false, false},
		{"minus-one", "-1", false, false},
		{"1e300", "1e300", false, false},
		{"empty-field", "1,,2", false, false},
		{"one-fewer", "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeMicros{us: 1_700_000_000_000_000}
			name := windowName(t, rdb)
			w, err := redisbloom.NewWindowOnClock(ctx, rdb, name, 100, 0.01, clock.now,
				bloom.Generations(4), bloom.Every(3*time.Hour), bloom.OnOverflow(bloom.Grow))
			if err != nil {
				t.Fatal(err)
			}
			burst := keyRange("g-", 0, 600)
			if err := w.AddMany(ctx, burst); err != nil {
				t.Fatal(err)
			}
			meta := "{" + name + "}:meta"
			head, err := rdb.HGet(ctx, meta, "head").Result()
			if err != nil {
				t.Fatal(err)
			}
			field := "x" + head
			list, err := rdb.HGet(ctx, meta, field).Result()
			if err != nil || list == "" {
				t.Fatalf("extensions of the newest generation: %q, %v", list, err)
			}
			switch {
			case c.del:
				err = rdb.HDel(ctx, meta, field).Err()
			case c.fewer:
				cut := list[:max(0, len(list)-1)]
				for len(cut) > 0 && cut[len(cut)-1] != ',' {
					cut = cut[:len(cut)-1]
				}
				if len(cut) > 0 {
					cut = cut[:len(cut)-1]
				}
				err = rdb.HSet(ctx, meta, field, cut).Err()
			default:
				err = rdb.HSet(ctx, meta, field, c.value).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			for call, err := range everyWindow(ctx, w, burst[len(burst)-100:]) {
				if call == "Import" {
					continue
				}
				if !errors.Is(err, redisbloom.ErrCorrupt) {
					t.Errorf("%s: %v, want ErrCorrupt", call, err)
				}
			}
		})
	}
}
