package redisbloom_test

import (
	"context"
	"errors"
	"testing"

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
				if mem[i], err = bloom.New(capacity/shards, p); err != nil {
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
