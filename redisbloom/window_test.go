package redisbloom_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// windowName returns a name no other test uses, whose keys are destroyed
// when the test ends.
func windowName(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	name := filterName(t, rdb)
	t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
	return name
}

// checkWindowExport fails the test unless w exports to a window Equal to
// want, its starts rounded up to the microsecond (sameToMicros).
func checkWindowExport(t *testing.T, w *redisbloom.WindowFilter, want *bloom.WindowFilter) {
	t.Helper()
	got, err := w.Export(context.Background())
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if !sameToMicros(got, want) {
		a, _ := got.MarshalBinary()
		b, _ := want.MarshalBinary()
		r := want.Generations()
		table := func(e []byte) string {
			var s string
			for j := range r {
				s += fmt.Sprintf(" (%d %d)", binary.LittleEndian.Uint64(e[64+16+16*j:]), int64(binary.LittleEndian.Uint64(e[64+24+16*j:])))
			}
			return s
		}
		t.Fatalf("Export (%d rotations, table%s) differs from the in-memory window (%d rotations, table%s)",
			got.Rotations(), table(a), want.Rotations(), table(b))
	}
}

// sameToMicros reports whether got, exported from Redis, is Equal to want
// with want's generation starts rounded up to a whole microsecond: the
// server keeps microseconds, and the in-memory window moves the start of a
// generation held past its period to 1 ns above a time (the scripts to 1 us
// above it). The two are compared as encodings, the starts of want's
// table rounded and the table's checksum left out.
func sameToMicros(got, want *bloom.WindowFilter) bool {
	if got.Equal(want) {
		return true
	}
	a, err1 := got.MarshalBinary()
	b, err2 := want.MarshalBinary()
	if err1 != nil || err2 != nil || len(a) != len(b) {
		return false
	}
	r := want.Generations()
	exts := 0
	if want.Overflow() == bloom.Grow && want.Duration() > 0 {
		for j := range r {
			exts += int(binary.LittleEndian.Uint64(b[64+16+16*r+8*j:]))
		}
	}
	crc := 64 + 16 + 16*r // the table's checksum
	if want.Overflow() == bloom.Grow && want.Duration() > 0 {
		crc += 8*r + 32*exts
	}
	for j := range r {
		at := 64 + 24 + 16*j
		s := int64(binary.LittleEndian.Uint64(b[at:]))
		if s%1000 != 0 {
			s += 1000 - (s%1000+1000)%1000
		}
		binary.LittleEndian.PutUint64(b[at:], uint64(s))
	}
	copy(b[crc:crc+4], a[crc:crc+4])
	return bytes.Equal(a, b)
}

