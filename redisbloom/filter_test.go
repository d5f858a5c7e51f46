package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

func keyOf(prefix string, i int) []byte {
	return []byte(prefix + strconv.Itoa(i))
}

func keyRange(prefix string, lo, hi int) [][]byte {
	keys := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, keyOf(prefix, i))
	}
	return keys
}

// newPair returns a Redis filter and the in-memory filter with the same
// parameters.
func newPair(t *testing.T, rdb redis.UniversalClient, capacity uint64, errorRate float64, seed uint32) (*redisbloom.Filter, *bloom.BloomFilter) {
	t.Helper()
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), capacity, errorRate, bloom.Seed(seed))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.New(capacity, errorRate, bloom.Seed(seed), bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	if f.Bits() != mem.Bits() || f.Hashes() != mem.Hashes() || f.Seed() != mem.Seed() ||
		f.Capacity() != mem.Capacity() || f.ErrorRate() != mem.ErrorRate() {
		t.Fatalf("parameters differ: redis m=%d k=%d seed=%#x, memory m=%d k=%d seed=%#x",
			f.Bits(), f.Hashes(), f.Seed(), mem.Bits(), mem.Hashes(), mem.Seed())
	}
	return f, mem
}

// checkExport fails the test unless f exports to a filter Equal to want.
func checkExport(t *testing.T, f *redisbloom.Filter, want *bloom.BloomFilter) {
	t.Helper()
	got, err := f.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatalf("Export differs from the in-memory filter: count %d vs %d, fill %v vs %v",
			got.Count(), want.Count(), got.FillRatio(), want.FillRatio())
	}
}

// TestParity adds 10^5 keys to a Redis filter and to the in-memory filter
// with the same parameters, through every method, and checks that both give
// the same answers for every added and 10^5 absent keys, the same Count, and
// that Export equals the in-memory filter.
func TestParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const n = 100_000
	f, mem := newPair(t, rdb, n, 0.01, 0x1234abcd)

	keys := keyRange("https://example.com/page/", 0, n)
	// The first 2,000 one at a time, alternating Add and TestAndAdd.
	for i, key := range keys[:2000] {
		if i%2 == 0 {
			if err := f.Add(ctx, key); err != nil {
				t.Fatal(err)
			}
			mem.Add(key)
			continue
		}
		got, err := f.TestAndAdd(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.TestAndAdd(key); got != want {
			t.Fatalf("TestAndAdd(%q) = %v, in memory %v", key, got, want)
		}
	}
	// The rest in batches of 1,000, alternating AddMany and TestAndAddMany,
	// each batch overlapping the previous one by 100 keys.
	for lo := 1900; lo < n; lo += 900 {
		batch := keys[lo:min(lo+1000, n)]
		if lo/900%2 == 0 {
			if err := f.AddMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			for _, key := range batch {
				mem.Add(key)
			}
			continue
		}
		got, err := f.TestAndAddMany(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range batch {
			if want := mem.TestAndAdd(key); got[i] != want {
				t.Fatalf("TestAndAddMany: %q: %v, in memory %v", key, got[i], want)
			}
		}
	}
	checkExport(t, f, mem)
	if c, err := f.Count(ctx); err != nil || c != mem.Count() {
		t.Fatalf("Count = %d, %v; in memory %d", c, err, mem.Count())
	}

	absent := keyRange("https://example.org/other/", 0, n)
	for _, set := range [][][]byte{keys, absent} {
		for lo := 0; lo < n; lo += 5000 {
			batch := set[lo : lo+5000]
			got, err := f.TestMany(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range batch {
				if want := mem.Test(key); got[i] != want {
					t.Fatalf("TestMany: %q: %v, in memory %v", key, got[i], want)
				}
			}
		}
	}
	falsePositives := 0
	for i, key := range absent[:2000] {
		got, err := f.Test(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got != mem.Test(key) {
			t.Fatalf("Test(%q) = %v, in memory %v", key, got, !got)
		}
		if got {
			falsePositives++
		}
		if got, err := f.Test(ctx, keys[i*50]); err != nil || !got {
			t.Fatalf("Test(%q) = %v, %v for an added key", keys[i*50], got, err)
		}
	}
	t.Logf("m=%d k=%d: %d of 2000 absent keys reported present", f.Bits(), f.Hashes(), falsePositives)

	// Adding everything again changes nothing, not even Count: adds are
	// idempotent, which is what makes retrying them safe.
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	checkExport(t, f, mem)
}

// TestParitySizes checks parity and Export for small and odd sizes (bits
// not a multiple of 8 or 64, positions repeating within a key), batches
// larger than one script call, and empty and duplicate-key batches.
func TestParitySizes(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, c := range []struct {
		n    uint64
		p    float64
		keys int
	}{
		{1, 0.5, 10}, {3, 0.3, 50}, {10, 0.1, 100}, {100, 1e-6, 1000},
		{1000, 0.001, 40_000}, {200_000, 1e-4, 200_000},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%g", c.n, c.p), func(t *testing.T) {
			f, mem := newPair(t, rdb, c.n, c.p, bloom.DefaultSeed)
			t.Logf("m=%d (m%%64=%d) k=%d", f.Bits(), f.Bits()%64, f.Hashes())
			keys := keyRange("k", 0, c.keys)
			keys = append(keys, keys[:c.keys/10]...) // duplicates within the batch
			got, err := f.TestAndAddMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				if want := mem.TestAndAdd(key); got[i] != want {
					t.Fatalf("key %d %q: %v, in memory %v", i, key, got[i], want)
				}
			}
			if got, err := f.TestAndAddMany(ctx, nil); err != nil || len(got) != 0 {
				t.Fatalf("TestAndAddMany(nil) = %v, %v", got, err)
			}
			checkExport(t, f, mem)
		})
	}
}

