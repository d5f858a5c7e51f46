package redisbloom_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// BenchmarkWindowServerCPU measures a window of 10^6 keys at 1% (the
// generations bloom.NewWindow picks, every one full: an in-memory window fed
// 1.2*10^6 keys, imported) against a fixed Filter of 10^6 keys at 1% holding
// 10^6 keys, side by side on one server, in batches of 1,000: TestMany of
// absent keys (read in every generation) and TestAndAddMany of new keys
// (rotations included); and, on the window, first-seen TestAndAddMany
// against last-seen TestAndRefreshMany of keys it holds (at most 100
// batches: the last 10^5 keys of the fill).
//
//	go test -run '^$' -bench WindowServerCPU -benchtime 100x -count 3
func BenchmarkWindowServerCPU(b *testing.B) {
	rdb := client(b)
	ctx := context.Background()
	const n = 1_000_000
	memW, err := bloom.NewWindow(n, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	memF, err := bloom.New(n, benchErrorRate, bloom.Classic())
	if err != nil {
		b.Fatal(err)
	}
	key := []byte("fill-")
	for i := range n + n/5 {
		k := strconv.AppendInt(key[:5], int64(i), 10)
		memW.Add(k)
		if i < n {
			memF.Add(k)
		}
	}
	w, err := redisbloom.NewWindow(ctx, rdb, windowName(b, rdb), n, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Import(ctx, memW); err != nil {
		b.Fatal(err)
	}
	f, err := redisbloom.New(ctx, rdb, filterName(b, rdb), n, benchErrorRate)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Import(ctx, memF); err != nil {
		b.Fatal(err)
	}
	b.Logf("window: %d generations of %d bits, %d hashes, %.1f bits per window key; fixed: %.1f bits per key, %d hashes",
		w.Generations(), w.GenerationBits(), w.Hashes(), float64(memW.Bits())/n, float64(memF.Bits())/n, f.Hashes())
	for _, c := range []struct {
		name           string
		testMany       func(context.Context, [][]byte) ([]bool, error)
		testAndAddMany func(context.Context, [][]byte) ([]bool, error)
	}{
		{"fixed", f.TestMany, f.TestAndAddMany},
		{"window", w.TestMany, w.TestAndAddMany},
	} {
		b.Run("TestMany/absent/"+c.name, func(b *testing.B) {
			measure(b, rdb, benchBatch, batchOf("absent-"+c.name, benchBatch), func(ctx context.Context, keys [][]byte) error {
				_, err := c.testMany(ctx, keys)
				return err
			})
		})
		b.Run("TestAndAddMany/"+c.name, func(b *testing.B) {
			measure(b, rdb, benchBatch, batchOf("new-"+c.name, benchBatch), func(ctx context.Context, keys [][]byte) error {
				_, err := c.testAndAddMany(ctx, keys)
				return err
			})
		})
	}
	// Keys in the window (the last of the fill, batch i from key
	// 1.1*10^6 + 1000i): first-seen TestAndAddMany writes nothing,
	// last-seen TestAndRefreshMany adds each to the newest generation.
	present := func(i int) [][]byte {
		keys := make([][]byte, benchBatch)
		for j := range keys {
			keys[j] = strconv.AppendInt([]byte("fill-"), int64(n+n/10+i*benchBatch+j), 10)
		}
		return keys
	}
	b.Run("TestAndAddMany/present/window", func(b *testing.B) {
		measure(b, rdb, benchBatch, present, func(ctx context.Context, keys [][]byte) error {
			_, err := w.TestAndAddMany(ctx, keys)
			return err
		})
	})
	b.Run("TestAndRefreshMany/present/window", func(b *testing.B) {
		measure(b, rdb, benchBatch, present, func(ctx context.Context, keys [][]byte) error {
			_, err := w.TestAndRefreshMany(ctx, keys)
			return err
		})
	})
}
