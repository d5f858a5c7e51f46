package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spaolacci/murmur3"
)

// ---- construction ----

func TestBlockedConstruction(t *testing.T) {
	f := mustNew(t, 1000, 0.01, Blocked())
	m, k, _ := BlockedSize(1000, 0.01)
	if !f.Blocked() || f.Bits() != m || f.Hashes() != k || f.Capacity() != 1000 || f.ErrorRate() != 0.01 {
		t.Errorf("New(1000, 0.01, Blocked()): blocked %v, %d bits, %d hashes", f.Blocked(), f.Bits(), f.Hashes())
	}
	if c := mustNew(t, 1000, 0.01); c.Blocked() {
		t.Error("the default layout is blocked")
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
			if !isAligned(g.words) || uint64(len(g.words)) != g.m/64 {
				t.Errorf("n=%d %s: words not aligned or of the wrong length", n, name)
			}
		}
	}
	s := mustScalable(t, 10, 0.01, Blocked())
	for i := range 1000 {
		s.Add(fmt.Appendf(nil, "%d", i))
	}
	for _, f := range s.filters {
		if !isAligned(f.words) {
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
	sb, sc := mustScalable(t, 100, 0.01, Blocked()), mustScalable(t, 100, 0.01)
	if sb.Equal(sc) {
		t.Error("blocked and classic scalable filters are Equal")
	}
}

func TestBlockedHotPathDoesNotAllocate(t *testing.T) {
	long := strings.Repeat("https://example.com/some/long/path?query=1&", 4)
	checkHotPathAllocs(t, mustNew(t, 10000, 0.01, Blocked()), freshKeys(), long, long)
	checkHotPathAllocs(t, mustNew(t, 10000, 0.01, Blocked(), Concurrent()), freshKeys(), long, long)
	s := mustScalable(t, 1<<20, 0.01, Blocked())
	checkHotPathAllocs(t, s, freshKeys(), long, long)
}

func TestBlockedConcurrent(t *testing.T) {
	for round := range 3 {
		exactlyOnce(t, mustNew(t, 10_000, 1e-9, Concurrent(), Blocked(), Seed(uint32(round))), 10_000)
		exactlyOnce(t, mustScalable(t, 100, 1e-9, Concurrent(), Blocked(), Seed(uint32(round))), 10_000)
		if t.Failed() {
			break
		}
	}
	f := mustNew(t, concurrentWorkers*concurrentOps, 0.01, Concurrent(), Blocked())
	hammer(t, f, func() {
		enc, _ := f.MarshalBinary()
		var dec BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
		_ = f.Clone().Equal(f) || f.EstimatedCount() == 0
	})
	s := mustScalable(t, 1000, 0.01, Concurrent(), Blocked())
	hammer(t, s, func() {
		enc, _ := s.MarshalBinary()
		var dec ScalableBloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
	})
}

// ---- format version 2 ----

// goldenBlockedFilter is a one-block filter whose encoding is pinned below.
func goldenBlockedFilter(t testing.TB) *BloomFilter {
	f, err := NewWithSize(512, 4, Seed(7), Blocked())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cat", "dog", "fox"} {
		f.AddString(k)
	}
	return f
}

// goldenBlockedEncoding is the version-2 encoding of goldenBlockedFilter.
const goldenBlockedEncoding = "424c4d4602000100070000000400000000020000000000005900000000000000d73dffeef02eb03f03000000000000000000000000000009000000002000000000000000000008000020000000000000000180000000000000008000000800002000000000000000000000000000040059dd8fe6"

// goldenBlockedScalableCRC is the CRC-32C of the encoding of a blocked
// scalable filter (NewScalable(10, 0.01, Blocked(), Seed(3))) with keys 0 to
// 99 of keyOf added.
const goldenBlockedScalableCRC = 0x48674bc7

func TestGoldenBlockedEncoding(t *testing.T) {
	f := goldenBlockedFilter(t)
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(enc); got != goldenBlockedEncoding {
		t.Errorf("encoding changed:\n got %s\nwant %s", got, goldenBlockedEncoding)
	}
	if binary.LittleEndian.Uint16(enc[4:]) != 2 || binary.LittleEndian.Uint16(enc[6:]) != 1 {
		t.Error("not version 2 with layout 1")
	}
	var w bytes.Buffer
	if n, err := f.WriteTo(&w); err != nil || n != int64(len(enc)) || !bytes.Equal(w.Bytes(), enc) || len(enc) != f.EncodedSize() {
		t.Errorf("WriteTo wrote %d bytes (%v), differing from MarshalBinary", n, err)
	}
	s := mustScalable(t, 10, 0.01, Blocked(), Seed(3))
	buf := make([]byte, 16)
	for i := range uint64(100) {
		s.Add(keyOf(buf, 0, i))
	}
	senc, _ := s.MarshalBinary()
	if binary.LittleEndian.Uint16(senc[4:]) != 2 || senc[13] != 1 {
		t.Error("scalable: not version 2 with layout 1")
	}
	if got := crc32Checksum(senc); got != goldenBlockedScalableCRC {
		t.Errorf("scalable encoding changed: CRC %#x, want %#x (%d sub-filters)", got, goldenBlockedScalableCRC, s.NumFilters())
	}
	var d ScalableBloomFilter
	if err := d.UnmarshalBinary(senc); err != nil || !d.Equal(s) || !d.Blocked() {
		t.Errorf("scalable round trip: %v", err)
	}
	var r ScalableBloomFilter
	if _, err := r.ReadFrom(bytes.NewReader(senc)); err != nil || !r.Equal(s) {
		t.Errorf("scalable ReadFrom: %v", err)
	}
	for i := range uint64(100) {
		if !d.Test(keyOf(buf, 0, i)) {
			t.Fatal("false negative after decoding")
		}
	}
	// It grows on as the original would.
	for i := range uint64(2000) {
		s.Add(keyOf(buf, 0, i))
		d.Add(keyOf(buf, 0, i))
	}
	if !d.Equal(s) {
		t.Error("decoded blocked scalable filter grew differently")
	}
}