// TestConcurrentTestAndAdd has 8 goroutines, each with its own connection,
// TestAndAdd the same 10^4 keys in different orders, some one at a time and
// some in batches: each key must be reported new exactly once.
func TestConcurrentTestAndAdd(t *testing.T) {
	addr := serverAddr(t)
	setup := newClient(t, addr)
	ctx := context.Background()
	const n, workers = 10_000, 8
	// At 1e-9 a false positive among 10^4 keys (which no worker would see
	// as new) has a probability of about 10^-5.
	name := filterName(t, setup)
	if _, err := redisbloom.New(ctx, setup, name, n, 1e-9); err != nil {
		t.Fatal(err)
	}
	keys := keyRange("url-", 0, n)
	var news [n]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := newClient(t, addr, func(o *redis.Options) { o.PoolSize = 1 })
			f, err := redisbloom.New(ctx, rdb, name, n, 1e-9)
			if err != nil {
				errs <- err
				return
			}
			order := rand.New(rand.NewPCG(uint64(w), 1)).Perm(n)
			if w%2 == 0 {
				for _, i := range order {
					present, err := f.TestAndAdd(ctx, keys[i])
					if err != nil {
						errs <- err
						return
					}
					if !present {
						news[i].Add(1)
					}
				}
				return
			}
			for lo := 0; lo < n; lo += 100 {
				batch := make([][]byte, 0, 100)
				for _, i := range order[lo : lo+100] {
					batch = append(batch, keys[i])
				}
				present, err := f.TestAndAddMany(ctx, batch)
				if err != nil {
					errs <- err
					return
				}
				for j, i := range order[lo : lo+100] {
					if !present[j] {
						news[i].Add(1)
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
	for i := range news {
		if c := news[i].Load(); c != 1 {
			t.Errorf("key %q reported new %d times, want exactly once", keys[i], c)
		}
	}
	f, err := redisbloom.Open(ctx, setup, name)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.Count(ctx); err != nil || c != n {
		t.Fatalf("Count = %d, %v; want %d", c, err, n)
	}
}

// TestOpen checks New's create-or-open, Open, and the errors for different
// parameters, foreign data, bad arguments and filters too large for Redis.
func TestOpen(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := filterName(t, rdb)
	f, err := redisbloom.New(ctx, rdb, name, 1000, 0.01, bloom.Seed(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	// The same parameters open the same filter.
	g, err := redisbloom.New(ctx, rdb, name, 1000, 0.01, bloom.Seed(7))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Test(ctx, []byte("a")); err != nil || !ok {
		t.Fatalf("second New does not see the first one's key: %v, %v", ok, err)
	}
	h, err := redisbloom.Open(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name() != name || h.Bits() != f.Bits() || h.Hashes() != f.Hashes() || h.Seed() != 7 ||
		h.Capacity() != 1000 || h.ErrorRate() != 0.01 {
		t.Fatalf("Open: m=%d k=%d seed=%d n=%d p=%v, want those of %+v", h.Bits(), h.Hashes(), h.Seed(), h.Capacity(), h.ErrorRate(), f)
	}

	for _, c := range []struct {
		desc      string
		capacity  uint64
		errorRate float64
		opts      []bloom.Option
	}{
		{"capacity", 2000, 0.01, []bloom.Option{bloom.Seed(7)}},
		{"error rate", 1000, 0.001, []bloom.Option{bloom.Seed(7)}},
		{"error rate, same m and k", 1000, 0.0100000001, []bloom.Option{bloom.Seed(7)}},
		{"seed", 1000, 0.01, nil},
	} {
		_, err := redisbloom.New(ctx, rdb, name, c.capacity, c.errorRate, c.opts...)
		if !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("New with another %s: %v, want bloom.ErrIncompatible", c.desc, err)
		}
	}

	if _, err := redisbloom.Open(ctx, rdb, filterName(t, rdb)); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Errorf("Open of a missing filter: %v, want ErrNotFound", err)
	}

	// Keys that hold something else.
	foreign := map[string]func(meta, bits string) error{
		"meta is a string": func(meta, bits string) error { return rdb.Set(ctx, meta, "x", 0).Err() },
		"other format": func(meta, bits string) error {
			if err := rdb.Set(ctx, bits, "", 0).Err(); err != nil {
				return err
			}
			return rdb.HSet(ctx, meta, "format", "redisbloom/2", "id", "x").Err()
		},
		"bitmap without metadata": func(meta, bits string) error { return rdb.Set(ctx, bits, "\xff", 0).Err() },
	}
	for desc, setup := range foreign {
		name := filterName(t, rdb)
		if err := setup("{"+name+"}:meta", "{"+name+"}:bits"); err != nil {
			t.Fatal(err)
		}
		if _, err := redisbloom.New(ctx, rdb, name, 1000, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("New where %s: %v, want ErrFormat", desc, err)
		}
		if _, err := redisbloom.Open(ctx, rdb, name); err == nil {
			t.Errorf("Open where %s succeeded", desc)
		}
	}

	for _, c := range []struct {
		desc      string
		name      string
		capacity  uint64
		errorRate float64
		opts      []bloom.Option
	}{
		{"empty name", "", 1000, 0.01, nil},
		{"capacity 0", "x", 0, 0.01, nil},
		{"error rate 1", "x", 1000, 1, nil},
		{"zero option", "x", 1000, 0.01, []bloom.Option{{}}},
		{"more than 2^32 bits", "x", 1e9, 0.001, nil},
		{"2^32+3 bits", "x", 447_721_002, 0.01, nil},
	} {
		_, err := redisbloom.New(ctx, rdb, c.name, c.capacity, c.errorRate, c.opts...)
		if !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("New with %s: %v, want bloom.ErrInvalidParameter", c.desc, err)
		}
	}
	if _, err := redisbloom.Open(ctx, rdb, ""); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Open with an empty name: %v, want bloom.ErrInvalidParameter", err)
	}
}

// TestLargestFilter creates a filter of nearly MaxBits bits, the most one
// Redis string holds, and uses it. (TestOpen checks that a larger one is
// refused.)
func TestLargestFilter(t *testing.T) {
	rdb := client(t)
	if os.Getenv("BLOOM_REDIS_LARGE") != "1" {
		t.Skip("allocates 512 MiB in Redis; set BLOOM_REDIS_LARGE=1 to run")
	}
	ctx := context.Background()
	const capacity = 447_721_001 // 2^32-7 bits at 1%; one more key needs 2^32+3
	name := filterName(t, rdb)
	f, err := redisbloom.New(ctx, rdb, name, capacity, 0.01)
	if err != nil {
		t.Skipf("server cannot hold a 512 MiB filter: %v", err)
	}
	t.Logf("m=%d (2^32-%d)", f.Bits(), redisbloom.MaxBits-f.Bits())
	keys := keyRange("big-", 0, 10_000)
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	got, err := f.TestMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("false negative for %q", keys[i])
		}
	}
}

