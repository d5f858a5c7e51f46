package redisbloom_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// legacySize is the (bits, hashes) bloom.Size chose before it used the exact
// false-positive rate of small filters (commit 34f846c): the smallest m from
// the textbook bits for which the closed-form rate meets errorRate.
func legacySize(n uint64, p float64) (uint64, uint) {
	rate := func(m uint64, k uint) float64 {
		return math.Pow(1-math.Exp(-float64(k)*float64(n)/float64(m)), float64(k))
	}
	hashes := func(m uint64) uint {
		lo := uint(math.Floor(float64(m) / float64(n) * math.Ln2))
		if lo < 1 {
			return 1
		}
		if rate(m, lo+1) < rate(m, lo) {
			return lo + 1
		}
		return lo
	}
	m := max(bloom.OptimalBits(n, p), 1)
	for rate(m, hashes(m)) > p {
		m++
	}
	return m, hashes(m)
}

// writeLegacy writes a filter the way the release before the write
// generation did (34f846c: createScript's HSET of format, id, bits, hashes,
// seed, capacity, error_rate and count, no gen and no check, and the bitmap
// grown with SETBIT), with bits and hashes from the sizing of that time, and
// adds keys as its addScript did. It returns the filter's bits and hashes.
func writeLegacy(t *testing.T, rdb redis.UniversalClient, name string, capacity uint64, errorRate float64, keys [][]byte) (uint64, uint) {
	t.Helper()
	ctx := context.Background()
	m, k := legacySize(capacity, errorRate)
	meta, bits := "{"+name+"}:meta", "{"+name+"}:bits"
	err := rdb.HSet(ctx, meta,
		"format", "redisbloom/1",
		"id", "0123456789abcdef0123456789abcdef",
		"bits", strconv.FormatUint(m, 10),
		"hashes", strconv.FormatUint(uint64(k), 10),
		"seed", strconv.FormatUint(uint64(bloom.DefaultSeed), 10),
		"capacity", strconv.FormatUint(capacity, 10),
		"error_rate", strconv.FormatFloat(errorRate, 'g', -1, 64),
		"count", strconv.Itoa(len(keys))).Err()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.SetBit(ctx, bits, int64(8*((m+7)/8)-1), 0).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	for _, key := range keys {
		for _, p := range bloom.AppendLocations(nil, key, m, k, bloom.DefaultSeed) {
			pipe.SetBit(ctx, bits, int64(p), 1)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return m, k
}

// TestLegacyFilter opens filters written by the release before the write
// generation and the exact small-filter sizing: metadata without gen and
// check, and 9593 bits where New now chooses 9595 for 1000 keys at 1%. New
// and Open accept them with their own bits and hashes, write the check once,
// and every method works; New with another capacity, error rate or seed is
// still refused, and so is such a filter whose bitmap does not match its
// bits.
func TestLegacyFilter(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const capacity, errorRate = 1000, 0.01
	added := keyRange("legacy-", 0, 500)
	if m, _, _ := bloom.Size(capacity, errorRate); m == 9593 {
		t.Fatalf("bloom.Size(1000, 0.01) = %d bits, as the old sizing: the test needs a filter that New sizes differently", m)
	}

	for _, how := range []string{"New", "Open"} {
		t.Run(how, func(t *testing.T) {
			name := filterName(t, rdb)
			m, k := writeLegacy(t, rdb, name, capacity, errorRate, added)
			if m != 9593 || k != 7 {
				t.Fatalf("legacy sizing %d bits, %d hashes; want 9593, 7 (the sizes of the bug report)", m, k)
			}
			var f *redisbloom.Filter
			var err error
			if how == "New" {
				f, err = redisbloom.New(ctx, rdb, name, capacity, errorRate)
			} else {
				f, err = redisbloom.Open(ctx, rdb, name)
			}
			if err != nil {
				t.Fatalf("%s of a legacy filter: %v", how, err)
			}
			if f.Bits() != m || f.Hashes() != k || f.Capacity() != capacity || f.ErrorRate() != errorRate {
				t.Fatalf("%s: m=%d k=%d n=%d p=%v, want the stored %d, %d, %d, %v", how, f.Bits(), f.Hashes(), f.Capacity(), f.ErrorRate(), m, k, capacity, errorRate)
			}
			meta, err := rdb.HGetAll(ctx, "{"+name+"}:meta").Result()
			if err != nil {
				t.Fatal(err)
			}
			if meta["check"] == "" || meta["gen"] != "0" {
				t.Errorf("%s did not upgrade the metadata: check %q, gen %q", how, meta["check"], meta["gen"])
			}
			// Every method works on it, and the old keys are there.
			if n, err := falseNegatives(ctx, f, added); err != nil || n != 0 {
				t.Fatalf("%d of %d keys added by the old release absent, error %v", n, len(added), err)
			}
			more := keyRange("legacy-new-", 0, 100)
			if err := f.AddMany(ctx, more); err != nil {
				t.Fatal(err)
			}
			if n, err := f.Count(ctx); err != nil || n < uint64(len(added)) {
				t.Fatalf("Count %d, %v", n, err)
			}
			mem, err := bloom.NewWithSize(m, k)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range append(append([][]byte{}, added...), more...) {
				mem.Add(key)
			}
			got, err := f.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bits() != m || got.Hashes() != k {
				t.Fatalf("Export: %d bits, %d hashes", got.Bits(), got.Hashes())
			}
			for i := range 20000 {
				key := keyOf("probe-", i)
				if got.Test(key) != mem.Test(key) {
					t.Fatalf("Export answers %v for %q, the in-memory filter of the same keys %v", got.Test(key), key, mem.Test(key))
				}
			}
			// Opened again, now with a check, by New and Open alike.
			if _, err := redisbloom.New(ctx, rdb, name, capacity, errorRate); err != nil {
				t.Errorf("New after the upgrade: %v", err)
			}
			if _, err := redisbloom.Open(ctx, rdb, name); err != nil {
				t.Errorf("Open after the upgrade: %v", err)
			}
			for _, c := range []struct {
				desc      string
				capacity  uint64
				errorRate float64
				opts      []bloom.Option
			}{
				{"capacity", 2000, errorRate, nil},
				{"error rate", capacity, 0.001, nil},
				{"seed", capacity, errorRate, []bloom.Option{bloom.Seed(7)}},
			} {
				if _, err := redisbloom.New(ctx, rdb, name, c.capacity, c.errorRate, c.opts...); !errors.Is(err, bloom.ErrIncompatible) {
					t.Errorf("New with another %s: %v, want bloom.ErrIncompatible", c.desc, err)
				}
			}
		})
	}

	t.Run("bitmap of another size", func(t *testing.T) {
		name := filterName(t, rdb)
		m, _ := writeLegacy(t, rdb, name, capacity, errorRate, nil)
		if err := rdb.HSet(ctx, "{"+name+"}:meta", "bits", strconv.FormatUint(m+64, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := redisbloom.New(ctx, rdb, name, capacity, errorRate); !errors.Is(err, redisbloom.ErrCorrupt) {
			t.Errorf("New: %v, want ErrCorrupt", err)
		}
		if _, err := redisbloom.Open(ctx, rdb, name); !errors.Is(err, redisbloom.ErrCorrupt) {
			t.Errorf("Open: %v, want ErrCorrupt", err)
		}
	})
}
