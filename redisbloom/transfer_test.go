package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// TestBitLayout pins the documented layout: position p of
// bloom.AppendLocations is Redis bit p of {name}:bits (GETBIT numbering, the
// most significant bit of byte p/8 first), and the string is ceil(m/8) bytes.
func TestBitLayout(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 100, 0.01, bloom.Seed(42))
	if err != nil {
		t.Fatal(err)
	}
	bitsKey := "{" + f.Name() + "}:bits"
	if n, err := rdb.StrLen(ctx, bitsKey).Result(); err != nil || uint64(n) != (f.Bits()+7)/8 {
		t.Fatalf("bitmap of %d bytes (%v), want ceil(%d/8)", n, err, f.Bits())
	}
	key := []byte("layout")
	if err := f.Add(ctx, key); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{}
	for _, p := range bloom.AppendLocations(nil, key, f.Bits(), f.Hashes(), 42) {
		want[p] = true
	}
	for p := uint64(0); p < f.Bits(); p++ {
		bit, err := rdb.GetBit(ctx, bitsKey, int64(p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if (bit == 1) != want[p] {
			t.Fatalf("Redis bit %d is %d; AppendLocations says %v", p, bit, want[p])
		}
	}
}

// TestExportImport round-trips filters between memory and Redis and checks
// Import's parameter checks.
func TestExportImport(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	f, mem := newPair(t, rdb, 5000, 0.001, 99)
	keys := keyRange("imported-", 0, 5000)
	for _, key := range keys[:4000] {
		mem.Add(key)
	}
	if err := f.Import(ctx, mem); err != nil {
		t.Fatal(err)
	}
	checkExport(t, f, mem)
	if c, err := f.Count(ctx); err != nil || c != mem.Count() {
		t.Fatalf("Count after Import = %d, %v; want %d", c, err, mem.Count())
	}
	// Both keep working alike after the Import.
	got, err := f.TestAndAddMany(ctx, keys[3500:])
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range keys[3500:] {
		if want := mem.TestAndAdd(key); got[i] != want {
			t.Fatalf("%q: %v after Import, in memory %v", key, got[i], want)
		}
	}
	checkExport(t, f, mem)

	// Import replaces: an empty filter empties the Redis one.
	empty, err := bloom.New(5000, 0.001, bloom.Seed(99), bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Import(ctx, empty); err != nil {
		t.Fatal(err)
	}
	checkExport(t, f, empty)

	// The same bits, hashes and seed with another capacity are accepted;
	// Export keeps the Redis filter's capacity and error rate.
	same, err := bloom.NewWithSize(f.Bits(), f.Hashes(), bloom.Seed(99))
	if err != nil {
		t.Fatal(err)
	}
	same.Add([]byte("x"))
	if err := f.Import(ctx, same); err != nil {
		t.Fatal(err)
	}
	out, err := f.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Capacity() != f.Capacity() || out.ErrorRate() != f.ErrorRate() || !out.Test([]byte("x")) || out.Count() != 1 {
		t.Fatalf("Export after importing a NewWithSize filter: capacity %d, error rate %v, count %d",
			out.Capacity(), out.ErrorRate(), out.Count())
	}

	for desc, other := range map[string]func() (*bloom.BloomFilter, error){
		"another size":  func() (*bloom.BloomFilter, error) { return bloom.New(5001, 0.001, bloom.Seed(99), bloom.Classic()) },
		"another seed":  func() (*bloom.BloomFilter, error) { return bloom.New(5000, 0.001, bloom.Classic()) },
		"another k":     func() (*bloom.BloomFilter, error) { return bloom.NewWithSize(f.Bits(), f.Hashes()+1, bloom.Seed(99)) },
		"a nil filter":  func() (*bloom.BloomFilter, error) { return nil, nil },
		"a zero filter": func() (*bloom.BloomFilter, error) { return new(bloom.BloomFilter), nil },
	} {
		src, err := other()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Import(ctx, src); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("Import of %s: %v, want bloom.ErrIncompatible", desc, err)
		}
	}
}

// TestExportCorrupt checks that Export refuses a bitmap with bits set past
// the filter's size, with ErrCorrupt: in the padding of its last byte, or
// beyond its end (which also makes the string longer than the filter).
func TestExportCorrupt(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for _, past := range []uint64{0, 100} {
		f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 10, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if f.Bits()%8 == 0 {
			t.Fatalf("m = %d: the test needs a size that is not whole bytes", f.Bits())
		}
		p := f.Bits() + past // past == 0: inside the last byte
		if err := rdb.SetBit(ctx, "{"+f.Name()+"}:bits", int64(p), 1).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Export(ctx); !errors.Is(err, redisbloom.ErrCorrupt) {
			t.Errorf("Export with bit %d of a %d-bit filter set: %v, want ErrCorrupt", p, f.Bits(), err)
		}
	}
}

// TestImportRefusesBlocked imports filters of the blocked layout
// (bloom.Blocked) into Redis filters, whose bits are those of the classic
// layout, with the same bits, hashes and seed: each Import must be refused
// with bloom.ErrIncompatible and leave the Redis filter as it was. (Before
// issue 21 the fixed and sharded Imports returned nil, and TestMany then
// answered absent for 1,163 of 1,174 imported keys, and 1,990 of 2,000 with
// 2 shards.)
func TestImportRefusesBlocked(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	// absent counts the keys f's TestMany answers absent for.
	absent := func(testMany func(context.Context, [][]byte) ([]bool, error), keys [][]byte) string {
		got, err := testMany(ctx, keys)
		if err != nil {
			return err.Error()
		}
		n := 0
		for _, p := range got {
			if !p {
				n++
			}
		}
		return fmt.Sprintf("%d of %d keys absent", n, len(keys))
	}
	t.Run("Filter", func(t *testing.T) {
		f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), 1174, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if f.Bits()%bloom.BlockBits != 0 {
			t.Fatalf("m = %d: the test needs a multiple of %d", f.Bits(), bloom.BlockBits)
		}
		blocked, err := bloom.NewWithSize(f.Bits(), f.Hashes(), bloom.Blocked(), bloom.Seed(f.Seed()))
		if err != nil {
			t.Fatal(err)
		}
		keys := keyRange("blk-", 0, 1174)
		blocked.AddMany(keys)
		if err := f.Import(ctx, blocked); !errors.Is(err, bloom.ErrIncompatible) {
			t.Fatalf("Import of a blocked filter: %v, want bloom.ErrIncompatible; then %s", err, absent(f.TestMany, keys))
		} else {
			t.Logf("Import: %v", err)
		}
		if c, err := f.Count(ctx); err != nil || c != 0 {
			t.Fatalf("Count after the refused Import = %d, %v; want 0", c, err)
		}
	})
	t.Run("ShardedFilter", func(t *testing.T) {
		s, err := redisbloom.NewSharded(ctx, rdb, filterName(t, rdb), 2, 2348, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(context.Background()) })
		shards := s.Shards()
		mem := make([]*bloom.BloomFilter, len(shards))
		for i, f := range shards {
			if mem[i], err = bloom.NewWithSize(f.Bits(), f.Hashes(), bloom.Blocked(), bloom.Seed(f.Seed())); err != nil {
				t.Fatal(err)
			}
		}
		keys := keyRange("blk-", 0, 2000)
		for _, key := range keys {
			mem[s.Shard(key)].Add(key)
		}
		if err := s.Import(ctx, mem); !errors.Is(err, bloom.ErrIncompatible) {
			t.Fatalf("Import of blocked filters: %v, want bloom.ErrIncompatible; then %s", err, absent(s.TestMany, keys))
		}
		// A blocked filter after a classic one: the first shard must not
		// be replaced either.
		classic, err := bloom.NewWithSize(shards[0].Bits(), shards[0].Hashes(), bloom.Seed(shards[0].Seed()))
		if err != nil {
			t.Fatal(err)
		}
		classic.Add([]byte("first"))
		if err := s.Import(ctx, []*bloom.BloomFilter{classic, mem[1]}); !errors.Is(err, bloom.ErrIncompatible) {
			t.Fatalf("Import of a classic and a blocked filter: %v, want bloom.ErrIncompatible", err)
		}
		if c, err := s.Count(ctx); err != nil || c != 0 {
			t.Fatalf("Count after the refused Imports = %d, %v; want 0 (nothing imported)", c, err)
		}
	})
	t.Run("ScalableFilter", func(t *testing.T) {
		s, err := redisbloom.NewScalable(ctx, rdb, scalableName(t, rdb), 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		blocked, err := bloom.NewScalable(1000, 0.01, bloom.Blocked(), bloom.Seed(s.Seed()))
		if err != nil {
			t.Fatal(err)
		}
		keys := keyRange("blk-", 0, 1000)
		blocked.AddMany(keys)
		if err := s.Import(ctx, blocked); !errors.Is(err, bloom.ErrIncompatible) {
			t.Fatalf("Import of a blocked scalable filter: %v, want bloom.ErrIncompatible; then %s", err, absent(s.TestMany, keys))
		}
		ss, err := redisbloom.NewShardedScalable(ctx, rdb, scalableName(t, rdb), 2, 2000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Delete(context.Background()) })
		if err := ss.Import(ctx, []*bloom.ScalableBloomFilter{blocked, blocked}); !errors.Is(err, bloom.ErrIncompatible) {
			t.Fatalf("sharded Import of blocked scalable filters: %v, want bloom.ErrIncompatible", err)
		}
	})
}
