package redisbloom_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// hashRange returns the hashes lo, lo+1, ..., hi-1: sequential integers, the
// weakest hash there is, which the hashed calls must spread as well as keys.
func hashRange(lo, hi uint64) []uint64 {
	h := make([]uint64, 0, hi-lo)
	for i := lo; i < hi; i++ {
		h = append(h, i)
	}
	return h
}

// le8 returns the 8 little-endian bytes of h.
func le8(h uint64) []byte { return binary.LittleEndian.AppendUint64(nil, h) }

// TestHashedParity adds 20,000 hashes to a Redis filter and to the in-memory
// filter with the same parameters through every hashed call, single and
// batch, on a plain and a Coalesced handle, and checks that the answers are
// the in-memory hashed calls', that Export equals the in-memory filter (the
// same bits: the positions of bloom.BloomFilter.AddHash), that the byte calls
// on a hash's 8 little-endian bytes answer alike, and that an in-memory
// filter filled by AddHash imports to one whose TestHash finds every hash.
func TestHashedParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const n = 20_000
	f, mem := newPair(t, rdb, n, 0.01, 0x5eed)
	co := f.Coalesced()
	present, absent := hashRange(0, n), hashRange(1<<40, 1<<40+n)

	for i, h := range present[:600] {
		var got, want bool
		var err error
		switch i % 4 {
		case 0:
			if err := f.AddHash(ctx, h); err != nil {
				t.Fatal(err)
			}
			mem.AddHash(h)
			continue
		case 1:
			got, err = f.TestAndAddHash(ctx, h)
		case 2:
			got, err = co.TestAndAddHash(ctx, h)
		case 3:
			if err := co.AddHash(ctx, h); err != nil {
				t.Fatal(err)
			}
			mem.AddHash(h)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if want = mem.TestAndAddHash(h); got != want {
			t.Fatalf("TestAndAddHash(%d) = %v, in memory %v", h, got, want)
		}
	}
	// The rest in batches of 1,000 overlapping by 100, alternating
	// AddManyHashes and TestAndAddManyHashes.
	for lo := 500; lo < n; lo += 900 {
		batch := present[lo:min(lo+1000, n)]
		if lo/900%2 == 0 {
			if err := f.AddManyHashes(ctx, batch); err != nil {
				t.Fatal(err)
			}
			mem.AddManyHashes(batch)
			continue
		}
		got, err := f.TestAndAddManyHashes(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		want := mem.TestAndAddManyHashes(batch, nil)
		for i := range batch {
			if got[i] != want[i] {
				t.Fatalf("TestAndAddManyHashes: hash %d: %v, in memory %v", batch[i], got[i], want[i])
			}
		}
	}
	checkExport(t, f, mem)

	fp := 0
	for _, hashes := range [][]uint64{present, absent} {
		got, err := f.TestManyHashes(ctx, hashes)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hashes {
			if want := mem.TestHash(h); got[i] != want {
				t.Fatalf("TestManyHashes: hash %d: %v, in memory %v", h, got[i], want)
			}
			if h < n && !got[i] {
				t.Fatalf("added hash %d absent", h)
			}
			if h >= n && got[i] {
				fp++
			}
		}
	}
	if fp > 2*n/100 {
		t.Errorf("%d false positives in %d absent hashes, target rate 0.01", fp, n)
	}
	for _, h := range []uint64{present[0], present[n-1], absent[0], absent[1], absent[2]} {
		for name, handle := range map[string]*redisbloom.Filter{"plain": f, "coalesced": co} {
			got, err := handle.TestHash(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			asBytes, err := handle.Test(ctx, le8(h))
			if err != nil {
				t.Fatal(err)
			}
			if want := mem.TestHash(h); got != want || asBytes != want {
				t.Fatalf("%s: TestHash(%d) = %v, Test of its bytes %v, in memory %v", name, h, got, asBytes, want)
			}
		}
	}

	// Import of a filter filled through AddHash.
	g, mem2 := newPair(t, rdb, n, 0.01, 0x5eed)
	mem2.AddManyHashes(absent)
	if err := g.Import(ctx, mem2); err != nil {
		t.Fatal(err)
	}
	got, err := g.TestManyHashes(ctx, absent)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("hash %d added in memory is absent after Import", absent[i])
		}
	}
}

