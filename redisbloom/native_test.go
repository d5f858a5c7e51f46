package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// The NativeFilter tests need a server with BF.* commands (Redis 8, or the
// RedisBloom module). BLOOM_REDIS_BF says what the servers at
// BLOOM_REDIS_ADDR and BLOOM_REDIS_CLUSTER_ADDRS have: "1" that they must
// have BF.* (the tests fail without), "0" that they must not (the tests
// that need BF.* skip, saying so, and TestNativeWithoutModule runs), unset
// that the tests find out and skip without them. Tests that restart or
// replicate a server start private servers (redis-server from PATH) that
// load the module the shared server loaded (its MODULE LIST path).

const bfEnv = "BLOOM_REDIS_BF"

// hasBF reports whether the server of rdb has the BF.* commands.
func hasBF(t testing.TB, rdb redis.UniversalClient) bool {
	t.Helper()
	ok, err := bfdump.HasCommands(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// requireBF fails or skips the test, as BLOOM_REDIS_BF says, unless the
// server of rdb has the BF.* commands.
func requireBF(t testing.TB, rdb redis.UniversalClient, which string) {
	t.Helper()
	has := hasBF(t, rdb)
	switch os.Getenv(bfEnv) {
	case "1":
		if !has {
			t.Fatalf("%s=1 but the %s has no BF.* commands (load the RedisBloom module)", bfEnv, which)
		}
	case "0":
		if has {
			t.Fatalf("%s=0 but the %s has BF.* commands", bfEnv, which)
		}
		t.Skipf("%s=0: the %s has no BF.* commands (no RedisBloom module); TestNativeWithoutModule covers it", bfEnv, which)
	default:
		if !has {
			t.Skipf("the %s has no BF.* commands (Redis 8, or redis-server --loadmodule redisbloom.so, have them; %s=1 makes this a failure)", which, bfEnv)
		}
	}
}

// bfClient returns a client of the shared test server, which has BF.*.
func bfClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := client(t)
	requireBF(t, rdb, "server at "+addrEnv)
	return rdb
}

// moduleArgs returns the --loadmodule arguments that give a private
// redis-server the shared server's RedisBloom module.
func moduleArgs(t testing.TB) []string {
	t.Helper()
	rdb := bfClient(t)
	mods, err := rdb.Do(context.Background(), "MODULE", "LIST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		fields := map[string]any{}
		switch m := m.(type) {
		case []any:
			for i := 0; i+1 < len(m); i += 2 {
				fields[fmt.Sprint(m[i])] = m[i+1]
			}
		case map[any]any:
			for k, v := range m {
				fields[fmt.Sprint(k)] = v
			}
		}
		if fields["name"] == "bf" {
			if path, _ := fields["path"].(string); path != "" {
				return []string{"--loadmodule", path}
			}
		}
	}
	// Redis 8 has BF.* built in: no module to load.
	return nil
}

// startBFServer starts a private server with BF.*.
func startBFServer(t testing.TB, args ...string) *server {
	t.Helper()
	return startServer(t, append(moduleArgs(t), args...)...)
}

// nativeName returns a name no other test uses, and destroys the filter
// when the test ends.
func nativeName(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	name := filterName(t, rdb)
	t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
	return name
}

func strs(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// TestNativeParity drives a NativeFilter and bfdump's in-memory copy of
// RedisBloom's filter (bfdump.Reserve, the same sub-filters, hash and
// growth) with the same keys through every method, in batches that cross
// the 10,000 keys of one call, through growth to several sub-filters: every
// answer, Count, Info and Export must equal the in-memory filter's, and a
// raw BF.MEXISTS from another client must answer as Test does.
func TestNativeParity(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	for _, c := range []struct {
		capacity uint64
		rate     float64
		opts     []bfdump.Option
	}{
		{1000, 0.01, nil},
		{2000, 0.001, []bfdump.Option{bfdump.Expansion(4)}},
		{50_000, 0.05, []bfdump.Option{bfdump.NonScaling()}},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%v/opts=%d", c.capacity, c.rate, len(c.opts)), func(t *testing.T) {
			f, err := redisbloom.NewNative(ctx, rdb, nativeName(t, rdb), c.capacity, c.rate, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := bfdump.Reserve(c.capacity, c.rate, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(c.capacity), 1))
			next := 0
			fresh := func(n int) [][]byte {
				keys := keyRange("p", next, next+n)
				next += n
				// duplicates within the batch and of earlier keys
				for i := 0; i < n/10 && next > 1; i++ {
					keys[rng.IntN(n)] = keyOf("p", rng.IntN(next))
				}
				return keys
			}
			check := func(step string, got, want []bool, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d answers, want %d", step, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s: answer %d is %v, in memory %v", step, i, got[i], want[i])
					}
				}
			}
			total := 3 * c.capacity
			if mem.NonScaling() {
				total = c.capacity / 2 // never full: TestNativeNonScalingFull
			}
			for step := 0; uint64(next) < total; step++ {
				var keys [][]byte
				switch step % 6 {
				case 0: // TestAndAddMany over the call limit
					keys = fresh(12_345)
					want, err := mem.TestAndAddMany(keys, nil)
					if err != nil {
						t.Fatal(err)
					}
					got, err := f.TestAndAddMany(ctx, keys)
					check("TestAndAddMany", got, want, err)
				case 1:
					keys = fresh(1000)
					want, _ := mem.TestAndAddManyStrings(strs(keys), nil)
					got, err := f.TestAndAddManyStrings(ctx, strs(keys))
					check("TestAndAddManyStrings", got, want, err)
				case 2:
					keys = fresh(500)
					if err := mem.AddMany(keys); err != nil {
						t.Fatal(err)
					}
					if err := f.AddMany(ctx, keys); err != nil {
						t.Fatal(err)
					}
				case 3:
					keys = fresh(500)
					_ = mem.AddManyStrings(strs(keys))
					if err := f.AddManyStrings(ctx, strs(keys)); err != nil {
						t.Fatal(err)
					}
				case 4:
					keys = fresh(20)
					for _, k := range keys {
						want, _ := mem.TestAndAdd(k)
						got, err := f.TestAndAdd(ctx, k)
						check("TestAndAdd", []bool{got}, []bool{want}, err)
					}
				case 5:
					keys = fresh(20)
					for i, k := range keys {
						if i%2 == 0 {
							_ = mem.Add(k)
							if err := f.Add(ctx, k); err != nil {
								t.Fatal(err)
							}
						} else {
							want, _ := mem.TestAndAddString(string(k))
							got, err := f.TestAndAddString(ctx, string(k))
							check("TestAndAddString", []bool{got}, []bool{want}, err)
							_ = f.AddString(ctx, string(k))
						}
					}
				}
				// Present and absent keys, single and batched.
				probe := append(keyRange("p", max(0, next-3000), next), keyRange("absent", next, next+3000)...)
				want := mem.TestMany(probe, nil)
				got, err := f.TestMany(ctx, probe)
				check("TestMany", got, want, err)
				got, err = f.TestManyStrings(ctx, strs(probe))
				check("TestManyStrings", got, want, err)
				for _, i := range []int{0, len(probe) / 2, len(probe) - 1} {
					one, err := f.Test(ctx, probe[i])
					check("Test", []bool{one}, want[i:i+1], err)
					one, err = f.TestString(ctx, string(probe[i]))
					check("TestString", []bool{one}, want[i:i+1], err)
				}
				raw := []any{"BF.MEXISTS", f.Key()}
				for _, k := range probe[:100] {
					raw = append(raw, k)
				}
				vals, err := rdb.Do(ctx, raw...).Slice()
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range vals {
					if (v == int64(1) || v == true) != want[i] {
						t.Fatalf("raw BF.MEXISTS answer %d is %v, Test %v", i, v, want[i])
					}
				}
				if n, err := f.Count(ctx); err != nil || n != mem.Count() {
					t.Fatalf("Count = %d, %v; in memory %d", n, err, mem.Count())
				}
				if in, err := f.Info(ctx); err != nil || in != mem.Info() {
					t.Fatalf("Info = %+v, %v; in memory %+v", in, err, mem.Info())
				}
			}
			exp, err := f.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !exp.Equal(mem) {
				t.Fatalf("Export differs from the in-memory filter: %+v against %+v", exp.Info(), mem.Info())
			}
			t.Logf("%d keys, %d sub-filters, count %d", next, mem.Info().Filters, mem.Count())
		})
	}
}

