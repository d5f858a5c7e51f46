package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// TestShardedScalable grows a filter of 6 scalable shards from 3,000 to
// 60,000 keys on the standalone server and on the 3-master Cluster: the
// answers and each shard's Export are those of 6 in-memory scalable
// filters fed the keys Shard routes to them, no added key is absent, the
// false-positive rate is at most the target, Export and Import round-trip
// the whole filter, and on the Cluster the shards are spread evenly over
// the three masters.
func TestShardedScalable(t *testing.T) {
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
			const shards, initial, p = 6, 3000, 0.01
			s, err := redisbloom.NewShardedScalable(ctx, rdb, name, shards, initial, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(context.Background()) })
			mem := make([]*bloom.ScalableBloomFilter, shards)
			for i := range mem {
				if mem[i], err = bloom.NewScalable(initial/shards, p, bloom.Classic()); err != nil {
					t.Fatal(err)
				}
			}
			keys := keyRange("ss-", 0, 60_000)
			keys = append(keys, keys[:1000]...) // duplicates do not grow it
			for lo := 0; lo < len(keys); lo += 5000 {
				batch := keys[lo:min(lo+5000, len(keys))]
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
			for i, key := range keyRange("ss-single-", 0, 50) {
				ok, err := s.TestAndAdd(ctx, key)
				if err != nil || ok != mem[s.Shard(key)].TestAndAdd(key) {
					t.Fatalf("TestAndAdd %d: %v, %v", i, ok, err)
				}
			}
			exported, err := s.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			subs := 0
			for i, g := range exported {
				if !g.Equal(mem[i]) {
					t.Fatalf("shard %d differs from memory", i)
				}
				subs += g.NumFilters()
			}
			if subs < 4*shards || s.NumFilters() != subs {
				t.Errorf("%d sub-filters in all (handle: %d), want at least %d", subs, s.NumFilters(), 4*shards)
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
			absent := keyRange("ss-absent-", 0, 50_000)
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
			rate := float64(fp) / float64(len(absent))
			t.Logf("false-positive rate %.4f (target %v) at 60,000 keys, %d sub-filters", rate, p, subs)
			if rate > p {
				t.Errorf("false-positive rate %.4f above the target %v", rate, p)
			}
			if cnt, err := s.Count(ctx); err != nil || cnt < 60_000*99/100 || cnt > 60_050 {
				t.Fatalf("Count %d, %v", cnt, err)
			}

			opened, err := redisbloom.OpenShardedScalable(ctx, rdb, name)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := opened.Test(ctx, keys[0]); err != nil || !ok {
				t.Fatalf("OpenShardedScalable: Test %v, %v", ok, err)
			}
			if _, err := redisbloom.NewShardedScalable(ctx, rdb, name, shards, 2*initial, p); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("NewShardedScalable with another initial capacity: %v", err)
			}
			if _, err := redisbloom.NewShardedScalable(ctx, rdb, name, shards, initial, p, bloom.Linear(1)); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("NewShardedScalable with other growth: %v", err)
			}
			if _, err := redisbloom.OpenSharded(ctx, rdb, name); !errors.Is(err, redisbloom.ErrFormat) {
				t.Errorf("OpenSharded of a sharded scalable filter: %v", err)
			}

			// Import into a new filter of the same parameters.
			copyName := filterName(t, rdb)
			c, err := redisbloom.NewShardedScalable(ctx, rdb, copyName, shards, initial, p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Delete(context.Background()) })
			if err := c.Import(ctx, exported[:shards-1]); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("Import of %d shards into %d: %v", shards-1, shards, err)
			}
			if err := c.Import(ctx, exported); err != nil {
				t.Fatal(err)
			}
			again, err := c.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range again {
				if !again[i].Equal(mem[i]) {
					t.Fatalf("imported shard %d differs", i)
				}
			}
			if present, err := c.TestMany(ctx, keys); err != nil {
				t.Fatal(err)
			} else {
				for i, ok := range present {
					if !ok {
						t.Fatalf("imported: added key %q absent", keys[i])
					}
				}
			}

			if where == "cluster" {
				perMaster := map[string]int{}
				for _, f := range s.Shards() {
					m, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, "{"+f.Name()+"}:meta")
					if err != nil {
						t.Fatal(err)
					}
					perMaster[m.Options().Addr]++
				}
				if len(perMaster) != 3 {
					t.Fatalf("shards on %d masters: %v", len(perMaster), perMaster)
				}
				for addr, n := range perMaster {
					if n != shards/3 {
						t.Errorf("master %s holds %d shards, want %d", addr, n, shards/3)
					}
				}
			}

			if err := s.Delete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Errorf("Test after Delete: %v", err)
			}
			if _, err := redisbloom.OpenShardedScalable(ctx, rdb, name); !errors.Is(err, redisbloom.ErrNotFound) {
				t.Errorf("OpenShardedScalable after Delete: %v", err)
			}
		})
	}
}

// TestShardedScalableArguments checks NewShardedScalable's refusals and a
// zero ShardedScalableFilter.
func TestShardedScalableArguments(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, c := range []struct {
		shards  int
		initial uint64
		p       float64
	}{{0, 1000, 0.01}, {redisbloom.MaxShards + 1, 1000, 0.01}, {4, 0, 0.01}, {4, 1000, 0}, {4, 1000, 1}} {
		if _, err := redisbloom.NewShardedScalable(ctx, rdb, filterName(t, rdb), c.shards, c.initial, c.p); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewShardedScalable(%d, %d, %v): %v, want bloom.ErrInvalidParameter", c.shards, c.initial, c.p, err)
		}
	}
	var zero redisbloom.ShardedScalableFilter
	if _, err := zero.TestMany(ctx, keyRange("z-", 0, 3)); err == nil {
		t.Error("TestMany on a zero ShardedScalableFilter succeeded")
	}
	if _, err := zero.Test(ctx, []byte("z")); err == nil {
		t.Error("Test on a zero ShardedScalableFilter succeeded")
	}
}

