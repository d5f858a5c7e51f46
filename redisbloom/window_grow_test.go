package redisbloom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// windowBytes returns the bytes the generations of the window name hold
// on the server, extensions included (STRLEN of each slot's key and of its
// 16 extension keys), and the number of extension keys that exist.
func windowBytes(t *testing.T, rdb redis.UniversalClient, name string, r int) (total int64, exts int) {
	t.Helper()
	ctx := context.Background()
	for s := range r {
		slot := "{" + name + "}:w:" + strconv.Itoa(s)
		n, err := rdb.StrLen(ctx, slot).Result()
		if err != nil {
			t.Fatal(err)
		}
		total += n
		for j := 1; j <= 16; j++ {
			n, err := rdb.StrLen(ctx, slot+":x"+strconv.Itoa(j)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				exts++
			}
			total += n
		}
	}
	return total, exts
}

// falsePositives returns the share of n keys never added that tests
// present in w, and the bound it must stay under: the target plus four
// standard deviations of a binomial at the target.
func falsePositives(t *testing.T, test func([][]byte) ([]bool, error), target float64, n int) (rate, bound float64) {
	t.Helper()
	absent := keyRange("absent-", 0, n)
	got, err := test(absent)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for _, ok := range got {
		if ok {
			fp++
		}
	}
	return float64(fp) / float64(n), target + 4*math.Sqrt(target*(1-target)/float64(n))
}