// TestWindowParity feeds a Redis window and the in-memory one with the same
// parameters the same keys, in the same order, in single calls and batches
// of every size (duplicates and keys of forgotten generations included),
// first-seen (TestAndAdd) and last-seen (TestAndRefresh), across many
// rotations: every answer, every Test answer, Count and Rotations agree,
// Export is Equal to the in-memory window after every step, and the last
// Window keys added are all present.
func TestWindowParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, c := range []struct {
		window uint64
		rate   float64
		opts   []bloom.Option
	}{
		{1000, 0.01, nil},
		{500, 0.001, []bloom.Option{bloom.Generations(2), bloom.Seed(7)}},
		{300, 0.05, []bloom.Option{bloom.Generations(16)}},
		{1, 0.01, nil},
	} {
		t.Run(fmt.Sprintf("window=%d/p=%v/opts=%d", c.window, c.rate, len(c.opts)), func(t *testing.T) {
			w, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), c.window, c.rate, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := bloom.NewWindow(c.window, c.rate, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if w.Generations() != mem.Generations() || w.GenerationCapacity() != mem.GenerationCapacity() ||
				w.Hashes() != mem.Hashes() || w.Seed() != mem.Seed() || uint64(w.Generations())*w.GenerationBits() != mem.Bits() {
				t.Fatalf("Redis window of %d x %d bits, %d hashes, %d keys each, seed %d; in memory %d bits in all, %d, %d, %d",
					w.Generations(), w.GenerationBits(), w.Hashes(), w.GenerationCapacity(), w.Seed(),
					mem.Bits(), mem.Hashes(), mem.GenerationCapacity(), mem.Seed())
			}
			rng := rand.New(rand.NewPCG(uint64(c.window), 1))
			total := int(3*c.window) + 50
			next := 0
			var added [][]byte // every key added, in order
			for step := 0; next < total; step++ {
				// Mostly new keys, some recent ones, some long forgotten.
				n := 1 + rng.IntN(int(c.window)/3+2)
				if step%5 == 0 {
					n = 1
				}
				keys := make([][]byte, n)
				for i := range keys {
					switch x := rng.IntN(10); {
					case x == 0 && next > 0:
						keys[i] = keyOf("p-", rng.IntN(next))
					default:
						keys[i] = keyOf("p-", next)
						next++
					}
				}
				// First-seen mostly, last-seen every third step.
				refresh := step%3 == 1
				var got, want []bool
				switch {
				case refresh && n == 1:
					p, err := w.TestAndRefresh(ctx, keys[0])
					if err != nil {
						t.Fatal(err)
					}
					got = []bool{p}
				case refresh:
					if got, err = w.TestAndRefreshMany(ctx, keys); err != nil {
						t.Fatal(err)
					}
				case n == 1:
					p, err := w.TestAndAdd(ctx, keys[0])
					if err != nil {
						t.Fatal(err)
					}
					got = []bool{p}
				default:
					if got, err = w.TestAndAddMany(ctx, keys); err != nil {
						t.Fatal(err)
					}
				}
				if refresh {
					want = mem.TestAndRefreshMany(keys, nil)
				} else {
					want = mem.TestAndAddMany(keys, nil)
				}
				for i := range keys {
					if got[i] != want[i] {
						t.Fatalf("step %d, key %q: refresh %v: %v in Redis, %v in memory", step, keys[i], refresh, got[i], want[i])
					}
					if refresh || !got[i] {
						added = append(added, keys[i]) // first-seen adds only the keys it reports new
					}
				}
				if step%7 == 0 {
					probe := keyRange("p-", max(0, next-2*int(c.window)), next+20)
					got, err := w.TestMany(ctx, probe)
					if err != nil {
						t.Fatal(err)
					}
					want := mem.TestMany(probe, nil)
					for i := range probe {
						if got[i] != want[i] {
							t.Fatalf("step %d, key %q: Test %v in Redis, %v in memory", step, probe[i], got[i], want[i])
						}
					}
					checkWindowExport(t, w, mem)
				}
			}
			checkWindowExport(t, w, mem)
			cnt, err := w.Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cnt != mem.Count() || w.Rotations() != mem.Rotations() {
				t.Fatalf("Count %d, %d rotations in Redis; %d, %d in memory", cnt, w.Rotations(), mem.Count(), mem.Rotations())
			}
			if mem.Rotations() < 3 {
				t.Fatalf("only %d rotations", mem.Rotations())
			}
			// The last window keys added are all present: each either
			// counted in a generation the window keeps or was already
			// in the newest.
			last := added[len(added)-int(c.window):]
			present, err := w.TestMany(ctx, last)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range present {
				if !ok {
					t.Fatalf("key %q, one of the last %d added, absent", last[i], c.window)
				}
			}
			t.Logf("%d keys, %d rotations, count %d", next, w.Rotations(), cnt)
		})
	}
}

