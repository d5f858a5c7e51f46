package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/internal/blockbits"
	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/spaolacci/murmur3"
)

// sourceDesign is the design this library replaced: k murmur3 hashes with
// seeds 0..k-1, position = hash mod m. It is kept as a yardstick.
type sourceDesign struct {
	m    uint64
	k    uint
	bits []uint64
}

func (s *sourceDesign) pos(key []byte, i uint) uint64 {
	h, _ := murmur3.Sum128WithSeed(key, uint32(i))
	return h % s.m
}

func (s *sourceDesign) add(key []byte) {
	for i := range s.k {
		p := s.pos(key, i)
		s.bits[p/64] |= 1 << (p % 64)
	}
}

func (s *sourceDesign) test(key []byte) bool {
	for i := range s.k {
		p := s.pos(key, i)
		if s.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

// TestPositionsMatchIndependentHashes compares, over the same keys, our
// one-pass positions with k independently seeded murmur3 hashes.
func TestPositionsMatchIndependentHashes(t *testing.T) {
	for _, tc := range []struct {
		n uint64
		p float64
	}{{1e4, 0.01}, {1e5, 0.001}, {2000, 1e-4}} {
		t.Run(fmt.Sprintf("n=%g/p=%g", float64(tc.n), tc.p), func(t *testing.T) {
			f := mustNew(t, tc.n, tc.p, Classic())
			s := &sourceDesign{m: f.Bits(), k: f.Hashes(), bits: make([]uint64, (f.Bits()+63)/64)}
			buf := make([]byte, 16)
			for i := range tc.n {
				f.Add(keyOf(buf, 0, i))
				s.add(keyOf(buf, 0, i))
			}
			const absent = 2_000_000
			var ours, theirs int
			for i := range uint64(absent) {
				k := keyOf(buf, 1, i)
				if f.Test(k) {
					ours++
				}
				if s.test(k) {
					theirs++
				}
			}
			theory := FalsePositiveRate(f.Bits(), f.Hashes(), tc.n)
			sigma := math.Sqrt(theory * (1 - theory) / absent)
			for name, got := range map[string]int{"one-pass": ours, "k seeds": theirs} {
				rate := float64(got) / absent
				t.Logf("%s: measured %.6f, theory %.6f", name, rate, theory)
				if math.Abs(rate-theory) > 5*sigma+0.02*theory {
					t.Errorf("%s: measured %.6f, theory %.6f (5 sigma = %.6f)", name, rate, theory, 5*sigma)
				}
			}
		})
	}
}

// ---- golden vectors ----

func TestGoldenLocations(t *testing.T) {
	tests := []struct {
		key  string
		m    uint64
		k    uint
		seed uint32
		want []uint64
	}{
		{"", 1000, 4, DefaultSeed, nil},
		{"cat", 24, 3, DefaultSeed, nil},
		{"https://example.com/", 9592955, 7, DefaultSeed, nil},
		{"https://example.com/", 9592955, 7, 1, nil},
	}
	got := make([]string, len(tests))
	for i, tt := range tests {
		locs := AppendLocations(nil, []byte(tt.key), tt.m, tt.k, tt.seed)
		got[i] = fmt.Sprint(locs)
		// Check against the formula as documented, independently of the
		// incremental form the hot path uses.
		h1, h2 := murmur3.Sum128WithSeed([]byte(tt.key), tt.seed)
		x, y := h1, h2
		for j := range tt.k {
			z := x ^ x>>32
			p, _ := bits.Mul64(z*0x94D049BB133111EB, tt.m)
			if locs[j] != p {
				t.Fatalf("%q: position %d = %d, formula gives %d", tt.key, j, locs[j], p)
			}
			x += y
			y += uint64(j+1) * 0x9E3779B97F4A7C15
		}
	}
	golden := []string{
		goldenLocations0, goldenLocations1, goldenLocations2, goldenLocations3,
	}
	for i := range tests {
		if got[i] != golden[i] {
			t.Errorf("AppendLocations(%q, m=%d, k=%d, seed=%d) = %s, want %s",
				tests[i].key, tests[i].m, tests[i].k, tests[i].seed, got[i], golden[i])
		}
	}
}

// The golden positions: saved filters depend on them.
const (
	goldenLocations0 = "[317 975 453 949]"
	goldenLocations1 = "[4 2 21]"
	goldenLocations2 = "[1368005 4208599 8371909 3253486 4018224 6288804 4586263]"
	goldenLocations3 = "[7952991 3382677 6507384 8500776 4138026 3423171 2219523]"
)

// TestPositionsFollowTheModel measures, for tiny filters where the exact rate
// and the closed form differ by up to 2.7x, the false-positive rate of our
// positions (enhanced double hashing, mixed) over many filters, and compares
// it with the exact rate for independent uniform positions that sizing
// assumes. Measured: within 2 standard deviations (1.6%) everywhere.
func TestPositionsFollowTheModel(t *testing.T) {
	for _, c := range [][3]uint64{{15, 10, 1}, {20, 5, 2}, {40, 12, 2}, {100, 7, 10}, {60, 4, 12}} {
		m, k, n := c[0], uint(c[1]), c[2]
		t.Run(fmt.Sprintf("m=%d/k=%d/n=%d", m, k, n), func(t *testing.T) {
			t.Parallel()
			exact, closed := classic.ExactRate(m, k, n, nil), classic.ClosedFormRate(m, k, n)
			const filters = 2000
			queries := uint64(2000/exact) / filters
			if testing.Short() {
				queries /= 4
			}
			f, _ := NewWithSize(m, k)
			buf := make([]byte, 16)
			fp := 0
			for s := range uint32(filters) {
				g := emptyCopy(f, s*0x9E3779B1+3)
				for i := range n {
					g.Add(keyOf(buf, 0, uint64(s)<<32|i))
				}
				for i := range queries {
					if g.Test(keyOf(buf, 1, uint64(s)<<32|i)) {
						fp++
					}
				}
			}
			trials := float64(filters * queries)
			got := float64(fp) / trials
			sigma := math.Sqrt(exact * (1 - exact) / trials)
			t.Logf("measured %.5g, exact %.5g (ratio %.4f ± %.4f), closed form %.5g", got, exact, got/exact, sigma/exact, closed)
			if math.Abs(got-exact) > 4*sigma+0.01*exact {
				t.Errorf("measured %.5g, exact rate %.5g (4 sigma = %.2g)", got, exact, 4*sigma)
			}
		})
	}
}

// ---- construction ----

func TestBlockedConstruction(t *testing.T) {
	f := mustNew(t, 1000, 0.01, Blocked())
	m, k, _ := BlockedSize(1000, 0.01)
	if !f.Blocked() || f.Bits() != m || f.Hashes() != k || f.Capacity() != 1000 || f.ErrorRate() != 0.01 {
		t.Errorf("New(1000, 0.01, Blocked()): blocked %v, %d bits, %d hashes", f.Blocked(), f.Bits(), f.Hashes())
	}
	if c := mustNew(t, 1000, 0.01, Classic()); c.Blocked() {
		t.Error("Classic gave the blocked layout")
	}
	g, err := NewWithSize(1024, 5, Blocked())
	if err != nil || !g.Blocked() || g.ErrorRate() != BlockedFalsePositiveRate(1024, 5, g.Capacity()) {
		t.Errorf("NewWithSize(1024, 5, Blocked()): %v", err)
	}
	for _, bits := range []uint64{1, 511, 513, 1000} {
		if _, err := NewWithSize(bits, 3, Blocked()); !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "multiple of 512") {
			t.Errorf("NewWithSize(%d, 3, Blocked()): %v", bits, err)
		}
	}
	if _, err := New(1, 1e-300, Blocked()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("New(1, 1e-300, Blocked()): %v", err)
	}
	s := mustScalable(t, 1000, 0.01, Blocked())
	if !s.Blocked() {
		t.Error("NewScalable(..., Blocked()) is not blocked")
	}
}

// TestBlockedAlignment checks that every way of making a blocked filter gives
// words that start a cache line, so that no block straddles two.
func TestBlockedAlignment(t *testing.T) {
	for _, n := range []uint64{1, 7, 100, 1000, 100_000} {
		f := mustNew(t, n, 0.01, Blocked())
		f.AddString("x")
		c := mustNew(t, n, 0.01, Blocked(), Concurrent())
		c.AddString("y")
		u, _ := f.Union(f)
		i, _ := f.Intersection(f)
		enc, _ := f.MarshalBinary()
		var d, r BloomFilter
		if err := d.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadFrom(bytes.NewReader(enc)); err != nil {
			t.Fatal(err)
		}
		cu, _ := c.Union(c)
		for name, g := range map[string]*BloomFilter{
			"new": f, "concurrent": c, "clone": f.Clone(), "concurrent clone": c.Clone(),
			"union": u, "intersection": i, "decoded": &d, "read": &r, "concurrent union": cu,
		} {
			if !hugepage.IsAligned(g.words) || uint64(len(g.words)) != g.m/64 {
				t.Errorf("n=%d %s: words not aligned or of the wrong length", n, name)
			}
		}
	}
	s := mustScalable(t, 10, 0.01, Blocked())
	for i := range 1000 {
		s.Add(fmt.Appendf(nil, "%d", i))
	}
	for _, f := range s.filters {
		if !hugepage.IsAligned(f.words) {
			t.Error("scalable sub-filter not aligned")
		}
	}
}

// ---- positions ----

// TestGoldenBlockedLocations pins AppendBlockedLocations, checks it against
// its documented formula written out independently, and checks that Add sets
// exactly those bits.
func TestGoldenBlockedLocations(t *testing.T) {
	tests := []struct {
		key  string
		m    uint64
		k    uint
		seed uint32
		want string
	}{
		{"", 512, 4, DefaultSeed, "[422 335 161 69]"},
		{"cat", 512, 33, DefaultSeed, ""},
		{"https://example.com/", 9890304, 6, DefaultSeed, ""},
		{"https://example.com/", 9890304, 6, 1, ""},
		{"https://example.com/", 15480832, 9, DefaultSeed, ""},
	}
	for _, tt := range tests {
		locs := AppendBlockedLocations(nil, []byte(tt.key), tt.m, tt.k, tt.seed)
		// The documented formula.
		h1, h2 := murmur3.Sum128WithSeed([]byte(tt.key), tt.seed)
		b, _ := bits.Mul64(h1, tt.m/512)
		var want []uint64
		seen := map[uint64]bool{}
		for t := uint64(0); uint(len(want)) < tt.k; t++ {
			x := h2
			if t > 0 {
				z := h2 + t*0x9E3779B97F4A7C15
				z ^= z >> 30
				z *= 0xBF58476D1CE4E5B9
				z ^= z >> 27
				z *= 0x94D049BB133111EB
				z ^= z >> 31
				x = z
			}
			for j := range 7 {
				q := x >> (9 * j) & 511
				if !seen[q] && uint(len(want)) < tt.k {
					seen[q] = true
					want = append(want, 512*b+q)
				}
			}
		}
		if fmt.Sprint(locs) != fmt.Sprint(want) {
			t.Errorf("%q m=%d k=%d: %v, formula gives %v", tt.key, tt.m, tt.k, locs, want)
		}
		// Add sets exactly these bits.
		f, _ := NewWithSize(tt.m, tt.k, Seed(tt.seed), Blocked())
		f.AddString(tt.key)
		var set []uint64
		for i, w := range f.words {
			for ; w != 0; w &= w - 1 {
				set = append(set, uint64(i)*64+uint64(bits.TrailingZeros64(w)))
			}
		}
		sorted := append([]uint64(nil), locs...)
		for i := range sorted {
			for j := i + 1; j < len(sorted); j++ {
				if sorted[j] < sorted[i] {
					sorted[i], sorted[j] = sorted[j], sorted[i]
				}
			}
		}
		if fmt.Sprint(set) != fmt.Sprint(sorted) {
			t.Errorf("%q: Add set %v, locations %v", tt.key, set, sorted)
		}
		if tt.want != "" && fmt.Sprint(locs) != tt.want {
			t.Errorf("%q m=%d k=%d: %v, golden %s", tt.key, tt.m, tt.k, locs, tt.want)
		}
	}
	golden := []string{goldenBlocked0, goldenBlocked1, goldenBlocked2}
	for i, tt := range tests[2:] {
		if got := fmt.Sprint(AppendBlockedLocations(nil, []byte(tt.key), tt.m, tt.k, tt.seed)); got != golden[i] {
			t.Errorf("AppendBlockedLocations(%q, %d, %d, %d) = %s, golden %s", tt.key, tt.m, tt.k, tt.seed, got, golden[i])
		}
	}
	if got := AppendBlockedLocations([]uint64{1}, nil, 1000, 3, 0); len(got) != 1 {
		t.Error("AppendBlockedLocations with bits not a multiple of 512 appended")
	}
}

// The golden blocked positions: saved blocked filters depend on them.
const (
	goldenBlocked0 = "[5068613 5068768 5068690 5068666 5068749 5068607]"
	goldenBlocked1 = "[1927929 1928025 1927723 1927985 1928020 1928162]"
	goldenBlocked2 = "[7933765 7933920 7933842 7933818 7933901 7933759 7933624 7933846 7933441]"
)

// TestBlockedPositionsFollowTheModel measures tiny blocked filters (one to
// three blocks, where a flaw of the in-block positions would show most),
// averaged over many seeds, against BlockedFalsePositiveRate.
func TestBlockedPositionsFollowTheModel(t *testing.T) {
	seeds := uint32(300)
	if testing.Short() {
		seeds = 60
	}
	buf := make([]byte, 16)
	for _, c := range []struct {
		blocks uint64
		k      uint
		n      uint64
	}{{1, 3, 20}, {1, 6, 40}, {1, 10, 50}, {1, 20, 25}, {2, 6, 90}, {3, 9, 120}, {1, 64, 5}} {
		t.Run(fmt.Sprintf("blocks=%d/k=%d/n=%d", c.blocks, c.k, c.n), func(t *testing.T) {
			m := c.blocks * BlockBits
			want := BlockedFalsePositiveRate(m, c.k, c.n)
			const absent = 20_000
			fp := 0
			for s := range seeds {
				f, _ := NewWithSize(m, c.k, Seed(s*0x9E3779B1+5), Blocked())
				for i := range c.n {
					f.Add(keyOf(buf, 2+uint64(s), i))
				}
				for i := range uint64(absent) {
					if f.Test(keyOf(buf, 1, i)) {
						fp++
					}
				}
			}
			trials := float64(seeds) * absent
			got := float64(fp) / trials
			// The filters of one seed share their keys' answers: the spread
			// is that of the filters, about the rate over sqrt(seeds),
			// plus the sampling noise.
			sigma := math.Sqrt(want*(1-want)/trials) + want/math.Sqrt(float64(seeds))
			t.Logf("measured %.3g, formula %.3g", got, want)
			if math.Abs(got-want) > 5*sigma {
				t.Errorf("measured %.4g, formula %.4g (5 sigma %.2g)", got, want, 5*sigma)
			}
		})
	}
}

// ---- statistics ----

// TestBlockedFalsePositiveRate measures the rate at capacity against the
// target for n from 10 to 10^7 and p from 0.1 to 1e-5: at most the target
// within 5 sigma. Small filters are averaged over seeds.
func TestBlockedFalsePositiveRate(t *testing.T) {
	buf := make([]byte, 16)
	for _, n := range []uint64{10, 100, 1e3, 1e4, 1e5, 1e6, 1e7} {
		for _, p := range []float64{0.1, 0.01, 1e-3, 1e-4, 1e-5} {
			t.Run(fmt.Sprintf("n=%g/p=%g", float64(n), p), func(t *testing.T) {
				if n >= 1e7 && (p > 0.01 || p < 1e-3) || testing.Short() && n*uint64(1/p) > 1e8 {
					t.Skip("large filter")
				}
				// Enough absent keys to expect 100 false positives at p,
				// at least 10^6; filters enough that their keys add up to
				// 10^5.
				absent := uint64(min(max(1e6, 100/p), 1e7))
				filters := max(1, min(1000, 100_000/n))
				per := max(absent/filters, 1)
				fp := 0
				var predicted float64
				for s := range filters {
					f := mustNew(t, n, p, Blocked(), Seed(uint32(s)*0x9E3779B1+uint32(n)))
					for i := range n {
						f.Add(keyOf(buf, 0, i))
					}
					for i := range n {
						if !f.Test(keyOf(buf, 0, i)) {
							t.Fatalf("false negative")
						}
					}
					for i := range per {
						if f.Test(keyOf(buf, 1, s*per+i)) {
							fp++
						}
					}
					predicted += f.EstimatedErrorRate()
				}
				trials := float64(per * filters)
				got := float64(fp) / trials
				predicted /= float64(filters)
				sigma := math.Sqrt(p * (1 - p) / trials)
				f := mustNew(t, n, p, Blocked())
				t.Logf("measured %.4g (%d), predicted from the bits %.4g, target %v: %.3f; %.2f bits/key, k = %d",
					got, fp, predicted, p, got/p, float64(f.Bits())/float64(n), f.Hashes())
				if got > p+5*sigma {
					t.Errorf("measured %.5g, above the target %v by more than 5 sigma (%.2g)", got, p, 5*sigma)
				}
			})
		}
	}
}

// TestBlockedScalableKeepsErrorRate grows blocked scalable filters and
// checks their overall rate against the target.
func TestBlockedScalableKeepsErrorRate(t *testing.T) {
	n, absent := uint64(1_000_000), uint64(1_000_000)
	if testing.Short() {
		n, absent = 100_000, 200_000
	}
	for _, c := range []struct {
		p    float64
		opts []Option
	}{{0.01, nil}, {0.001, nil}, {0.1, []Option{Tightening(0.5)}}, {0.01, []Option{Linear(1)}}} {
		t.Run(fmt.Sprintf("p=%g/%d opts", c.p, len(c.opts)), func(t *testing.T) {
			s := mustScalable(t, 1000, c.p, append(c.opts, Blocked())...)
			got := growAndMeasure(t, s, n, absent)
			t.Logf("%d keys: %d sub-filters, %.2f bits/key, measured %.5f (target %v), estimated %.5f",
				n, s.NumFilters(), float64(s.Bits())/float64(n), got, c.p, s.EstimatedErrorRate())
			if got > c.p+5*math.Sqrt(c.p*(1-c.p)/float64(absent)) {
				t.Errorf("measured rate %.5f exceeds the target %v", got, c.p)
			}
			for i, f := range s.filters {
				_, _, m, k, _ := s.subSize(i)
				if !f.blocked || f.m != m || f.k != k {
					t.Errorf("sub-filter %d: blocked %v, (%d, %d), want (%d, %d)", i, f.blocked, f.m, f.k, m, k)
				}
			}
		})
	}
}

// ---- the rest of what a filter does ----

// TestBlockedNoFalseNegatives is TestNoFalseNegatives for blocked filters,
// plain and concurrent: after Add, union, intersection with itself, copy,
// decode.
func TestBlockedNoFalseNegatives(t *testing.T) {
	r := rand.New(rand.NewPCG(141, 142))
	configs := 60
	if testing.Short() {
		configs = 15
	}
	for c := range configs {
		n := 1 + r.Uint64N(20000)
		p := math.Pow(10, -0.2-r.Float64()*6)
		opts := []Option{Blocked(), Seed(r.Uint32())}
		if c%3 == 0 {
			opts = append(opts, Concurrent())
		}
		f := mustNew(t, n, p, opts...)
		other, _ := NewWithSize(f.Bits(), f.Hashes(), Seed(f.Seed()), Blocked())
		keys := make([][]byte, 0, n+1)
		keys = append(keys, []byte{})
		for range n {
			k := make([]byte, r.IntN(40))
			for i := range k {
				k[i] = byte(r.Uint32())
			}
			keys = append(keys, k)
		}
		for i, k := range keys {
			switch i % 3 {
			case 0:
				f.Add(k)
			case 1:
				f.AddString(string(k))
			default:
				f.TestAndAdd(k)
			}
			other.AddString("other" + string(k))
		}
		u, err := f.Union(other)
		if err != nil {
			t.Fatal(err)
		}
		in, err := f.Intersection(f)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var dec, streamed BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if _, err := streamed.ReadFrom(bytes.NewReader(enc)); err != nil {
			t.Fatal(err)
		}
		if !dec.Equal(f) || !streamed.Equal(f) || !dec.Blocked() {
			t.Fatalf("config %d: decoded filter differs", c)
		}
		for name, g := range map[string]*BloomFilter{"filter": f, "union": u, "intersection": in, "clone": f.Clone(), "decoded": &dec, "read": &streamed} {
			for _, k := range keys {
				if !g.Test(k) || !g.TestString(string(k)) || !g.TestAndAdd(k) {
					t.Fatalf("config %d (n=%d p=%g) %s: false negative for %x", c, n, p, name, k)
				}
			}
		}
	}
}

func TestBlockedCountAndEstimates(t *testing.T) {
	f := mustNew(t, 100_000, 0.01, Blocked())
	buf := make([]byte, 16)
	news := 0
	for i := range uint64(100_000) {
		if !f.TestAndAdd(keyOf(buf, 0, i)) {
			news++
		}
		f.Add(keyOf(buf, 0, i)) // a repeat: not counted
	}
	if f.Count() != uint64(news) || !f.IsFull() == (news >= 100_000) {
		t.Errorf("Count = %d, %d new keys", f.Count(), news)
	}
	if e := f.EstimatedCount(); math.Abs(float64(e)/1e5-1) > 0.01 {
		t.Errorf("EstimatedCount = %d, want about 100000", e)
	}
	if e := f.EstimatedErrorRate(); math.Abs(e/0.01-1) > 0.05 {
		t.Errorf("EstimatedErrorRate = %v, want about 0.01", e)
	}
	u, _ := f.Union(mustNew(t, 100_000, 0.01, Blocked()))
	if u.Count() != u.EstimatedCount() || !u.Equal(f) == (u.Count() == f.Count()) {
		t.Errorf("union Count %d, EstimatedCount %d", u.Count(), u.EstimatedCount())
	}
	f.Clear()
	if f.Count() != 0 || f.EstimatedCount() != 0 || f.EstimatedErrorRate() != 0 {
		t.Error("Clear left keys")
	}
}

func TestBlockedIncompatibleWithClassic(t *testing.T) {
	b, _ := NewWithSize(1024, 5, Blocked())
	c, _ := NewWithSize(1024, 5)
	if _, err := b.Union(c); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "layout") {
		t.Errorf("Union of blocked and classic: %v", err)
	}
	if _, err := c.Intersection(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Intersection of classic and blocked: %v", err)
	}
	if b.Equal(c) || c.Equal(b) {
		t.Error("a blocked and a classic filter are Equal")
	}
	sb, sc := mustScalable(t, 100, 0.01, Blocked()), mustScalable(t, 100, 0.01, Classic())
	if sb.Equal(sc) {
		t.Error("blocked and classic scalable filters are Equal")
	}
}

