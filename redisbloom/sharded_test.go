package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// TestSharded runs a filter of 6 shards on the standalone server and on the
// 3-master Cluster: the answers of every method and each shard's Export are
// those of 6 in-memory filters fed the keys Shard routes to them, no added
// key is absent, and on the Cluster each master holds a third of the bits.
func TestSharded(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			var rdb redis.UniversalClient
			if where == "cluster" {
				rdb = clusterClient(t)
			} else {
				rdb = client(t)
			}
			ctx := context.Background()
			name := filterName(t, rdb)
			const shards, capacity, p = 6, 60_000, 0.01
			s, err := redisbloom.NewSharded(ctx, rdb, name, shards, capacity, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(context.Background()) })
			mem := make([]*bloom.BloomFilter, shards)
			for i := range mem {
				if mem[i], err = bloom.New(capacity/shards, p, bloom.Classic()); err != nil {
					t.Fatal(err)
				}
			}
			keys := keyRange("sh-", 0, 40_000)
			for lo := 0; lo < len(keys); lo += 5000 {
				batch := keys[lo : lo+5000]
				var got []bool
				if lo == 5000 {
					err = s.AddMany(ctx, batch)
				} else {
					got, err = s.TestAndAddMany(ctx, batch)
				}
				if err != nil {
					t.Fatal(err)
				}
				for i, key := range batch {
					want := mem[s.Shard(key)].TestAndAdd(key)
					if got != nil && got[i] != want {
						t.Fatalf("%q: present=%v, memory %v", key, got[i], want)
					}
				}
			}
			for i, key := range keyRange("sh-single-", 0, 50) {
				ok, err := s.TestAndAdd(ctx, key)
				if err != nil || ok != mem[s.Shard(key)].TestAndAdd(key) {
					t.Fatalf("TestAndAdd %d: %v, %v", i, ok, err)
				}
			}
			exported, err := s.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			perShard := make([]int, shards)
			for _, key := range keys {
				perShard[s.Shard(key)]++
			}
			for i, g := range exported {
				if !g.Equal(mem[i]) {
					t.Fatalf("shard %d differs from memory", i)
				}
				if perShard[i] < 40_000/shards*9/10 || perShard[i] > 40_000/shards*11/10 {
					t.Errorf("shard %d holds %d of 40000 keys", i, perShard[i])
				}
			}
			present, err := s.TestMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range present {
				if !ok {
					t.Fatalf("added key %q absent", keys[i])
				}
			}
			absent := keyRange("sh-absent-", 0, 20_000)
			present, err = s.TestMany(ctx, absent)
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for i, ok := range present {
				if ok != mem[s.Shard(absent[i])].Test(absent[i]) {
					t.Fatalf("TestMany(%q) differs from memory", absent[i])
				}
				if ok {
					fp++
				}
			}
			t.Logf("false-positive rate %.4f at %d of %d keys", float64(fp)/float64(len(absent)), len(keys), capacity)
			if cnt, err := s.Count(ctx); err != nil || cnt < uint64(len(keys))*99/100 {
				t.Fatalf("Count %d, %v", cnt, err)
			}
			opened, err := redisbloom.OpenSharded(ctx, rdb, name)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := opened.Test(ctx, keys[0]); err != nil || !ok {
				t.Fatalf("OpenSharded: Test %v, %v", ok, err)
			}
			if _, err := redisbloom.NewSharded(ctx, rdb, name, shards+1, capacity, p); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("NewSharded with other shards: %v", err)
			}
			if err := s.Import(ctx, exported); err != nil {
				t.Fatal(err)
			}
			if where == "cluster" {
				c := rdb.(*redis.ClusterClient)
				bits := map[string]uint64{}
				for _, f := range s.Shards() {
					m, err := c.MasterForKey(ctx, "{"+f.Name()+"}:meta")
					if err != nil {
						t.Fatal(err)
					}
					bits[m.Options().Addr] += f.Bits()
				}
				if len(bits) != 3 {
					t.Fatalf("shards on %d masters: %v", len(bits), bits)
				}
				for addr, b := range bits {
					if share := float64(b) / float64(s.Bits()); share < 0.3 || share > 0.37 {
						t.Errorf("master %s holds %.3f of the bits", addr, share)
					}
				}
				t.Logf("bits per master: %v", bits)
			}
			if err := s.Delete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Errorf("Test after Delete: %v", err)
			}
			if _, err := redisbloom.OpenSharded(ctx, rdb, name); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Errorf("OpenSharded after Delete: %v", err)
			}
		})
	}
}

// nodeTrips counts, per node of a ClusterClient, the round trips that carry
// script calls (see roundTrips) and the script calls sent.
type nodeTrips struct {
	mu    sync.Mutex
	trips map[string]int
	calls map[string]int
}