// TestWindowGrowBurst: a time window under Grow on the server's clock
// takes a burst of 10 windows' worth of keys within one period: every key
// of the burst tests present while it is within the Duration (no early
// rotation forgot any), the rate over absent keys stays within the target,
// the generations' bytes on the server grow by the extensions, and when
// the burst has aged out the extension keys have expired (PEXPIRE) and the
// next add brings the window back to its ring's size, and the handle back
// to sending the base positions only.
func TestWindowGrowBurst(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const r, window, rate = 5, 400, 0.01
	period := 1500 * time.Millisecond
	w, err := redisbloom.NewWindow(ctx, rdb, name, window, rate, bloom.Generations(r), bloom.Every((r-1)*period), bloom.OnOverflow(bloom.Grow))
	if err != nil {
		t.Fatal(err)
	}
	ring, exts := windowBytes(t, rdb, name, r)
	if ring != int64(r)*int64(w.GenerationBits()/8) || exts != 0 {
		t.Fatalf("new window: %d bytes, %d extension keys; want %d, 0", ring, exts, r*w.GenerationBits()/8)
	}
	burst := keyRange("burst-", 0, 10*window)
	start := time.Now()
	if err := w.AddMany(ctx, burst); err != nil {
		t.Fatal(err)
	}
	present, err := w.TestMany(ctx, burst)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= w.Duration() {
		t.Fatalf("the burst and its test took %v, more than the Duration %v: too slow a machine for this test", took, w.Duration())
	}
	for i, ok := range present {
		if !ok {
			t.Fatalf("key %q of the burst absent within the Duration", burst[i])
		}
	}
	if n := redisbloom.WindowLevels(w); n < 3 {
		t.Fatalf("the handle sends %d extension levels after the burst", n)
	}
	peak, exts := windowBytes(t, rdb, name, r)
	if peak <= ring || exts < 3 {
		t.Fatalf("after the burst: %d bytes, %d extension keys (ring %d bytes)", peak, exts, ring)
	}
	// Export right after (the false-positive count below takes seconds
	// under -race, and the burst's generation may have expired by then).
	exported, err := w.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if exported.Extensions() != exts || exported.Bits() != uint64(peak)*8 {
		t.Fatalf("Export: %d extensions, %d bits; the server holds %d extension keys, %d bytes", exported.Extensions(), exported.Bits(), exts, peak)
	}
	fp, bound := falsePositives(t, func(k [][]byte) ([]bool, error) { return w.TestMany(ctx, k) }, rate, 40000)
	if fp > bound {
		t.Fatalf("false-positive rate %.4f after the burst, above %.4f", fp, bound)
	}
	t.Logf("ring %d bytes; after 10x the window in one period %d bytes in %d extensions; false-positive rate %.4f (bound %.4f)",
		ring, peak, exts, fp, bound)

	// The newest generation stops being live r periods after it started
	// (start, or a period later if the burst crossed a period, as it may
	// under -race), and its keys expire a second later.
	latest := int64(0)
	for s := range r {
		t0, err := rdb.HGet(ctx, "{"+name+"}:meta", "t"+strconv.Itoa(s)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		latest = max(latest, t0)
	}
	time.Sleep(time.Until(time.UnixMicro(latest).Add(time.Duration(r)*period + 1500*time.Millisecond)))
	idle, exts := windowBytes(t, rdb, name, r)
	if exts != 0 {
		t.Fatalf("%d extension keys left (%d bytes) once the burst aged out, with no call", exts, idle)
	}
	if err := w.Add(ctx, []byte("after")); err != nil {
		t.Fatal(err)
	}
	after, exts := windowBytes(t, rdb, name, r)
	if after != ring || exts != 0 {
		t.Fatalf("after the burst aged out and one add: %d bytes, %d extension keys; want %d, 0", after, exts, ring)
	}
	if n := redisbloom.WindowLevels(w); n != 0 {
		t.Fatalf("the handle still sends %d extension levels once the burst aged out", n)
	}
	present, err = w.TestMany(ctx, burst)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, ok := range present {
		if ok {
			kept++
		}
	}
	if kept > len(burst)/20 {
		t.Fatalf("%d of %d keys of the burst still present after it aged out", kept, len(burst))
	}
	t.Logf("idle %d bytes, after one add %d bytes", idle, after)
}

// TestWindowGrowRace: 8 clients, each with its own handle, TestAndAdd a
// burst of 10 windows' worth of keys into a window under Grow within one
// period (windowRace: same keys, same order): each key is reported new by
// at most one client, every key tests present afterwards, and Export
// decodes into an in-memory window with extensions whose rate over absent
// keys is within the target.
func TestWindowGrowRace(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const window, rate = 300, 0.01
	w, err := redisbloom.NewWindow(ctx, rdb, name, window, rate, bloom.Generations(4), bloom.Every(3*time.Hour), bloom.OnOverflow(bloom.Grow))
	if err != nil {
		t.Fatal(err)
	}
	handles := make([]*redisbloom.WindowFilter, 8)
	for c := range handles {
		if handles[c], err = redisbloom.OpenWindow(ctx, rdb, name); err != nil {
			t.Fatal(err)
		}
	}
	keys := keyRange("gr-", 0, 10*window)
	news := windowRace(t, handles, keys, 400, nil)
	fresh := 0
	for i, n := range news {
		if n > 1 {
			t.Fatalf("key %q reported new %d times", keys[i], n)
		}
		fresh += n
	}
	present, err := w.TestMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range present {
		if !ok {
			t.Fatalf("key %q lost", keys[i])
		}
	}
	if w.Rotations() != 0 {
		t.Fatalf("%d rotations within one period under Grow", w.Rotations())
	}
	mem, err := w.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := mem.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back := new(bloom.WindowFilter)
	if err := back.UnmarshalBinary(enc); err != nil || !back.Equal(mem) || mem.Extensions() < 3 {
		t.Fatalf("Export: %d extensions; decoded again: %v, equal %v", mem.Extensions(), err, back.Equal(mem))
	}
	fp, bound := falsePositives(t, func(k [][]byte) ([]bool, error) { return mem.TestMany(k, nil), nil }, rate, 100000)
	if fp > bound {
		t.Fatalf("exported window's false-positive rate %.4f, above %.4f", fp, bound)
	}
	// Count counts a key again when it goes to an extension while in the
	// base: an upper bound.
	if c := mem.Count(); c < uint64(fresh) {
		t.Fatalf("Count %d, %d keys reported new", c, fresh)
	}
	t.Logf("%d keys reported new by 8 clients, %d extensions, %d bits, false-positive rate %.4f (bound %.4f)",
		fresh, mem.Extensions(), mem.Bits(), fp, bound)
}

// TestWindowGrowImport: Import of an in-memory window under Grow with
// extensions in several generations recreates them (Export Equal to it,
// its encoding decoding with bloom.ReadWindow into an Equal window), and
// both keep answering alike afterwards, on the same fake clock; a window
// with fewer extension keys than its metadata counts, or of the wrong size,
// is corrupt, never "absent".
func TestWindowGrowImport(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const r = 4
	now := time.Unix(1_700_000_000, 0)
	opts := []bloom.Option{bloom.Generations(r), bloom.Every((r - 1) * time.Hour), bloom.OnOverflow(bloom.Grow)}
	mem, err := bloom.NewWindow(300, 0.01, append(opts, bloom.Clock(func() time.Time { return now }))...)
	if err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		if g > 0 {
			now = now.Add(time.Hour)
		}
		mem.AddMany(keyRange(fmt.Sprintf("im%d-", g), 0, 400*(g+1)))
	}
	if mem.Extensions() < 5 {
		t.Fatalf("%d extensions in memory", mem.Extensions())
	}
	name := windowName(t, rdb)
	w, err := redisbloom.NewWindowOnClock(ctx, rdb, name, 300, 0.01, func() int64 { return now.UnixMicro() }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	checkWindowExport(t, w, mem)
	got, err := w.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := got.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, err := mem.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != string(want) {
		t.Fatal("the encoding of Export differs from the in-memory window's")
	}
	read, err := bloom.ReadWindow(bytes.NewReader(enc))
	if err != nil || !read.Equal(mem) {
		t.Fatalf("ReadWindow of Export's encoding: %v", err)
	}
	more := keyRange("im-after-", 0, 900)
	gotAns, err := w.TestAndAddMany(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	wantAns := mem.TestAndAddMany(more, nil)
	for i := range more {
		if gotAns[i] != wantAns[i] {
			t.Fatalf("key %q: %v in Redis, %v in memory", more[i], gotAns[i], wantAns[i])
		}
	}
	checkWindowExport(t, w, mem)

	// Damaged extensions: each method fails with ErrCorrupt.
	x1 := "{" + name + "}:w:" + strconv.Itoa(int(w.Rotations()%r)) + ":x1"
	if n, err := rdb.Exists(ctx, x1).Result(); err != nil || n != 1 {
		t.Fatalf("%s: exists %d, %v", x1, n, err)
	}
	saved, err := rdb.Get(ctx, x1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for desc, tamper := range map[string]func() error{
		"extension deleted":   func() error { return rdb.Del(ctx, x1).Err() },
		"extension truncated": func() error { return rdb.Set(ctx, x1, saved[:len(saved)-1], 0).Err() },
		"extension grown":     func() error { return rdb.Append(ctx, x1, "x").Err() },
		"extension count past capacity": func() error {
			return rdb.HSet(ctx, "{"+name+"}:meta", "x"+strconv.Itoa(int(w.Rotations()%r)), "99999999").Err()
		},
	} {
		meta, err := rdb.HGetAll(ctx, "{"+name+"}:meta").Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := tamper(); err != nil {
			t.Fatal(err)
		}
		for call, err := range everyWindow(ctx, w, more) {
			if !errors.Is(err, redisbloom.ErrCorrupt) {
				t.Errorf("%s: %s: %v, want ErrCorrupt", desc, call, err)
			}
		}
		if err := rdb.Set(ctx, x1, saved, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, "{"+name+"}:meta", meta).Err(); err != nil {
			t.Fatal(err)
		}
		checkWindowExport(t, w, mem)
	}
}

// TestWindowGrowCluster: on the 3-master Cluster, a window under Grow
// takes bursts that make extensions in several generations, answering and
// exporting as the in-memory window on the same fake clock, with every
// extension key in the metadata's slot.
func TestWindowGrowCluster(t *testing.T) {
	rdb := clusterClient(t)
	ctx := context.Background()
	name := windowName(t, rdb)
	const r = 4
	now := time.Unix(1_700_000_000, 0)
	opts := []bloom.Option{bloom.Generations(r), bloom.Every((r - 1) * time.Hour), bloom.OnOverflow(bloom.Grow)}
	mem, err := bloom.NewWindow(200, 0.01, append(opts, bloom.Clock(func() time.Time { return now }))...)
	if err != nil {
		t.Fatal(err)
	}
	w, err := redisbloom.NewWindowOnClock(ctx, rdb, name, 200, 0.01, func() int64 { return now.UnixMicro() }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		if g > 0 {
			now = now.Add(time.Hour)
		}
		keys := keyRange(fmt.Sprintf("gc%d-", g), 0, 700)
		got, err := w.TestAndAddMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		want := mem.TestAndAddMany(keys, nil)
		for i := range keys {
			if got[i] != want[i] {
				t.Fatalf("key %q: %v on the Cluster, %v in memory", keys[i], got[i], want[i])
			}
		}
	}
	checkWindowExport(t, w, mem)
	slot, err := rdb.ClusterKeySlot(ctx, "{"+name+"}:meta").Result()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for s := range r {
		for j := 1; j <= 16; j++ {
			key := "{" + name + "}:w:" + strconv.Itoa(s) + ":x" + strconv.Itoa(j)
			if got, err := rdb.ClusterKeySlot(ctx, key).Result(); err != nil || got != slot {
				t.Fatalf("%s in slot %d (%v), the metadata in %d", key, got, err, slot)
			}
			n, err := rdb.Exists(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			found += int(n)
		}
	}
	if found != mem.Extensions() || found < 6 {
		t.Fatalf("%d extension keys on the Cluster, %d extensions in memory", found, mem.Extensions())
	}
	// Eight clients of the Cluster under a further burst lose no key.
	handles := make([]*redisbloom.WindowFilter, 8)
	for c := range handles {
		if handles[c], err = redisbloom.OpenWindow(ctx, rdb, name); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(handles))
	for c, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := keyRange(fmt.Sprintf("gcr%d-", c), 0, 300)
			if err := h.AddMany(ctx, keys); err != nil {
				errs <- err
				return
			}
			present, err := h.TestMany(ctx, keys)
			if err != nil {
				errs <- err
				return
			}
			for i, ok := range present {
				if !ok {
					errs <- fmt.Errorf("client %d: key %q lost", c, keys[i])
					return
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

// TestWindowGrowLimit: a generation of one key takes 2^16 keys in one
// period in its base and 16 extensions; the next key rotates early, on
// Redis as in memory (Export Equal after every batch), and the window
// keeps growing in the new generation.
func TestWindowGrowLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("2^16 keys of some 200 positions each")
	}
	rdb := client(t)
	ctx := context.Background()
	const r = 3
	now := time.Unix(1_700_000_000, 0)
	opts := []bloom.Option{bloom.Generations(r), bloom.Every((r - 1) * time.Hour), bloom.OnOverflow(bloom.Grow)}
	mem, err := bloom.NewWindow(2, 0.5, append(opts, bloom.Clock(func() time.Time { return now }))...)
	if err != nil {
		t.Fatal(err)
	}
	w, err := redisbloom.NewWindowOnClock(ctx, rdb, windowName(t, rdb), 2, 0.5, func() int64 { return now.UnixMicro() }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if w.GenerationCapacity() != 1 {
		t.Fatalf("%d keys a generation", w.GenerationCapacity())
	}
	keys := keyRange("lim-", 0, 1<<16+40)
	start := time.Now()
	for lo := 0; lo < len(keys); lo += 8192 {
		batch := keys[lo:min(lo+8192, len(keys))]
		if err := w.AddMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		mem.AddMany(batch)
	}
	checkWindowExport(t, w, mem)
	if mem.Rotations() != 1 || w.Rotations() != 1 || mem.Extensions() < 16 {
		t.Fatalf("%d rotations in memory, %d in Redis, %d extensions", mem.Rotations(), w.Rotations(), mem.Extensions())
	}
	t.Logf("%d keys in %v: %d rotation, %d extensions, %d bits", len(keys), time.Since(start), mem.Rotations(), mem.Extensions(), mem.Bits())
}