func TestBlockedHotPathDoesNotAllocate(t *testing.T) {
	long := strings.Repeat("https://example.com/some/long/path?query=1&", 4)
	checkHotPathAllocs(t, mustNew(t, 10000, 0.01, Blocked()), freshKeys(), long, long)
	// k = 9: the assembly of internal/blockbits where the CPU has it.
	checkHotPathAllocs(t, mustNew(t, 10000, 0.001, Blocked()), freshKeys(), long, long)
	checkHotPathAllocs(t, mustNew(t, 10000, 0.01, Blocked(), Concurrent()), freshKeys(), long, long)
	s := mustScalable(t, 1<<20, 0.01, Blocked())
	checkHotPathAllocs(t, s, freshKeys(), long, long)
}

// TestBlockedWordsTextRead covers what the filter gained beside the layout:
// Header and FromWords, Merge, the text encoding, and Read, ReadScalable and
// ReadAny with the Blocked option.
func TestBlockedWordsTextRead(t *testing.T) {
	f := mustNew(t, 5000, 0.01, Blocked(), Seed(9))
	buf := make([]byte, 16)
	for i := range uint64(3000) {
		f.Add(keyOf(buf, 0, i))
	}
	h := f.Header()
	if !h.Blocked {
		t.Error("Header of a blocked filter is not Blocked")
	}
	g, err := FromWords(h, f.AppendWords(nil))
	if err != nil || !g.Equal(f) || !hugepage.IsAligned(g.words) {
		t.Errorf("FromWords: %v", err)
	}
	if _, err := FromWords(mustNew(t, 5000, 0.01, Classic()).Header(), make([]uint64, 0), Blocked()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("FromWords of a classic header with Blocked: %v", err)
	}
	bad := h
	bad.Bits += 64
	if _, err := FromWords(bad, make([]uint64, bad.Bits/64)); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("FromWords of a blocked header with Bits not a multiple of 512: %v", err)
	}
	other := mustNew(t, 5000, 0.01, Blocked(), Seed(9))
	other.AddString("other")
	u, _ := f.Union(other)
	if err := other.Merge(f); err != nil || !other.Equal(u) {
		t.Errorf("Merge: %v, or differs from Union", err)
	}
	if err := other.Merge(mustNew(t, 5000, 0.01, Seed(9), Classic())); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Merge of a classic filter into a blocked one: %v", err)
	}
	text, err := f.MarshalText()
	var d BloomFilter
	if err != nil || d.UnmarshalText(text) != nil || !d.Equal(f) {
		t.Errorf("text round trip: %v", err)
	}
	enc, _ := f.MarshalBinary()
	if r, err := Read(bytes.NewReader(enc), Blocked()); err != nil || !r.Equal(f) {
		t.Errorf("Read with Blocked: %v", err)
	}
	classic, _ := mustNew(t, 10, 0.1, Classic()).MarshalBinary()
	if _, err := Read(bytes.NewReader(classic), Blocked()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("Read of a classic filter with Blocked: %v", err)
	}
	s := mustScalable(t, 100, 0.01, Blocked())
	for i := range uint64(1000) {
		s.Add(keyOf(buf, 0, i))
	}
	senc, _ := s.MarshalBinary()
	if a, err := ReadAny(bytes.NewReader(senc), Blocked()); err != nil || !a.(*ScalableBloomFilter).Equal(s) {
		t.Errorf("ReadAny with Blocked: %v", err)
	}
	sclassic, _ := mustScalable(t, 100, 0.01, Classic()).MarshalBinary()
	if _, err := ReadScalable(bytes.NewReader(sclassic), Blocked()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("ReadScalable of a classic filter with Blocked: %v", err)
	}
	stext, _ := s.MarshalText()
	var sd ScalableBloomFilter
	if err := sd.UnmarshalText(stext); err != nil || !sd.Equal(s) {
		t.Errorf("scalable text round trip: %v", err)
	}
}

