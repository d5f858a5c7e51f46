package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
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

// The benchmarks below report, besides keys/s, the server's CPU time per key
// from INFO commandstats (server-us/key): the time Redis spent in EVAL,
// EVALSHA and their _RO forms (which includes the commands the scripts
// call), divided by the keys. On a machine shared with other jobs that is
// far steadier than keys/s. Each runs the earlier code path beside the
// current one in the same process and on the same filter.
//
//	go test -run '^$' -bench ServerCPU -benchtime 20x -count 5

// scriptUsec returns the microseconds the server at rdb has spent in
// scripts since its statistics were last reset.
func scriptUsec(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	text, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(text, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro":
		default:
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok2 := strings.CutPrefix(kv, "usec="); ok && ok2 {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
	}
	return total
}

// serverCPU returns the CPU seconds (user and system, all threads) the
// server process at rdb has used, from INFO cpu: unlike commandstats, which
// times each command by the wall clock and so counts the time the server was
// preempted on a busy machine, this is CPU time, and it includes the
// server's work outside commands (reading and parsing requests, replies).
func serverCPU(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	text, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(text, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// measure runs op b.N times, each on a new batch of size keys made by
// keysOf(i), and reports keys/s and server-us/key.
func measure(b *testing.B, rdb *redis.Client, size int, keysOf func(i int) [][]byte, op func(ctx context.Context, keys [][]byte) error) {
	ctx := context.Background()
	before, cpu := scriptUsec(b, rdb), serverCPU(b, rdb)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys := keysOf(i)
		b.StartTimer()
		if err := op(ctx, keys); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	keys := float64(b.N * size)
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric((scriptUsec(b, rdb)-before)/keys, "server-us/key")
	b.ReportMetric((serverCPU(b, rdb)-cpu)*1e6/keys, "cpu-us/key")
}

// batchOf returns a function that makes batch i of size distinct keys with
// the prefix.
func batchOf(prefix string, size int) func(int) [][]byte {
	return func(i int) [][]byte { return keyRange(prefix+strconv.Itoa(i)+"-", 0, size) }
}

// halfFull returns a Redis filter of benchCapacity keys at 1%, half full
// (an in-memory filter of 5*10^6 keys, imported), as in the issue's
// measurements.
func halfFull(b *testing.B, rdb *redis.Client) *redisbloom.Filter {
	b.Helper()
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, filterName(b, rdb), benchCapacity, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	mem, err := bloom.New(benchCapacity, benchErrorRate, bloom.Classic())
	if err != nil {
		b.Fatal(err)
	}
	key := []byte("fill-")
	for i := range benchCapacity / 2 {
		mem.Add(strconv.AppendInt(key[:5], int64(i), 10))
	}
	if err := f.Import(ctx, mem); err != nil {
		b.Fatal(err)
	}
	return f
}

// path is one contender of alternate: op run on batches of size new keys.
type path struct {
	name string
	size int
	op   func(ctx context.Context, keys [][]byte) error
}

// alternate runs the paths in turn, b.N rounds, so that they share whatever
// load the machine has: in each round every path runs a block of 5 new
// batches of its size, the order reversed every other round. It reports for
// each path its keys/s and the server's CPU per key (INFO cpu, read before
// and after each block) as name-keys/s and name-cpu-us/key. (Blocks, not
// single batches: Lua collects one script's garbage during the next ones,
// so alternating single calls charges each path with its predecessor's.)
func alternate(b *testing.B, rdb *redis.Client, prefix string, paths []path) {
	const block = 5
	ctx := context.Background()
	secs := make([]float64, len(paths))
	cpus := make([]float64, len(paths))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for x := range paths {
			j := x
			if i%2 == 1 {
				j = len(paths) - 1 - x
			}
			p := paths[j]
			cpu := serverCPU(b, rdb)
			var elapsed time.Duration
			for r := 0; r < block; r++ {
				keys := batchOf(prefix+p.name+"-", p.size)(block*i + r)
				start := time.Now()
				if err := p.op(ctx, keys); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
			}
			secs[j] += elapsed.Seconds()
			cpus[j] += serverCPU(b, rdb) - cpu
		}
	}
	b.StopTimer()
	for j, p := range paths {
		keys := float64(block * b.N * p.size)
		b.ReportMetric(keys/secs[j], p.name+"-keys/s")
		b.ReportMetric(cpus[j]*1e6/keys, p.name+"-cpu-us/key")
	}
}

// BenchmarkServerCPU measures the fixed filter's batch calls on a half-full
// filter of 10^7 keys at 1%, the contenders alternating batch by batch
// (alternate), in batches of 1,000 and 10,000 keys. TestMany of absent
// keys: the script of two releases ago (all: every position of every key),
// early-stop (position by position, only for keys still in the running,
// every position a decimal argument), the previous one (before: each key's
// first position a decimal argument, the others packed into one) and the
// current one (the first positions too packed into one argument, for
// struct.unpack; the reply built from runs of '0'). TestAndAddMany of new keys: the previous script (one decimal
// argument per position) and the current one (BITFIELD's arguments packed
// for struct.unpack), and the current one with batches of 10,000 split
// into script calls of other sizes than the default 7,000 positions.
func BenchmarkServerCPU(b *testing.B) {
	rdb := client(b)
	f := halfFull(b, rdb)
	testMany := func(g *redisbloom.Filter) func(context.Context, [][]byte) error {
		return func(ctx context.Context, keys [][]byte) error {
			_, err := g.TestMany(ctx, keys)
			return err
		}
	}
	testAndAddMany := func(g *redisbloom.Filter) func(context.Context, [][]byte) error {
		return func(ctx context.Context, keys [][]byte) error {
			_, err := g.TestAndAddMany(ctx, keys)
			return err
		}
	}
	b.Run("TestMany/absent", func(b *testing.B) {
		var paths []path
		for _, size := range []int{1000, 10000} {
			for _, c := range []struct{ name, script string }{
				{"all", redisbloom.TestAll},
				{"early-stop", redisbloom.TestEarlyStop},
				{"before", redisbloom.TestBefore},
				{"current", redisbloom.TestCurrent},
			} {
				if size == 10000 && c.script == redisbloom.TestAll {
					continue
				}
				g := redisbloom.Tuned(f, c.script, false, 0)
				paths = append(paths, path{fmt.Sprintf("%s-%d", c.name, size), size, testMany(g)})
			}
		}
		alternate(b, rdb, "absent-", paths)
	})
	b.Run("TestAndAddMany", func(b *testing.B) {
		var paths []path
		for _, size := range []int{1000, 10000} {
			paths = append(paths,
				path{fmt.Sprintf("previous-%d", size), size, testAndAddMany(redisbloom.Tuned(f, redisbloom.TestCurrent, true, 0))},
				path{fmt.Sprintf("current-%d", size), size, testAndAddMany(f)})
		}
		for _, split := range []int{1750, 3500, 14000, 65536} {
			g := redisbloom.Tuned(f, redisbloom.TestCurrent, false, split)
			paths = append(paths, path{fmt.Sprintf("current-10000-split=%d", split), 10000, testAndAddMany(g)})
		}
		alternate(b, rdb, "new-", paths)
	})
}

// BenchmarkScalableServerCPU compares a scalable filter grown from 1,000 to
// 10^6 keys at 1%, used plain and through a handle with copies of its full
// sub-filters (CacheFullSubFilters), with a fixed filter sized for 10^6 keys
// at 1% holding as many: TestAndAddMany of new keys and TestMany of absent
// keys, batches of 1,000.
func BenchmarkScalableServerCPU(b *testing.B) {
	rdb := client(b)
	ctx := context.Background()
	const n = 1_000_000
	memS, err := bloom.NewScalable(1000, benchErrorRate, bloom.Classic())
	if err != nil {
		b.Fatal(err)
	}
	memF, err := bloom.New(n, benchErrorRate, bloom.Classic())
	if err != nil {
		b.Fatal(err)
	}
	key := []byte("fill-")
	for i := range n {
		k := strconv.AppendInt(key[:5], int64(i), 10)
		memS.Add(k)
		memF.Add(k)
	}
	s, err := redisbloom.NewScalable(ctx, rdb, scalableName(b, rdb), 1000, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Import(ctx, memS); err != nil {
		b.Fatal(err)
	}
	f, err := redisbloom.New(ctx, rdb, filterName(b, rdb), n, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Import(ctx, memF); err != nil {
		b.Fatal(err)
	}
	b.Logf("scalable: %d sub-filters, %.1f bits/key; fixed: %.1f bits/key", memS.NumFilters(), float64(memS.Bits())/n, float64(memF.Bits())/n)
	c, err := redisbloom.OpenScalable(ctx, rdb, s.Name())
	if err != nil {
		b.Fatal(err)
	}
	c.CacheFullSubFilters(64 << 20)
	type ops struct {
		testMany       func(context.Context, [][]byte) ([]bool, error)
		testAndAddMany func(context.Context, [][]byte) ([]bool, error)
	}
	for _, c := range []struct {
		name string
		ops  ops
	}{
		{"fixed", ops{f.TestMany, f.TestAndAddMany}},
		{"scalable", ops{s.TestMany, s.TestAndAddMany}},
		{"scalable-copies", ops{c.TestMany, c.TestAndAddMany}},
	} {
		b.Run("TestMany/absent/"+c.name, func(b *testing.B) {
			measure(b, rdb, benchBatch, batchOf("absent-"+c.name, benchBatch), func(ctx context.Context, keys [][]byte) error {
				_, err := c.ops.testMany(ctx, keys)
				return err
			})
		})
		b.Run("TestAndAddMany/"+c.name, func(b *testing.B) {
			measure(b, rdb, benchBatch, batchOf("new-"+c.name, benchBatch), func(ctx context.Context, keys [][]byte) error {
				_, err := c.ops.testAndAddMany(ctx, keys)
				return err
			})
		})
	}
}

// BenchmarkSingleKeys16 measures TestAndAdd of new keys, one key per call,
// from 16 goroutines sharing one handle and one client (go-redis's default
// pool), on a half-full filter: plain calls, one script call each, with the
// previous add script (plain-before) and the current one, against a
// Coalesced handle as it was before (coalesced-before: no yield between
// batches, the previous add script) and as it is. The sub-benchmark
// alternating runs the four in turn, ten slices of b.N/10 keys each, so
// that they share the machine's load, and reports each one's keys/s and
// the ratios of the coalesced ones to plain-before. pipelined-8 has each
// caller keep 8 calls in flight on a pipeline of its own
// (TestAndAddPipelined): one round trip per 8 keys, still one script call
// per key.
func BenchmarkSingleKeys16(b *testing.B) {
	rdb := client(b)
	f := halfFull(b, rdb)
	handles := map[string]*redisbloom.Filter{
		"plain-before":     redisbloom.Tuned(f, redisbloom.TestCurrent, true, 0),
		"plain":            f,
		"coalesced-before": redisbloom.CoalescedAsBefore(f),
		"coalesced":        f.Coalesced(),
	}
	modes := []string{"plain-before", "plain", "coalesced-before", "coalesced", "pipelined-8"}
	handles["pipelined-8"] = f
	var round atomic.Int64
	// run adds n new keys through h from 16 goroutines and returns the
	// elapsed seconds.
	run := func(b *testing.B, h *redisbloom.Filter, n int, pipelined bool) float64 {
		ctx := context.Background()
		prefix := "single-" + strconv.FormatInt(round.Add(1), 10) + "-"
		var next atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := []byte(prefix)
				if pipelined {
					var keys [8][]byte
					pending := make([]*redisbloom.Pending, 0, len(keys))
					for {
						i := next.Add(8) - 8
						if i >= int64(n) {
							return
						}
						pipe := rdb.Pipeline()
						pending = pending[:0]
						for j := range min(8, int64(n)-i) {
							keys[j] = strconv.AppendInt(append(keys[j][:0], prefix...), i+j, 10)
							pending = append(pending, h.TestAndAddPipelined(ctx, pipe, keys[j]))
						}
						pipe.Exec(ctx)
						for _, p := range pending {
							if _, err := p.Result(ctx); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					key = strconv.AppendInt(key[:len(prefix)], i, 10)
					if _, err := h.TestAndAdd(ctx, key); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start).Seconds()
	}
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			h := handles[mode]
			before, cpu := scriptUsec(b, rdb), serverCPU(b, rdb)
			var batches, keys int64
			coalesced := strings.HasPrefix(mode, "coalesced")
			if coalesced {
				batches, keys = redisbloom.CoalescedStats(h)
			}
			b.ResetTimer()
			run(b, h, b.N, mode == "pipelined-8")
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			b.ReportMetric((scriptUsec(b, rdb)-before)/float64(b.N), "server-us/key")
			b.ReportMetric((serverCPU(b, rdb)-cpu)*1e6/float64(b.N), "cpu-us/key")
			if coalesced {
				nb, nk := redisbloom.CoalescedStats(h)
				b.ReportMetric(float64(nk-keys)/float64(nb-batches), "keys/batch")
			}
		})
	}
	b.Run("alternating", func(b *testing.B) {
		secs := map[string]float64{}
		cpus := map[string]float64{}
		slice := max(1, b.N/10)
		for range 10 {
			for _, mode := range modes {
				cpu := serverCPU(b, rdb)
				secs[mode] += run(b, handles[mode], slice, mode == "pipelined-8")
				cpus[mode] += serverCPU(b, rdb) - cpu
			}
		}
		keys := float64(10 * slice)
		for _, mode := range modes {
			b.ReportMetric(keys/secs[mode], mode+"-keys/s")
			b.ReportMetric(cpus[mode]*1e6/keys, mode+"-cpu-us/key")
		}
		b.ReportMetric(secs["plain-before"]/secs["coalesced-before"], "coalesced-before-x-plain-before")
		b.ReportMetric(secs["plain-before"]/secs["coalesced"], "coalesced-x-plain-before")
		b.ReportMetric(secs["plain-before"]/secs["pipelined-8"], "pipelined-8-x-plain-before")
	})
}

// BenchmarkShardedCluster measures TestAndAddMany of new keys in batches of
// 1,000 from 4 goroutines on the 3-master Cluster, with the filter (10^7
// keys at 1%) in one shard, on one master, or in 3 or 6 shards spread over
// the three, and reports keys/s and the server CPU per key summed over the
// masters (server-us/key from commandstats, cpu-us/key from INFO cpu) and
// on the busiest master (max-node-us/key, max-node-cpu-us/key).
func BenchmarkShardedCluster(b *testing.B) {
	rdb := clusterClient(b)
	ctx := context.Background()
	// "per-shard" is the batch path before issue 15 item 2 was finished: one
	// goroutine, so one round trip, per shard; "per-node" is TestAndAddMany
	// now, one pipeline split by node.
	for _, run := range []struct {
		shards int
		path   string
	}{{1, "per-node"}, {3, "per-shard"}, {3, "per-node"}, {6, "per-shard"}, {6, "per-node"}} {
		shards := run.shards
		b.Run("shards="+strconv.Itoa(shards)+"/"+run.path, func(b *testing.B) {
			name := filterName(b, rdb)
			s, err := redisbloom.NewSharded(ctx, rdb, name, shards, benchCapacity, benchErrorRate)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Delete(context.Background()) })
			testAndAddMany := s.TestAndAddMany
			if run.path == "per-shard" {
				testAndAddMany = func(ctx context.Context, keys [][]byte) ([]bool, error) {
					return perShard(ctx, s.Shards(), s.Shard, keys)
				}
			}
			clusterBatches(b, rdb, testAndAddMany)
		})
	}
}

// BenchmarkShardedScalableCluster is BenchmarkShardedCluster for a
// ShardedScalableFilter of 6 shards whose initial capacity (10^7 keys in
// all) the benchmark does not outgrow: "per-shard" is its batch path before
// its first script calls shared a pipeline (a goroutine per shard),
// "per-node" TestAndAddMany now.
func BenchmarkShardedScalableCluster(b *testing.B) {
	rdb := clusterClient(b)
	ctx := context.Background()
	for _, path := range []string{"per-shard", "per-node"} {
		b.Run("shards=6/"+path, func(b *testing.B) {
			s, err := redisbloom.NewShardedScalable(ctx, rdb, filterName(b, rdb), 6, benchCapacity, benchErrorRate)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Delete(context.Background()) })
			testAndAddMany := s.TestAndAddMany
			if path == "per-shard" {
				testAndAddMany = func(ctx context.Context, keys [][]byte) ([]bool, error) {
					return perShard(ctx, s.Shards(), s.Shard, keys)
				}
			}
			clusterBatches(b, rdb, testAndAddMany)
		})
	}
}

