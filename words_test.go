package bloom

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestMerge checks Merge against Union on random configurations, plain and
// concurrent on either side: the same bits and count (Equal), no false
// negatives, and f unchanged when the filters are incompatible.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 3))
	buf := make([]byte, 16)
	for round := range 40 {
		n := uint64(1 + rng.IntN(5000))
		p := math.Pow(10, -1-5*rng.Float64())
		var fo, oo []Option
		if round%2 == 1 {
			fo = append(fo, Concurrent())
		}
		if round%4 >= 2 {
			oo = append(oo, Concurrent())
		}
		f, other := mustNew(t, n, p, fo...), mustNew(t, n, p, oo...)
		for i := range uint64(n) {
			f.Add(keyOf(buf, 0, i))
			other.Add(keyOf(buf, 2, i))
		}
		u, err := f.Union(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Merge(other); err != nil {
			t.Fatal(err)
		}
		if !f.Equal(u) {
			t.Fatalf("n=%d p=%g: Merge differs from Union: count %d vs %d", n, p, f.Count(), u.Count())
		}
		for i := range uint64(n) {
			if !f.Test(keyOf(buf, 0, i)) || !f.Test(keyOf(buf, 2, i)) {
				t.Fatalf("n=%d p=%g: false negative after Merge", n, p)
			}
		}
	}

	f := mustNew(t, 1000, 0.01)
	f.AddString("x")
	before := f.Clone()
	for name, other := range map[string]*BloomFilter{
		"bits": mustNew(t, 2000, 0.01),
		"k":    mustNewWithSize(t, f.Bits(), f.Hashes()+1),
		"seed": mustNew(t, 1000, 0.01, Seed(1)),
		"nil":  nil,
		"zero": new(BloomFilter),
	} {
		if err := f.Merge(other); !errors.Is(err, ErrIncompatible) {
			t.Errorf("%s: Merge = %v, want ErrIncompatible", name, err)
		}
		if !f.Equal(before) {
			t.Errorf("%s: failed Merge changed the filter", name)
		}
	}
	var zero BloomFilter
	if err := zero.Merge(f); !errors.Is(err, ErrIncompatible) {
		t.Errorf("zero receiver: %v", err)
	}
	if err := f.Merge(f); err != nil || !f.TestString("x") {
		t.Errorf("Merge with itself: %v", err)
	}
}

// TestMergeDoesNotAllocate: Merge works in place.
func TestMergeDoesNotAllocate(t *testing.T) {
	for _, opts := range [][]Option{nil, {Concurrent()}} {
		f, g := mustNew(t, 100_000, 0.01, opts...), mustNew(t, 100_000, 0.01, opts...)
		g.AddString("a")
		if a := testing.AllocsPerRun(100, func() {
			if err := f.Merge(g); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("Merge (concurrent %v): %v allocations per run, want 0", opts != nil, a)
		}
	}
}

// TestConcurrentMergeExactlyOnce merges filters into a Concurrent filter
// while goroutines race TestAndAdd on the same keys: each key that no merged
// filter holds is still reported new exactly once, and no key is lost.
func TestConcurrentMergeExactlyOnce(t *testing.T) {
	const keys, others = 5000, 8
	f := mustNew(t, 100_000, 1e-9, Concurrent())
	var srcs []*BloomFilter
	for j := range others {
		g := mustNew(t, 100_000, 1e-9)
		buf := make([]byte, 16)
		for i := range uint64(keys) {
			g.Add(keyOf(buf, uint64(100+j), i))
		}
		srcs = append(srcs, g)
	}
	news := make([][]int32, concurrentWorkers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, g := range srcs {
			if err := f.Merge(g); err != nil {
				t.Error(err)
			}
		}
	}()
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			if !f.TestAndAdd(keyOf(buf, 0, uint64(i))) {
				news[g][i]++
			}
		}
	})
	wg.Wait()
	bad := 0
	for i := range keys {
		var n int32
		for g := range news {
			n += news[g][i]
		}
		if n != 1 {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d keys not reported new exactly once", bad, keys)
	}
	buf := make([]byte, 16)
	for j := range others {
		for i := range uint64(keys) {
			if !f.Test(keyOf(buf, uint64(100+j), i)) || !f.Test(keyOf(buf, 0, i)) {
				t.Fatalf("false negative after concurrent Merge")
			}
		}
	}
	if c, e := f.Count(), f.EstimatedCount(); c > f.setBits() || math.Abs(float64(c)-float64(e)) > 0.01*float64(e)+keys {
		t.Errorf("Count %d, EstimatedCount %d", c, e)
	}
}