// TestBlockedScalableHighRateKeepsBound: with high error rates the blocked
// sub-filters, filled to capacity, exceed their targets as classic ones do;
// NewScalable works that out by the blocked formula (blocked.FullRate),
// refuses what would break the bound, and what it accepts keeps it.
func TestBlockedScalableHighRateKeepsBound(t *testing.T) {
	if _, err := NewScalable(1000, 0.1, Tightening(0.1), Blocked()); !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "Tightening of at least") {
		t.Errorf("P = 0.1, r = 0.1: %v", err)
	}
	for _, c := range []struct{ p, r float64 }{{0.5, 0.5}, {0.3, 0.5}, {0.1, 0.2}} {
		s, err := NewScalable(100, c.p, Tightening(c.r), Blocked())
		if err != nil {
			t.Fatalf("P = %v, r = %v: %v", c.p, c.r, err)
		}
		const absent = 200_000
		got := growAndMeasure(t, s, 30_000, absent)
		if bound := s.rateBound(); got > bound+5*math.Sqrt(bound*(1-bound)/absent) || bound > c.p*(1+rateSlack) {
			t.Errorf("P = %v, r = %v: measured %.4f, bound %.4f", c.p, c.r, got, bound)
		}
	}
	for _, c := range []struct {
		n, m uint64
		k    uint
	}{{1000, 10240, 7}, {100_000, 989_184, 6}, {50, 512, 4}} {
		full, _ := blocked.FullRate(c.n, c.m, c.k, nil, nil)
		at := BlockedFalsePositiveRate(c.m, c.k, c.n)
		if full < at || full > at*1.1 {
			t.Errorf("blocked.FullRate(%d, %d, %d) = %v; rate at capacity %v", c.n, c.m, c.k, full, at)
		}
	}
}