// clusterBatches runs testAndAddMany over b.N batches of benchBatch new keys
// from 4 goroutines and reports keys/s and the server CPU per key, summed
// over rdb's masters and on the busiest one.
func clusterBatches(b *testing.B, rdb *redis.ClusterClient, testAndAddMany func(context.Context, [][]byte) ([]bool, error)) {
	ctx := context.Background()
	nodeUsec := func() map[string][2]float64 {
		out := map[string][2]float64{}
		var mu sync.Mutex
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			v := [2]float64{scriptUsec(b, c), serverCPU(b, c) * 1e6}
			mu.Lock()
			out[c.Options().Addr] = v
			mu.Unlock()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	var next atomic.Int64
	before := nodeUsec()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := testAndAddMany(ctx, keyRange("cl-"+strconv.FormatInt(i, 10)+"-", 0, benchBatch)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	keys := float64(b.N * benchBatch)
	var total, most, cpu, mostCPU float64
	for addr, v := range nodeUsec() {
		d, c := v[0]-before[addr][0], v[1]-before[addr][1]
		total += d
		most = max(most, d)
		cpu += c
		mostCPU = max(mostCPU, c)
	}
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(total/keys, "server-us/key")
	b.ReportMetric(most/keys, "max-node-us/key")
	b.ReportMetric(cpu/keys, "cpu-us/key")
	b.ReportMetric(mostCPU/keys, "max-node-cpu-us/key")
}

// perShard is a sharded filter's TestAndAddMany as it was before one
// pipeline per node: the keys grouped by shard, each group sent by a
// goroutine of its own, one round trip (or more) per shard.
func perShard[F interface {
	TestAndAddMany(context.Context, [][]byte) ([]bool, error)
}](ctx context.Context, shards []F, shardOf func([]byte) int, keys [][]byte) ([]bool, error) {
	groups := make([][][]byte, len(shards))
	index := make([][]int, len(shards))
	for i, key := range keys {
		j := shardOf(key)
		groups[j] = append(groups[j], key)
		index[j] = append(index[j], i)
	}
	out := make([]bool, len(keys))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for j, group := range groups {
		if len(group) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := shards[j].TestAndAddMany(ctx, group)
			errs[j] = err
			for x, i := range index[j] {
				if err == nil {
					out[i] = r[x]
				}
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// TestTunedTestScripts checks that the test scripts the benchmarks compare
// (Tuned) give the same answers as the in-process filter, for present and
// absent keys, in batches split into several script calls and not.
func TestTunedTestScripts(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 20000, benchErrorRate)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.New(20000, benchErrorRate, bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	added := keyRange("tuned-added-", 0, 12000)
	for _, key := range added {
		mem.Add(key)
	}
	if err := f.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	keys := append(keyRange("tuned-absent-", 0, 3000), added[:3000]...)
	for _, script := range []string{redisbloom.TestCurrent, redisbloom.TestBefore, redisbloom.TestEarlyStop, redisbloom.TestAll} {
		for _, per := range []int{0, 700, 30000} {
			got, err := redisbloom.Tuned(f, script, false, per).TestMany(ctx, keys)
			if err != nil {
				t.Fatalf("%q, %d positions per call: %v", script, per, err)
			}
			for i, key := range keys {
				if got[i] != mem.Test(key) {
					t.Fatalf("%q, %d positions per call: key %q: %v, in-process %v", script, per, key, got[i], !got[i])
				}
			}
		}
	}
}
