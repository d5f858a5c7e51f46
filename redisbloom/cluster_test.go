package redisbloom_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// The Cluster tests run against a real Redis Cluster whose nodes
// BLOOM_REDIS_CLUSTER_ADDRS lists (host:port,host:port,...);
// .ci/start-redis-cluster.sh starts one with three masters and sets it.
// Without it they skip, except under CI=true, where they fail.
const clusterEnv = "BLOOM_REDIS_CLUSTER_ADDRS"

// clusterClient returns a ClusterClient of the test Cluster, closed when the
// test ends, after checking that every master answers.
func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := os.Getenv(clusterEnv)
	if addrs == "" {
		unavailable(t, "%s is not set: start a Redis Cluster (`. .ci/start-redis-cluster.sh` from the repository root) and set %s=host:port,... to run the Cluster tests", clusterEnv, clusterEnv)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	masters := 0
	var mu sync.Mutex
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		masters++
		mu.Unlock()
		return c.Ping(ctx).Err()
	})
	if err != nil {
		t.Fatalf("Redis Cluster at %s (%s) does not answer: %v", addrs, clusterEnv, err)
	}
	if masters < 3 {
		t.Fatalf("Redis Cluster at %s has %d masters, want 3", addrs, masters)
	}
	return rdb
}

// namesOnEveryMaster returns one filter name per master of rdb (found by
// trying suffixes), each deleted when the test ends.
func namesOnEveryMaster(t *testing.T, rdb *redis.ClusterClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	base := filterName(t, rdb)
	byMaster := map[string]string{}
	for i := 0; len(byMaster) < 3 && i < 1000; i++ {
		name := base + ":" + strconv.Itoa(i)
		m, err := rdb.MasterForKey(ctx, "{"+name+"}:meta")
		if err != nil {
			t.Fatal(err)
		}
		addr := m.Options().Addr
		if _, ok := byMaster[addr]; !ok {
			byMaster[addr] = name
			t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
		}
	}
	if len(byMaster) < 3 {
		t.Fatalf("names on %d masters only", len(byMaster))
	}
	return byMaster
}

// TestCluster runs a Filter and a ScalableFilter on each master of a
// 3-master Redis Cluster through a ClusterClient: the same answers and
// Export as in memory, and their keys on the master that serves their slot
// only.
func TestCluster(t *testing.T) {
	rdb := clusterClient(t)
	ctx := context.Background()
	for addr, name := range namesOnEveryMaster(t, rdb) {
		t.Run("master="+addr, func(t *testing.T) {
			f, err := redisbloom.New(ctx, rdb, name, 20_000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := bloom.New(20_000, 0.01, bloom.Classic())
			if err != nil {
				t.Fatal(err)
			}
			keys := keyRange("c-", 0, 15_000)
			got, err := f.TestAndAddMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				if want := mem.TestAndAdd(key); got[i] != want {
					t.Fatalf("%q: present=%v, memory %v", key, got[i], want)
				}
			}
			checkExport(t, f, mem)
			if n, err := falseNegatives(ctx, f, keys); err != nil || n != 0 {
				t.Fatalf("%d false negatives, %v", n, err)
			}
			node := redis.NewClient(&redis.Options{Addr: addr})
			defer node.Close()
			if n, err := node.Exists(ctx, "{"+name+"}:meta", "{"+name+"}:bits").Result(); err != nil || n != 2 {
				t.Fatalf("the filter's keys on %s: %d, %v", addr, n, err)
			}

			sname := name + ":scalable"
			s, err := redisbloom.NewScalable(ctx, rdb, sname, 1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, sname) })
			smem, err := bloom.NewScalable(1000, 0.01, bloom.Classic())
			if err != nil {
				t.Fatal(err)
			}
			sgot, err := s.TestAndAddMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				if want := smem.TestAndAdd(key); sgot[i] != want {
					t.Fatalf("scalable: %q: present=%v, memory %v", key, sgot[i], want)
				}
			}
			if s.NumFilters() < 4 {
				t.Fatalf("scalable: %d sub-filters", s.NumFilters())
			}
			checkScalableExport(t, s, smem)
			opened, err := redisbloom.OpenScalable(ctx, rdb, sname)
			if err != nil {
				t.Fatal(err)
			}
			present, err := opened.TestMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range present {
				if !ok {
					t.Fatalf("scalable: added key %q absent", keys[i])
				}
			}
			if err := redisbloom.Destroy(ctx, rdb, sname); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Count(ctx); err == nil {
				t.Fatalf("Count after Destroy succeeded")
			}
		})
	}
}

