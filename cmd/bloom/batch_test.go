package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// TestTestAndAddManyIsLoop checks the promise dedup's batches rest on: for
// every kind of filter dedup keeps, TestAndAddMany answers as the loop of
// TestAndAdd over the same keys does, a key repeated within the batch
// reported present from its second occurrence on, and leaves the same
// filter (the same encoding) behind, after every batch of a random run whose
// batches are full of repeats and make the scalable filters grow within
// them.
func TestTestAndAddManyIsLoop(t *testing.T) {
	kinds := []struct {
		name string
		make func() (dedupSet, error)
	}{
		{"scalable/blocked", func() (dedupSet, error) { return bloom.NewScalable(50, 1e-6, bloom.Blocked()) }},
		{"scalable/classic", func() (dedupSet, error) { return bloom.NewScalable(50, 1e-6, bloom.Classic()) }},
		{"scalable/p=0.01", func() (dedupSet, error) { return bloom.NewScalable(50, 0.01) }},
		{"window/lines", func() (dedupSet, error) { return bloom.NewWindow(300, 1e-3) }},
		{"window/24h", func() (dedupSet, error) { return bloom.NewWindow(300, 1e-3, bloom.Every(24*time.Hour)) }},
	}
	for _, kind := range kinds {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed=%d", kind.name, seed), func(t *testing.T) {
				batched, err := kind.make()
				if err != nil {
					t.Fatal(err)
				}
				looped, _ := kind.make()
				rng := rand.New(rand.NewPCG(seed, 33))
				universe := 200 + rng.IntN(2000)
				repeatsInBatch := 0
				for step := range 60 {
					keys := make([][]byte, rng.IntN(300))
					seen := map[string]bool{}
					for i := range keys {
						if i > 0 && rng.IntN(4) == 0 {
							keys[i] = keys[rng.IntN(i)] // a repeat within the batch
						} else {
							keys[i] = fmt.Appendf(nil, "key %d", rng.IntN(universe))
						}
						if seen[string(keys[i])] {
							repeatsInBatch++
						}
						seen[string(keys[i])] = true
					}
					got := batched.TestAndAddMany(keys, nil)
					for i, k := range keys {
						if want := looped.TestAndAdd(k); got[i] != want {
							t.Fatalf("step %d: key %d of %d (%q): TestAndAddMany says %v, the loop of TestAndAdd %v", step, i, len(keys), k, got[i], want)
						}
					}
					var a, b bytes.Buffer
					if _, err := batched.WriteTo(&a); err != nil {
						t.Fatal(err)
					}
					if _, err := looped.WriteTo(&b); err != nil {
						t.Fatal(err)
					}
					if kind.name == "window/24h" {
						// The encoding holds the times of the generations,
						// which differ between the two filters by the time
						// it took to make them: compare what they answer,
						// for every key used and as many others.
						var all [][]byte
						for i := range 2 * universe {
							all = append(all, fmt.Appendf(nil, "key %d", i))
						}
						if !slices.Equal(batched.(*bloom.WindowFilter).TestMany(all, nil), looped.(*bloom.WindowFilter).TestMany(all, nil)) {
							t.Fatalf("step %d: the filters answer differently after the batch", step)
						}
						a, b = bytes.Buffer{}, bytes.Buffer{}
					}
					if !bytes.Equal(a.Bytes(), b.Bytes()) || batched.Count() != looped.Count() {
						t.Fatalf("step %d: the filters differ after the batch (counts %d, %d)", step, batched.Count(), looped.Count())
					}
				}
				if s, ok := batched.(*bloom.ScalableBloomFilter); ok && s.NumFilters() < 3 {
					t.Errorf("grew to %d sub-filters, want at least 3", s.NumFilters())
				}
				if repeatsInBatch == 0 {
					t.Error("no key repeated within a batch")
				}
			})
		}
	}
}