// TestNativeConcurrentTestAndAdd has 8 clients, each on its own connection
// pool, TestAndAdd the same 20,000 keys in different orders and batch
// sizes: each key must be reported new to at most one of them, and the
// keys reported new must be exactly Count.
func TestNativeConcurrentTestAndAdd(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	name := nativeName(t, rdb)
	if _, err := redisbloom.NewNative(ctx, rdb, name, 5000, 0.01); err != nil {
		t.Fatal(err)
	}
	keys := keyRange("c", 0, 20_000)
	news := make([]int32, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := redisbloom.OpenNative(ctx, newClient(t, serverAddr(t)), name)
			if err != nil {
				t.Error(err)
				return
			}
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			order := rng.Perm(len(keys))
			for lo := 0; lo < len(order); {
				n := 1 + rng.IntN(700)
				if w%4 == 0 {
					n = 1
				}
				idx := order[lo:min(lo+n, len(order))]
				batch := make([][]byte, len(idx))
				for i, j := range idx {
					batch[i] = keys[j]
				}
				var got []bool
				if len(batch) == 1 && w%2 == 0 {
					p, err := f.TestAndAdd(ctx, batch[0])
					got = []bool{p}
					if err != nil {
						t.Error(err)
						return
					}
				} else if got, err = f.TestAndAddMany(ctx, batch); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, j := range idx {
					if !got[i] {
						news[j]++
					}
				}
				mu.Unlock()
				lo += len(idx)
			}
		}()
	}
	wg.Wait()
	total := 0
	for j, n := range news {
		if n > 1 {
			t.Fatalf("key %s reported new to %d clients", keys[j], n)
		}
		total += int(n)
	}
	f, err := redisbloom.OpenNative(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Count(ctx); err != nil || n != uint64(total) {
		t.Fatalf("Count = %d, %v; keys reported new %d", n, err, total)
	}
	if total < len(keys)*99/100 {
		t.Fatalf("only %d of %d new keys reported new", total, len(keys))
	}
}