// every calls each method of f and returns the errors by method name.
func every(ctx context.Context, f *redisbloom.Filter) map[string]error {
	keys := keyRange("k", 0, 3)
	errs := map[string]error{}
	errs["Add"] = f.Add(ctx, keys[0])
	_, errs["Test"] = f.Test(ctx, keys[0])
	_, errs["TestAndAdd"] = f.TestAndAdd(ctx, keys[0])
	errs["AddMany"] = f.AddMany(ctx, keys)
	_, errs["TestMany"] = f.TestMany(ctx, keys)
	_, errs["TestAndAddMany"] = f.TestAndAddMany(ctx, keys)
	_, errs["Count"] = f.Count(ctx)
	_, errs["Export"] = f.Export(ctx)
	mem, _ := bloom.New(f.Capacity(), f.ErrorRate(), bloom.Seed(f.Seed()), bloom.Classic())
	errs["Import"] = f.Import(ctx, mem)
	return errs
}

// checkNotFound fails the test unless every method of f returns ErrNotFound
// and none of them wrote to Redis.
func checkNotFound(t *testing.T, rdb redis.UniversalClient, f *redisbloom.Filter, wantKeys int64) {
	t.Helper()
	ctx := context.Background()
	for method, err := range every(ctx, f) {
		if !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", method, err)
		}
	}
	name := f.Name()
	if n, err := rdb.Exists(ctx, "{"+name+"}:meta", "{"+name+"}:bits").Result(); err != nil || n != wantKeys {
		t.Errorf("%d of the filter's keys exist (%v), want %d: a failed call wrote", n, err, wantKeys)
	}
}