// start3Masters starts a private 3-master Redis Cluster (its nodes are
// private servers, see startServer) and returns its nodes and a client.
func start3Masters(t *testing.T) ([]*server, *redis.ClusterClient) {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(t, "redis-cli is not on PATH: %v", err)
	}
	var nodes []*server
	var addrs []string
	for range 3 {
		s := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		nodes = append(nodes, s)
		addrs = append(addrs, s.addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, s := range nodes {
		c := redis.NewClient(&redis.Options{Addr: s.addr()})
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(c.ClusterInfo(context.Background()).Val(), "cluster_state:ok"); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ok", s.addr())
			}
		}
		c.Close()
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 2, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return nodes, rdb
}

// TestShardedKilledMaster kills one master of a private 3-master Cluster
// under a sharded filter: from then on every TestMany of the added keys
// fails or reports them all present (never a false "absent"), and some
// fail.
func TestShardedKilledMaster(t *testing.T) {
	nodes, rdb := start3Masters(t)
	ctx := context.Background()
	s, err := redisbloom.NewSharded(ctx, rdb, "killed", 6, 100_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("km-", 0, 10_000)
	if err := s.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	nodes[1].stop()
	failed := 0
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		present, err := s.TestMany(ctx, keys)
		cancel()
		if err != nil {
			failed++
			continue
		}
		for i, ok := range present {
			if !ok {
				t.Fatalf("after a master was killed: added key %q absent", keys[i])
			}
		}
		t.Fatalf("TestMany succeeded with the master of two shards dead")
	}
	if failed == 0 {
		t.Fatalf("no call failed")
	}
	t.Logf("%d calls failed", failed)
}

// shardedSet is what TestShardedSlotMigration needs of ShardedFilter and
// ShardedScalableFilter.
type shardedSet interface {
	AddMany(ctx context.Context, keys [][]byte) error
	TestMany(ctx context.Context, keys [][]byte) ([]bool, error)
	Test(ctx context.Context, key []byte) (bool, error)
	TestAndAddMany(ctx context.Context, keys [][]byte) ([]bool, error)
	Shard(key []byte) int
}

// TestShardedSlotMigration moves the slot of one shard of a sharded filter
// (fixed, and scalable grown to several sub-filters) from one master of a
// private 3-master Cluster to another, as redis-cli --cluster reshard does
// (CLUSTER SETSLOT IMPORTING and MIGRATING, MIGRATE of the keys, CLUSTER
// SETSLOT NODE), and queries the filter at every stage: TestMany, Test and
// TestAndAddMany of the added keys either fail or report every key
// present, never a false "absent"; while the shard's keys are split between
// the masters (the metadata moved first, then the bitmaps) the calls fail;
// once all moved, go-redis follows ASK and then MOVED and the answers are
// right.
func TestShardedSlotMigration(t *testing.T) {
	nodes, rdb := start3Masters(t)
	ctx := context.Background()
	for _, kind := range []string{"fixed", "scalable"} {
		t.Run(kind, func(t *testing.T) {
			var s shardedSet
			var shardKeys []string // of shard 0, metadata first
			keys := keyRange("mig-", 0, 10_000)
			if kind == "fixed" {
				f, err := redisbloom.NewSharded(ctx, rdb, "migrating", 3, 30_000, 0.01)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.AddMany(ctx, keys); err != nil {
					t.Fatal(err)
				}
				name := f.Shards()[0].Name()
				s, shardKeys = f, []string{"{" + name + "}:meta", "{" + name + "}:bits"}
			} else {
				f, err := redisbloom.NewShardedScalable(ctx, rdb, "migrating-scalable", 3, 3000, 0.01)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.AddMany(ctx, keys); err != nil {
					t.Fatal(err)
				}
				shard := f.Shards()[0]
				if shard.NumFilters() < 3 {
					t.Fatalf("shard 0 has %d sub-filters", shard.NumFilters())
				}
				s, shardKeys = f, []string{"{" + shard.Name() + "}:meta"}
				for j := range shard.NumFilters() {
					shardKeys = append(shardKeys, "{"+shard.Name()+"}:s:"+strconv.Itoa(j))
				}
			}
			migrateShard(t, rdb, nodes, s, keys, shardKeys, kind == "scalable")
		})
	}
}

