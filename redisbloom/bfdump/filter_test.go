package bfdump

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom"
)

// TestLinkBits checks that link.add sets exactly the positions
// (a + i*b) % m and that link.test reports them, on small sub-filters.
func TestLinkBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range []uint64{8, 64, 200, 2112, 4096} {
		for range 300 {
			k := uint32(1 + r.IntN(30))
			l, err := newLink(1, 0.5, m, k, bpeFor(k))
			if err != nil {
				t.Fatal(err)
			}
			l.bits = make([]byte, m/8)
			want := make([]byte, m/8)
			a, b := r.Uint64(), r.Uint64()
			for i := uint64(0); i < uint64(k); i++ {
				x := (a + i*b) % m
				want[x/8] |= 1 << (x % 8)
			}
			if l.test(a, b) {
				t.Fatal("an empty sub-filter reports a key present")
			}
			if !l.add(a, b) {
				t.Fatal("add to an empty sub-filter reports no new bit")
			}
			if !slices.Equal(l.bits, want) {
				t.Fatalf("m=%d k=%d: bits %x, want %x", m, k, l.bits, want)
			}
			if !l.test(a, b) || l.add(a, b) {
				t.Fatal("an added key is not present")
			}
			// Clearing any one of its bits makes it absent.
			x := (a + uint64(r.IntN(int(k)))*b) % m
			l.bits[x/8] &^= 1 << (x % 8)
			if l.test(a, b) {
				t.Fatalf("m=%d k=%d: key present with its bit %d clear", m, k, x)
			}
		}
	}
}

func TestConstructorErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func() (*Filter, error)
	}{
		{"New capacity 0", func() (*Filter, error) { return New(0, 0.01) }},
		{"New rate 0", func() (*Filter, error) { return New(10, 0) }},
		{"New rate 1", func() (*Filter, error) { return New(10, 1) }},
		{"New rate NaN", func() (*Filter, error) { return New(10, math.NaN()) }},
		{"New too large", func() (*Filter, error) { return New(1<<40, 1e-9) }},
		{"Reserve capacity 0", func() (*Filter, error) { return Reserve(0, 0.01) }},
		{"Reserve capacity 2^30+1", func() (*Filter, error) { return Reserve(1<<30+1, 0.01) }},
		{"Reserve rate 0", func() (*Filter, error) { return Reserve(10, 0) }},
		{"Reserve rate -1", func() (*Filter, error) { return Reserve(10, -1) }},
		{"expansion too large", func() (*Filter, error) { return Reserve(10, 0.01, Expansion(MaxExpansion+1)) }},
		{"non-scaling with expansion", func() (*Filter, error) { return Reserve(10, 0.01, NonScaling(), Expansion(4)) }},
		{"non-scaling with expansion 2", func() (*Filter, error) { return Reserve(10, 0.01, Expansion(2), NonScaling()) }},
		{"NewWithSize bits 0", func() (*Filter, error) { return NewWithSize(0, 3, 10, 0.01) }},
		{"NewWithSize bits 12", func() (*Filter, error) { return NewWithSize(12, 3, 10, 0.01) }},
		{"NewWithSize bits > MaxBits", func() (*Filter, error) { return NewWithSize(MaxBits+8, 3, 10, 0.01) }},
		{"NewWithSize hashes 0", func() (*Filter, error) { return NewWithSize(64, 0, 10, 0.01) }},
		{"NewWithSize hashes > MaxHashes", func() (*Filter, error) { return NewWithSize(64, MaxHashes+1, 10, 0.01) }},
		{"NewWithSize capacity 0", func() (*Filter, error) { return NewWithSize(64, 3, 0, 0.01) }},
	} {
		f, err := c.f()
		if f != nil || !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("%s: got %v, %v; want nil and an error wrapping bloom.ErrInvalidParameter", c.name, f, err)
		}
	}
	// As BF.RESERVE: EXPANSION 0 is NONSCALING, and rates above 0.25 are 0.25.
	f, err := Reserve(100, 0.01, Expansion(0))
	if err != nil {
		t.Fatal(err)
	}
	if !f.NonScaling() || f.Expansion() != 0 {
		t.Errorf("Expansion(0): non-scaling %v, Expansion %d, want true and 0", f.NonScaling(), f.Expansion())
	}
	for _, opts := range [][]Option{{NonScaling(), Expansion(0)}, {Expansion(0), NonScaling()}} {
		// BF.RESERVE accepts NONSCALING with EXPANSION 0, in either order,
		// and records growth 0.
		if f, err := Reserve(100, 0.01, opts...); err != nil || !f.NonScaling() || f.Expansion() != 0 {
			t.Errorf("NonScaling and Expansion(0): %v", err)
		}
	}
	if f, _ := Reserve(100, 0.01, NonScaling()); f.Expansion() != DefaultExpansion {
		t.Errorf("NonScaling: Expansion %d, want %d as RedisBloom records", f.Expansion(), DefaultExpansion)
	}
	f, err = Reserve(100, 0.9, NonScaling())
	if err != nil || f.links[0].err != 0.25 {
		t.Errorf("Reserve at 0.9: %v, rate %v, want 0.25", err, f.links[0].err)
	}
}