// watch makes a ClusterClient of the test Cluster whose node clients report
// to r.
func (r *nodeTrips) watch(t *testing.T) *redis.ClusterClient {
	clusterClient(t) // skips or fails as the other Cluster tests do
	r.trips, r.calls = map[string]int{}, map[string]int{}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv(clusterEnv), ",")})
	t.Cleanup(func() { cc.Close() })
	cc.OnNewNode(func(c *redis.Client) { c.AddHook(&nodeHook{r: r, addr: c.Options().Addr}) })
	return cc
}

func (r *nodeTrips) take() (trips, calls map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	trips, calls = r.trips, r.calls
	r.trips, r.calls = map[string]int{}, map[string]int{}
	return trips, calls
}

type nodeHook struct {
	r    *nodeTrips
	addr string
}

func (h *nodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

func (h *nodeHook) count(cmds ...redis.Cmder) {
	if !scripted(cmds...) {
		return
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.trips[h.addr]++
	for _, cmd := range cmds {
		if scripted(cmd) {
			h.r.calls[h.addr]++
		}
	}
}

// TestShardedRoundTrips checks that a sharded batch costs one round trip per
// node, not per shard: 6 shards on the standalone server are one round trip,
// and on the 3-master Cluster one per master, each carrying the script calls
// of its two shards; a batch of more than one round trip's positions takes
// one more per node per round trip; and a flushed script cache costs extra
// round trips but no wrong answer.
func TestShardedRoundTrips(t *testing.T) {
	ctx := context.Background()
	t.Run("standalone", func(t *testing.T) {
		rdb := client(t)
		var rt roundTrips
		rdb.AddHook(&rt)
		s, err := redisbloom.NewSharded(ctx, rdb, filterName(t, rdb), 6, 60_000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(context.Background()) })
		keys := keyRange("rt-", 0, 6000)
		if _, err := s.TestAndAddMany(ctx, keys); err != nil { // warms the script cache
			t.Fatal(err)
		}
		if _, err := s.TestMany(ctx, keys); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"AddMany", "TestMany", "TestAndAddMany"} {
			before := rt.n.Load()
			switch op {
			case "AddMany":
				err = s.AddMany(ctx, keys)
			case "TestMany":
				_, err = s.TestMany(ctx, keys)
			default:
				_, err = s.TestAndAddMany(ctx, keys)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := rt.n.Load() - before; n != 1 {
				t.Errorf("%s of 6 shards took %d round trips, want 1", op, n)
			}
		}
	})
	t.Run("cluster", func(t *testing.T) {
		var r nodeTrips
		cc := r.watch(t)
		s, err := redisbloom.NewSharded(ctx, cc, filterName(t, cc), 6, 300_000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(context.Background()) })
		keys := keyRange("rt-", 0, 6000)
		if _, err := s.TestAndAddMany(ctx, keys); err != nil { // warms the script caches
			t.Fatal(err)
		}
		if _, err := s.TestMany(ctx, keys); err != nil {
			t.Fatal(err)
		}
		r.take()
		check := func(desc string, wantTrips int, op func() error) {
			t.Helper()
			if err := op(); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			trips, calls := r.take()
			if len(trips) != 3 {
				t.Errorf("%s went to %d nodes, want 3: %v", desc, len(trips), trips)
			}
			for addr, n := range trips {
				if n != wantTrips {
					t.Errorf("%s: %d round trips to %s, want %d", desc, n, addr, wantTrips)
				}
				if calls[addr] < 2*wantTrips {
					t.Errorf("%s: %d script calls to %s, want at least %d (two shards per master)", desc, calls[addr], addr, 2*wantTrips)
				}
			}
			t.Logf("%s: round trips %v, script calls %v", desc, trips, calls)
		}
		check("AddMany", 1, func() error { return s.AddMany(ctx, keys) })
		check("TestMany", 1, func() error {
			present, err := s.TestMany(ctx, keys)
			for i, ok := range present {
				if !ok {
					return fmt.Errorf("added key %q absent", keys[i])
				}
			}
			return err
		})
		check("TestAndAddMany", 1, func() error { _, err := s.TestAndAddMany(ctx, keys); return err })
		// 7 hashes at 1%: 74,898 keys per round trip; 200,000 keys take three.
		big := keyRange("rt-big-", 0, 200_000)
		check("AddMany of 200,000 keys", 3, func() error { return s.AddMany(ctx, big) })

		if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.ScriptFlush(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
		present, err := s.TestMany(ctx, big)
		if err != nil {
			t.Fatalf("TestMany after SCRIPT FLUSH: %v", err)
		}
		for i, ok := range present {
			if !ok {
				t.Fatalf("after SCRIPT FLUSH: added key %q absent", big[i])
			}
		}
		r.take()
	})
}

// TestShardedPipelined queues single-key calls of a 6-shard filter on one
// pipeline of a ClusterClient: the answers are those of the in-memory
// shards fed the same keys in the same order, duplicates included.
func TestShardedPipelined(t *testing.T) {
	rdb := clusterClient(t)
	ctx := context.Background()
	const shards, capacity, p = 6, 30_000, 0.01
	s, err := redisbloom.NewSharded(ctx, rdb, filterName(t, rdb), shards, capacity, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(context.Background()) })
	mem := make([]*bloom.BloomFilter, shards)
	for i := range mem {
		if mem[i], err = bloom.New(capacity/shards, p, bloom.Classic()); err != nil {
			t.Fatal(err)
		}
	}
	keys := keyRange("sp-", 0, 3000)
	keys = append(keys, keys[:500]...)
	pipe := rdb.Pipeline()
	pending := make([]*redisbloom.Pending, len(keys))
	for i, key := range keys {
		if i%2 == 0 {
			pending[i] = s.TestAndAddPipelined(ctx, pipe, key)
		} else {
			pending[i] = s.AddPipelined(ctx, pipe, key)
		}
	}
	pipe.Exec(ctx)
	for i, key := range keys {
		want := mem[s.Shard(key)].TestAndAdd(key)
		got, err := pending[i].Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 && got != want {
			t.Fatalf("TestAndAddPipelined(%q) = %v, memory %v", key, got, want)
		}
	}
	pipe = rdb.Pipeline()
	probes := append(keyRange("sp-", 0, 100), keyRange("sp-absent-", 0, 1000)...)
	for i, key := range probes {
		pending[i] = s.TestPipelined(ctx, pipe, key)
	}
	pipe.Exec(ctx)
	for i, key := range probes {
		got, err := pending[i].Result(ctx)
		if want := mem[s.Shard(key)].Test(key); err != nil || got != want {
			t.Fatalf("TestPipelined(%q) = %v, %v; memory %v", key, got, err, want)
		}
	}
	exported, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range exported {
		if !g.Equal(mem[i]) {
			t.Fatalf("shard %d differs from memory", i)
		}
	}
}

