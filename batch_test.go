package bloom

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
)

// fnv1a is the 64-bit FNV-1a hash of b, the weak hash the hashed calls are
// tested with.
func fnv1a(b []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return h
}

// inRounds makes the batch calls of BloomFilter go in rounds whatever the
// filter's size (on) or only from classic.BatchMinBits, or blocked.BatchMinBits
// (off), until the test ends.
func inRounds(t testing.TB, on bool) {
	saved, savedBlocked := classic.BatchMinBits, blocked.BatchMinBits
	if on {
		classic.BatchMinBits, blocked.BatchMinBits = 0, 0
	}
	t.Cleanup(func() { classic.BatchMinBits, blocked.BatchMinBits = saved, savedBlocked })
}

// batchVsLoop runs one batch call, chosen by op, with keys on a and the loop
// of the single calls it stands for on b, and fails t unless both answer the
// same and a and b then encode to the same bytes. results is passed to the
// batch call; when it has room for the answers they must land in its storage.
func batchVsLoop(t testing.TB, a, b batchOps, op int, keys [][]byte, results []bool) {
	t.Helper()
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = fnv1a(k)
	}
	want := make([]bool, len(keys))
	var got []bool
	name := batchOpNames[op]
	switch op {
	case 0:
		a.AddMany(keys)
		for _, k := range keys {
			b.Add(k)
		}
	case 1:
		a.AddManyStrings(strs)
		for _, k := range strs {
			b.AddString(k)
		}
	case 2:
		got = a.TestMany(keys, results)
		for i, k := range keys {
			want[i] = b.Test(k)
		}
	case 3:
		got = a.TestManyStrings(strs, results)
		for i, k := range strs {
			want[i] = b.TestString(k)
		}
	case 4:
		got = a.TestAndAddMany(keys, results)
		for i, k := range keys {
			want[i] = b.TestAndAdd(k)
		}
	case 5:
		got = a.TestAndAddManyStrings(strs, results)
		for i, k := range strs {
			want[i] = b.TestAndAddString(k)
		}
	case 6:
		a.AddManyHashes(hashes)
		for _, h := range hashes {
			b.AddHash(h)
		}
	case 7:
		got = a.TestManyHashes(hashes, results)
		for i, h := range hashes {
			want[i] = b.TestHash(h)
		}
	case 8:
		got = a.TestAndAddManyHashes(hashes, results)
		for i, h := range hashes {
			want[i] = b.TestAndAddHash(h)
		}
	}
	if op != 0 && op != 1 && op != 6 {
		if len(got) != len(keys) {
			t.Fatalf("%s of %d keys returned %d answers", name, len(keys), len(got))
		}
		if cap(results) >= len(keys) && len(keys) > 0 && &got[0] != &results[:1][0] {
			t.Fatalf("%s did not reuse results (cap %d) for %d keys", name, cap(results), len(keys))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: key %d of %d (%q): batch says %v, loop %v", name, i, len(keys), keys[i], got[i], want[i])
			}
		}
	}
	ea, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ea, eb) {
		t.Fatalf("after %s of %d keys the filters differ", name, len(keys))
	}
	if a.Count() != b.Count() {
		t.Fatalf("after %s: Count %d, loop %d", name, a.Count(), b.Count())
	}
}

// randomBatches runs batches of 0 to maxLen keys on a (batch calls) and b
// (loops), keys drawn from a pool of pool random keys, so that they repeat
// within and across batches, with results of every kind: nil, too short,
// long enough.
func randomBatches(t *testing.T, rng *rand.Rand, a, b batchOps, batches, maxLen, pool int) {
	t.Helper()
	keys := make([][]byte, pool)
	for i := range keys {
		keys[i] = make([]byte, rng.IntN(24))
		for j := range keys[i] {
			keys[i][j] = byte(rng.Uint32())
		}
	}
	for range batches {
		batch := make([][]byte, rng.IntN(maxLen+1))
		for i := range batch {
			batch[i] = keys[rng.IntN(pool)]
		}
		var results []bool
		switch rng.IntN(3) {
		case 1:
			results = make([]bool, rng.IntN(len(batch)+1))
		case 2:
			c := len(batch) + rng.IntN(3)
			results = make([]bool, min(rng.IntN(3), c), c)
			for i := range results {
				results[i] = true // garbage the call must overwrite
			}
		}
		batchVsLoop(t, a, b, rng.IntN(len(batchOpNames)), batch, results)
	}
}