// withBlockPaths runs test with the assembly of internal/blockbits, which
// blocked filters of 8 and 9 hashes use where the CPU has AVX-512, and
// again with the Go paths it replaces.
func withBlockPaths(t *testing.T, test func(t *testing.T)) {
	native := blockbits.Native
	defer func() { blockbits.Native = native }()
	if native {
		t.Run("asm", test)
	} else {
		t.Log("no AVX-512F and AVX-512CD here: the Go paths only")
	}
	blockbits.Native = false
	t.Run("go", test)
}

// TestBlockedAsmMatchesGo builds blocked filters of 8 and 9 hashes (where
// the assembly of internal/blockbits applies) from the same keys with and
// without it, through every single-key and batch call, and checks that
// they end equal, with equal counts and answers.
func TestBlockedAsmMatchesGo(t *testing.T) {
	if !blockbits.Native {
		t.Skip("no AVX-512F and AVX-512CD on this CPU: the assembly is not used")
	}
	defer func() { blockbits.Native = true }()
	rng := rand.New(rand.NewPCG(14, 4))
	keys := make([][]byte, 30000)
	for i := range keys {
		keys[i] = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, rng.Uint64()), rng.Uint64())
	}
	type run struct {
		f       *BloomFilter
		answers []bool
	}
	build := func(k uint, native bool) run {
		blockbits.Native = native
		// 64 blocks for 30,000 keys: full enough that many keys test
		// present before they are added.
		f, err := NewWithSize(64*BlockBits, k, Blocked())
		if err != nil {
			t.Fatal(err)
		}
		var answers []bool
		for i, key := range keys[:20000] {
			switch i % 3 {
			case 0:
				f.Add(key)
			case 1:
				f.AddString(string(key))
			default:
				answers = append(answers, f.TestAndAdd(key))
			}
		}
		answers = append(answers, f.TestAndAddMany(keys[20000:25000], nil)...)
		f.AddMany(keys[25000:27000])
		for _, key := range keys[27000:] {
			answers = append(answers, f.Test(key), f.TestString(string(key)))
		}
		answers = append(answers, f.TestMany(keys, nil)...)
		return run{f, answers}
	}
	for _, k := range []uint{8, 9} {
		asm, gop := build(k, true), build(k, false)
		if !asm.f.Equal(gop.f) || asm.f.Count() != gop.f.Count() {
			t.Fatalf("k=%d: filters differ (count %d with the assembly, %d without)", k, asm.f.Count(), gop.f.Count())
		}
		present := 0
		for i := range asm.answers {
			if asm.answers[i] != gop.answers[i] {
				t.Fatalf("k=%d: answer %d is %v with the assembly, %v without", k, i, asm.answers[i], gop.answers[i])
			}
			if asm.answers[i] {
				present++
			}
		}
		if present == 0 || present == len(asm.answers) {
			t.Fatalf("k=%d: %d of %d answers true: the comparison saw one answer only", k, present, len(asm.answers))
		}
	}
}