// TestShardedWithWait checks durable writes of both sharded filters, as
// TestWithWait and TestScalableWithWait do for one: with WithWait(1, ...)
// batch writes, across growth steps for the scalable one, return only once
// the replica has them, so that a reader on the replica sees them at once;
// with the replica cut off, they fail with ErrNotReplicated; pipelined
// writes are refused, reads are not.
func TestShardedWithWait(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	rdb := newClient(t, master.addr())
	onReplica := newClient(t, replica.addr())
	ctx := context.Background()
	const shards = 4
	type batches interface {
		AddMany(context.Context, [][]byte) error
		TestMany(context.Context, [][]byte) ([]bool, error)
		TestAndAddMany(context.Context, [][]byte) ([]bool, error)
	}
	fixed, err := redisbloom.NewSharded(ctx, rdb, "durable-fixed", shards, 40_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	scalable, err := redisbloom.NewShardedScalable(ctx, rdb, "durable-scalable", shards, 4000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	durableFixed, err := fixed.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	durableScalable, err := scalable.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master) // NewSharded does not wait
	fixedOnReplica, err := redisbloom.OpenSharded(ctx, onReplica, "durable-fixed")
	if err != nil {
		t.Fatal(err)
	}
	scalableOnReplica, err := redisbloom.OpenShardedScalable(ctx, onReplica, "durable-scalable")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name             string
		durable, replica batches
	}{{"fixed", durableFixed, fixedOnReplica}, {"scalable", durableScalable, scalableOnReplica}} {
		batch := keyRange("batch-", 0, 20_000) // several script calls per shard; the scalable shards grow
		if _, err := c.durable.TestAndAddMany(ctx, batch); err != nil {
			t.Fatalf("%s: durable TestAndAddMany: %v", c.name, err)
		}
		more := keyRange("more-", 0, 1000)
		if err := c.durable.AddMany(ctx, more); err != nil {
			t.Fatalf("%s: durable AddMany: %v", c.name, err)
		}
		present, err := c.replica.TestMany(ctx, append(batch, more...))
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range present {
			if !ok {
				t.Fatalf("%s: replica read right after durable batches: key %d absent", c.name, i)
			}
		}
		if present, err := c.durable.TestMany(ctx, more); err != nil || !present[0] {
			t.Errorf("%s: TestMany on a WithWait handle: %v, %v", c.name, present[:1], err)
		}
	}
	if n := durableScalable.NumFilters(); n <= shards {
		t.Errorf("%d sub-filters after 21,000 keys from 4,000", n)
	}
	pipe := rdb.Pipeline()
	pending := durableFixed.AddPipelined(ctx, pipe, []byte("piped"))
	pipe.Exec(ctx)
	if _, err := pending.Result(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("AddPipelined on a WithWait handle: %v, want errors.ErrUnsupported", err)
	}

	replica.freeze()
	quickFixed, err := fixed.WithWait(1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	quickScalable, err := scalable.WithWait(1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		quick batches
	}{{"fixed", quickFixed}, {"scalable", quickScalable}} {
		start := time.Now()
		if err := c.quick.AddMany(ctx, keyRange("cut-", 0, 100)); !errors.Is(err, redisbloom.ErrNotReplicated) {
			t.Errorf("%s: durable AddMany with the replica cut off: %v, want ErrNotReplicated", c.name, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: durable AddMany took %v with a 100ms timeout", c.name, d)
		}
		if _, err := c.quick.TestMany(ctx, keyRange("cut-", 0, 100)); err != nil {
			t.Errorf("%s: TestMany on a WithWait handle with the replica cut off: %v", c.name, err)
		}
	}

	if _, err := fixed.WithWait(0, time.Second); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("ShardedFilter.WithWait(0, 1s): %v, want bloom.ErrInvalidParameter", err)
	}
	if _, err := scalable.WithWait(1, time.Microsecond); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("ShardedScalableFilter.WithWait(1, 1us): %v, want bloom.ErrInvalidParameter", err)
	}
	var zero redisbloom.ShardedFilter
	if _, err := zero.WithWait(1, time.Second); err == nil {
		t.Error("WithWait on a zero ShardedFilter succeeded")
	}
	var zeroScalable redisbloom.ShardedScalableFilter
	if _, err := zeroScalable.WithWait(1, time.Second); err == nil {
		t.Error("WithWait on a zero ShardedScalableFilter succeeded")
	}
}