// TestBatchMatchesLoop checks on random filters, from 1 to 10^6 bits and 1 to
// 30 hashes, plain and concurrent, that every batch call answers what the
// loop of single calls answers and leaves the filter byte for byte as the
// loop leaves it, in rounds (whatever the filter's size) and not.
func TestBatchMatchesLoop(t *testing.T) {
	for _, rounds := range []bool{true, false} {
		t.Run(fmt.Sprintf("rounds=%v", rounds), func(t *testing.T) {
			inRounds(t, rounds)
			rng := rand.New(rand.NewPCG(12, uint64(len(fmt.Sprint(rounds)))))
			configs := 60
			if testing.Short() {
				configs = 15
			}
			for range configs {
				m := uint64(math.Exp(rng.Float64()*math.Log(1e6))) + 1
				k := uint(1 + rng.IntN(30))
				var opts []Option
				if rng.IntN(3) == 0 {
					opts = append(opts, Concurrent())
				}
				opts = append(opts, Seed(rng.Uint32()))
				a, err := NewWithSize(m, k, opts...)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := NewWithSize(m, k, opts...)
				randomBatches(t, rng, a, b, 20, 300, 1+rng.IntN(1000))
			}
		})
	}
}

// TestBatchLargeFilter runs the batch calls on a filter above classic.BatchMinBits,
// as they run by default.
func TestBatchLargeFilter(t *testing.T) {
	a, _ := NewWithSize(classic.BatchMinBits+12345, 7)
	b, _ := NewWithSize(classic.BatchMinBits+12345, 7)
	rng := rand.New(rand.NewPCG(1, 2))
	randomBatches(t, rng, a, b, 8, 1000, 2000)
}

// TestBatchZeroValue checks that the batch calls of zero filters panic like
// their single calls, unless there is no key.
func TestBatchZeroValue(t *testing.T) {
	for _, f := range []batchOps{new(BloomFilter), new(ScalableBloomFilter)} {
		f.AddMany(nil)
		if r := f.TestMany(nil, nil); len(r) != 0 {
			t.Errorf("%T: TestMany of no keys returned %d answers", f, len(r))
		}
		for name, fn := range map[string]func(){
			"AddMany":        func() { f.AddMany([][]byte{nil}) },
			"TestMany":       func() { f.TestManyStrings([]string{""}, nil) },
			"TestAndAddMany": func() { f.TestAndAddMany([][]byte{nil}, nil) },
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "zero") {
						t.Errorf("%T: %s: panic %v, want the zero-value panic", f, name, r)
					}
				}()
				fn()
			}()
		}
	}
}

// TestBatchDoesNotAllocate checks that the nine batch calls of both filter
// types, plain and concurrent, in rounds and not, allocate nothing when
// results has room.
func TestBatchDoesNotAllocate(t *testing.T) {
	for _, rounds := range []bool{true, false} {
		inRounds(t, rounds)
		for _, concurrent := range []bool{false, true} {
			var opts []Option
			if concurrent {
				opts = append(opts, Concurrent())
			}
			for _, f := range []batchOps{mustNew(t, 100_000, 0.01, opts...), mustScalable(t, 100_000, 0.01, opts...)} {
				name := fmt.Sprintf("%T/concurrent=%v/rounds=%v", f, concurrent, rounds)
				checkBatchAllocs(t, name, f)
			}
		}
		classic.BatchMinBits = 1 << 24
	}
}

func checkBatchAllocs(t *testing.T, name string, f batchOps) {
	t.Helper()
	keys := benchKeys(3, 100)
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = fnv1a(k)
	}
	results := make([]bool, 0, len(keys))
	for method, fn := range map[string]func(){
		"AddManyHashes":         func() { f.AddManyHashes(hashes) },
		"TestManyHashes":        func() { results = f.TestManyHashes(hashes, results[:0]) },
		"TestAndAddManyHashes":  func() { results = f.TestAndAddManyHashes(hashes, results[:0]) },
		"AddMany":               func() { f.AddMany(keys) },
		"AddManyStrings":        func() { f.AddManyStrings(strs) },
		"TestMany":              func() { results = f.TestMany(keys, results[:0]) },
		"TestManyStrings":       func() { results = f.TestManyStrings(strs, results[:0]) },
		"TestAndAddMany":        func() { results = f.TestAndAddMany(keys, results[:0]) },
		"TestAndAddManyStrings": func() { results = f.TestAndAddManyStrings(strs, results[:0]) },
	} {
		if a := testing.AllocsPerRun(50, fn); a != 0 {
			t.Errorf("%s: %s allocates %v times per call", name, method, a)
		}
	}
}

// batchExactlyOnce is exactlyOnce for the batch calls: 16 goroutines add the
// same keys, each in its own order of batches of its own sizes, half of them
// with the string form, and every key must be reported new exactly once.
func batchExactlyOnce(t *testing.T, f batchOps, keys int) {
	t.Helper()
	all := benchKeys(4, keys)
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		rng := rand.New(rand.NewPCG(uint64(g), 5))
		order := rng.Perm(keys)
		var results []bool
		for len(order) > 0 {
			n := min(len(order), rng.IntN(300))
			batch := make([][]byte, n)
			strs := make([]string, n)
			for i, j := range order[:n] {
				batch[i], strs[i] = all[j], string(all[j])
			}
			if g%2 == 0 {
				results = f.TestAndAddMany(batch, results)
			} else {
				results = f.TestAndAddManyStrings(strs, results)
			}
			for i, j := range order[:n] {
				if !results[i] {
					news[g][j]++
				}
			}
			order = order[n:]
		}
	})
	checkNewOnce(t, news, keys, f.Count())
}