// TestNotFound checks that a filter whose keys were deleted, flushed or
// evicted, or that was deleted and created again, gives ErrNotFound from
// every method, never "absent", and that no method recreates its keys.
func TestNotFound(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	cases := []struct {
		desc     string
		lose     func(f *redisbloom.Filter) error
		keysLeft int64
	}{
		{"Delete", func(f *redisbloom.Filter) error { return f.Delete(ctx) }, 0},
		{"DEL of both keys", func(f *redisbloom.Filter) error {
			return rdb.Del(ctx, "{"+f.Name()+"}:meta", "{"+f.Name()+"}:bits").Err()
		}, 0},
		{"metadata evicted", func(f *redisbloom.Filter) error { return rdb.Del(ctx, "{"+f.Name()+"}:meta").Err() }, 1},
		{"bitmap evicted", func(f *redisbloom.Filter) error { return rdb.Del(ctx, "{"+f.Name()+"}:bits").Err() }, 1},
		{"created again", func(f *redisbloom.Filter) error {
			if err := f.Delete(ctx); err != nil {
				return err
			}
			_, err := redisbloom.New(ctx, rdb, f.Name(), f.Capacity(), f.ErrorRate(), bloom.Seed(f.Seed()))
			return err
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.AddMany(ctx, keyRange("k", 0, 3)); err != nil {
				t.Fatal(err)
			}
			if err := c.lose(f); err != nil {
				t.Fatal(err)
			}
			checkNotFound(t, rdb, f, c.keysLeft)
		})
	}

	t.Run("New after the bitmap was lost", func(t *testing.T) {
		name := filterName(t, rdb)
		f, err := redisbloom.New(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, "{"+name+"}:bits").Err(); err != nil {
			t.Fatal(err)
		}
		g, err := redisbloom.New(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatalf("New of a filter whose bitmap is gone: %v", err)
		}
		if ok, err := g.Test(ctx, []byte("k")); err != nil || ok {
			t.Fatalf("re-created filter: Test = %v, %v; want false, nil", ok, err)
		}
		if c, err := g.Count(ctx); err != nil || c != 0 {
			t.Fatalf("re-created filter: Count = %d, %v; want 0", c, err)
		}
		if err := f.Add(ctx, []byte("k")); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Fatalf("Add on the old handle: %v, want ErrNotFound", err)
		}
	})

	t.Run("FLUSHDB", func(t *testing.T) {
		// On a private server: flushing the shared one would disturb other
		// users of it.
		srv := startServer(t)
		rdb := newClient(t, srv.addr())
		f, err := redisbloom.New(ctx, rdb, "flushed", 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		checkNotFound(t, rdb, f, 0)
	})

	t.Run("Delete twice", func(t *testing.T) {
		f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatalf("second Delete: %v", err)
		}
	})
}