// TestBlockedTestMatchesMask pins Test and TestString of a blocked filter,
// which write the blocked test out again (testKey), and blocked.Test to
// blocked.Mask (pinned to the candidate sequence by the blocked package's
// TestBlockedFastPath): on random keys, for every k up to 20 and MaxHashes,
// a block holding the mask tests true, the mask less any one of its bits
// false, and random bits as the mask says. Keys whose first candidates
// repeat (3% at k = 6, most at k = 20) take blocked.Rest's paths.
func TestBlockedTestMatchesMask(t *testing.T) { withBlockPaths(t, testBlockedTestMatchesMask) }

func testBlockedTestMatchesMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	for _, k := range []uint{1, 2, 3, 5, 6, 7, 8, 9, 10, 13, 14, 15, 20, MaxHashes} {
		f, err := NewWithSize(BlockBits, k, Blocked())
		if err != nil {
			t.Fatal(err)
		}
		blk := (*[8]uint64)(f.words[:8]) // the one block
		key := make([]byte, 16)
		for range 3000 {
			binary.LittleEndian.PutUint64(key, rng.Uint64())
			binary.LittleEndian.PutUint64(key[8:], rng.Uint64())
			h1, h2 := murmur.Sum128(key, f.seed)
			m := blocked.Mask(h2, k)
			check := func(what string, want bool) {
				t.Helper()
				if got := f.Test(key); got != want {
					t.Fatalf("k=%d key %x, %s: Test %v, want %v", k, key, what, got, want)
				}
				if got := f.TestString(string(key)); got != want {
					t.Fatalf("k=%d key %x, %s: TestString %v, want %v", k, key, what, got, want)
				}
				if got := blocked.Test(f.words, f.m, f.k, h1, h2); got != want {
					t.Fatalf("k=%d key %x, %s: blocked.Test %v, want %v", k, key, what, got, want)
				}
			}
			*blk = m
			check("block = mask", true)
			drop := rng.IntN(int(k))
			for i, n := 0, 0; i < 8; i++ {
				for w := m[i]; w != 0; w &= w - 1 {
					if n == drop {
						blk[i] &^= w & -w
					}
					n++
				}
			}
			check("one bit of the mask clear", false)
			missing := false
			for i := range blk {
				blk[i] = m[i] | rng.Uint64()&rng.Uint64()
				if rng.IntN(4) == 0 {
					blk[i] &^= rng.Uint64() & rng.Uint64()
				}
				missing = missing || m[i]&^blk[i] != 0
			}
			check("random bits", !missing)
		}
	}
}