// TestBatchConcurrentExactlyOnce races TestAndAddMany on the same 10^4 keys,
// on a BloomFilter (in rounds and not) and on a ScalableBloomFilter growing
// from 100 keys. The error rate is tiny so that false positives do not blur
// the count.
func TestBatchConcurrentExactlyOnce(t *testing.T) {
	for _, rounds := range []bool{true, false} {
		t.Run(fmt.Sprintf("BloomFilter/rounds=%v", rounds), func(t *testing.T) {
			inRounds(t, rounds)
			for seed := range 2 {
				batchExactlyOnce(t, mustNew(t, 10_000, 1e-9, Concurrent(), Seed(uint32(seed))), 10_000)
			}
		})
	}
	t.Run("ScalableBloomFilter", func(t *testing.T) {
		for seed := range 2 {
			batchExactlyOnce(t, mustScalable(t, 100, 1e-9, Concurrent(), Seed(uint32(seed))), 10_000)
		}
	})
}

// ---- batch calls ----

// TestBlockedBatchMatchesLoop is TestBatchMatchesLoop for blocked filters,
// from 1 to 2000 blocks and 1 to 30 hashes, plain and concurrent, in rounds
// and not: every batch call answers what the loop of single calls answers
// and leaves the filter byte for byte as the loop does.
func TestBlockedBatchMatchesLoop(t *testing.T) {
	for _, rounds := range []bool{true, false} {
		t.Run(fmt.Sprintf("rounds=%v", rounds), func(t *testing.T) {
			inRounds(t, rounds)
			rng := rand.New(rand.NewPCG(14, uint64(len(fmt.Sprint(rounds)))))
			configs := 40
			if testing.Short() {
				configs = 10
			}
			for range configs {
				m := BlockBits * (1 + uint64(math.Exp(rng.Float64()*math.Log(2000))))
				k := uint(1 + rng.IntN(30))
				opts := []Option{Blocked(), Seed(rng.Uint32())}
				if rng.IntN(3) == 0 {
					opts = append(opts, Concurrent())
				}
				a, err := NewWithSize(m, k, opts...)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := NewWithSize(m, k, opts...)
				randomBatches(t, rng, a, b, 20, 300, 1+rng.IntN(1000))
			}
		})
	}
	// Above blocked.BatchMinBits, as they run by default.
	a, _ := NewWithSize(blocked.BatchMinBits+BlockBits, 7, Blocked())
	b, _ := NewWithSize(blocked.BatchMinBits+BlockBits, 7, Blocked())
	randomBatches(t, rand.New(rand.NewPCG(1, 2)), a, b, 8, 1000, 2000)
}

// TestBlockedScalableBatchMatchesLoop is TestScalableBatchMatchesLoop for
// blocked sub-filters: batches that make the filter grow several times in
// one call end byte for byte where the loop of single calls ends.
func TestBlockedScalableBatchMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 0))
	configs := 20
	if testing.Short() {
		configs = 6
	}
	maxGrowth := 0
	for range configs {
		initial := uint64(1 + rng.IntN(40))
		p := math.Exp(-rng.Float64()*math.Log(1e5)) * 0.2
		opts := []Option{Blocked(), Seed(rng.Uint32()), Exponential(1.1 + rng.Float64()*2)}
		if rng.IntN(3) == 0 {
			opts = append(opts, Concurrent())
		}
		a := mustScalable(t, initial, p, opts...)
		b := mustScalable(t, initial, p, opts...)
		for range 10 {
			before := a.NumFilters()
			randomBatches(t, rng, a, b, 1, 300, 3000)
			maxGrowth = max(maxGrowth, a.NumFilters()-before)
		}
	}
	if maxGrowth < 2 {
		t.Errorf("no batch made a filter grow more than %d times", maxGrowth)
	}
}

func TestBlockedBatchDoesNotAllocate(t *testing.T) {
	inRounds(t, true)
	for _, concurrent := range []bool{false, true} {
		opts := []Option{Blocked()}
		if concurrent {
			opts = append(opts, Concurrent())
		}
		for _, f := range []batchOps{mustNew(t, 100_000, 0.01, opts...), mustScalable(t, 100_000, 0.01, opts...)} {
			checkBatchAllocs(t, fmt.Sprintf("%T/blocked/concurrent=%v", f, concurrent), f)
		}
	}
}