// TestRestart checks that a filter lost in a server restart (persistence
// off) gives ErrNotFound, after the client reconnects by itself.
func TestRestart(t *testing.T) {
	srv := startServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "restarted", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 1000)
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	// The pool's connection died with the server; the first call on it may
	// fail with a network error before the client reconnects.
	var got []bool
	for range 3 {
		if got, err = f.TestMany(ctx, keys); err == nil || errors.Is(err, redisbloom.ErrNotFound) {
			break
		}
		t.Logf("first call after the restart: %v", err)
	}
	if !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("TestMany after a restart: %v, %d answers; want ErrNotFound", err, len(got))
	}
	checkNotFound(t, rdb, f, 0)
}

// TestZeroFilter checks that a zero Filter fails loudly.
func TestZeroFilter(t *testing.T) {
	var f redisbloom.Filter
	for method, err := range every(context.Background(), &f) {
		if err == nil || !strings.Contains(err.Error(), "zero Filter") {
			t.Errorf("%s on a zero Filter: %v", method, err)
		}
	}
	if err := f.Delete(context.Background()); err == nil {
		t.Error("Delete on a zero Filter succeeded")
	}
}

// roundTrips counts the network round trips a client makes to run scripts:
// each script call sent alone and each pipeline of them counts once.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scripted(cmd) {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// scripted reports whether cmds include a script call, leaving out the
// commands go-redis sends when it opens a connection.
func scripted(cmds ...redis.Cmder) bool {
	for _, cmd := range cmds {
		if strings.HasPrefix(cmd.Name(), "eval") {
			return true
		}
	}
	return false
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if scripted(cmds...) {
			r.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// TestRoundTrips checks that every operation takes one round trip, batches
// of any size included, and that batches recover when the server's script
// cache was flushed (two round trips then).
func TestRoundTrips(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	f, mem := newPair(t, rdb, 100_000, 0.001, bloom.DefaultSeed)
	var rt roundTrips
	rdb.AddHook(&rt)
	big := keyRange("big-", 0, 30_000) // several script calls
	count := func(desc string, want int64, op func() error) {
		t.Helper()
		before := rt.n.Load()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if got := rt.n.Load() - before; got != want {
			t.Errorf("%s took %d round trips, want %d", desc, got, want)
		}
	}
	// Warm the script cache: the first use of each script may need EVAL.
	// every ends with an Import of an empty filter, so f is empty again.
	every(ctx, f)
	key := []byte("one")
	count("Add", 1, func() error { mem.Add(key); return f.Add(ctx, key) })
	count("Test", 1, func() error { _, err := f.Test(ctx, key); return err })
	count("TestAndAdd", 1, func() error { _, err := f.TestAndAdd(ctx, key); return err })
	count("AddMany(1000)", 1, func() error { return f.AddMany(ctx, big[:1000]) })
	count("TestMany(1000)", 1, func() error { _, err := f.TestMany(ctx, big[:1000]); return err })
	count("TestAndAddMany(30000)", 1, func() error { _, err := f.TestAndAddMany(ctx, big); return err })
	count("TestMany(30000)", 1, func() error { _, err := f.TestMany(ctx, big); return err })
	count("Count", 1, func() error { _, err := f.Count(ctx); return err })
	for _, k := range big {
		mem.Add(k)
	}

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	more := keyRange("more-", 0, 30_000)
	count("AddMany(30000) after SCRIPT FLUSH", 2, func() error { return f.AddMany(ctx, more) })
	for _, k := range more {
		mem.Add(k)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	count("TestMany(30000) after SCRIPT FLUSH", 2, func() error {
		got, err := f.TestMany(ctx, more)
		for i, ok := range got {
			if !ok {
				t.Fatalf("false negative for %q", more[i])
			}
		}
		return err
	})
	checkExport(t, f, mem)
}

// TestContextDeadline checks that a call gives up at its context's deadline
// while the server stalls (CLIENT PAUSE), when the client honours contexts.
func TestContextDeadline(t *testing.T) {
	addr := serverAddr(t)
	admin := newClient(t, addr)
	rdb := newClient(t, addr, func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
	})
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, filterName(t, admin), 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, []byte("warm")); err != nil { // scripts cached, connection open
		t.Fatal(err)
	}
	if _, err := f.Test(ctx, []byte("warm")); err != nil {
		t.Fatal(err)
	}
	if err := admin.ClientPause(ctx, 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ClientUnpause(context.Background()) })
	ops := map[string]func(ctx context.Context) error{
		"Add":  func(ctx context.Context) error { return f.Add(ctx, []byte("k")) },
		"Test": func(ctx context.Context) error { _, err := f.Test(ctx, []byte("k")); return err },
		"AddMany": func(ctx context.Context) error {
			return f.AddMany(ctx, keyRange("k", 0, 100_000))
		},
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		err := op(ctx)
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Errorf("%s succeeded while the server was paused", name)
		}
		if elapsed > time.Second {
			t.Errorf("%s returned after %v, long after its 200ms deadline", name, elapsed)
		}
		t.Logf("%s: %v after %v", name, err, elapsed.Round(time.Millisecond))
	}
}

