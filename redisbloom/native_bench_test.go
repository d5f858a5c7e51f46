package redisbloom_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// BenchmarkNativeServerCPU measures a NativeFilter against the raw BF.*
// commands sent through go-redis, and the Lua Filter, on one server with
// BF.*: filters of 10^6 keys at 1%, half full, batches of 1,000 keys, the
// contenders alternating in blocks of 5 batches (alternate), each
// reporting keys/s (wall time, one client, one batch at a time) and the
// server's CPU per key (INFO cpu). add and test-and-add are BF.MADD (raw)
// against AddMany and TestAndAddMany of new keys; test-absent and
// test-present BF.MEXISTS against TestMany of keys never added and of keys
// added by the fill; single-test-and-add BF.ADD against TestAndAdd, one key
// per call.
//
//	go test -run '^$' -bench NativeServerCPU -benchtime 20x -count 3
func BenchmarkNativeServerCPU(b *testing.B) {
	rdb := bfClient(b)
	ctx := context.Background()
	const n, half, batch = 1_000_000, 500_000, 1000
	f, err := redisbloom.NewNative(ctx, rdb, nativeName(b, rdb), n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	raw := filterName(b, rdb) + "-raw"
	b.Cleanup(func() { rdb.Del(context.Background(), raw) })
	if err := rdb.Do(ctx, "BF.RESERVE", raw, 0.01, n).Err(); err != nil {
		b.Fatal(err)
	}
	lua, err := redisbloom.New(ctx, rdb, filterName(b, rdb), n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	fill := func(i int) [][]byte { return keyRange("fill-"+strconv.Itoa(i)+"-", 0, batch) }
	for i := range half / batch {
		if err := f.AddMany(ctx, fill(i)); err != nil {
			b.Fatal(err)
		}
		if err := bfDo(ctx, rdb, "BF.MADD", raw, fill(i)); err != nil {
			b.Fatal(err)
		}
		if err := lua.AddMany(ctx, fill(i)); err != nil {
			b.Fatal(err)
		}
	}
	// present replaces each batch alternate makes by one of the fill.
	present := func(op func(context.Context, [][]byte) error) func(context.Context, [][]byte) error {
		i := 0
		return func(ctx context.Context, _ [][]byte) error {
			i++
			return op(ctx, fill(i%(half/batch)))
		}
	}
	testMany := func(ctx context.Context, keys [][]byte) error { _, err := f.TestMany(ctx, keys); return err }
	luaTestMany := func(ctx context.Context, keys [][]byte) error { _, err := lua.TestMany(ctx, keys); return err }
	rawExists := func(ctx context.Context, keys [][]byte) error { return bfDo(ctx, rdb, "BF.MEXISTS", raw, keys) }
	rawAdd := func(ctx context.Context, keys [][]byte) error { return bfDo(ctx, rdb, "BF.MADD", raw, keys) }
	ops := []struct {
		name, prefix     string
		raw, native, lua func(context.Context, [][]byte) error
	}{
		{"add", "add-", rawAdd, f.AddMany, lua.AddMany},
		{"test-and-add", "new-", rawAdd,
			func(ctx context.Context, keys [][]byte) error { _, err := f.TestAndAddMany(ctx, keys); return err },
			func(ctx context.Context, keys [][]byte) error { _, err := lua.TestAndAddMany(ctx, keys); return err }},
		{"test-absent", "absent-", rawExists, testMany, luaTestMany},
		{"test-present", "unused-", present(rawExists), present(testMany), present(luaTestMany)},
	}
	// One key per call, 100 calls per batch: what the transaction and its
	// two scripts add to a call of one key.
	const singles = 100
	ops = append(ops, struct {
		name, prefix     string
		raw, native, lua func(context.Context, [][]byte) error
	}{"single-test-and-add", "single-",
		func(ctx context.Context, keys [][]byte) error {
			for _, k := range keys {
				if err := rdb.Do(ctx, "BF.ADD", raw, k).Err(); err != nil {
					return err
				}
			}
			return nil
		},
		func(ctx context.Context, keys [][]byte) error {
			for _, k := range keys {
				if _, err := f.TestAndAdd(ctx, k); err != nil {
					return err
				}
			}
			return nil
		},
		func(ctx context.Context, keys [][]byte) error {
			for _, k := range keys {
				if _, err := lua.TestAndAdd(ctx, k); err != nil {
					return err
				}
			}
			return nil
		}})
	size := func(name string) int {
		if name == "single-test-and-add" {
			return singles
		}
		return batch
	}
	// The Lua filter runs on its own: Lua collects a script's garbage during
	// the scripts after it, which would charge the native filter's short
	// scripts with the Lua filter's garbage.
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			alternateMedian(b, rdb, op.prefix, []path{{"raw", size(op.name), op.raw}, {"native", size(op.name), op.native}})
		})
	}
	for _, op := range ops {
		b.Run("lua/"+op.name, func(b *testing.B) {
			alternate(b, rdb, "lua-"+op.prefix, []path{{"lua", size(op.name), op.lua}})
		})
	}
}

// alternateMedian is alternate (bench_server_test.go), reporting besides
// each path's keys/s over the whole run (name-keys/s) and server CPU per
// key the keys/s of its median block (name-median-keys/s), which a few
// blocks preempted on a loaded machine do not move, and the median over
// the rounds of the ratio of the second path's block time to the first's
// (wall-ratio).
func alternateMedian(b *testing.B, rdb *redis.Client, prefix string, paths []path) {
	const block = 5
	ctx := context.Background()
	secs := make([]float64, len(paths))
	cpus := make([]float64, len(paths))
	blocks := make([][]float64, len(paths))
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
			blocks[j] = append(blocks[j], elapsed.Seconds())
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for j, p := range paths {
		keys := float64(block * b.N * p.size)
		b.ReportMetric(keys/secs[j], p.name+"-keys/s")
		b.ReportMetric(float64(block*p.size)/median(blocks[j]), p.name+"-median-keys/s")
		b.ReportMetric(cpus[j]*1e6/keys, p.name+"-cpu-us/key")
	}
	if len(paths) == 2 {
		ratios := make([]float64, b.N)
		for i := range ratios {
			ratios[i] = blocks[1][i] / blocks[0][i]
		}
		b.ReportMetric(median(ratios), "wall-ratio")
	}
}

// bfDo sends command (BF.MADD, BF.MEXISTS) with key and keys, as a program
// using the raw commands through go-redis would, and checks the reply's
// length.
func bfDo(ctx context.Context, rdb redis.UniversalClient, command, key string, keys [][]byte) error {
	args := make([]any, 0, 2+len(keys))
	args = append(args, command, key)
	for _, k := range keys {
		args = append(args, k)
	}
	r, err := rdb.Do(ctx, args...).Slice()
	if err == nil && len(r) != len(keys) {
		err = errShortReply
	}
	return err
}

var errShortReply = errorString("redisbloom_test: short reply")

type errorString string

func (e errorString) Error() string { return string(e) }