// TestDefaultLayoutRule checks the rule by which New and NewScalable choose
// a layout: blocked where BlockedSize costs at most 10% more bits than Size,
// classic otherwise; Blocked and Classic force one; NewWithSize is classic
// unless Blocked. It logs the ratio table of docs/blocked.md.
func TestDefaultLayoutRule(t *testing.T) {
	rates := []float64{0.1, 0.01, 0.005, 0.001, 5e-4, 3e-4, 1e-4, 1e-6}
	for _, n := range []uint64{1, 10, 100, 1000, 1e4, 1e6, 1e8} {
		row := fmt.Sprintf("n=%g:", float64(n))
		for _, p := range rates {
			cm, _, err1 := Size(n, p)
			bm, _, err2 := BlockedSize(n, p)
			if err1 != nil || err2 != nil {
				t.Fatalf("n=%d p=%g: %v %v", n, p, err1, err2)
			}
			ratio := float64(bm) / float64(cm)
			row += fmt.Sprintf(" %g:%.3f", p, ratio)
			want := LayoutClassic
			if ratio <= 1.10 {
				want = LayoutBlocked
			}
			if got := DefaultLayout(n, p); got != want {
				t.Errorf("DefaultLayout(%d, %g) = %v, want %v (ratio %.4f)", n, p, got, want, ratio)
			}
			if n > 1e6 {
				continue // the sizes alone; no 100 MB filters here
			}
			if f := mustNew(t, n, p); f.Layout() != want {
				t.Errorf("New(%d, %g): %v, want %v", n, p, f.Layout(), want)
			}
		}
		t.Log(row)
	}
	// Where the default is blocked, the options still force either layout.
	if f := mustNew(t, 1e5, 0.01, Classic()); f.Layout() != LayoutClassic {
		t.Error("Classic ignored")
	}
	if f := mustNew(t, 1e5, 1e-6, Blocked()); f.Layout() != LayoutBlocked {
		t.Error("Blocked ignored")
	}
	if f, err := NewWithSize(1<<20, 7); err != nil || f.Layout() != LayoutClassic {
		t.Errorf("NewWithSize: %v, %v", f.Layout(), err)
	}
	for _, opts := range [][]Option{{Blocked(), Classic()}, {Classic(), Blocked()}, {Classic(), Classic()}} {
		if _, err := New(1000, 0.01, opts...); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("New with %d layout options: %v", len(opts), err)
		}
	}
	// NewScalable applies the rule to its first sub-filter.
	for _, tc := range []struct {
		n uint64
		p float64
	}{{1e4, 0.01}, {1e4, 1e-5}, {10, 0.01}, {1e5, 0.002}} {
		s := mustScalable(t, tc.n, tc.p)
		if want := DefaultLayout(tc.n, tc.p*(1-DefaultTightening)); s.Layout() != want {
			t.Errorf("NewScalable(%d, %g): %v, want %v", tc.n, tc.p, s.Layout(), want)
		}
	}
	// A decoder given Classic refuses a blocked encoding.
	enc, _ := mustNew(t, 1e4, 0.01).MarshalBinary()
	if _, err := Read(bytes.NewReader(enc), Classic()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("Read of a blocked filter with Classic: %v", err)
	}
	senc, _ := mustScalable(t, 1e4, 0.01).MarshalBinary()
	if _, err := ReadScalable(bytes.NewReader(senc), Classic()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("ReadScalable of a blocked filter with Classic: %v", err)
	}
}