func TestBlockedDecodeRejectsDamage(t *testing.T) {
	enc, _ := goldenBlockedFilter(t).MarshalBinary()
	before := mustNew(t, 10, 0.1, Blocked())
	before.AddString("sentinel")
	saved := before.Clone()
	check := func(what string, data []byte) {
		t.Helper()
		if err := before.UnmarshalBinary(data); err == nil {
			t.Fatalf("UnmarshalBinary accepted %s", what)
		}
		if what != "trailing bytes" { // ReadFrom stops at the end of its filter
			if _, err := before.ReadFrom(bytes.NewReader(data)); err == nil {
				t.Fatalf("ReadFrom accepted %s", what)
			}
		}
		if !before.Equal(saved) {
			t.Fatalf("receiver changed after rejecting %s", what)
		}
	}
	for i := range len(enc) {
		if err := before.UnmarshalBinary(enc[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncation to %d bytes: %v", i, err)
		}
		check(fmt.Sprintf("truncation to %d bytes", i), enc[:i])
	}
	for i := range 8 * len(enc) {
		bad := bytes.Clone(enc)
		bad[i/8] ^= 1 << (i % 8)
		check(fmt.Sprintf("bit %d flipped", i), bad)
	}
	check("trailing bytes", append(bytes.Clone(enc), 0))
	for name, damage := range map[string]func(b []byte){
		"layout 0":          func(b []byte) { b[6] = 0 },
		"layout 2":          func(b []byte) { b[6] = 2 },
		"version 3":         func(b []byte) { b[4] = 3 },
		"m not whole block": func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 448) },
		"m two blocks":      func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1024) },
		"version 1":         func(b []byte) { b[4], b[6] = 1, 0 }, // decodes, as a classic filter
	} {
		b := reseal(bytes.Clone(enc))
		damage(b)
		reseal(b)
		var f BloomFilter
		err := f.UnmarshalBinary(b)
		if name == "version 1" {
			if err != nil || f.Blocked() {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrCorrupt) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: UnmarshalBinary gave %v", name, err)
		}
		if _, err := f.ReadFrom(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: ReadFrom accepted it", name)
		}
	}
}

// TestBlockedScalableDecodeRejectsMixedLayouts: a blocked scalable filter
// with a classic sub-filter, or a classic one claiming the blocked layout,
// is corrupt.
func TestBlockedScalableDecodeRejectsMixedLayouts(t *testing.T) {
	s := mustScalable(t, 100, 0.01, Blocked())
	enc, _ := s.MarshalBinary()
	for name, damage := range map[string]func(b []byte){
		"version 1": func(b []byte) { b[4], b[13] = 1, 0 },
		"layout 0":  func(b []byte) { b[13] = 0 },
		"layout 2":  func(b []byte) { b[13] = 2 },
		"classic sub": func(b []byte) {
			b[scalableHeaderSize+4], b[scalableHeaderSize+6] = 1, 0
			reseal(b[scalableHeaderSize : len(b)-crcSize])
		},
		"reserved byte 14": func(b []byte) { b[14] = 1 },
	} {
		b := bytes.Clone(enc)
		damage(b)
		resealScalable(b)
		var d ScalableBloomFilter
		if err := d.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: UnmarshalBinary gave %v", name, err)
		}
		if _, err := d.ReadFrom(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: ReadFrom accepted it", name)
		}
	}
}

// TestBlockedDecodeHostileHeaderDoesNotAllocate: a version-2 header claiming
// MaxBits bits, followed by a few bytes, fails without a large allocation.
func TestBlockedDecodeHostileHeaderDoesNotAllocate(t *testing.T) {
	enc, _ := goldenBlockedFilter(t).MarshalBinary()
	hdr := bytes.Clone(enc[:headerSize])
	binary.LittleEndian.PutUint64(hdr[16:], MaxBits)
	data := append(hdr, make([]byte, 4096)...)
	var f BloomFilter
	if a := allocated(func() { f.UnmarshalBinary(data) }); a > 1<<20 {
		t.Errorf("UnmarshalBinary allocated %d bytes", a)
	}
	if a := allocated(func() { f.ReadFrom(bytes.NewReader(data)) }); a > 1<<20 {
		t.Errorf("ReadFrom allocated %d bytes", a)
	}
}