// everyNative calls every method of f and returns their errors.
func everyNative(ctx context.Context, f *redisbloom.NativeFilter) map[string]error {
	keys := keyRange("k", 0, 3)
	errs := map[string]error{}
	errs["Add"] = f.Add(ctx, keys[0])
	errs["AddString"] = f.AddString(ctx, "k0")
	_, errs["Test"] = f.Test(ctx, keys[0])
	_, errs["TestString"] = f.TestString(ctx, "k0")
	_, errs["TestAndAdd"] = f.TestAndAdd(ctx, keys[0])
	errs["AddMany"] = f.AddMany(ctx, keys)
	_, errs["TestMany"] = f.TestMany(ctx, keys)
	_, errs["TestAndAddMany"] = f.TestAndAddMany(ctx, keys)
	_, errs["TestAndAddManyStrings"] = f.TestAndAddManyStrings(ctx, strs(keys))
	// Batches past maxNativeScriptKeys go through the transaction.
	large := keyRange("large", 0, 100)
	errs["AddMany/transaction"] = f.AddMany(ctx, large)
	_, errs["TestMany/transaction"] = f.TestMany(ctx, large)
	_, errs["TestAndAddManyStrings/transaction"] = f.TestAndAddManyStrings(ctx, strs(large))
	_, errs["Count"] = f.Count(ctx)
	_, errs["Info"] = f.Info(ctx)
	_, errs["Export"] = f.Export(ctx)
	mem, _ := bfdump.Reserve(f.Capacity(), f.ErrorRate())
	errs["Import"] = f.Import(ctx, mem)
	return errs
}

// dumpOf returns DUMP of key ("" if it does not exist): its type, value and
// nothing else, to check that a refused call left it as it was.
func dumpOf(t testing.TB, rdb redis.UniversalClient, key string) string {
	t.Helper()
	v, err := rdb.Dump(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hashOf returns the fields of the hash at key, sorted: DUMP of a hash in
// hashtable encoding follows the dict's order, which reads change (they
// advance its incremental rehashing).
func hashOf(t testing.TB, rdb redis.UniversalClient, key string) string {
	t.Helper()
	m, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]string, 0, len(m))
	for k, v := range m {
		fields = append(fields, k+"="+v)
	}
	slices.Sort(fields)
	return strings.Join(fields, "\n")
}

// checkNative fails the test unless every method of f returns an error
// matching want, and none of them changed the filter's keys or left a key
// behind.
func checkNative(t *testing.T, rdb redis.UniversalClient, f *redisbloom.NativeFilter, want error) {
	t.Helper()
	ctx := context.Background()
	meta := "{" + f.Name() + "}:meta"
	before := [2]string{hashOf(t, rdb, meta), dumpOf(t, rdb, f.Key())}
	for method, err := range everyNative(ctx, f) {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", method, err, want)
		}
	}
	if after := [2]string{hashOf(t, rdb, meta), dumpOf(t, rdb, f.Key())}; after != before {
		t.Errorf("a refused call changed the keys: metadata %v, RedisBloom key %v",
			after[0] != before[0], after[1] != before[1])
	}
	if left, err := rdb.Keys(ctx, "{"+f.Name()+"}:bits:*").Result(); err != nil || len(left) != 0 {
		t.Errorf("keys left behind: %q (%v)", left, err)
	}
}