// TestBlockedOptionRefused passes bloom.Blocked to every constructor: Redis
// filters hold the classic layout only, so each must refuse it up front
// with bloom.ErrInvalidParameter naming the option, and write nothing.
// (Before issue 21, NewScalable above 65,536 keys built a classic filter
// without error, below it failed with "internal error: the sizes of
// sub-filter 0 differ", and New failed with "bits must be a multiple of 512
// with Blocked, got 1".)
func TestBlockedOptionRefused(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for desc, create := range map[string]func(name string) (any, error){
		"New": func(name string) (any, error) {
			return redisbloom.New(ctx, rdb, name, 100_000, 0.01, bloom.Blocked())
		},
		"New, seeded": func(name string) (any, error) {
			return redisbloom.New(ctx, rdb, name, 100_000, 0.01, bloom.Seed(7), bloom.Blocked())
		},
		"NewScalable, 1,000 keys": func(name string) (any, error) {
			return redisbloom.NewScalable(ctx, rdb, name, 1000, 0.01, bloom.Blocked())
		},
		"NewScalable, 100,000 keys": func(name string) (any, error) {
			return redisbloom.NewScalable(ctx, rdb, name, 100_000, 0.01, bloom.Linear(1), bloom.Blocked())
		},
		"NewSharded": func(name string) (any, error) {
			return redisbloom.NewSharded(ctx, rdb, name, 2, 100_000, 0.01, bloom.Blocked())
		},
		"NewShardedScalable, 1,000 keys": func(name string) (any, error) {
			return redisbloom.NewShardedScalable(ctx, rdb, name, 2, 1000, 0.01, bloom.Blocked())
		},
		"NewShardedScalable, 1,000,000 keys": func(name string) (any, error) {
			return redisbloom.NewShardedScalable(ctx, rdb, name, 2, 1_000_000, 0.01, bloom.Blocked())
		},
	} {
		t.Run(desc, func(t *testing.T) {
			name := scalableName(t, rdb)
			t.Cleanup(func() {
				for _, pattern := range []string{"{" + name + "}*", "{" + name + "/*"} {
					keys, _ := rdb.Keys(context.Background(), pattern).Result()
					if len(keys) > 0 {
						rdb.Del(context.Background(), keys...)
					}
				}
			})
			got, err := create(name)
			if !errors.Is(err, bloom.ErrInvalidParameter) || !strings.Contains(err.Error(), "bloom.Blocked") {
				t.Fatalf("got %T, %v; want an error wrapping bloom.ErrInvalidParameter that names bloom.Blocked", got, err)
			}
			t.Logf("%v", err)
			for _, pattern := range []string{"{" + name + "}*", "{" + name + "/*"} {
				if keys, err := rdb.Keys(ctx, pattern).Result(); err != nil || len(keys) > 0 {
					t.Errorf("keys %q left after the refusal (%v)", keys, err)
				}
			}
		})
	}
}