// windowRace has len(handles) clients TestAndAdd keys, all of them, in the
// same order, in rounds of round keys that every client finishes before
// the next starts (so that no client is a window ahead of another: a key
// forgotten by the window before a lagging client adds it would rightly be
// new twice). Client c sends batches of 20+37c keys, single calls if c is
// odd. check, if not nil, runs after each call with the handle, the keys,
// the call's answers and the rotations the handle had seen before the
// call. It returns, for each key, how many clients were told it was new.
func windowRace(t *testing.T, handles []*redisbloom.WindowFilter, keys [][]byte, round int,
	check func(h *redisbloom.WindowFilter, keys [][]byte, present []bool, before uint64) error) []int {
	t.Helper()
	ctx := context.Background()
	news := make([]int, len(keys))
	var mu sync.Mutex
	for lo := 0; lo < len(keys); lo += round {
		part := keys[lo:min(lo+round, len(keys))]
		var wg sync.WaitGroup
		errs := make(chan error, len(handles))
		for c, h := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				step := 20 + 37*c
				for i := 0; i < len(part); i += step {
					batch := part[i:min(i+step, len(part))]
					before := h.Rotations()
					var present []bool
					var err error
					if c%2 == 0 {
						present, err = h.TestAndAddMany(ctx, batch)
					} else {
						present = make([]bool, len(batch))
						for j := range batch {
							if present[j], err = h.TestAndAdd(ctx, batch[j]); err != nil {
								break
							}
						}
					}
					if err != nil {
						errs <- fmt.Errorf("client %d: %w", c, err)
						return
					}
					mu.Lock()
					for j, ok := range present {
						if !ok {
							news[lo+i+j]++
						}
					}
					mu.Unlock()
					if check != nil {
						if err := check(h, batch, present, before); err != nil {
							errs <- fmt.Errorf("client %d: %w", c, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	return news
}

// TestWindowConcurrentRotation has 8 clients, each with its own
// connection, TestAndAdd the same keys in the same order (windowRace),
// across some 25 rotations: every key is reported new exactly once (by one
// client; by none for a false positive), and added once (TestAndAdd is
// first-seen: the clients that find it present add nothing); every
// generation but the newest holds exactly GenerationCapacity keys, so no
// fill was rotated twice and none early; and no key added just before a
// rotation is lost: a key lands in the generation that is newest when the
// call that reports it new adds it, at least the one the client saw before
// its call (Rotations), and is kept while fewer than r rotations follow,
// so every key a call made at rotation R reported new tests present
// whenever the window has made at most R+r-1 rotations: checked after
// every call and at the end.
func TestWindowConcurrentRotation(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const window, gens = 2000, 5
	w, err := redisbloom.NewWindow(ctx, rdb, name, window, 0.01, bloom.Generations(gens))
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("race-", 0, 12_000)
	const clients = 8
	handles := make([]*redisbloom.WindowFilter, clients)
	for c := range handles {
		// No retries by go-redis: a resent call whose first attempt was
		// applied would report its new keys as present.
		own := newClient(t, serverAddr(t), func(o *redis.Options) {
			o.PoolSize, o.MaxRetries, o.ReadTimeout = 1, -1, 30*time.Second
		})
		if handles[c], err = redisbloom.OpenWindow(ctx, own, name); err != nil {
			t.Fatal(err)
		}
	}
	type call struct {
		keys   [][]byte
		before uint64
	}
	var mu sync.Mutex
	var calls []call
	checked := 0
	news := windowRace(t, handles, keys, 200, func(h *redisbloom.WindowFilter, batch [][]byte, present []bool, before uint64) error {
		var added [][]byte // the keys this call reported new, and so added
		for i, ok := range present {
			if !ok {
				added = append(added, batch[i])
			}
		}
		if len(added) == 0 {
			return nil
		}
		after, err := h.TestMany(ctx, added)
		if err != nil {
			return err
		}
		mu.Lock()
		calls = append(calls, call{added, before})
		mu.Unlock()
		if h.Rotations() > before+gens-1 {
			return nil // the window may have moved past them
		}
		for i, ok := range after {
			if !ok {
				return fmt.Errorf("key %q absent right after it was added (rotations %d, then %d)", added[i], before, h.Rotations())
			}
		}
		mu.Lock()
		checked += len(added)
		mu.Unlock()
		return nil
	})
	newKeys := 0
	for i, n := range news {
		if n > 1 {
			t.Fatalf("key %q reported new %d times", keys[i], n)
		}
		newKeys += n
	}
	if newKeys < len(keys)*97/100 {
		t.Fatalf("only %d of %d keys reported new", newKeys, len(keys))
	}
	mem, err := w.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	capacity := mem.GenerationCapacity()
	rot := mem.Rotations()
	if rot < 4*gens {
		t.Fatalf("%d rotations: the race crossed too few", rot)
	}
	meta := "{" + name + "}:meta"
	head := int(rot % gens)
	var newest uint64
	for s := range gens {
		c, err := rdb.HGet(ctx, meta, "c"+strconv.Itoa(s)).Uint64()
		if err != nil {
			t.Fatal(err)
		}
		if s == head {
			newest = c
		} else if c != capacity {
			t.Errorf("generation in slot %d holds %d keys, want its capacity %d: a rotation before it was full, or two for one fill", s, c, capacity)
		}
	}
	// Each rotation follows exactly one full generation; the counts are the
	// keys reported new: a key present is not added again.
	counted := rot*capacity + newest
	if counted != uint64(newKeys) {
		t.Fatalf("%d rotations of %d keys and %d in the newest: %d counted, not the %d keys reported new",
			rot, capacity, newest, counted, newKeys)
	}
	kept := 0
	for _, k := range calls {
		if k.before+gens-1 < rot {
			continue
		}
		present, err := w.TestMany(ctx, k.keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range present {
			if !ok {
				t.Fatalf("key %q added at rotation %d or later absent after %d rotations", k.keys[i], k.before, rot)
			}
		}
		kept += len(k.keys)
	}
	if kept < window*9/10 {
		t.Fatalf("only %d keys were added within the last %d rotations", kept, gens-1)
	}
	t.Logf("8 clients: %d keys new once, %d rotations of %d keys, %d counted; %d keys checked right after their call, %d at the end",
		newKeys, rot, capacity, counted, checked, kept)
}

// TestWindowTimeExpiry: a time window of 4 generations of 150 ms on the
// server's clock keeps what was added within the last 450 ms and forgets it
// after at most 600 ms; each generation's key has a PEXPIRE; once nobody
// used the window for its whole span its bitmaps are gone from Redis, its
// metadata stays, and the window works again, empty; under Saturate a burst
// beyond a generation's capacity does not rotate; a live generation that is
// deleted gives ErrNotFound.
func TestWindowTimeExpiry(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const d = 450 * time.Millisecond
	w, err := redisbloom.NewWindow(ctx, rdb, name, 1000, 0.01, bloom.Generations(4), bloom.Every(d))
	if err != nil {
		t.Fatal(err)
	}
	if w.Duration() != d {
		t.Fatalf("Duration %v, want %v", w.Duration(), d)
	}
	keys := keyRange("t-", 0, 300)
	if err := w.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	slots := make([]string, 4)
	for s := range slots {
		slots[s] = "{" + name + "}:w:" + strconv.Itoa(s)
		ttl, err := rdb.PTTL(ctx, slots[s]).Result()
		if err != nil || ttl <= 0 || ttl > 4*d/3+time.Second {
			t.Fatalf("slot %d: PTTL %v, %v; want in (0, %v]", s, ttl, err, 4*d/3+time.Second)
		}
	}
	// Within d of the adds every key is present.
	for time.Since(start) < d-50*time.Millisecond {
		present, err := w.TestMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= d-50*time.Millisecond {
			break
		}
		for i, ok := range present {
			if !ok {
				t.Fatalf("key %q absent %v after it was added, within the window's %v", keys[i], time.Since(start), d)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// After d*r/(r-1) (and the add's own delay) every key is gone.
	time.Sleep(time.Until(start.Add(4*d/3 + 20*time.Millisecond)))
	present, err := w.TestMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range present {
		if ok {
			t.Fatalf("key %q present %v after it was added: the window keeps at most %v", keys[i], time.Since(start), 4*d/3)
		}
	}
	// Idle for the whole span and the expiry's second: the bitmaps expired.
	time.Sleep(time.Until(start.Add(4*d/3 + 1200*time.Millisecond)))
	if n, err := rdb.Exists(ctx, slots...).Result(); err != nil || n != 0 {
		t.Fatalf("%d of the 4 bitmaps left after the window was idle past its span (%v)", n, err)
	}
	if n, err := rdb.Exists(ctx, "{"+name+"}:meta").Result(); err != nil || n != 1 {
		t.Fatalf("metadata gone (%d, %v)", n, err)
	}
	if _, err := redisbloom.OpenWindow(ctx, rdb, name); err != nil {
		t.Fatalf("OpenWindow of an idle window: %v", err)
	}
	if again, err := w.TestAndAdd(ctx, keys[0]); err != nil || again {
		t.Fatalf("TestAndAdd after the idle span: %v, %v; want false, nil", again, err)
	}
	if ok, err := w.Test(ctx, keys[0]); err != nil || !ok {
		t.Fatalf("Test after the idle span: %v, %v; want true, nil", ok, err)
	}
	// In use for 8 periods, rotating on time: every key added within the
	// last d is present after every call (a generation's key expiring
	// while it is live would give ErrNotFound, and its keys absent).
	type added struct {
		at   time.Time // before the call that added it
		keys [][]byte
	}
	var log []added
	for i := 0; time.Since(start) < 4*d/3+1200*time.Millisecond+8*d/3; i++ {
		batch := keyRange("u-"+strconv.Itoa(i)+"-", 0, 5)
		at := time.Now()
		if err := w.AddMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		log = append(log, added{at, batch})
		var recent [][]byte
		for _, a := range log {
			if time.Since(a.at) < d-30*time.Millisecond {
				recent = append(recent, a.keys...)
			}
		}
		present, err := w.TestMany(ctx, recent)
		if err != nil {
			t.Fatal(err)
		}
		for j, ok := range present {
			if !ok && time.Since(start) < 4*d/3+1200*time.Millisecond+8*d/3 {
				t.Fatalf("key %q absent, added within the last %v", recent[j], d)
			}
		}
		time.Sleep(15 * time.Millisecond)
	}
	if w.Rotations() < 8 {
		t.Fatalf("%d rotations in 8 periods", w.Rotations())
	}

	// A live generation deleted: ErrNotFound, not "absent".
	if err := rdb.Del(ctx, slots[int(w.Rotations()%4)]).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("Test with the newest generation deleted: %v, want ErrNotFound", err)
	}

	// Saturate: a burst of several generations' worth within one period,
	// up to its saturation limit (0.5 here; the default ceiling is
	// TestWindowSaturationLimitRedis's), is one generation, and every key
	// of it stays until its time is up.
	sat, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.Generations(4), bloom.Every(3*time.Second),
		bloom.OnOverflow(bloom.Saturate), bloom.SaturationLimit(0.5))
	if err != nil {
		t.Fatal(err)
	}
	if redisbloom.WindowSatCap(sat) < 2*sat.GenerationCapacity() {
		t.Fatalf("saturation cap %d at 0.5: under 2 generations' worth", redisbloom.WindowSatCap(sat))
	}
	burst := keyRange("s-", 0, int(redisbloom.WindowSatCap(sat)))
	if err := sat.AddMany(ctx, burst); err != nil {
		t.Fatal(err)
	}
	if sat.Rotations() != 0 {
		t.Fatalf("Saturate: %d rotations during a burst within one period", sat.Rotations())
	}
	if present, err := sat.TestMany(ctx, burst); err != nil {
		t.Fatal(err)
	} else {
		for i, ok := range present {
			if !ok {
				t.Fatalf("Saturate: key %q of the burst absent", burst[i])
			}
		}
	}
	// RotateEarly: the same burst rotates, and keeps the last window keys.
	burst = keyRange("s-", 0, 5*int(sat.GenerationCapacity()))
	early, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.Generations(4), bloom.Every(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := early.AddMany(ctx, burst); err != nil {
		t.Fatal(err)
	}
	if early.Rotations() < 4 {
		t.Fatalf("RotateEarly: %d rotations during a burst of 5 generations", early.Rotations())
	}
	if present, err := early.TestMany(ctx, burst[len(burst)-100:]); err != nil {
		t.Fatal(err)
	} else {
		for i, ok := range present {
			if !ok {
				t.Fatalf("RotateEarly: key %q of the last window absent", burst[len(burst)-100+i])
			}
		}
	}
	mem, err := early.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mem.Rotations() != early.Rotations() || !mem.TestMany(burst[len(burst)-100:], nil)[99] {
		t.Fatalf("Export of a time window: %d rotations, want %d", mem.Rotations(), early.Rotations())
	}
}

// TestWindowCorrupt: metadata or bitmaps changed behind the package's back
// give ErrCorrupt or ErrNotFound from every method, never answers; other
// parameters ErrIncompatible; another filter's keys ErrFormat; rotations
// that went back ErrCorrupt, a write generation that went back ErrLost;
// Destroy removes every generation so that NewWindow starts again.
func TestWindowCorrupt(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	keys := keyRange("c-", 0, 450)
	cases := []struct {
		desc   string
		tamper func(name string, w *redisbloom.WindowFilter) error
		want   error
		// openOnly: the handle's calls keep working, with the sizes it
		// opened (the check field is unchanged); NewWindow and
		// OpenWindow refuse the parameters, which no longer match it.
		openOnly bool
	}{
		{"window changed", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "window", "201").Err()
		}, redisbloom.ErrCorrupt, true},
		{"generations changed", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "generations", "5").Err()
		}, redisbloom.ErrCorrupt, true},
		{"check changed", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "check", "0123456789abcdef").Err()
		}, redisbloom.ErrCorrupt, false},
		{"head moved", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HIncrBy(ctx, "{"+name+"}:meta", "head", 1).Err()
		}, redisbloom.ErrCorrupt, false},
		{"rotations went back", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "rotations", strconv.FormatUint(w.Rotations()-4, 10)).Err()
		}, redisbloom.ErrCorrupt, false},
		{"count past the bits", func(name string, w *redisbloom.WindowFilter) error {
			// A generation may take keys past its capacity (for the
			// floor, or under Saturate), not past a key per bit.
			return rdb.HSet(ctx, "{"+name+"}:meta", "c0", strconv.FormatUint(w.GenerationBits()+1, 10)).Err()
		}, redisbloom.ErrCorrupt, false},
		{"count not a number", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "c1", "x").Err()
		}, redisbloom.ErrCorrupt, false},
		{"bitmap truncated", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.Set(ctx, "{"+name+"}:w:1", "x", 0).Err()
		}, redisbloom.ErrCorrupt, false},
		{"bitmap extended", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.Append(ctx, "{"+name+"}:w:2", "\x00").Err()
		}, redisbloom.ErrCorrupt, false},
		{"older bitmap deleted", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.Del(ctx, "{"+name+"}:w:"+strconv.FormatUint((w.Rotations()+1)%4, 10)).Err()
		}, redisbloom.ErrNotFound, false},
		{"newest bitmap deleted", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.Del(ctx, "{"+name+"}:w:"+strconv.FormatUint(w.Rotations()%4, 10)).Err()
		}, redisbloom.ErrNotFound, false},
		{"metadata deleted", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.Del(ctx, "{"+name+"}:meta").Err()
		}, redisbloom.ErrNotFound, false},
		{"write generation went back", func(name string, w *redisbloom.WindowFilter) error {
			return rdb.HIncrBy(ctx, "{"+name+"}:meta", "gen", -3).Err()
		}, redisbloom.ErrLost, false},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			name := windowName(t, rdb)
			w, err := redisbloom.NewWindow(ctx, rdb, name, 200, 0.01, bloom.Generations(4))
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddMany(ctx, keys); err != nil {
				t.Fatal(err)
			}
			if w.Rotations() < 6 {
				t.Fatalf("%d rotations", w.Rotations())
			}
			if err := c.tamper(name, w); err != nil {
				t.Fatal(err)
			}
			last := keys[len(keys)-200:]
			for method, err := range everyWindow(ctx, w, last) {
				if c.openOnly && err != nil {
					t.Errorf("%s: %v", method, err)
				}
				if !c.openOnly && !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", method, err, c.want)
				}
			}
			if c.openOnly {
				if _, err := redisbloom.OpenWindow(ctx, rdb, name); !errors.Is(err, c.want) {
					t.Errorf("OpenWindow: %v, want %v", err, c.want)
				}
				if _, err := redisbloom.NewWindow(ctx, rdb, name, 200, 0.01, bloom.Generations(4)); !errors.Is(err, c.want) {
					t.Errorf("NewWindow: %v, want %v", err, c.want)
				}
			}
			if err := redisbloom.Destroy(ctx, rdb, name); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.Exists(ctx, "{"+name+"}:w:0", "{"+name+"}:w:1", "{"+name+"}:w:2", "{"+name+"}:w:3").Result(); err != nil || n != 0 {
				t.Fatalf("Destroy left %d generations (%v)", n, err)
			}
			again, err := redisbloom.NewWindow(ctx, rdb, name, 200, 0.01, bloom.Generations(4))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := again.Test(ctx, keys[len(keys)-1]); err != nil || ok {
				t.Fatalf("Test in the new window: %v, %v; want false, nil", ok, err)
			}
			if _, err := w.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Fatalf("old handle on the new window: %v, want ErrNotFound", err)
			}
		})
	}

	t.Run("other parameters", func(t *testing.T) {
		name := windowName(t, rdb)
		if _, err := redisbloom.NewWindow(ctx, rdb, name, 200, 0.01); err != nil {
			t.Fatal(err)
		}
		for _, o := range [][]bloom.Option{{bloom.Generations(3)}, {bloom.Seed(1)}, {bloom.Every(time.Hour)}} {
			if _, err := redisbloom.NewWindow(ctx, rdb, name, 200, 0.01, o...); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("NewWindow with other options: %v, want ErrIncompatible", err)
			}
		}
		if _, err := redisbloom.NewWindow(ctx, rdb, name, 201, 0.01); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("NewWindow with another window: %v, want ErrIncompatible", err)
		}
		if _, err := redisbloom.New(ctx, rdb, name, 200, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("New on a window's keys: %v, want ErrFormat", err)
		}
		fixed := windowName(t, rdb)
		if _, err := redisbloom.New(ctx, rdb, fixed, 200, 0.01); err != nil {
			t.Fatal(err)
		}
		if _, err := redisbloom.NewWindow(ctx, rdb, fixed, 200, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("NewWindow on a Filter's keys: %v, want ErrFormat", err)
		}
		if _, err := redisbloom.OpenWindow(ctx, rdb, fixed); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("OpenWindow on a Filter's keys: %v, want ErrFormat", err)
		}
		if _, err := redisbloom.OpenWindow(ctx, rdb, windowName(t, rdb)); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("OpenWindow of nothing: %v, want ErrNotFound", err)
		}
		if _, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 0, 0.01); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewWindow of 0 keys: %v, want ErrInvalidParameter", err)
		}
	})
}