// ---- benchmarks ----

// BenchmarkBlocked times the single-key calls of a blocked filter beside a
// classic one of the same capacity and rate, on the same 16-byte keys, at
// 10^6 and 10^7 keys and p = 0.01 and 0.001. The filter sizes do not depend
// on b.N.
//
//	go test -run XXX -bench Blocked -count 5
func BenchmarkBlocked(b *testing.B) {
	const keySet = 1 << 20
	absent := benchKeys(1, keySet)
	for _, n := range []uint64{1e6, 1e7} {
		present := benchKeys(0, min(int(n), keySet))
		for _, p := range []float64{0.01, 0.001} {
			for _, layout := range []string{"classic", "blocked"} {
				var opts []Option
				if layout == "blocked" {
					opts = append(opts, Blocked())
				}
				f := mustNew(b, n, p, opts...)
				buf := make([]byte, 16)
				for i := range n {
					f.Add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
				}
				name := fmt.Sprintf("n=%g/p=%g/%s", float64(n), p, layout)
				b.Run(name+"/Add", func(b *testing.B) {
					g := mustNew(b, n, p, opts...)
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						g.Add(absent[i&(keySet-1)])
					}
				})
				b.Run(name+"/TestPresent", func(b *testing.B) {
					b.ReportAllocs()
					for i := range b.N {
						sink = f.Test(present[i%len(present)])
					}
				})
				b.Run(name+"/TestAbsent", func(b *testing.B) {
					b.ReportAllocs()
					for i := range b.N {
						sink = f.Test(absent[i&(keySet-1)])
					}
				})
			}
		}
	}
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
	if err != nil || !g.Equal(f) || !isAligned(g.words) {
		t.Errorf("FromWords: %v", err)
	}
	if _, err := FromWords(mustNew(t, 5000, 0.01).Header(), make([]uint64, 0), Blocked()); !errors.Is(err, ErrInvalidParameter) {
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
	if err := other.Merge(mustNew(t, 5000, 0.01, Seed(9))); !errors.Is(err, ErrIncompatible) {
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
	classic, _ := mustNew(t, 10, 0.1).MarshalBinary()
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
	sclassic, _ := mustScalable(t, 100, 0.01).MarshalBinary()
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
// NewScalable works that out by the blocked formula (blockedFullRate),
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
		full, at := blockedFullRate(c.n, c.m, c.k), BlockedFalsePositiveRate(c.m, c.k, c.n)
		if full < at || full > at*1.1 {
			t.Errorf("blockedFullRate(%d, %d, %d) = %v; rate at capacity %v", c.n, c.m, c.k, full, at)
		}
	}
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
	// Above batchMinBits, as they run by default.
	a, _ := NewWithSize(batchMinBits+BlockBits, 7, Blocked())
	b, _ := NewWithSize(batchMinBits+BlockBits, 7, Blocked())
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

// BenchmarkBlockedBatch times TestMany and AddMany of a blocked filter of
// 10^7 keys at p = 0.01 against the loops of single calls, in batches of
// 1,000 16-byte keys, one after the other on the same keys.
//
//	go test -run XXX -bench BlockedBatch -count 5
func BenchmarkBlockedBatch(b *testing.B) {
	const n, batch = 10_000_000, 1000
	f := mustNew(b, n, 0.01, Blocked())
	buf := make([]byte, 16)
	for i := range uint64(n) {
		f.Add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
	}
	absent := benchKeys(1, 1<<20)
	results := make([]bool, batch)
	perKey := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batch, "ns/key")
	}
	b.Run("TestAbsent/TestMany", func(b *testing.B) {
		for i := range b.N {
			lo := i * batch % (len(absent) - batch)
			results = f.TestMany(absent[lo:lo+batch], results[:0])
		}
		perKey(b)
	})
	b.Run("TestAbsent/loop", func(b *testing.B) {
		for i := range b.N {
			lo := i * batch % (len(absent) - batch)
			for _, k := range absent[lo : lo+batch] {
				sink = f.Test(k)
			}
		}
		perKey(b)
	})
	b.Run("Add/AddMany", func(b *testing.B) {
		g := mustNew(b, n, 0.01, Blocked())
		b.ResetTimer()
		for i := range b.N {
			lo := i * batch % (len(absent) - batch)
			g.AddMany(absent[lo : lo+batch])
		}
		perKey(b)
	})
	b.Run("Add/loop", func(b *testing.B) {
		g := mustNew(b, n, 0.01, Blocked())
		b.ResetTimer()
		for i := range b.N {
			lo := i * batch % (len(absent) - batch)
			for _, k := range absent[lo : lo+batch] {
				g.Add(k)
			}
		}
		perKey(b)
	})
}
