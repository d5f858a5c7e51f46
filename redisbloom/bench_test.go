package redisbloom_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// sourceFilter is the design this package replaces, kept as the benchmarks'
// reference: the filter's bits in one Redis string, the positions computed on
// the client, and one round trip per bit. Its TestAndAdd is Test (GETBIT per
// position, up to the first clear bit) followed by Add (SETBIT per position),
// with the race between them that the source design had. It does not check
// that the filter exists and keeps no count.
type sourceFilter struct {
	rdb  redis.UniversalClient
	key  string
	m    uint64
	k    uint
	seed uint32
	locs []uint64
}

func (s *sourceFilter) testAndAdd(ctx context.Context, key []byte) (bool, error) {
	s.locs = bloom.AppendLocations(s.locs[:0], key, s.m, s.k, s.seed)
	present := true
	for _, p := range s.locs {
		bit, err := s.rdb.GetBit(ctx, s.key, int64(p)).Result()
		if err != nil {
			return false, err
		}
		if bit == 0 {
			present = false
			break
		}
	}
	for _, p := range s.locs {
		if err := s.rdb.SetBit(ctx, s.key, int64(p), 1).Err(); err != nil {
			return false, err
		}
	}
	return present, nil
}

// setOnlyTestAndAdd is the most favourable version of the source design:
// SETBIT's returned old bit serves as the test, so a key costs exactly k
// round trips and there is no race.
func (s *sourceFilter) setOnlyTestAndAdd(ctx context.Context, key []byte) (bool, error) {
	s.locs = bloom.AppendLocations(s.locs[:0], key, s.m, s.k, s.seed)
	present := true
	for _, p := range s.locs {
		old, err := s.rdb.SetBit(ctx, s.key, int64(p), 1).Result()
		if err != nil {
			return false, err
		}
		if old == 0 {
			present = false
		}
	}
	return present, nil
}

// benchCapacity sizes the benchmark filters: 10^7 keys at 1% is 96 Mbit
// (12 MiB) and 7 hashes, whatever b.N is.
const (
	benchCapacity  = 10_000_000
	benchErrorRate = 0.01
	benchBatch     = 1000
)

// benchKeys returns the keys of iteration i: a batch of benchBatch keys that
// no other iteration uses.
func benchKeys(prefix string, i int, keys [][]byte) [][]byte {
	keys = keys[:0]
	for j := range benchBatch {
		keys = append(keys, []byte(prefix+strconv.Itoa(i*benchBatch+j)))
	}
	return keys
}

func benchFilter(b *testing.B) (*redis.Client, *redisbloom.Filter) {
	rdb := client(b)
	f, err := redisbloom.New(context.Background(), rdb, filterName(b, rdb), benchCapacity, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	return rdb, f
}

// BenchmarkTestAndAddMany measures TestAndAddMany in batches of 1,000 new
// keys; keys/s is the throughput.
func BenchmarkTestAndAddMany(b *testing.B) {
	benchBatches(b, func(ctx context.Context, f *redisbloom.Filter, keys [][]byte) error {
		_, err := f.TestAndAddMany(ctx, keys)
		return err
	})
}

// benchBatches runs op on a fresh filter with a new batch of benchBatch keys
// per iteration and reports keys/s.
func benchBatches(b *testing.B, op func(context.Context, *redisbloom.Filter, [][]byte) error) {
	_, f := benchFilter(b)
	ctx := context.Background()
	var keys [][]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys = benchKeys("bench-", i, keys)
		b.StartTimer()
		if err := op(ctx, f, keys); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkSourceDesign measures the reference design (one GETBIT or SETBIT
// round trip per bit) on the same batches of 1,000 new keys as
// BenchmarkTestAndAddMany: getbit-then-setbit as the source did it, and
// setbit-only, its most favourable variant.
func BenchmarkSourceDesign(b *testing.B) {
	for _, variant := range []string{"getbit-then-setbit", "setbit-only"} {
		b.Run(variant, func(b *testing.B) {
			rdb, f := benchFilter(b)
			ctx := context.Background()
			src := &sourceFilter{rdb: rdb, key: "{" + f.Name() + "}:bits", m: f.Bits(), k: f.Hashes(), seed: f.Seed()}
			testAndAdd := src.testAndAdd
			if variant == "setbit-only" {
				testAndAdd = src.setOnlyTestAndAdd
			}
			var keys [][]byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				keys = benchKeys("bench-", i, keys)
				b.StartTimer()
				for _, key := range keys {
					if _, err := testAndAdd(ctx, key); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}

// BenchmarkAdd measures single-key Add: one round trip per key.
func BenchmarkAdd(b *testing.B) {
	_, f := benchFilter(b)
	ctx := context.Background()
	key := []byte("https://example.com/page/")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = strconv.AppendInt(key[:25], int64(i), 10)
		if err := f.Add(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkTest measures single-key Test: one round trip per key.
func BenchmarkTest(b *testing.B) {
	_, f := benchFilter(b)
	ctx := context.Background()
	key := []byte("https://example.com/page/")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = strconv.AppendInt(key[:25], int64(i), 10)
		if _, err := f.Test(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkTestMany measures TestMany in batches of 1,000 keys.
func BenchmarkTestMany(b *testing.B) {
	benchBatches(b, func(ctx context.Context, f *redisbloom.Filter, keys [][]byte) error {
		_, err := f.TestMany(ctx, keys)
		return err
	})
}

// BenchmarkSpeedup measures TestAndAddMany (batches of 1,000 keys) and both
// variants of the source design (100 keys at a time) in alternation, so that
// all three see the same load on a shared machine, and reports how many times
// faster TestAndAddMany is per key: x-vs-source against getbit-then-setbit,
// x-vs-setbit-only against the favourable variant.
func BenchmarkSpeedup(b *testing.B) {
	rdb, f := benchFilter(b)
	_, g := benchFilter(b)
	_, h := benchFilter(b)
	ctx := context.Background()
	source := &sourceFilter{rdb: rdb, key: "{" + g.Name() + "}:bits", m: g.Bits(), k: g.Hashes(), seed: g.Seed()}
	setOnly := &sourceFilter{rdb: rdb, key: "{" + h.Name() + "}:bits", m: h.Bits(), k: h.Hashes(), seed: h.Seed()}
	const sourceKeys = 100
	var ours, src, set time.Duration
	var keys [][]byte
	for i := 0; i < b.N; i++ {
		keys = benchKeys("bench-", i, keys)
		start := time.Now()
		if _, err := f.TestAndAddMany(ctx, keys); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		start = time.Now()
		for _, key := range keys[:sourceKeys] {
			if _, err := source.testAndAdd(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		src += time.Since(start)
		start = time.Now()
		for _, key := range keys[:sourceKeys] {
			if _, err := setOnly.setOnlyTestAndAdd(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		set += time.Since(start)
	}
	perKey := func(d time.Duration, keys int) float64 { return d.Seconds() / float64(b.N*keys) }
	b.ReportMetric(1/perKey(ours, benchBatch), "keys/s")
	b.ReportMetric(1/perKey(src, sourceKeys), "source-keys/s")
	b.ReportMetric(perKey(src, sourceKeys)/perKey(ours, benchBatch), "x-vs-source")
	b.ReportMetric(perKey(set, sourceKeys)/perKey(ours, benchBatch), "x-vs-setbit-only")
}