// TestFromWords round-trips filters through Header, AppendWords and
// FromWords, plain and concurrent, and checks that FromWords copies.
func TestFromWords(t *testing.T) {
	for _, opts := range [][]Option{nil, {Concurrent()}} {
		for _, bitsN := range []uint64{1, 63, 64, 65, 1000, 4096} {
			f := mustNewWithSize(t, bitsN, 3, append([]Option{Seed(99)}, opts...)...)
			for i := range bitsN / 4 {
				f.AddString(string(rune('a' + i%26)))
			}
			h := f.Header()
			prefix := []uint64{42}
			words := f.AppendWords(prefix)
			if words[0] != 42 || len(words) != 1+int((bitsN+63)/64) {
				t.Fatalf("AppendWords: %d words, first %d", len(words), words[0])
			}
			g, err := FromWords(h, words[1:], opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !g.Equal(f) || (g.conc != nil) != (opts != nil) {
				t.Fatalf("%d bits: FromWords(Header, AppendWords) is not Equal", bitsN)
			}
			clear(words)
			if !g.Equal(f) {
				t.Fatalf("FromWords kept the caller's words")
			}
			w := g.AppendWords(nil)
			w[0] = math.MaxUint64 >> (64 - min(bitsN, 64))
			if !g.Equal(f) {
				t.Fatalf("AppendWords handed out the filter's words")
			}
		}
	}
	var zero BloomFilter
	if zero.Header() != (Header{}) || len(zero.AppendWords(nil)) != 0 {
		t.Errorf("zero value: Header %+v", zero.Header())
	}
}

// TestFromWordsErrors: every invalid field is refused before allocating.
func TestFromWordsErrors(t *testing.T) {
	f := mustNewWithSize(t, 100, 3)
	f.AddString("a")
	good, words := f.Header(), f.AppendWords(nil)
	if _, err := FromWords(good, words, Seed(good.Seed)); err != nil {
		t.Fatalf("agreeing Seed: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Header) []uint64
		opts  []Option
		wants error
	}{
		{"bits 0", func(h *Header) []uint64 { h.Bits = 0; return nil }, nil, ErrInvalidParameter},
		{"bits > MaxBits", func(h *Header) []uint64 { h.Bits = MaxBits + 1; return words }, nil, ErrInvalidParameter},
		{"hashes 0", func(h *Header) []uint64 { h.Hashes = 0; return words }, nil, ErrInvalidParameter},
		{"hashes 65", func(h *Header) []uint64 { h.Hashes = 65; return words }, nil, ErrInvalidParameter},
		{"capacity 0", func(h *Header) []uint64 { h.Capacity = 0; return words }, nil, ErrInvalidParameter},
		{"rate 0", func(h *Header) []uint64 { h.ErrorRate = 0; return words }, nil, ErrInvalidParameter},
		{"rate 1", func(h *Header) []uint64 { h.ErrorRate = 1; return words }, nil, ErrInvalidParameter},
		{"rate NaN", func(h *Header) []uint64 { h.ErrorRate = math.NaN(); return words }, nil, ErrInvalidParameter},
		{"short words", func(h *Header) []uint64 { return words[:1] }, nil, ErrInvalidParameter},
		{"long words", func(h *Header) []uint64 { return append(append([]uint64{}, words...), 0) }, nil, ErrInvalidParameter},
		{"padding bit", func(h *Header) []uint64 {
			w := append([]uint64{}, words...)
			w[1] |= 1 << 63
			return w
		}, nil, ErrInvalidParameter},
		{"count above set bits", func(h *Header) []uint64 { h.Count = 4; return words }, nil, ErrInvalidParameter},
		{"contradicting Seed", func(h *Header) []uint64 { return words }, []Option{Seed(1)}, ErrInvalidParameter},
		{"growth option", func(h *Header) []uint64 { return words }, []Option{Linear(1)}, ErrInvalidParameter},
	} {
		h := good
		w := tc.edit(&h)
		g, err := FromWords(h, w, tc.opts...)
		if g != nil || !errors.Is(err, tc.wants) {
			t.Errorf("%s: FromWords = %v, %v", tc.name, g, err)
		}
	}
}