// everyWindow calls every method of w that reads or writes the window and
// returns their errors by name.
func everyWindow(ctx context.Context, w *redisbloom.WindowFilter, keys [][]byte) map[string]error {
	errs := map[string]error{}
	_, errs["Test"] = w.Test(ctx, keys[0])
	_, errs["TestMany"] = w.TestMany(ctx, keys)
	_, errs["Count"] = w.Count(ctx)
	_, errs["Export"] = w.Export(ctx)
	_, errs["TestAndAdd"] = w.TestAndAdd(ctx, []byte("new key"))
	_, errs["TestAndRefresh"] = w.TestAndRefresh(ctx, keys[0])
	_, errs["TestAndRefreshMany"] = w.TestAndRefreshMany(ctx, keys[:10])
	_, errs["Events"] = w.Events(ctx)
	errs["AddMany"] = w.AddMany(ctx, keys[:10])
	return errs
}

// TestWindowImport: Import of an in-memory window makes Export Equal to it;
// a handle that saw the window before the Import catches up (the import
// epoch) and keeps answering as the in-memory window does; a window of
// other parameters is refused.
func TestWindowImport(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	w, err := redisbloom.NewWindow(ctx, rdb, name, 300, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	other, err := redisbloom.OpenWindow(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.AddMany(ctx, keyRange("before-", 0, 1000)); err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.NewWindow(300, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	mem.AddMany(keyRange("i-", 0, 500))
	if err := w.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	checkWindowExport(t, w, mem)
	more := keyRange("after-", 0, 400)
	got, err := other.TestAndAddMany(ctx, more)
	if err != nil {
		t.Fatalf("the other handle after the Import: %v", err)
	}
	want := mem.TestAndAddMany(more, nil)
	for i := range more {
		if got[i] != want[i] {
			t.Fatalf("key %q: %v in Redis, %v in memory", more[i], got[i], want[i])
		}
	}
	checkWindowExport(t, other, mem)
	small, err := bloom.NewWindow(299, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Import(ctx, small); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("Import of another window: %v, want ErrIncompatible", err)
	}
}

// TestWindowCluster: on the 3-master Cluster, the generations and the
// metadata share one slot; racing clients and a parity run behave as on
// one server (Export Equal to the in-memory window).
func TestWindowCluster(t *testing.T) {
	rdb := clusterClient(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	w, err := redisbloom.NewWindow(ctx, rdb, name, 500, 0.01, bloom.Generations(6))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.NewWindow(500, 0.01, bloom.Generations(6))
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("cl-", 0, 3000)
	for lo := 0; lo < len(keys); lo += 250 {
		got, err := w.TestAndAddMany(ctx, keys[lo:lo+250])
		if err != nil {
			t.Fatal(err)
		}
		want := mem.TestAndAddMany(keys[lo:lo+250], nil)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("key %q: %v on the Cluster, %v in memory", keys[lo+i], got[i], want[i])
			}
		}
	}
	checkWindowExport(t, w, mem)
	slot, err := rdb.ClusterKeySlot(ctx, "{"+name+"}:meta").Result()
	if err != nil {
		t.Fatal(err)
	}
	for s := range 6 {
		key := "{" + name + "}:w:" + strconv.Itoa(s)
		if got, err := rdb.ClusterKeySlot(ctx, key).Result(); err != nil || got != slot {
			t.Fatalf("%s in slot %d (%v), the metadata in %d", key, got, err, slot)
		}
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Fatalf("%s: exists %d, %v", key, n, err)
		}
	}
	// Four handles race one rotation after another: each key new exactly
	// once.
	handles := make([]*redisbloom.WindowFilter, 4)
	for c := range handles {
		if handles[c], err = redisbloom.OpenWindow(ctx, rdb, name); err != nil {
			t.Fatal(err)
		}
	}
	race := keyRange("clr-", 0, 2000)
	for i, n := range windowRace(t, handles, race, 100, nil) {
		if n > 1 {
			t.Fatalf("key %q reported new %d times", race[i], n)
		}
	}
	rot := handles[0].Rotations()
	if rot < 20 {
		t.Fatalf("%d rotations", rot)
	}
}

// TestWindowWithWait: writes through WithWait are on the replica when they
// return, rotations included, so a read there right after finds them; with
// the replica cut off they return ErrNotReplicated, even for a key another
// client added. A zero WindowFilter refuses every call.
func TestWindowWithWait(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	rdb := newClient(t, master.addr())
	ctx := context.Background()
	w, err := redisbloom.NewWindow(ctx, rdb, "durable", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	durable, err := w.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master) // NewWindow does not wait
	onReplica, err := redisbloom.OpenWindow(ctx, newClient(t, replica.addr()), "durable")
	if err != nil {
		t.Fatal(err)
	}
	batch := keyRange("batch-", 0, 3000) // several rotations and script calls
	for lo := 0; lo < len(batch); lo += 500 {
		// Every key the call reported new, and so added, is on the
		// replica (a false positive is not added, and may be gone after
		// a rotation later in the call).
		was, err := durable.TestAndAddMany(ctx, batch[lo:lo+500])
		if err != nil {
			t.Fatal(err)
		}
		present, err := onReplica.TestMany(ctx, batch[lo:lo+500])
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range present {
			if !ok && !was[i] {
				t.Fatalf("replica read right after a durable TestAndAddMany: %q absent", batch[lo+i])
			}
		}
	}
	if durable.Rotations() < 10 {
		t.Fatalf("%d rotations", durable.Rotations())
	}
	replica.freeze()
	quick, err := w.WithWait(1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := quick.AddMany(ctx, keyRange("cut-", 0, 10)); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable AddMany with the replica cut off: %v, want ErrNotReplicated", err)
	}
	if err := w.Add(ctx, []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if err := quick.Add(ctx, []byte("shared")); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable Add of a key another client added unreplicated: %v, want ErrNotReplicated", err)
	}
	if _, err := w.WithWait(0, time.Second); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("WithWait(0, 1s): %v, want bloom.ErrInvalidParameter", err)
	}
	var zero redisbloom.WindowFilter
	if _, err := zero.Test(ctx, []byte("x")); err == nil {
		t.Error("Test on a zero WindowFilter succeeded")
	}
	if _, err := zero.Export(ctx); err == nil {
		t.Error("Export on a zero WindowFilter succeeded")
	}
	if err := zero.Import(ctx, nil); err == nil {
		t.Error("Import on a zero WindowFilter succeeded")
	}
}