// TestNativeBroken changes a native filter's keys behind the package's back
// in each way eviction, expiry, other programs or an operator can: every
// method must fail with the right error, write nothing (a RedisBloom key
// BF.MADD would create with its defaults stays absent; one that is there
// stays as it was) and OpenNative and NewNative must fail too, until Destroy
// lets NewNative create the filter again.
func TestNativeBroken(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	for _, c := range []struct {
		desc   string
		damage func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error
		want   error
		open   error // OpenNative's, if not want
	}{
		{"RedisBloom key deleted", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, _ string) error {
			return rdb.Del(ctx, f.Key()).Err()
		}, redisbloom.ErrNotFound, nil},
		{"metadata deleted", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.Del(ctx, meta).Err()
		}, redisbloom.ErrNotFound, redisbloom.ErrCorrupt},
		{"both deleted", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.Del(ctx, meta, f.Key()).Err()
		}, redisbloom.ErrNotFound, nil},
		{"flushed", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.FlushDB(ctx).Err()
		}, redisbloom.ErrNotFound, nil},
		{"RedisBloom key replaced by a new one", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, _ string) error {
			if err := rdb.Del(ctx, f.Key()).Err(); err != nil {
				return err
			}
			return rdb.Do(ctx, "BF.ADD", f.Key(), "other").Err()
		}, redisbloom.ErrCorrupt, nil},
		{"RedisBloom key replaced by a string", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, _ string) error {
			return rdb.Set(ctx, f.Key(), "x", 0).Err()
		}, redisbloom.ErrCorrupt, nil},
		{"count raised", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.HSet(ctx, meta, "count", 1<<40).Err()
		}, redisbloom.ErrCorrupt, nil},
		{"capacity edited", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.HSet(ctx, meta, "capacity", 5).Err()
		}, nil, redisbloom.ErrCorrupt},
		{"marked lost", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, meta string) error {
			return rdb.HSet(ctx, meta, "lost", "test").Err()
		}, redisbloom.ErrLost, nil},
		{"created again", func(rdb redis.UniversalClient, f *redisbloom.NativeFilter, _ string) error {
			if err := redisbloom.Destroy(ctx, rdb, f.Name()); err != nil {
				return err
			}
			_, err := redisbloom.NewNative(ctx, rdb, f.Name(), f.Capacity(), f.ErrorRate())
			return err
		}, redisbloom.ErrNotFound, nil},
	} {
		t.Run(c.desc, func(t *testing.T) {
			rdb := rdb
			if c.desc == "flushed" { // a server of its own
				rdb = newClient(t, startBFServer(t).addr())
			}
			name := nativeName(t, rdb)
			f, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			keys := keyRange("b", 0, 500)
			if err := f.AddMany(ctx, keys); err != nil {
				t.Fatal(err)
			}
			meta := "{" + name + "}:meta"
			if err := c.damage(rdb, f, meta); err != nil {
				t.Fatal(err)
			}
			if c.want != nil {
				checkNative(t, rdb, f, c.want)
			}
			open := c.open
			if open == nil {
				open = c.want
			}
			_, err = redisbloom.OpenNative(ctx, rdb, name)
			switch {
			case c.desc == "created again": // the new filter opens
				if err != nil {
					t.Errorf("OpenNative: %v", err)
				}
			case c.desc == "RedisBloom key deleted" || c.desc == "both deleted" || c.desc == "flushed":
				if !errors.Is(err, redisbloom.ErrNotFound) {
					t.Errorf("OpenNative: %v, want ErrNotFound", err)
				}
				// NewNative creates it again, empty.
				g, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
				if err != nil {
					t.Fatalf("NewNative: %v", err)
				}
				if ok, err := g.Test(ctx, keys[0]); ok || err != nil {
					t.Fatalf("created again: Test = %v, %v", ok, err)
				}
				return
			default:
				if !errors.Is(err, open) {
					t.Errorf("OpenNative: %v, want %v", err, open)
				}
				if _, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01); err == nil {
					t.Errorf("NewNative on a broken filter succeeded")
				}
			}
			if err := redisbloom.Destroy(ctx, rdb, name); err != nil {
				t.Fatal(err)
			}
			g, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
			if err != nil {
				t.Fatalf("NewNative after Destroy: %v", err)
			}
			if ok, err := g.TestAndAdd(ctx, keys[0]); ok || err != nil {
				t.Fatalf("after Destroy: TestAndAdd = %v, %v; want false, nil", ok, err)
			}
		})
	}
}

// falseNegativesNative returns how many of keys f reports absent.
func falseNegativesNative(ctx context.Context, f *redisbloom.NativeFilter, keys [][]byte) (int, error) {
	got, err := f.TestMany(ctx, keys)
	n := 0
	for _, ok := range got {
		if !ok {
			n++
		}
	}
	return n, err
}