// TestScalableHashedParity grows a Redis scalable filter and the in-memory
// one with the same parameters through the hashed calls, single and batch,
// from 1,000 to 30,000 hashes (7 sub-filters), and checks the answers, Count
// and Export against the in-memory filter's hashed calls, and that Test of a
// hash's 8 little-endian bytes answers as TestHash.
func TestScalableHashedParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const initial, p, n = 1000, 0.01, 30_000
	s, err := redisbloom.NewScalable(ctx, rdb, scalableName(t, rdb), initial, p)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.NewScalable(initial, p, bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	present, absent := hashRange(0, n), hashRange(1<<40, 1<<40+n)
	for i, h := range present[:300] {
		if i%2 == 0 {
			if err := s.AddHash(ctx, h); err != nil {
				t.Fatal(err)
			}
			mem.AddHash(h)
			continue
		}
		got, err := s.TestAndAddHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.TestAndAddHash(h); got != want {
			t.Fatalf("TestAndAddHash(%d) = %v, in memory %v", h, got, want)
		}
	}
	feedHashBatches(t, present[300:], 1500, s.AddManyHashes, mem.AddManyHashes, s.TestAndAddManyHashes,
		func(b []uint64) []bool { return mem.TestAndAddManyHashes(b, nil) })
	if s.NumFilters() != mem.NumFilters() || mem.NumFilters() < 4 {
		t.Fatalf("%d sub-filters, in memory %d (want the same, at least 4)", s.NumFilters(), mem.NumFilters())
	}
	checkScalableExport(t, s, mem)
	if cnt, err := s.Count(ctx); err != nil || cnt != mem.Count() {
		t.Fatalf("Count = %d, %v; in memory %d", cnt, err, mem.Count())
	}
	for _, hashes := range [][]uint64{present, absent} {
		got, err := s.TestManyHashes(ctx, hashes)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hashes {
			if want := mem.TestHash(h); got[i] != want || (h < n && !got[i]) {
				t.Fatalf("TestManyHashes: hash %d: %v, in memory %v", h, got[i], want)
			}
		}
	}
	for _, h := range []uint64{present[0], present[n-1], absent[0], absent[1], absent[2]} {
		got, err := s.TestHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		asBytes, err := s.Test(ctx, le8(h))
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.TestHash(h); got != want || asBytes != want {
			t.Fatalf("TestHash(%d) = %v, Test of its bytes %v, in memory %v", h, got, asBytes, want)
		}
	}
}

// TestWindowHashedParity feeds a Redis window and the in-memory one with the
// same parameters the same hashes through every hashed call, single and
// batch, across rotations (a window of 500 hashes, 6,000 added): every
// answer agrees with the in-memory hashed calls', Export is Equal to the
// in-memory window, and Test of a hash's 8 little-endian bytes answers as
// TestHash.
func TestWindowHashedParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	const window, p, n = 500, 0.01, 6000
	w, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), window, p)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.NewWindow(window, p)
	if err != nil {
		t.Fatal(err)
	}
	present := hashRange(0, n)
	for i, h := range present[:300] {
		var got, want bool
		switch i % 3 {
		case 0:
			if err := w.AddHash(ctx, h); err != nil {
				t.Fatal(err)
			}
			mem.AddHash(h)
			continue
		case 1:
			got, err = w.TestAndAddHash(ctx, h)
			want = mem.TestAndAddHash(h)
		case 2:
			// A hash added before (or not yet, for i/2 = i-1): first-seen,
			// or every other time last-seen.
			h = present[i/2]
			if i%2 == 0 {
				got, err = w.TestAndRefreshHash(ctx, h)
				want = mem.TestAndRefreshHash(h)
			} else {
				got, err = w.TestAndAddHash(ctx, h)
				want = mem.TestAndAddHash(h)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("TestAndAddHash(%d) = %v, in memory %v", h, got, want)
		}
	}
	feedHashBatches(t, present[300:], 400, w.AddManyHashes, mem.AddManyHashes, w.TestAndAddManyHashes,
		func(b []uint64) []bool { return mem.TestAndAddManyHashes(b, nil) })
	again := present[len(present)-2*window:]
	if got, err := w.TestAndRefreshManyHashes(ctx, again); err != nil {
		t.Fatal(err)
	} else if want := mem.TestAndRefreshManyHashes(again, nil); !slices.Equal(got, want) {
		t.Fatalf("TestAndRefreshManyHashes differs from memory")
	}
	if mem.Rotations() < 10 || w.Rotations() != mem.Rotations() {
		t.Fatalf("%d rotations in Redis, %d in memory (want the same, at least 10)", w.Rotations(), mem.Rotations())
	}
	checkWindowExport(t, w, mem)
	got, err := w.TestManyHashes(ctx, present)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for i, h := range present {
		want := mem.TestHash(h)
		if got[i] != want || (h >= n-window && !got[i]) {
			t.Fatalf("TestManyHashes: hash %d: %v, in memory %v", h, got[i], want)
		}
		if got[i] {
			kept++
		}
	}
	if kept >= n/2 {
		t.Fatalf("%d of %d hashes test present: the window forgot too little for the test to mean anything", kept, n)
	}
	for _, h := range []uint64{present[0], present[n-1], 1 << 40, 1<<40 + 1} {
		got, err := w.TestHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		asBytes, err := w.Test(ctx, le8(h))
		if err != nil {
			t.Fatal(err)
		}
		if want := mem.TestHash(h); got != want || asBytes != want {
			t.Fatalf("TestHash(%d) = %v, Test of its bytes %v, in memory %v", h, got, asBytes, want)
		}
	}
}

// feedHashBatches feeds hashes in batches of size, alternately to add (and
// memAdd, the in-memory twin's AddManyHashes) and to testAndAdd, whose
// answers must be memTestAndAdd's.
func feedHashBatches(t *testing.T, hashes []uint64, size int,
	add func(context.Context, []uint64) error, memAdd func([]uint64),
	testAndAdd func(context.Context, []uint64) ([]bool, error), memTestAndAdd func([]uint64) []bool) {
	t.Helper()
	ctx := context.Background()
	for step := 0; len(hashes) > 0; step++ {
		batch := hashes[:min(size, len(hashes))]
		hashes = hashes[len(batch):]
		if step%2 == 0 {
			if err := add(ctx, batch); err != nil {
				t.Fatal(err)
			}
			memAdd(batch)
			continue
		}
		got, err := testAndAdd(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		want := memTestAndAdd(batch)
		for i := range batch {
			if got[i] != want[i] {
				t.Fatalf("TestAndAddManyHashes: hash %d: %v, in memory %v", batch[i], got[i], want[i])
			}
		}
	}
}
