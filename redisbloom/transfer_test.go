package redisbloom_test

import (
	"context"
	"errors"
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
	empty, err := bloom.New(5000, 0.001, bloom.Seed(99))
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
		"another size":  func() (*bloom.BloomFilter, error) { return bloom.New(5001, 0.001, bloom.Seed(99)) },
		"another seed":  func() (*bloom.BloomFilter, error) { return bloom.New(5000, 0.001) },
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