// TestNoFalseNegatives adds keys to filters of many sizes and kinds, growing
// them, and checks every added key is present, in the filter and in its
// clone and decoded copy.
func TestNoFalseNegatives(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		capacity := 1 + r.Uint64N(2000)
		rate := math.Pow(10, -1-6*r.Float64())
		var opts []Option
		if trial%3 == 0 {
			opts = append(opts, Expansion(uint32(1+r.IntN(5))))
		}
		var f *Filter
		var err error
		if trial%2 == 0 {
			f, err = New(capacity, rate, opts...)
		} else {
			f, err = Reserve(capacity, rate, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		n := int(capacity) * (1 + r.IntN(8))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key-%d-%d", trial, r.Uint64())
			if err := f.AddString(keys[i]); err != nil {
				t.Fatal(err)
			}
		}
		var g Filter
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		c := f.Clone()
		for _, k := range keys {
			if !f.TestString(k) || !g.TestString(k) || !c.TestString(k) {
				t.Fatalf("trial %d (n=%d, p=%v): added key %q absent", trial, capacity, rate, k)
			}
		}
		if !f.Equal(&g) || !f.Equal(c) {
			t.Fatalf("trial %d: the decoded or cloned filter differs", trial)
		}
		var total uint64
		for _, sf := range f.SubFilters() {
			total += sf.Count
			if sf.Count > sf.Capacity {
				t.Errorf("sub-filter holds %d keys, capacity %d", sf.Count, sf.Capacity)
			}
		}
		if total != f.Count() || f.Count() > uint64(n) {
			t.Errorf("Count %d, sub-filters' counts add up to %d, %d keys added", f.Count(), total, n)
		}
	}
}