// checkNativeLost fails the test unless every method of f, and NewNative
// and OpenNative of its name, return ErrLost.
func checkNativeLost(t *testing.T, rdb redis.UniversalClient, f *redisbloom.NativeFilter) {
	t.Helper()
	checkNative(t, rdb, f, redisbloom.ErrLost)
	ctx := context.Background()
	if _, err := redisbloom.OpenNative(ctx, rdb, f.Name()); !errors.Is(err, redisbloom.ErrLost) {
		t.Errorf("OpenNative: %v, want ErrLost", err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, f.Name(), f.Capacity(), f.ErrorRate()); !errors.Is(err, redisbloom.ErrLost) {
		t.Errorf("NewNative: %v, want ErrLost", err)
	}
}

// TestNativeRestartFromOlderSnapshot is TestRestartFromOlderSnapshot for a
// NativeFilter: after a restart from an RDB snapshot taken halfway through
// the adds, the handles that saw the later writes get ErrLost, not
// "absent", then every handle, OpenNative and NewNative do, until Destroy.
func TestNativeRestartFromOlderSnapshot(t *testing.T) {
	srv := startBFServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "snapshot", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 2000)
	if err := f.AddMany(ctx, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys[1000:] {
		if err := f.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := redisbloom.OpenNative(ctx, rdb, "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := falseNegativesNative(ctx, reader, keys); n != 0 || err != nil {
		t.Fatalf("before the restart: %d false negatives, %v", n, err)
	}
	srv.restart()
	var n int
	err = afterRestart(t, func() error { n, err = falseNegativesNative(ctx, reader, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("reader after a restart from an older snapshot: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	err = afterRestart(t, func() error { n, err = falseNegativesNative(ctx, f, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("writer after a restart from an older snapshot: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	checkNativeLost(t, rdb, f)
	if err := redisbloom.Destroy(ctx, rdb, "snapshot"); err != nil {
		t.Fatal(err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, "snapshot", 10_000, 0.01); err != nil {
		t.Fatalf("NewNative after Destroy: %v", err)
	}
}

// TestNativeLostMarkReachesNewHandles: once a handle has noticed lost
// writes, a handle opened after the restart gets ErrLost too.
func TestNativeLostMarkReachesNewHandles(t *testing.T) {
	srv := startBFServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "snapshot", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	late, err := redisbloom.OpenNative(ctx, newClient(t, srv.addr()), "snapshot")
	if err != nil {
		t.Fatal(err) // nothing has noticed yet: it opens
	}
	if err := afterRestart(t, func() error { return f.Add(ctx, []byte("next")) }); !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("Add on the handle that saw the lost write: %v, want ErrLost", err)
	}
	if err := late.Add(ctx, []byte("other")); !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("Add on a handle opened after the restart: %v, want ErrLost", err)
	}
}

// TestNativeRestart: without persistence a restart loses the filter:
// ErrNotFound, never "absent".
func TestNativeRestart(t *testing.T) {
	srv := startBFServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "gone", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddMany(ctx, keyRange("k", 0, 100)); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	err = afterRestart(t, func() error { _, err := f.TestMany(ctx, keyRange("k", 0, 100)); return err })
	if !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("after a restart without persistence: %v, want ErrNotFound", err)
	}
	checkNative(t, rdb, f, redisbloom.ErrNotFound)
}

// TestNativeRestartWithAOF: with appendonly yes and appendfsync always a
// SIGKILL loses no acknowledged add, and the handle goes on working.
func TestNativeRestartWithAOF(t *testing.T) {
	srv := startBFServer(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "aof", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 3000) // grows to 2 sub-filters
	if err := f.AddMany(ctx, keys[:2000]); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys[2000:] {
		if err := f.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	srv.restart()
	var n int
	err = afterRestart(t, func() error { n, err = falseNegativesNative(ctx, f, keys); return err })
	if n != 0 || err != nil {
		t.Fatalf("after a restart with appendfsync always: %d false negatives, %v", n, err)
	}
	if err := f.Add(ctx, []byte("more")); err != nil {
		t.Fatal(err)
	}
}

// TestNativeFailoverToLaggingReplica promotes a replica that missed the
// last writes: the handle that made them gets ErrLost, not "absent".
func TestNativeFailoverToLaggingReplica(t *testing.T) {
	master := startBFServer(t)
	replica := startBFServer(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	replica.waitInSync(master)
	var d switchDialer
	d.addr.Store(master.addr())
	rdb := newClient(t, master.addr(), func(o *redis.Options) { o.Dialer = d.dial })
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "failover", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 2000)
	if err := f.AddMany(ctx, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master)
	replica.freeze()
	if err := f.AddMany(ctx, keys[1000:]); err != nil {
		t.Fatal(err)
	}
	// Reads on the frozen replica: ErrStale, never "absent".
	onReplica, err := redisbloom.OpenNative(ctx, rdb, "failover")
	if err != nil {
		t.Fatal(err)
	}
	if err := newClient(t, replica.addr()).ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	master.stop()
	d.addr.Store(replica.addr())
	var n int
	err = afterRestart(t, func() error { n, err = falseNegativesNative(ctx, f, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("after a failover to a lagging replica: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	if _, err := onReplica.TestMany(ctx, keys); !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("another handle after the failover: %v, want ErrLost", err)
	}
	checkNativeLost(t, rdb, f)
}

// TestNativeFormats: a Filter's name refuses NewNative and a NativeFilter's
// name refuses New, with ErrFormat; a RedisBloom key without metadata is
// another program's (ErrFormat) until Destroy.
func TestNativeFormats(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	name := nativeName(t, rdb)
	if _, err := redisbloom.New(ctx, rdb, name, 1000, 0.01); err != nil {
		t.Fatal(err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
		t.Errorf("NewNative on a Filter: %v, want ErrFormat", err)
	}
	if _, err := redisbloom.OpenNative(ctx, rdb, name); !errors.Is(err, redisbloom.ErrFormat) {
		t.Errorf("OpenNative on a Filter: %v, want ErrFormat", err)
	}
	if err := redisbloom.Destroy(ctx, rdb, name); err != nil {
		t.Fatal(err)
	}
	f, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redisbloom.New(ctx, rdb, name, 1000, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
		t.Errorf("New on a NativeFilter: %v, want ErrFormat", err)
	}
	if _, err := redisbloom.Open(ctx, rdb, name); !errors.Is(err, redisbloom.ErrFormat) {
		t.Errorf("Open on a NativeFilter: %v, want ErrFormat", err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, name, 1001, 0.01); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("NewNative with another capacity: %v, want ErrIncompatible", err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01, bfdump.Expansion(4)); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("NewNative with another expansion: %v, want ErrIncompatible", err)
	}
	if err := rdb.Del(ctx, "{"+name+"}:meta").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
		t.Errorf("NewNative on a RedisBloom key without metadata: %v, want ErrFormat", err)
	}
	_ = f
	for _, c := range []struct {
		capacity uint64
		rate     float64
		opts     []bfdump.Option
	}{
		{0, 0.01, nil}, {bfdump.MaxReserveCapacity + 1, 0.01, nil}, {1000, 0, nil}, {1000, 1, nil},
		{1000, 0.01, []bfdump.Option{bfdump.NonScaling(), bfdump.Expansion(3)}},
	} {
		if _, err := redisbloom.NewNative(ctx, rdb, name+"x", c.capacity, c.rate, c.opts...); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewNative(%d, %v): %v, want ErrInvalidParameter", c.capacity, c.rate, err)
		}
	}
}

// TestNativeNonScalingFull: a non-scaling filter refuses adds past its
// capacity with bfdump.ErrFull; the keys before are added.
func TestNativeNonScalingFull(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, nativeName(t, rdb), 100, 0.01, bfdump.NonScaling())
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("f", 0, 150)
	if _, err := f.TestAndAddMany(ctx, keys); !errors.Is(err, bfdump.ErrFull) {
		t.Fatalf("TestAndAddMany past the capacity: %v, want ErrFull", err)
	}
	if n, err := f.Count(ctx); err != nil || n < 95 || n > 100 {
		t.Fatalf("Count after the refused batch: %d, %v", n, err)
	}
	if n, err := falseNegativesNative(ctx, f, keys[:90]); n != 0 || err != nil {
		t.Fatalf("the keys before: %d false negatives, %v", n, err)
	}
	if err := f.Add(ctx, []byte("one more")); !errors.Is(err, bfdump.ErrFull) {
		t.Fatalf("Add: %v, want ErrFull", err)
	}
}

// TestNativeImport imports a filter built offline by bfdump.New (sized for
// the rate) and checks the answers, and that a filter of other parameters
// is refused with nothing written.
func TestNativeImport(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, nativeName(t, rdb), 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	other, err := redisbloom.OpenNative(ctx, rdb, f.Name())
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bfdump.New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("i", 0, 2500)
	if err := mem.AddMany(keys); err != nil {
		t.Fatal(err)
	}
	if err := f.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	probe := append(keyRange("i", 0, 2500), keyRange("absent", 0, 5000)...)
	got, err := other.TestMany(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	want := mem.TestMany(probe, nil)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("after Import, key %d: %v, in memory %v", i, got[i], want[i])
		}
	}
	exp, err := other.Export(ctx)
	if err != nil || !exp.Equal(mem) {
		t.Fatalf("Export after Import: equal %v, %v", err == nil && exp.Equal(mem), err)
	}
	before := dumpOf(t, rdb, f.Key())
	for _, bad := range []func() (*bfdump.Filter, error){
		func() (*bfdump.Filter, error) { return bfdump.Reserve(1001, 0.01) },
		func() (*bfdump.Filter, error) { return bfdump.Reserve(1000, 0.02) },
		func() (*bfdump.Filter, error) { return bfdump.Reserve(1000, 0.01, bfdump.NonScaling()) },
		func() (*bfdump.Filter, error) { return bfdump.Reserve(1000, 0.01, bfdump.Expansion(3)) },
	} {
		g, err := bad()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Import(ctx, g); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("Import of %+v: %v, want ErrIncompatible", g.Info(), err)
		}
	}
	if dumpOf(t, rdb, f.Key()) != before {
		t.Error("a refused Import changed the filter")
	}
}

// TestNativeWithoutModule runs where the server has no BF.* commands:
// NewNative and OpenNative fail with ErrNoModule (errors.ErrUnsupported)
// and leave no key behind.
func TestNativeWithoutModule(t *testing.T) {
	rdb := client(t)
	if hasBF(t, rdb) {
		if os.Getenv(bfEnv) == "0" {
			t.Fatalf("%s=0 but the server at %s has BF.* commands", bfEnv, addrEnv)
		}
		t.Skip("the server has BF.* commands: the other NativeFilter tests cover it")
	}
	ctx := context.Background()
	name := nativeName(t, rdb)
	_, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
	if !errors.Is(err, redisbloom.ErrNoModule) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("NewNative without BF.*: %v, want ErrNoModule", err)
	}
	if n, err := rdb.Exists(ctx, "{"+name+"}:meta", "{"+name+"}:bits").Result(); n != 0 || err != nil {
		t.Fatalf("NewNative without BF.* left %d keys (%v)", n, err)
	}
	if !strings.Contains(err.Error(), "BF.") {
		t.Errorf("error %q does not name the BF.* commands", err)
	}
}

// TestNativeZero: a zero NativeFilter's methods return an error.
func TestNativeZero(t *testing.T) {
	var f redisbloom.NativeFilter
	for method, err := range everyNative(context.Background(), &f) {
		if err == nil {
			t.Errorf("zero NativeFilter: %s returned no error", method)
		}
	}
	if f.Key() != "" {
		t.Errorf("zero NativeFilter: Key() = %q", f.Key())
	}
}

// TestNativeCluster uses a NativeFilter through a ClusterClient on the
// 3-master Cluster: its keys share one slot, every call works, and a
// deleted RedisBloom key gives ErrNotFound.
func TestNativeCluster(t *testing.T) {
	rdb := clusterClient(t)
	requireBF(t, rdb, "Cluster at BLOOM_REDIS_CLUSTER_ADDRS")
	ctx := context.Background()
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", nativeName(t, rdb), i)
		t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
		f, err := redisbloom.NewNative(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := bfdump.Reserve(1000, 0.01)
		keys := keyRange("cl", 0, 3000)
		want, _ := mem.TestAndAddMany(keys, nil)
		got, err := f.TestAndAddMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("answer %d: %v, in memory %v", j, got[j], want[j])
			}
		}
		exp, err := f.Export(ctx)
		if err != nil || !exp.Equal(mem) {
			t.Fatalf("Export: equal %v, %v", err == nil && exp.Equal(mem), err)
		}
		if err := f.Import(ctx, mem); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, f.Key()).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.TestMany(ctx, keys); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Fatalf("after DEL: %v, want ErrNotFound", err)
		}
		if err := f.Add(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Fatalf("Add after DEL: %v, want ErrNotFound", err)
		}
		if n, err := rdb.Exists(ctx, f.Key()).Result(); n != 0 || err != nil {
			t.Fatalf("a refused Add created the RedisBloom key (%d, %v)", n, err)
		}
	}
}