// TestShardedScalableRoundTrips checks that a batch of a sharded scalable
// filter that makes no shard grow costs one round trip per node, as
// ShardedFilter's: 6 shards on the standalone server are one round trip,
// and on the 3-master Cluster one per master, each carrying the script
// calls of its two shards. A batch that makes the shards grow, and one
// after SCRIPT FLUSH, cost more round trips but answer as the in-memory
// shards do.
func TestShardedScalableRoundTrips(t *testing.T) {
	ctx := context.Background()
	const shards, initial, p = 6, 60_000, 0.01
	ops := []string{"AddMany", "TestMany", "TestAndAddMany"}
	do := func(s *redisbloom.ShardedScalableFilter, op string, keys [][]byte) error {
		var err error
		switch op {
		case "AddMany":
			err = s.AddMany(ctx, keys)
		case "TestMany":
			var present []bool
			present, err = s.TestMany(ctx, keys)
			for i, ok := range present {
				if !ok {
					return fmt.Errorf("added key %q absent", keys[i])
				}
			}
		default:
			_, err = s.TestAndAddMany(ctx, keys)
		}
		return err
	}
	t.Run("standalone", func(t *testing.T) {
		rdb := client(t)
		var rt roundTrips
		rdb.AddHook(&rt)
		s, err := redisbloom.NewShardedScalable(ctx, rdb, filterName(t, rdb), shards, initial, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(context.Background()) })
		warm := keyRange("warm-", 0, 600)
		if _, err := s.TestAndAddMany(ctx, warm); err != nil { // warms the script cache
			t.Fatal(err)
		}
		if _, err := s.TestMany(ctx, warm); err != nil {
			t.Fatal(err)
		}
		for i, op := range ops {
			keys := keyRange(fmt.Sprintf("rt-%d-", i), 0, 3000) // new keys, 500 per shard of 10,000
			if op == "TestMany" {
				keys = keyRange("rt-0-", 0, 3000)
			}
			before := rt.n.Load()
			if err := do(s, op, keys); err != nil {
				t.Fatal(err)
			}
			if n := rt.n.Load() - before; n != 1 {
				t.Errorf("%s of 6 shards took %d round trips, want 1", op, n)
			}
		}
		if n := s.NumFilters(); n != shards {
			t.Errorf("%d sub-filters, want %d (no growth)", n, shards)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		var r nodeTrips
		cc := r.watch(t)
		s, err := redisbloom.NewShardedScalable(ctx, cc, filterName(t, cc), shards, initial, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(context.Background()) })
		mem := make([]*bloom.ScalableBloomFilter, shards)
		for i := range mem {
			if mem[i], err = bloom.NewScalable(initial/shards, p, bloom.Classic()); err != nil {
				t.Fatal(err)
			}
		}
		feed := func(keys [][]byte) {
			for _, key := range keys {
				mem[s.Shard(key)].Add(key)
			}
		}
		warm := keyRange("warm-", 0, 600)
		if _, err := s.TestAndAddMany(ctx, warm); err != nil { // warms the script caches
			t.Fatal(err)
		}
		if _, err := s.TestMany(ctx, warm); err != nil {
			t.Fatal(err)
		}
		feed(warm)
		r.take()
		for i, op := range ops {
			keys := keyRange(fmt.Sprintf("rt-%d-", i), 0, 3000)
			if op == "TestMany" {
				keys = keyRange("rt-0-", 0, 3000)
			}
			if err := do(s, op, keys); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if op != "TestMany" {
				feed(keys)
			}
			trips, calls := r.take()
			if len(trips) != 3 {
				t.Errorf("%s went to %d nodes, want 3: %v", op, len(trips), trips)
			}
			for addr, n := range trips {
				if n != 1 {
					t.Errorf("%s: %d round trips to %s, want 1", op, n, addr)
				}
				if calls[addr] != 2 {
					t.Errorf("%s: %d script calls to %s, want 2 (two shards per master)", op, calls[addr], addr)
				}
			}
			t.Logf("%s: round trips %v, script calls %v", op, trips, calls)
		}
		if n := s.NumFilters(); n != shards {
			t.Errorf("%d sub-filters, want %d (no growth)", n, shards)
		}

		// Growth, then a flushed script cache: more round trips, the same
		// answers and sub-filters as in memory.
		check := func(desc string, keys [][]byte) {
			t.Helper()
			got, err := s.TestAndAddMany(ctx, keys)
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			for i, key := range keys {
				if want := mem[s.Shard(key)].TestAndAdd(key); got[i] != want {
					t.Fatalf("%s: %q: present=%v, memory %v", desc, key, got[i], want)
				}
			}
			trips, _ := r.take()
			t.Logf("%s: round trips %v", desc, trips)
		}
		check("TestAndAddMany of 60,000 keys, growing", keyRange("grow-", 0, 60_000))
		if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.ScriptFlush(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
		check("TestAndAddMany after SCRIPT FLUSH", append(keyRange("grow-", 59_000, 60_000), keyRange("flush-", 0, 2000)...))
		exported, err := s.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range exported {
			if !g.Equal(mem[i]) {
				t.Fatalf("shard %d differs from memory (%d sub-filters, memory %d)", i, g.NumFilters(), mem[i].NumFilters())
			}
		}
		if s.NumFilters() <= shards {
			t.Errorf("%d sub-filters after 66,600 keys from 60,000", s.NumFilters())
		}
	})
}