// TestShardedEditedTopMetadata edits one field of the top metadata
// ({name}:sharded) of a sharded filter and of a sharded scalable filter, of
// 6 shards each:
// opening either must then fail with ErrCorrupt (ErrNotFound where the
// edited number of shards names shards that do not exist), never open a
// handle that routes keys to shards that do not hold them. (Before issue
// 21, after HSET {name}:sharded seed 1 an OpenSharded handle answered 2,504
// of 3,000 added keys absent.)
func TestShardedEditedTopMetadata(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	keys := keyRange("top-", 0, 3000)
	for _, c := range []struct {
		field, value string
		scalable     bool
	}{
		{"seed", "1", false},
		{"capacity", "6000", false},
		{"capacity", "3001", false},
		{"error_rate", "0.02", false},
		{"shards", "3", false},
		{"shards", "5", false},
		{"seed", "1", true},
		{"initial_capacity", "6000", true},
		{"error_rate", "0.02", true},
		{"shards", "3", true},
		{"shards", "5", true},
	} {
		kind := "ShardedFilter"
		if c.scalable {
			kind = "ShardedScalableFilter"
		}
		t.Run(kind+"/"+c.field+"="+c.value, func(t *testing.T) {
			name := filterName(t, rdb)
			var open func() (func(context.Context, [][]byte) ([]bool, error), error)
			if c.scalable {
				s, err := redisbloom.NewShardedScalable(ctx, rdb, name, 6, 3000, 0.01)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Delete(context.Background()) })
				if err := s.AddMany(ctx, keys); err != nil {
					t.Fatal(err)
				}
				open = func() (func(context.Context, [][]byte) ([]bool, error), error) {
					h, err := redisbloom.OpenShardedScalable(ctx, rdb, name)
					if err != nil {
						return nil, err
					}
					return h.TestMany, nil
				}
			} else {
				s, err := redisbloom.NewSharded(ctx, rdb, name, 6, 3000, 0.01)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Delete(context.Background()) })
				if err := s.AddMany(ctx, keys); err != nil {
					t.Fatal(err)
				}
				open = func() (func(context.Context, [][]byte) ([]bool, error), error) {
					h, err := redisbloom.OpenSharded(ctx, rdb, name)
					if err != nil {
						return nil, err
					}
					return h.TestMany, nil
				}
			}
			if err := rdb.HSet(ctx, "{"+name+"}:sharded", c.field, c.value).Err(); err != nil {
				t.Fatal(err)
			}
			testMany, err := open()
			if err == nil {
				got, _ := absentOf(ctx, testMany, keys)
				t.Fatalf("opened after %s was set to %s; TestMany: %s", c.field, c.value, got)
			}
			if !errors.Is(err, redisbloom.ErrCorrupt) && !(c.field == "shards" && errors.Is(err, redisbloom.ErrNotFound)) {
				t.Fatalf("open: %v, want ErrCorrupt", err)
			}
			t.Logf("open: %v", err)
		})
	}
}