// TestGrowth checks the chain's growth: Reserve's sub-filters are sized as
// RedisBloom sizes them, New's by Size, each with expansion times the
// capacity and half the rate of the one before; a decoded chain keeps the
// rule of the chain that was encoded.
func TestGrowth(t *testing.T) {
	for _, exact := range []bool{false, true} {
		var f *Filter
		var err error
		if exact {
			f, err = New(100, 0.01, Expansion(3))
		} else {
			f, err = Reserve(100, 0.01, Expansion(3))
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; len(f.links) < 4 && i < 10000; i++ {
			if err := f.AddString("k" + strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		var g Filter
		b, _ := f.MarshalBinary()
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if g.exact != exact {
			t.Errorf("exact=%v: decoded filter grows by the other rule", exact)
		}
		subs := f.SubFilters()
		if len(subs) < 4 {
			t.Fatalf("exact=%v: %d sub-filters after %d keys, want 4 or more", exact, len(subs), f.Count())
		}
		capacity, rate := uint64(100), 0.005
		for i, sf := range subs {
			wm, wk, _ := ReserveSize(capacity, rate)
			if exact {
				m, k, _ := Size(capacity, rate)
				wm, wk = m, uint(k)
			}
			if sf.Capacity != capacity || sf.ErrorRate != rate || sf.Bits != wm || sf.Hashes != wk {
				t.Errorf("exact=%v sub-filter %d: %+v, want capacity %d rate %v bits %d hashes %d", exact, i, sf, capacity, rate, wm, wk)
			}
			capacity, rate = capacity*3, rate/2
		}
	}
}

func TestNonScalingFull(t *testing.T) {
	f, err := Reserve(50, 0.01, NonScaling())
	if err != nil {
		t.Fatal(err)
	}
	var added int
	for i := 0; ; i++ {
		present, err := f.TestAndAddString("k" + strconv.Itoa(i))
		if errors.Is(err, ErrFull) {
			if present {
				t.Error("present with ErrFull")
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !present {
			added++
		}
	}
	if added != 50 || f.Count() != 50 || len(f.links) != 1 {
		t.Errorf("%d added, Count %d, %d sub-filters; want 50, 50, 1", added, f.Count(), len(f.links))
	}
	// A key already present is still answered; AddMany stops at the first
	// key it cannot add, after adding those before.
	if present, err := f.TestAndAddString("k0"); !present || err != nil {
		t.Errorf("TestAndAdd of an added key on a full filter: %v, %v", present, err)
	}
	res, err := f.TestAndAddManyStrings([]string{"k1", "new-1", "new-2"}, nil)
	if !errors.Is(err, ErrFull) || !slices.Equal(res, []bool{true}) {
		t.Errorf("TestAndAddMany on a full filter: %v, %v", res, err)
	}
}

// TestGrowthLimit checks that a chain that cannot grow (its capacity would
// overflow) fails the add with ErrGrowth and changes nothing.
func TestGrowthLimit(t *testing.T) {
	f, err := NewWithSize(64, 3, 1, 0.01, Expansion(MaxExpansion))
	if err != nil {
		t.Fatal(err)
	}
	f.links[0].entries = math.MaxUint64 / 2
	f.links[0].size = f.links[0].entries
	before := f.Clone()
	for i := 0; i < 100; i++ {
		key := "k" + strconv.Itoa(i)
		if f.TestString(key) {
			continue
		}
		if err := f.AddString(key); !errors.Is(err, ErrGrowth) {
			t.Fatalf("add past the growth limit: %v, want ErrGrowth", err)
		}
		break
	}
	if !f.Equal(before) {
		t.Error("a failed growth changed the filter")
	}
}

// TestBatchMatchesSingle checks that every batch call answers, sets bits
// and grows exactly as the loop of single calls, over batches with
// duplicates and keys already present, across growth.
func TestBatchMatchesSingle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		a, _ := Reserve(1+r.Uint64N(300), 0.01)
		if trial%2 == 1 {
			a, _ = New(1+r.Uint64N(300), 0.001, Expansion(4))
		}
		b, c := a.Clone(), a.Clone()
		for batch := range 10 {
			keys := make([][]byte, r.IntN(100))
			strs := make([]string, len(keys))
			for i := range keys {
				strs[i] = strconv.Itoa(r.IntN(500 * (batch + 1)))
				keys[i] = []byte(strs[i])
			}
			want := make([]bool, len(keys))
			for i, k := range keys {
				want[i] = a.Test(k)
			}
			if got := b.TestMany(keys, nil); !slices.Equal(got, want) {
				t.Fatal("TestMany differs from Test")
			}
			if got := b.TestManyStrings(strs, make([]bool, 0, len(strs))); !slices.Equal(got, want) {
				t.Fatal("TestManyStrings differs from Test")
			}
			for i, k := range keys {
				p, err := a.TestAndAdd(k)
				if err != nil {
					t.Fatal(err)
				}
				want[i] = p
			}
			got, err := b.TestAndAddMany(keys, nil)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("TestAndAddMany differs from TestAndAdd: %v", err)
			}
			if batch%2 == 0 {
				err = c.AddMany(keys)
			} else {
				err = c.AddManyStrings(strs)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !a.Equal(b) || !a.Equal(c) {
				t.Fatalf("trial %d batch %d: batch calls left other bits or counts than single calls", trial, batch)
			}
		}
	}
}

// TestAllocs checks that the hot paths do not allocate.
func TestAllocs(t *testing.T) {
	f, err := New(100000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	key, skey := []byte("https://example.com/a/page"), "https://example.com/another/page"
	keys := make([][]byte, 100)
	strs := make([]string, 100)
	for i := range keys {
		strs[i] = "key-" + strconv.Itoa(i)
		keys[i] = []byte(strs[i])
	}
	res := make([]bool, 100)
	for name, fn := range map[string]func(){
		"Add":                   func() { _ = f.Add(key) },
		"AddString":             func() { _ = f.AddString(skey) },
		"Test":                  func() { f.Test(key) },
		"TestString":            func() { f.TestString(skey) },
		"TestAndAdd":            func() { _, _ = f.TestAndAdd(key) },
		"TestAndAddString":      func() { _, _ = f.TestAndAddString(skey) },
		"TestMany":              func() { f.TestMany(keys, res) },
		"TestManyStrings":       func() { f.TestManyStrings(strs, res) },
		"AddMany":               func() { _ = f.AddMany(keys) },
		"AddManyStrings":        func() { _ = f.AddManyStrings(strs) },
		"TestAndAddMany":        func() { _, _ = f.TestAndAddMany(keys, res) },
		"TestAndAddManyStrings": func() { _, _ = f.TestAndAddManyStrings(strs, res) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

func TestInfo(t *testing.T) {
	f, _ := Reserve(1000, 0.01, NonScaling())
	in := f.Info()
	if in.Expansion != 0 || in.Filters != 1 || in.Capacity != 1000 || in.Size != 32+64+f.links[0].m/8 {
		t.Errorf("Info of a non-scaling filter: %+v", in)
	}
	if f.Expansion() != DefaultExpansion {
		t.Errorf("Expansion %d, want the default %d recorded", f.Expansion(), DefaultExpansion)
	}
}

// TestNewWithSizeBitsPerEntry checks that the recorded bits per entry give
// the hash count by RedisBloom's rule, whatever the hash count.
func TestNewWithSizeBitsPerEntry(t *testing.T) {
	for k := uint(1); k <= MaxHashes; k += 1 + k/8 {
		f, err := NewWithSize(1024, k, 100, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if got := hashesOf(f.links[0].bpe); got != uint32(k) {
			t.Fatalf("k=%d: bits per entry %v give %d hash functions", k, f.links[0].bpe, got)
		}
	}
	f, _ := NewWithSize(1000, 7, 100, 0.01)
	if f.links[0].bpe != 10 {
		t.Errorf("bits per entry %v, want bits/capacity = 10 where it gives the hash count", f.links[0].bpe)
	}
}