// TestShardedNative drives a 6-shard ShardedNativeFilter, on the server and
// on the 3-master Cluster, beside one in-memory bfdump filter per shard
// (keys routed by Shard): every answer, Count and each shard's Export must
// equal them; on the Cluster each master holds two shards; a shard's
// deleted key gives ErrNotFound.
func TestShardedNative(t *testing.T) {
	ctx := context.Background()
	clients := map[string]redis.UniversalClient{"server": bfClient(t)}
	if os.Getenv("BLOOM_REDIS_CLUSTER_ADDRS") != "" || inCI() {
		c := clusterClient(t)
		requireBF(t, c, "Cluster at BLOOM_REDIS_CLUSTER_ADDRS")
		clients["cluster"] = c
	}
	for kind, rdb := range clients {
		t.Run(kind, func(t *testing.T) {
			name := nativeName(t, rdb)
			s, err := redisbloom.NewShardedNative(ctx, rdb, name, 6, 6000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(context.Background()) })
			if _, err := redisbloom.NewShardedNative(ctx, rdb, name, 6, 6001, 0.01); !errors.Is(err, bloom.ErrIncompatible) {
				t.Fatalf("NewShardedNative with another capacity: %v, want ErrIncompatible", err)
			}
			mem := make([]*bfdump.Filter, 6)
			for i := range mem {
				if mem[i], err = bfdump.Reserve(1000, 0.01); err != nil {
					t.Fatal(err)
				}
			}
			keys := keyRange("s", 0, 15_000) // past each shard's 1,000: growth
			keys = append(keys, keys[:500]...)
			want := make([]bool, len(keys))
			for i, k := range keys {
				want[i], _ = mem[s.Shard(k)].TestAndAdd(k)
			}
			got, err := s.TestAndAddMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			o, err := redisbloom.OpenShardedNative(ctx, rdb, name)
			if err != nil {
				t.Fatal(err)
			}
			probe := append(keyRange("s", 0, 15_000), keyRange("absent", 0, 5000)...)
			tested, err := o.TestManyStrings(ctx, strs(probe))
			if err != nil {
				t.Fatal(err)
			}
			var total uint64
			for j := range mem {
				total += mem[j].Count()
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("TestAndAddMany answer %d: %v, in memory %v", i, got[i], want[i])
				}
			}
			for i, k := range probe {
				if tested[i] != mem[s.Shard(k)].Test(k) {
					t.Fatalf("TestMany answer %d: %v, in memory %v", i, tested[i], !tested[i])
				}
			}
			if n, err := o.Count(ctx); err != nil || n != total {
				t.Fatalf("Count = %d, %v; in memory %d", n, err, total)
			}
			exp, err := o.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			masters := map[string]int{}
			for j, g := range exp {
				if !g.Equal(mem[j]) {
					t.Fatalf("shard %d: Export differs from memory", j)
				}
				if c, ok := rdb.(*redis.ClusterClient); ok {
					m, err := c.MasterForKey(ctx, o.Shards()[j].Key())
					if err != nil {
						t.Fatal(err)
					}
					masters[m.Options().Addr]++
				}
			}
			if kind == "cluster" {
				for addr, n := range masters {
					if n != 2 {
						t.Errorf("master %s holds %d shards, want 2 (%v)", addr, n, masters)
					}
				}
			}
			if err := rdb.Del(ctx, o.Shards()[3].Key()).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := o.TestMany(ctx, probe); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Fatalf("with a shard's key deleted: %v, want ErrNotFound", err)
			}
			if err := o.AddMany(ctx, probe); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Fatalf("AddMany with a shard's key deleted: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestNativeWithWait: a WithWait handle's writes are on the replica when
// they return (raw BF.MEXISTS there, no waiting), and fail with
// ErrNotReplicated once the replica is cut off, also for keys already
// present (the write then changes only the generation).
func TestNativeWithWait(t *testing.T) {
	master := startBFServer(t)
	replica := startBFServer(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	replica.waitInSync(master)
	rdb := newClient(t, master.addr())
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, "wait", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.WithWait(1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WithWait(0, time.Second); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Fatalf("WithWait(0, 1s): %v, want ErrInvalidParameter", err)
	}
	onReplica := newClient(t, replica.addr())
	for round := range 5 {
		keys := keyRange(fmt.Sprintf("w%d-", round), 0, 1000)
		if round%2 == 0 {
			if _, err := w.TestAndAddMany(ctx, keys); err != nil {
				t.Fatal(err)
			}
		} else if err := w.AddManyStrings(ctx, strs(keys)); err != nil {
			t.Fatal(err)
		}
		raw := []any{"BF.MEXISTS", f.Key()}
		for _, k := range keys {
			raw = append(raw, k)
		}
		vals, err := onReplica.Do(ctx, raw...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != int64(1) && v != true {
				t.Fatalf("round %d: key %d absent on the replica right after the write returned", round, i)
			}
		}
	}
	mem, _ := bfdump.Reserve(10_000, 0.01)
	_ = mem.AddMany(keyRange("imported", 0, 100))
	if err := w.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	if n, err := onReplica.Do(ctx, "BF.CARD", f.Key()).Int(); err != nil || n != 100 {
		t.Fatalf("BF.CARD on the replica after Import: %d, %v", n, err)
	}
	replica.freeze()
	w2, err := f.WithWait(1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.AddMany(ctx, keyRange("late", 0, 10)); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Fatalf("AddMany with the replica cut off: %v, want ErrNotReplicated", err)
	}
	if _, err := w2.TestAndAdd(ctx, keyOf("imported", 1)); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Fatalf("TestAndAdd of a present key with the replica cut off: %v, want ErrNotReplicated", err)
	}
	if ok, err := f.Test(ctx, keyOf("late", 3)); !ok || err != nil {
		t.Fatalf("the unreplicated write on the master: Test = %v, %v", ok, err)
	}
}

// TestNativeScriptFlush: after SCRIPT FLUSH every kind of call (small
// batches through one script, larger ones through the transaction, reads
// and writes) still answers right: a read's guard sent by EVALSHA is sent
// again by EVAL, and a write's scripts always go by EVAL.
func TestNativeScriptFlush(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, rdb, nativeName(t, rdb), 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		t.Helper()
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 100} {
		keys := keyRange(fmt.Sprintf("flush%d-", n), 0, n)
		flush()
		got, err := f.TestAndAddMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range got {
			if p {
				t.Fatalf("%d keys: new key %d reported present", n, i)
			}
		}
		flush()
		if got, err = f.TestMany(ctx, keys); err != nil {
			t.Fatal(err)
		}
		for i, p := range got {
			if !p {
				t.Fatalf("%d keys: added key %d reported absent", n, i)
			}
		}
	}
	flush()
	if c, err := f.Count(ctx); err != nil || c != 101 {
		t.Fatalf("Count = %d, %v; want 101", c, err)
	}
}

// TestNativeReplicaReads reads, through a client that routes read-only
// commands to a replica, keys the handle has just added while the replica is
// cut off: small reads (one script, EVALSHA_RO) go to the replica and return
// ErrStale, never "absent"; larger ones (a transaction) go to the master and
// answer right; once the replica is back, every read answers right.
func TestNativeReplicaReads(t *testing.T) {
	master := startBFServer(t)
	replica := startBFServer(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	replica.waitInSync(master)
	cc := replicaReader(t, master, replica)
	ctx := context.Background()
	f, err := redisbloom.NewNative(ctx, cc, "replicated", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddMany(ctx, keyRange("early-", 0, 100)); err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master)
	before := readsServed(t, replica)
	if n, err := falseNegativesNative(ctx, f, keyRange("early-", 0, 20)); n != 0 || err != nil {
		t.Fatalf("in sync: %d false negatives, %v", n, err)
	}
	if readsServed(t, replica) == before {
		t.Fatal("the replica served no read: the test would not test replica reads")
	}
	replica.freeze()
	keys := keyRange("late-", 0, 2000)
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	n, err := falseNegativesNative(short, f, keys[:20])
	cancel()
	if !errors.Is(err, redisbloom.ErrStale) {
		t.Fatalf("small read from a replica behind the handle's writes: %d of 20 keys absent, error %v; want ErrStale", n, err)
	}
	if n, err := falseNegativesNative(ctx, f, keys); n != 0 || err != nil {
		t.Fatalf("large read (a transaction, on the master): %d false negatives, %v", n, err)
	}
	if err := replica.follow(master); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		n, err = falseNegativesNative(ctx, f, keys[:20])
		if !errors.Is(err, redisbloom.ErrStale) || time.Since(start) > 10*time.Second {
			break
		}
	}
	if n != 0 || err != nil {
		t.Fatalf("after the replica caught up: %d false negatives, %v", n, err)
	}
}