// TestWindowTimeParity drives a time window in Redis and bloom.WindowFilter
// with the same fake clock (NewWindowOnClock: the scripts take the time from
// the test instead of TIME), under every overflow policy: pauses of a
// fraction of a period, of several, of more than the whole span, and bursts
// of several generations' worth within one period (under Grow, up to 32,
// which make extensions in several generations). Every TestAndAdd and Test
// answer, Count and the rotations agree, and after every add Export is
// Equal to the in-memory window (starts, counts, rotations and bits).
func TestWindowTimeParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, policy := range []bloom.Overflow{bloom.RotateEarly, bloom.Saturate, bloom.Grow} {
		t.Run(fmt.Sprintf("policy=%d", policy), func(t *testing.T) {
			const r = 5
			now := time.Unix(1_700_000_000, 123_456_000)
			opts := []bloom.Option{bloom.Generations(r), bloom.Every((r - 1) * time.Hour), bloom.OnOverflow(policy)}
			mem, err := bloom.NewWindow(200, 0.01, append(opts, bloom.Clock(func() time.Time { return now }))...)
			if err != nil {
				t.Fatal(err)
			}
			w, err := redisbloom.NewWindowOnClock(ctx, rdb, windowName(t, rdb), 200, 0.01, func() int64 { return now.UnixMicro() }, opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkWindowExport(t, w, mem)
			rng := rand.New(rand.NewPCG(uint64(policy), 2))
			next, maxExt := 0, 0
			for step := range 150 {
				switch x := rng.IntN(20); {
				case x == 0:
					now = now.Add(time.Duration(r+rng.IntN(3)) * time.Hour) // idle past the span
				case x < 4:
					now = now.Add(time.Duration(1+rng.IntN(3)) * time.Hour)
				default:
					now = now.Add(time.Duration(rng.Int64N(int64(time.Hour/2))) / time.Microsecond * time.Microsecond)
				}
				n := 1 + rng.IntN(30)
				if step%10 == 3 {
					n = 200 // a burst of four generations' worth
					if policy == bloom.Grow {
						n <<= rng.IntN(4) // up to 32 generations' worth: 5 extensions
					}
				}
				keys := make([][]byte, n)
				for i := range keys {
					if rng.IntN(8) == 0 && next > 0 {
						keys[i] = keyOf("tp-", rng.IntN(next))
					} else {
						keys[i] = keyOf("tp-", next)
						next++
					}
				}
				got, err := w.TestAndAddMany(ctx, keys)
				if err != nil {
					t.Fatal(err)
				}
				want := mem.TestAndAddMany(keys, nil)
				for i := range keys {
					if got[i] != want[i] {
						t.Fatalf("step %d, key %q: TestAndAdd %v in Redis, %v in memory", step, keys[i], got[i], want[i])
					}
				}
				checkWindowExport(t, w, mem)
				maxExt = max(maxExt, mem.Extensions())
				if step%5 == 0 {
					now = now.Add(time.Duration(rng.Int64N(int64(2*time.Hour))) / time.Microsecond * time.Microsecond)
					probe := keyRange("tp-", max(0, next-600), next+10)
					got, err := w.TestMany(ctx, probe)
					if err != nil {
						t.Fatal(err)
					}
					want := mem.TestMany(probe, nil)
					for i := range probe {
						if got[i] != want[i] {
							t.Fatalf("step %d, key %q: Test %v in Redis, %v in memory", step, probe[i], got[i], want[i])
						}
					}
					cnt, err := w.Count(ctx)
					if err != nil || cnt != mem.Count() {
						t.Fatalf("step %d: Count %d (%v) in Redis, %d in memory", step, cnt, err, mem.Count())
					}
				}
			}
			if w.Rotations() != mem.Rotations() || mem.Rotations() < 30 {
				t.Fatalf("%d rotations in Redis, %d in memory", w.Rotations(), mem.Rotations())
			}
			if policy == bloom.Grow && maxExt < 4 {
				t.Fatalf("at most %d extensions under Grow", maxExt)
			}
			t.Logf("%d keys, %d rotations, at most %d extensions", next, mem.Rotations(), maxExt)
		})
	}
}