// migrateShard moves the slot of shardKeys (metadata first) to another
// master and checks s at every stage (see TestShardedSlotMigration);
// growing is for a scalable filter, whose adds may fail while the slot is
// migrating.
func migrateShard(t *testing.T, rdb *redis.ClusterClient, nodes []*server, s shardedSet, keys [][]byte, shardKeys []string, growing bool) {
	ctx := context.Background()
	meta := shardKeys[0]
	var inShard [][]byte
	for _, key := range keys {
		if s.Shard(key) == 0 {
			inShard = append(inShard, key)
		}
	}
	slot, err := rdb.ClusterKeySlot(ctx, meta).Result()
	if err != nil {
		t.Fatal(err)
	}
	srcNode, err := rdb.MasterForKey(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	src := redis.NewClient(&redis.Options{Addr: srcNode.Options().Addr})
	defer src.Close()
	var dst *redis.Client
	for _, n := range nodes {
		if n.addr() != src.Options().Addr {
			dst = redis.NewClient(&redis.Options{Addr: n.addr()})
			defer dst.Close()
			break
		}
	}
	srcID, err := src.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := dst.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatal(err)
	}
	do := func(c *redis.Client, args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v on %s: %v", args, c.Options().Addr, err)
		}
	}
	// check queries the filter a few times; it returns how many reads
	// (TestMany, Test) and writes (TestAndAddMany) failed.
	check := func(stage string) (reads, writes int) {
		t.Helper()
		const rounds = 3
		for range rounds {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			present, err := s.TestMany(ctx, keys)
			if err == nil {
				for i, ok := range present {
					if !ok {
						t.Fatalf("%s: TestMany: added key %q absent", stage, keys[i])
					}
				}
			} else {
				reads++
				t.Logf("%s: TestMany: %v", stage, err)
			}
			ok, err := s.Test(ctx, inShard[0])
			if err == nil && !ok {
				t.Fatalf("%s: Test: added key %q absent", stage, inShard[0])
			} else if err != nil {
				reads++
				t.Logf("%s: Test: %v", stage, err)
			}
			again, err := s.TestAndAddMany(ctx, inShard)
			if err == nil {
				for i, ok := range again {
					if !ok {
						t.Fatalf("%s: TestAndAddMany: added key %q reported new", stage, inShard[i])
					}
				}
			} else {
				writes++
				t.Logf("%s: TestAndAddMany: %v", stage, err)
				if growing && !strings.Contains(err.Error(), "TRYAGAIN") {
					t.Errorf("%s: TestAndAddMany: %v, want TRYAGAIN", stage, err)
				}
			}
			cancel()
		}
		t.Logf("%s: %d of %d reads and %d of %d writes failed", stage, reads, 2*rounds, writes, rounds)
		return reads, writes
	}

	do(dst, "cluster", "setslot", slot, "importing", srcID)
	do(src, "cluster", "setslot", slot, "migrating", dstID)
	if r, w := check("slot migrating, keys on the source"); r+w != 0 {
		t.Errorf("%d calls failed while the keys were all on the source", r+w)
	}
	dstHost, dstPort, _ := strings.Cut(dst.Options().Addr, ":")
	do(src, "migrate", dstHost, dstPort, "", 0, 5000, "keys", meta)
	if r, w := check("metadata moved, bitmaps not"); r == 0 || w == 0 {
		t.Errorf("%d reads and %d writes failed with the shard's keys on two masters, want some of each", r, w)
	}
	args := []any{"migrate", dstHost, dstPort, "", 0, 5000, "keys"}
	for _, k := range shardKeys[1:] {
		args = append(args, k)
	}
	do(src, args...)
	// A scalable shard's add may name the next sub-filter's key, which
	// exists nowhere yet: the importing master answers TRYAGAIN to a call
	// naming keys it does not all hold (checked in check).
	if r, w := check("all keys moved, slot still migrating (ASK)"); r != 0 || (w != 0 && !growing) {
		t.Errorf("%d reads and %d writes failed once all keys had moved", r, w)
	}
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.addr()})
		do(c, "cluster", "setslot", slot, "node", dstID)
		c.Close()
	}
	if r, w := check("slot moved (MOVED)"); r+w != 0 {
		t.Errorf("%d calls failed after the migration", r+w)
	}
	if m, err := rdb.MasterForKey(ctx, meta); err != nil || m.Options().Addr != dst.Options().Addr {
		t.Errorf("shard 0 served by %v (%v) after the migration, want %s", m, err, dst.Options().Addr)
	}
}
