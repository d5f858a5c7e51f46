package bloom

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/spaolacci/murmur3"
)

func mustScalable(t testing.TB, n uint64, p float64, opts ...Option) *ScalableBloomFilter {
	t.Helper()
	s, err := NewScalable(n, p, opts...)
	if err != nil {
		t.Fatalf("NewScalable(%d, %v): %v", n, p, err)
	}
	return s
}

func TestScalableOptionErrors(t *testing.T) {
	tests := map[string]func() error{
		"linear 0":            func() error { _, err := NewScalable(10, 0.01, Linear(0)); return err },
		"linear negative":     func() error { _, err := NewScalable(10, 0.01, Linear(-1)); return err },
		"linear NaN":          func() error { _, err := NewScalable(10, 0.01, Linear(math.NaN())); return err },
		"linear Inf":          func() error { _, err := NewScalable(10, 0.01, Linear(math.Inf(1))); return err },
		"exponential 1":       func() error { _, err := NewScalable(10, 0.01, Exponential(1)); return err },
		"exponential NaN":     func() error { _, err := NewScalable(10, 0.01, Exponential(math.NaN())); return err },
		"tightening 0":        func() error { _, err := NewScalable(10, 0.01, Tightening(0)); return err },
		"tightening 1":        func() error { _, err := NewScalable(10, 0.01, Tightening(1)); return err },
		"tightening NaN":      func() error { _, err := NewScalable(10, 0.01, Tightening(math.NaN())); return err },
		"two growth options":  func() error { _, err := NewScalable(10, 0.01, Linear(1), Exponential(2)); return err },
		"capacity 0":          func() error { _, err := NewScalable(0, 0.01); return err },
		"rate 1":              func() error { _, err := NewScalable(10, 1); return err },
		"growth given to New": func() error { _, err := New(10, 0.01, Exponential(2)); return err },
		"tightening to New":   func() error { _, err := NewWithSize(10, 1, Tightening(0.5)); return err },
	}
	for name, call := range tests {
		err := call()
		if !errors.Is(err, ErrInvalidParameter) || !strings.HasPrefix(err.Error(), "bloom: ") {
			t.Errorf("%s: got %v, want an ErrInvalidParameter", name, err)
		}
	}
	s := mustScalable(t, 100, 0.01)
	if s.growth != growthExponential || s.scale != DefaultScale || s.tightening != DefaultTightening || s.Seed() != DefaultSeed {
		t.Errorf("defaults: growth %d scale %v tightening %v", s.growth, s.scale, s.tightening)
	}
}

// TestRepeatedOptionIsAnError is issue 21, item 7: Seed given twice was
// last-wins while Tightening twice was an error. Every option given twice,
// with the same or another value, is an error wrapping ErrInvalidParameter
// that names the option, from every constructor that takes it.
func TestRepeatedOptionIsAnError(t *testing.T) {
	type opt struct {
		name       string
		a, b       Option
		plainToo   bool // New and NewWithSize take it too
		growthKind bool
	}
	opts := []opt{
		{"Seed", Seed(1), Seed(2), true, false},
		{"Seed", Seed(1), Seed(1), true, false},
		{"Concurrent", Concurrent(), Concurrent(), true, false},
		{"Blocked", Blocked(), Blocked(), true, false},
		{"Tightening", Tightening(0.5), Tightening(0.6), false, false},
		{"Linear", Linear(1), Linear(2), false, true},
		{"Exponential", Exponential(2), Exponential(2), false, true},
	}
	for _, o := range opts {
		calls := map[string]func(...Option) error{
			"NewScalable": func(os ...Option) error { _, err := NewScalable(1000, 0.01, os...); return err },
		}
		if o.plainToo {
			calls["New"] = func(os ...Option) error { _, err := New(1000, 0.01, os...); return err }
			calls["NewWithSize"] = func(os ...Option) error { _, err := NewWithSize(1024, 3, os...); return err }
		}
		for name, call := range calls {
			// Alone, each is valid, so that the error below is the repetition's.
			if err := call(o.a); err != nil {
				t.Fatalf("%s(%s): %v", name, o.name, err)
			}
			for _, pair := range [][]Option{{o.a, o.b}, {o.a, Seed(7), o.b}} {
				if o.name == "Seed" && len(pair) == 3 {
					continue
				}
				err := call(pair...)
				if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), o.name) {
					t.Errorf("%s with %s twice: %v, want an ErrInvalidParameter naming %s", name, o.name, err, o.name)
				}
			}
		}
	}
}

func TestScalableSubFilterSizes(t *testing.T) {
	lin := mustScalable(t, 1000, 0.01, Linear(2), Tightening(0.5))
	exp := mustScalable(t, 1000, 0.01, Exponential(3), Tightening(0.5))
	for i, want := range []uint64{1000, 2000, 4000, 6000} {
		if c, _ := lin.subCapacity(i); c != want {
			t.Errorf("Linear(2) sub-filter %d capacity %d, want %d", i, c, want)
		}
	}
	for i, want := range []uint64{1000, 3000, 9000, 27000} {
		if c, _ := exp.subCapacity(i); c != want {
			t.Errorf("Exponential(3) sub-filter %d capacity %d, want %d", i, c, want)
		}
	}
	var sum float64
	for i := range 200 {
		sum += exp.subErrorRate(i)
	}
	if sum > 0.01 || exp.subErrorRate(0) != 0.005 {
		t.Errorf("sub-filter rates sum to %v, first %v", sum, exp.subErrorRate(0))
	}
}

// growAndMeasure adds n keys, checks there are no false negatives, and
// returns the measured false-positive rate over absent keys.
func growAndMeasure(t *testing.T, s *ScalableBloomFilter, n, absent uint64) float64 {
	t.Helper()
	buf := make([]byte, 16)
	for i := range n {
		s.Add(keyOf(buf, 0, i))
	}
	for i := range n {
		if !s.Test(keyOf(buf, 0, i)) {
			t.Fatalf("false negative for key %d after %d keys", i, n)
		}
	}
	fp := 0
	for i := range absent {
		if s.Test(keyOf(buf, 1, i)) {
			fp++
		}
	}
	return float64(fp) / float64(absent)
}

// within reports whether a rate measured over trials stays at most target,
// allowing 4 standard deviations of sampling noise.
func within(measured, target float64, trials uint64) bool {
	return measured <= target+4*math.Sqrt(target*(1-target)/float64(trials))
}

func TestScalableKeepsErrorRate(t *testing.T) {
	const p = 0.01
	n, absent := uint64(1_000_000), uint64(500_000)
	if testing.Short() {
		n = 100_000
	}
	for name, opts := range map[string][]Option{
		"default":          nil,
		"Exponential(4)":   {Exponential(4)},
		"Linear(1)":        {Linear(1)},
		"Tightening(0.9)":  {Tightening(0.9)},
		"Exponential(1.5)": {Exponential(1.5), Tightening(0.8)},
	} {
		t.Run(name, func(t *testing.T) {
			s := mustScalable(t, 1000, p, opts...)
			got := growAndMeasure(t, s, n, absent)
			t.Logf("%d keys: %d sub-filters, %.2f bits/key, measured rate %.5f (target %v), estimated %.5f",
				n, s.NumFilters(), float64(s.Bits())/float64(n), got, p, s.EstimatedErrorRate())
			if !within(got, p, absent) {
				t.Errorf("measured rate %.5f exceeds the target %v", got, p)
			}
			if s.EstimatedErrorRate() > p {
				t.Errorf("EstimatedErrorRate %v exceeds the target %v", s.EstimatedErrorRate(), p)
			}
		})
	}
}

// TestScalableEveryGrowthStep checks the promise after each growth step, for
// at least eight sub-filters.
func TestScalableEveryGrowthStep(t *testing.T) {
	const p, absent = 0.02, 200_000
	for _, r := range []float64{0.5, 0.8, 0.9} {
		t.Run(fmt.Sprintf("r=%v", r), func(t *testing.T) {
			s := mustScalable(t, 500, p, Tightening(r), Exponential(1.5))
			buf := make([]byte, 16)
			var added uint64
			for s.NumFilters() < 9 {
				steps := s.NumFilters()
				for s.NumFilters() == steps {
					s.Add(keyOf(buf, 0, added))
					added++
				}
				// The new sub-filter holds one key; measure the filter as its
				// predecessors filled it.
				fp := 0
				for i := range uint64(absent) {
					if s.Test(keyOf(buf, 1, i)) {
						fp++
					}
				}
				got := float64(fp) / absent
				t.Logf("%d sub-filters, %d keys: measured %.5f, estimated %.5f", s.NumFilters(), added, got, s.EstimatedErrorRate())
				if !within(got, p, absent) {
					t.Fatalf("after growing to %d sub-filters: measured %.5f > target %v", s.NumFilters(), got, p)
				}
			}
			for i := range added {
				if !s.Test(keyOf(buf, 0, i)) {
					t.Fatalf("false negative for key %d", i)
				}
			}
		})
	}
}

func TestScalableDuplicatesDoNotGrow(t *testing.T) {
	s := mustScalable(t, 1000, 0.01)
	buf := make([]byte, 16)
	for range 50 {
		for i := range uint64(900) {
			s.Add(keyOf(buf, 0, i))
		}
	}
	if s.Count() > 900 || s.NumFilters() != 1 {
		t.Errorf("Count %d, %d sub-filters after 900 keys added 50 times", s.Count(), s.NumFilters())
	}
}

func TestScalableTestAndAdd(t *testing.T) {
	s := mustScalable(t, 100, 0.001)
	buf := make([]byte, 16)
	news := 0
	for i := range uint64(5000) {
		if !s.TestAndAdd(keyOf(buf, 0, i)) {
			news++
		}
		if !s.TestAndAddString(string(keyOf(buf, 0, i))) {
			t.Fatalf("key %d reported new twice", i)
		}
	}
	if news < 4990 || uint64(news) != s.Count() {
		t.Errorf("%d keys reported new of 5000, Count %d", news, s.Count())
	}
	if s.NumFilters() < 5 {
		t.Errorf("only %d sub-filters after 5000 keys from capacity 100", s.NumFilters())
	}
}

func TestScalableRoundTripGrowsIdentically(t *testing.T) {
	for _, opts := range [][]Option{nil, {Linear(0.5), Tightening(0.7), Seed(3)}} {
		s := mustScalable(t, 200, 0.01, opts...)
		buf := make([]byte, 16)
		for i := range uint64(3000) {
			s.Add(keyOf(buf, 0, i))
		}
		enc, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d, r ScalableBloomFilter
		if err := d.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		if n, err := s.WriteTo(&w); err != nil || n != int64(len(enc)) || !bytes.Equal(w.Bytes(), enc) {
			t.Fatalf("WriteTo: %d bytes, %v; differs from MarshalBinary", n, err)
		}
		w.WriteString("next")
		if _, err := r.ReadFrom(&w); err != nil || w.String() != "next" {
			t.Fatalf("ReadFrom: %v, left %q", err, w.String())
		}
		if !d.Equal(s) || !r.Equal(s) || d.EncodedSize() != len(enc) {
			t.Fatal("decoded filter differs")
		}
		c := s.Clone()
		for i := uint64(3000); i < 20000; i++ {
			k := keyOf(buf, 0, i)
			s.Add(k)
			d.Add(k)
			r.Add(k)
		}
		a, _ := s.MarshalBinary()
		b, _ := d.MarshalBinary()
		e, _ := r.MarshalBinary()
		if !bytes.Equal(a, b) || !bytes.Equal(a, e) {
			t.Error("decoded filters grew differently from the original")
		}
		if c.Equal(s) || c.NumFilters() >= s.NumFilters() {
			t.Error("Clone shares state with the original")
		}
		for i := range uint64(20000) {
			if !d.Test(keyOf(buf, 0, i)) {
				t.Fatalf("false negative after decode and growth: key %d", i)
			}
		}
	}
}

func TestScalableDecodeRejectsDamage(t *testing.T) {
	s := mustScalable(t, 20, 0.1, Seed(1))
	for i := range 100 {
		s.AddString(fmt.Sprint(i))
	}
	if s.NumFilters() < 3 {
		t.Fatalf("want a few sub-filters, have %d", s.NumFilters())
	}
	saved := s.Clone()
	for _, enc := range [][]byte{encodeScalableV1(s), mustMarshal(t, s)} {
		checkScalableDamage(t, s, enc)
	}
	if !s.Equal(saved) {
		t.Error("receiver changed on error")
	}
}

// checkScalableDamage checks that every truncation of enc, the encoding
// of s, every flipped bit and a trailing byte are refused.
func checkScalableDamage(t *testing.T, s *ScalableBloomFilter, enc []byte) {
	for i := range len(enc) {
		if err := s.UnmarshalBinary(enc[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
		if _, err := s.ReadFrom(bytes.NewReader(enc[:i])); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadFrom truncated to %d bytes: %v", i, err)
		}
	}
	for i := range 8 * len(enc) {
		bad := bytes.Clone(enc)
		bad[i/8] ^= 1 << (i % 8)
		if s.UnmarshalBinary(bad) == nil {
			t.Fatalf("accepted bit %d flipped", i)
		}
		if _, err := s.ReadFrom(bytes.NewReader(bad)); err == nil {
			t.Fatalf("ReadFrom accepted bit %d flipped", i)
		}
	}
	if s.UnmarshalBinary(append(bytes.Clone(enc), 1)) == nil {
		t.Error("accepted trailing bytes")
	}
	// A plain filter is not a scalable one, and the reverse.
	plain, _ := goldenFilter(t).MarshalBinary()
	if s.UnmarshalBinary(plain) == nil {
		t.Error("accepted a plain filter")
	}
	var f BloomFilter
	if f.UnmarshalBinary(enc) == nil {
		t.Error("BloomFilter accepted a scalable filter")
	}
}

// TestScalableSaturation checks a saturated filter: it no longer grows, has no
// false negatives, round-trips, and Clear makes it grow again. Saturation now
// takes MaxBits bits, too many for a test to build, so the filter is one an
// older release saved saturated (at MaxHashes; see TestLegacyEncodings).
func TestScalableSaturation(t *testing.T) {
	enc, err := os.ReadFile("testdata/v1/scalable-saturated.bin")
	if err != nil {
		t.Fatal(err)
	}
	var s ScalableBloomFilter
	if err := s.UnmarshalBinary(enc); err != nil || !s.Saturated() {
		t.Fatalf("saturated legacy filter: %v, saturated %v", err, s.Saturated())
	}
	const i = 150 // keys 0..149 were added to it
	buf := make([]byte, 16)
	n := s.NumFilters()
	for j := range uint64(1000) {
		s.Add(keyOf(buf, 0, i+j))
	}
	if s.NumFilters() != n {
		t.Error("a saturated filter grew")
	}
	for j := range uint64(i + 1000) {
		if !s.Test(keyOf(buf, 0, j)) {
			t.Fatalf("false negative in a saturated filter: key %d", j)
		}
	}
	enc, _ = s.MarshalBinary()
	var d ScalableBloomFilter
	if err := d.UnmarshalBinary(enc); err != nil || !d.Saturated() || !d.Equal(&s) {
		t.Errorf("round trip of a saturated filter: %v", err)
	}
	s.Clear()
	if s.Saturated() || s.NumFilters() != 1 || s.Count() != 0 || s.TestString("x") {
		t.Error("Clear did not reset the filter")
	}
	for j := range uint64(200) {
		s.Add(keyOf(buf, 0, j))
	}
	if s.Saturated() || s.NumFilters() <= n {
		t.Errorf("after Clear: %d sub-filters, saturated %v; want growth past %d", s.NumFilters(), s.Saturated(), n)
	}
}

// checkSubFilterCap is issue 21, item 2, run by TestEveryWrittenEncodingDecodes:
// growth that adds a sub-filter per key or so (NewScalable(1, 0.01,
// Linear(1e-9), Tightening(0.999)), or Exponential(1.0000001)) went past the
// 65,536 sub-filters the format holds, and MarshalBinary then wrote an
// encoding that every decoder refused ("65537 sub-filters"). Growth now stops
// at the cap as it does at MaxBits: the filter saturates. The filter here has
// blocked sub-filters of one key each, whose sizing is cheap (a classic one
// takes 25 µs to 3 ms per sub-filter, so 65,536 of them would take the
// decoders tens of seconds); the cap is the layout's no more than MaxBits is.
// It checks every decoder at the cap and past it, plain and concurrent.
func checkSubFilterCap(t *testing.T) {
	// The classic layout stops at the same cap.
	c := mustScalable(t, 1, 0.01, Linear(1e-9), Tightening(0.999))
	if _, _, _, _, err := c.nextSize(format.MaxSubFilters-1, 0); err != nil {
		t.Errorf("classic sub-filter %d: %v", format.MaxSubFilters-1, err)
	}
	if _, _, _, _, err := c.nextSize(format.MaxSubFilters, 0); err == nil {
		t.Errorf("classic sub-filter %d can be built", format.MaxSubFilters)
	}

	s := mustScalable(t, 1, 0.01, Exponential(1.0000001), Tightening(0.999), Blocked(), Seed(21))
	buf := make([]byte, 16)
	key := uint64(0)
	var sample []uint64 // keys to test after decoding: all 65,536 would take 65,536^2 probes
	fill := func(f *BloomFilter) {
		for f.count < f.capacity {
			f.Add(keyOf(buf, 0, key))
			if key%1024 == 0 {
				sample = append(sample, key)
			}
			key++
		}
	}
	// Build all but the last sub-filter directly: growing through Add
	// tests every key against every sub-filter, and grow sums their sizes.
	fill(s.filters[0])
	used := s.filters[0].m
	for len(s.filters) < format.MaxSubFilters-1 {
		f, err := s.newSubFilter(len(s.filters), used)
		if err != nil {
			t.Fatalf("sub-filter %d: %v", len(s.filters), err)
		}
		fill(f)
		used += f.m
		s.filters = append(s.filters, f)
	}
	s.setFilters(s.filters) // the sub-filters' bits for the layouts' tests
	if s.Saturated() || s.filters[len(s.filters)-1].capacity != 1 {
		t.Fatalf("%d sub-filters: saturated %v, capacity of the newest %d", len(s.filters), s.Saturated(), s.filters[len(s.filters)-1].capacity)
	}

	decodes := func(what string, f *ScalableBloomFilter, sample []uint64) {
		t.Helper()
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: MarshalBinary: %v", what, err)
		}
		text, _ := f.MarshalText()
		var u, r, x ScalableBloomFilter
		read, rerr := ReadScalable(bytes.NewReader(enc))
		for name, err := range map[string]error{
			"UnmarshalBinary": u.UnmarshalBinary(enc),
			"ReadFrom":        func() error { _, err := r.ReadFrom(bytes.NewReader(enc)); return err }(),
			"UnmarshalText":   x.UnmarshalText(text),
			"ReadScalable":    rerr,
		} {
			if err != nil {
				t.Errorf("%s (%d sub-filters, %d bytes): %s: %v", what, f.NumFilters(), len(enc), name, err)
			}
		}
		if rerr != nil {
			return
		}
		for _, d := range []*ScalableBloomFilter{&u, &r, &x, read} {
			if !d.Equal(f) || d.Saturated() != f.Saturated() {
				t.Errorf("%s: decoded filter differs", what)
			}
		}
		for _, k := range sample {
			if !read.Test(keyOf(buf, 0, k)) {
				t.Fatalf("%s: false negative after decoding: key %d", what, k)
			}
		}
	}

	for _, concurrent := range []bool{false, true} {
		f, sample := s.Clone(), slices.Clone(sample)
		what := "plain"
		if concurrent {
			f.makeConcurrent(newScalableLocks())
			what = "concurrent"
		}
		// Through Add from here: fill the newest, grow to the cap, fill it.
		for f.NumFilters() < format.MaxSubFilters || f.Count() < f.Capacity() {
			if !f.TestAndAdd(keyOf(buf, 0, key)) {
				sample = append(sample, key)
			}
			key++
			if f.Saturated() {
				t.Fatalf("%s: saturated at %d sub-filters", what, f.NumFilters())
			}
		}
		if f.NumFilters() != format.MaxSubFilters {
			t.Fatalf("%s: %d sub-filters, want %d", what, f.NumFilters(), format.MaxSubFilters)
		}
		decodes(what+" at the cap", f, sample)
		// Past the cap: the next new key saturates the filter, which keeps
		// adding to its newest sub-filter, without false negatives.
		var past []uint64
		for len(past) < 10 {
			if !f.TestAndAdd(keyOf(buf, 0, key)) {
				past = append(past, key)
			}
			key++
		}
		if got := f.NumFilters(); got != format.MaxSubFilters || !f.Saturated() {
			t.Errorf("%s past the cap: %d sub-filters, saturated %v; want %d, saturated", what, got, f.Saturated(), format.MaxSubFilters)
		}
		for _, k := range past {
			if !f.Test(keyOf(buf, 0, k)) {
				t.Fatalf("%s past the cap: false negative: key %d", what, k)
			}
		}
		sample = append(sample, past...)
		decodes(what+" past the cap", f, sample)
	}
}

// TestScalableGrowsPastMaxHashes: sub-filters whose rate needs more than
// MaxHashes hash functions get MaxHashes and more bits, so the filter keeps
// growing. NewScalable(100, 1e-18) used to stop after 10 sub-filters (some
// 11,000 keys) and answer "present" for most new keys; NewScalable(1, 0.5,
// Linear(0.01), Tightening(0.5)) after 63.
func TestScalableGrowsPastMaxHashes(t *testing.T) {
	const p = 1e-18
	n, absent := uint64(200_000), uint64(1_000_000)
	if testing.Short() {
		n, absent = 50_000, 300_000
	}
	s := mustScalable(t, 100, p)
	got := growAndMeasure(t, s, n, absent)
	t.Logf("%d keys: %d sub-filters, %.1f bits/key, measured rate %v over %d absent keys, estimated %.3g",
		n, s.NumFilters(), float64(s.Bits())/float64(n), got, absent, s.EstimatedErrorRate())
	if s.Saturated() || s.NumFilters() <= 10 || s.Count() < n*99/100 {
		t.Errorf("%d sub-filters, count %d, saturated %v: stopped growing", s.NumFilters(), s.Count(), s.Saturated())
	}
	if !within(got, p, absent) {
		t.Errorf("measured rate %v exceeds the target %v", got, p)
	}
	filters, _ := s.subFilters()
	if k := filters[len(filters)-1].Hashes(); k != MaxHashes {
		t.Errorf("newest sub-filter has %d hash functions, want MaxHashes", k)
	}

	lin := mustScalable(t, 1, 0.5, Linear(0.01), Tightening(0.5))
	buf := make([]byte, 16)
	for i := uint64(0); lin.NumFilters() < 100; i++ {
		lin.Add(keyOf(buf, 0, i))
		if lin.Saturated() {
			t.Fatalf("Linear(0.01), Tightening(0.5) saturated after %d sub-filters", lin.NumFilters())
		}
	}
}

func TestScalableHotPathDoesNotAllocate(t *testing.T) {
	s := mustScalable(t, 100, 0.01)
	buf := make([]byte, 16)
	for i := range uint64(1000) {
		s.Add(keyOf(buf, 0, i))
	}
	s.Add(keyOf(buf, 0, 1))
	long := strings.Repeat("https://example.com/path/", 5)
	key := keyOf(buf, 0, 7) // present: no growth
	checkHotPathAllocs(t, s, func() []byte { return key }, string(key), long)
}

// scalableFields are the header fields of the ScalableBloomFilter format:
// version, flags, seed, growth, scale, tightening, initial capacity, error
// rate, number of sub-filters.
// In version 3, the table's checksum and reserved bytes follow, and the
// first offsets of the table.
var scalableFields = []headerField{{4, 2}, {6, 2}, {8, 4}, {12, 1}, {13, 1}, {16, 8}, {24, 8}, {32, 8}, {40, 8}, {48, 4}, {52, 4}, {56, 4}, {64, 8}, {72, 8}}

// resealScalableV3 is resealScalable for version 3: it reseals every
// sub-filter the table of offsets points to (up to the next offset, or the
// end), then the table's checksum and the header's.
func resealScalableV3(b []byte) []byte {
	n := int(min(binary.LittleEndian.Uint32(b[48:]), format.MaxSubFilters))
	if len(b) < format.V3HeaderSize+8*n {
		binary.LittleEndian.PutUint32(b[60:], crc32Checksum(b[:60]))
		return b
	}
	table := b[format.V3HeaderSize : format.V3HeaderSize+8*n]
	for i := range n {
		off := binary.LittleEndian.Uint64(table[8*i:])
		end := uint64(len(b))
		if i+1 < n {
			end = binary.LittleEndian.Uint64(table[8*i+8:])
		}
		// off comes from the input: compare without adding to it, which
		// could wrap around (an offset of 2^64-1 did, in CI's fuzzing).
		if end > uint64(len(b)) || off > end || end-off < format.V3HeaderSize {
			continue
		}
		// The sub-filter without the padding after it.
		sub := b[off:end]
		if m := binary.LittleEndian.Uint64(sub[16:]); m > 0 && m <= MaxBits {
			if size := format.V3Size(m); size <= uint64(len(sub)) {
				sub = sub[:size]
			}
		}
		reseal(sub)
	}
	binary.LittleEndian.PutUint32(b[52:], crc32Checksum(table))
	binary.LittleEndian.PutUint32(b[60:], crc32Checksum(b[:60]))
	return b
}

// subFilterAt returns the offset of sub-filter i (mod their number) in the
// scalable encoding b, or -1 if the structure cannot be followed that far.
func subFilterAt(b []byte, i int) int {
	if len(b) >= format.V3HeaderSize && format.IsV3(b) {
		n := int(min(binary.LittleEndian.Uint32(b[48:]), format.MaxSubFilters))
		if n == 0 || len(b) < format.V3HeaderSize+8*n {
			return -1
		}
		off := binary.LittleEndian.Uint64(b[format.V3HeaderSize+8*(i%n):])
		if off > uint64(len(b))-format.V3HeaderSize {
			return -1
		}
		return int(off)
	}
	if len(b) < format.ScalableHeaderSize {
		return -1
	}
	n := int(min(binary.LittleEndian.Uint32(b[48:]), format.MaxSubFilters))
	if n == 0 {
		return -1
	}
	off := uint64(format.ScalableHeaderSize)
	for range i % n {
		if uint64(len(b)) < off+format.HeaderSize {
			return -1
		}
		m := binary.LittleEndian.Uint64(b[off+16:])
		if m > MaxBits {
			return -1
		}
		off += format.HeaderSize + 8*((m+63)/64) + format.CRCSize
	}
	if uint64(len(b)) < off+format.HeaderSize {
		return -1
	}
	return int(off)
}

// scalableSeeds are the seed corpus of the scalable fuzz targets.
func scalableSeeds(f *testing.F) {
	s := mustScalable(f, 10, 0.1)
	for i := range 50 {
		s.AddString(fmt.Sprint(i))
	}
	enc, _ := s.MarshalBinary()
	f.Add(enc, []byte(nil))
	f.Add(encodeScalableV1(s), []byte(nil))
	one, _ := mustScalable(f, 3, 0.3, Linear(1)).MarshalBinary()
	f.Add(one, []byte(nil))
	b := mustScalable(f, 10, 0.1, Blocked())
	for i := range 50 {
		b.AddString(fmt.Sprint(i))
	}
	blocked, _ := b.MarshalBinary()
	f.Add(blocked, []byte(nil))
	f.Add(encodeScalableV1(b), []byte(nil))
	// The issue's hostile input, from a valid encoding by two edits: scale
	// 2.5e11, saturated.
	hostile := mustScalable(f, 1, 0.5, Exponential(2), Tightening(0.5))
	edits := []byte{5, 0} // scalableFields[5] is the scale
	edits = binary.LittleEndian.AppendUint64(edits, math.Float64bits(2.5e11))
	edits = append(edits, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0)
	f.Add(encodeScalableV1(hostile), edits)
	f.Add(mustMarshal(f, hostile), edits)
}

// checkScalableDecode decodes data with UnmarshalBinary and ReadFrom, which
// must agree, allocate at most allocBound, and on success give a usable
// filter that re-encodes to data.
func checkScalableDecode(t *testing.T, data []byte) {
	var d ScalableBloomFilter
	var err error
	checkDecodeAllocs(t, "UnmarshalBinary", data, func() { err = d.UnmarshalBinary(data) })
	var r ScalableBloomFilter
	var n int64
	var rerr error
	checkDecodeAllocs(t, "ReadFrom", data, func() { n, rerr = r.ReadFrom(bytes.NewReader(data)) })
	if (err == nil) != (rerr == nil && n == int64(len(data))) {
		t.Fatalf("UnmarshalBinary says %v, ReadFrom says %v after %d of %d bytes", err, rerr, n, len(data))
	}
	if err != nil {
		// ReadFrom may succeed on a prefix (data has trailing bytes, which
		// UnmarshalBinary refuses): only a failed call must leave its
		// receiver as it was.
		if d.filters != nil || (rerr != nil && r.filters != nil) {
			t.Fatal("receiver changed on error")
		}
		return
	}
	if out := sameVersion(&d, data); !bytes.Equal(out, data) || !r.Equal(&d) {
		t.Fatal("re-encoding differs")
	}
	if !format.IsV3(data) {
		var v3 ScalableBloomFilter
		if err := v3.UnmarshalBinary(mustMarshal(t, &d)); err != nil || !v3.Equal(&d) {
			t.Fatalf("version 3 of a version-%d encoding: %v", data[4], err)
		}
	}
	d.AddString("x")
	if !d.TestString("x") {
		t.Fatal("false negative in a decoded filter")
	}
}

func FuzzScalableUnmarshalBinary(f *testing.F) {
	scalableSeeds(f)
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		checkScalableDecode(t, data)
		if len(edits) >= editOpSize {
			checkScalableDecode(t, resealScalable(applyEdits(data, edits, scalableFields, filterFields, subFilterAt)))
		}
	})
}

// FuzzScalableReadFrom feeds ReadFrom a stream: the encoding, edited and
// resealed, then more bytes, which it must not read.
func FuzzScalableReadFrom(f *testing.F) {
	scalableSeeds(f)
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		b := resealScalable(applyEdits(data, edits, scalableFields, filterFields, subFilterAt))
		stream := append(bytes.Clone(b), "tail"...)
		var r ScalableBloomFilter
		var n int64
		var err error
		checkDecodeAllocs(t, "ReadFrom", stream, func() { n, err = r.ReadFrom(bytes.NewReader(stream)) })
		if err != nil {
			if r.filters != nil {
				t.Fatal("receiver changed on error")
			}
			return
		}
		if n > int64(len(b)) {
			t.Fatalf("read %d bytes of a %d-byte encoding", n, len(b))
		}
		var d ScalableBloomFilter
		if err := d.UnmarshalBinary(stream[:n]); err != nil || !d.Equal(&r) {
			t.Fatalf("UnmarshalBinary disagrees with ReadFrom: %v", err)
		}
	})
}

// grownFilter is a scalable filter grown from 1,000 to 10^7 keys.
func grownFilter(b *testing.B, n uint64) *ScalableBloomFilter {
	s := mustScalable(b, 1000, 0.01)
	buf := make([]byte, 16)
	for i := range n {
		s.Add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
	}
	return s
}

// BenchmarkScalable compares a filter grown from 1,000 to n keys with a
// single filter sized for n, on the same keys.
func BenchmarkScalable(b *testing.B) {
	for _, n := range []uint64{1e5, 1e7} {
		name := fmt.Sprintf("n=%g/p=0.01", float64(n))
		s := grownFilter(b, n)
		single := mustNew(b, n, 0.01)
		buf := make([]byte, 16)
		for i := range n {
			single.Add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
		}
		const keySet = 1 << 20
		absent := benchKeys(1, keySet)
		present := benchKeys(0, keySet)
		b.Logf("%s: %d sub-filters, %.2f bits/key", name, s.NumFilters(), float64(s.Bits())/float64(n))
		b.Run(name+"/TestAbsent/scalable", func(b *testing.B) {
			for i := range b.N {
				sink = s.Test(absent[i&(keySet-1)])
			}
		})
		b.Run(name+"/TestAbsent/one-by-one", func(b *testing.B) {
			// The same filter probed one sub-filter after the other, newest
			// first: what the side-by-side probing replaced.
			filters, _ := s.subFilters()
			for i := range b.N {
				h1, h2 := murmur3.Sum128WithSeed(absent[i&(keySet-1)], s.seed)
				found := false
				for j := len(filters) - 1; j >= 0 && !found; j-- {
					found = classic.Test(filters[j].words, filters[j].m, filters[j].k, h1, h2)
				}
				sink = found
			}
		})
		b.Run(name+"/TestAbsent/single", func(b *testing.B) {
			for i := range b.N {
				sink = single.Test(absent[i&(keySet-1)])
			}
		})
		b.Run(name+"/TestPresent/scalable", func(b *testing.B) {
			for i := range b.N {
				sink = s.Test(present[i%min(keySet, int(n))])
			}
		})
		b.Run(name+"/TestPresent/single", func(b *testing.B) {
			for i := range b.N {
				sink = single.Test(present[i%min(keySet, int(n))])
			}
		})
	}
	// Amortised Add: grow from 1,000 to 10^6 keys, against adding the same
	// keys to a single filter sized for 10^6. b.N counts whole fills.
	const fill = 1_000_000
	keys := benchKeys(2, fill)
	b.Run("Add/n=1e+06/scalable", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s := mustScalable(b, 1000, 0.01)
			for _, k := range keys {
				s.Add(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fill, "ns/key")
	})
	b.Run("Add/n=1e+06/single", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			f := mustNew(b, fill, 0.01)
			for _, k := range keys {
				f.Add(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/fill, "ns/key")
	})
}

// TestScalableBatchMatchesLoop checks on random scalable filters, plain and
// concurrent, linear and exponential, that every batch call answers what the
// loop of single calls answers and leaves the filter byte for byte as the
// loop leaves it, sub-filters included, with batches long enough to make it
// grow several times in one call.
func TestScalableBatchMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 0))
	configs := 40
	if testing.Short() {
		configs = 10
	}
	maxGrowth := 0
	for range configs {
		initial := uint64(1 + rng.IntN(40))
		p := math.Exp(-rng.Float64()*math.Log(1e6)) * 0.5
		opts := []Option{Seed(rng.Uint32())}
		if rng.IntN(2) == 0 {
			opts = append(opts, Linear(0.5+rng.Float64()*2))
		} else {
			opts = append(opts, Exponential(1.1+rng.Float64()*2))
		}
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
	if maxGrowth < 3 {
		t.Errorf("no batch made a filter grow more than %d times", maxGrowth)
	}
}

// BenchmarkScalableBatch compares the batch calls of a ScalableBloomFilter
// grown from 1,000 to 10^7 keys at p = 0.01 with the loops of single calls,
// side by side, in batches of benchBatch 16-byte keys (see benchPair).
// AddGrowth grows two filters from 1,000 to 10^7 keys together, chunk by
// chunk, one by a loop of Add and one by AddMany, and reports the median
// ratio over the chunks; b.N counts whole growths of seconds each (run it
// with -benchtime 1x). n=1e+07/TestAbsent and TestPresent test absent keys
// and present keys spread over all sub-filters.
func BenchmarkScalableBatch(b *testing.B) {
	const n = 10_000_000
	keyAt := func(i uint64) []byte { return keyOf(make([]byte, 16), 0, i*0x9E3779B97F4A7C15) }
	b.Run("AddGrowth", func(b *testing.B) {
		var tLoop, tBatch, ratio []float64
		chunk := make([][]byte, benchBatch)
		for range b.N {
			loop, batch := mustScalable(b, 1000, 0.01), mustScalable(b, 1000, 0.01)
			for c := 0; c*benchBatch < n; c++ {
				for i := range chunk {
					chunk[i] = keyAt(uint64(c*benchBatch + i))
				}
				var dl, db time.Duration
				if c&1 == 0 {
					t0 := time.Now()
					for _, k := range chunk {
						loop.Add(k)
					}
					t1 := time.Now()
					batch.AddMany(chunk)
					dl, db = t1.Sub(t0), time.Since(t1)
				} else {
					t0 := time.Now()
					batch.AddMany(chunk)
					t1 := time.Now()
					for _, k := range chunk {
						loop.Add(k)
					}
					db, dl = t1.Sub(t0), time.Since(t1)
				}
				tLoop = append(tLoop, float64(dl.Nanoseconds())/benchBatch)
				tBatch = append(tBatch, float64(db.Nanoseconds())/benchBatch)
				ratio = append(ratio, float64(dl)/float64(db))
			}
			if !loop.Equal(batch) {
				b.Fatal("the filters grown by Add and by AddMany differ")
			}
		}
		var sumLoop, sumBatch float64
		for i := range tLoop {
			sumLoop += tLoop[i]
			sumBatch += tBatch[i]
		}
		b.ReportMetric(sumLoop/float64(len(tLoop)), "loop-ns/key")
		b.ReportMetric(sumBatch/float64(len(tBatch)), "batch-ns/key")
		b.ReportMetric(median(ratio), "speedup")
	})
	b.Run("n=1e+07", func(b *testing.B) {
		s := mustScalable(b, 1000, 0.01)
		const keySet = 1 << 20
		all := make([][]byte, 0, benchBatch)
		for i := range uint64(n) {
			all = append(all, keyAt(i))
			if len(all) == benchBatch || i == n-1 {
				s.AddMany(all)
				all = all[:0]
			}
		}
		present := make([][]byte, keySet)
		for i := range present {
			present[i] = keyAt(uint64(i) * (n / keySet)) // spread over all sub-filters
		}
		absent := benchKeys(1, keySet)
		results := make([]bool, benchBatch)
		for _, set := range []struct {
			name string
			keys [][]byte
		}{{"TestAbsent", absent}, {"TestPresent", present}} {
			b.Run(set.name, func(b *testing.B) {
				benchPair(b, set.keys, func(keys [][]byte) {
					for _, k := range keys {
						sink = s.Test(k)
					}
				}, func(keys [][]byte) { s.TestMany(keys, results) })
			})
		}
	})
}

// BenchmarkBlockedScalableBatch measures issue 14's targets for a
// ScalableBloomFilter with Blocked grown from 1,000 to 10^7 keys at p = 0.01,
// side by side with the reference, one classic BloomFilter sized for 10^7
// keys and holding the same keys, in batches of benchBatch 16-byte keys on
// alternate chunks (the order swapped every time). TestAbsent reports the
// median over chunks of TestMany's time per absent key over the reference's
// single-key Test on the same keys ("x-reference", target <= 1.5); b.N
// counts passes over 2^20 absent keys.
// AddGrowth grows three filters together, chunk by chunk: the blocked
// scalable one by AddMany, another by a loop of Add, and the reference by a
// loop of Add; it reports AddMany's time over the loop's ("x-own-Add",
// target <= 2) and over the reference's ("x-reference"), as medians over the
// chunks. Both report bits per key of the blocked scalable filter at 10^7
// keys beside the classic default's with as many sub-filters (computed from
// their sizes).
//
//	go test -run XXX -bench BlockedScalableBatch -benchtime 1x
func BenchmarkBlockedScalableBatch(b *testing.B) {
	const n, p = 10_000_000, 0.01
	keyAt := func(buf []byte, i uint64) []byte { return keyOf(buf, 0, i*0x9E3779B97F4A7C15) }
	// classicBits returns the bits per key of n keys in the classic
	// default's first filters sub-filters.
	classicBits := func(filters int) float64 {
		s := mustScalable(b, 1000, p)
		var bits uint64
		for i := range filters {
			_, _, m, _, err := s.subSize(i)
			if err != nil {
				b.Fatal(err)
			}
			bits += m
		}
		return float64(bits) / n
	}
	chunk := make([][]byte, benchBatch)
	for i := range chunk {
		chunk[i] = make([]byte, 16)
	}
	fill := func(c int) [][]byte {
		for i := range chunk {
			keyAt(chunk[i], uint64(c*benchBatch+i))
		}
		return chunk
	}
	// timed runs first and second on alternate calls and returns their times.
	flip := 0
	timed := func(first, second func()) (t1, t2 float64) {
		flip++
		if flip&1 == 0 {
			t2, t1 = timed2(second, first)
			return t1, t2
		}
		return timed2(first, second)
	}
	b.Run("AddGrowth", func(b *testing.B) {
		var own, ref []float64
		var s *ScalableBloomFilter
		for range b.N {
			s = mustScalable(b, 1000, p, Blocked())
			loop := mustScalable(b, 1000, p, Blocked())
			reference := mustNew(b, n, p)
			for c := 0; c*benchBatch < n; c++ {
				keys := fill(c)
				tBatch, tLoop := timed(func() { s.AddMany(keys) }, func() {
					for _, k := range keys {
						loop.Add(k)
					}
				})
				tRef, _ := timed(func() {
					for _, k := range keys {
						reference.Add(k)
					}
				}, func() {})
				own, ref = append(own, tBatch/tLoop), append(ref, tBatch/tRef)
			}
			if !s.Equal(loop) {
				b.Fatal("the filters grown by Add and by AddMany differ")
			}
		}
		b.ReportMetric(median(own), "x-own-Add")
		b.ReportMetric(median(ref), "x-reference")
		b.ReportMetric(float64(s.Bits())/n, "bits/key")
		b.ReportMetric(classicBits(s.NumFilters()), "classic-bits/key")
	})
	b.Run("TestAbsent", func(b *testing.B) {
		s := mustScalable(b, 1000, p, Blocked())
		reference := mustNew(b, n, p)
		for c := 0; c*benchBatch < n; c++ {
			keys := fill(c)
			s.AddMany(keys)
			reference.AddMany(keys)
		}
		absent := benchKeys(1, 1<<20)
		results := make([]bool, benchBatch)
		var ratio, tS, tR []float64
		b.ResetTimer()
		for range b.N { // all 2^20 absent keys
			for c := range len(absent) / benchBatch {
				keys := absent[c*benchBatch : (c+1)*benchBatch]
				batch, single := timed(func() { s.TestMany(keys, results) }, func() {
					for _, k := range keys {
						sink = reference.Test(k)
					}
				})
				ratio, tS, tR = append(ratio, batch/single), append(tS, batch/benchBatch), append(tR, single/benchBatch)
			}
		}
		b.StopTimer()
		b.ReportMetric(median(tS), "TestMany-ns/key")
		b.ReportMetric(median(tR), "reference-ns/key")
		b.ReportMetric(median(ratio), "x-reference")
		b.ReportMetric(float64(s.Bits())/n, "bits/key")
		b.ReportMetric(classicBits(s.NumFilters()), "classic-bits/key")
	})
}

// timed2 runs first, then second, and returns their times in ns.
func timed2(first, second func()) (t1, t2 float64) {
	t0 := time.Now()
	first()
	t := time.Now()
	second()
	return float64(t.Sub(t0).Nanoseconds()), float64(time.Since(t).Nanoseconds())
}

// TestScalableDefaults computes the table in docs/scalable.md: bits per key averaged
// over final sizes from 10^4 to 10^7 keys (301 log-spaced sizes), starting at
// 1,000 keys with p = 0.01, for the growth settings the defaults were chosen
// from. The sizes are what NewScalable allocates, sub-filter by sub-filter. It
// fails if the defaults stop being the cheapest setting measured.
func TestScalableDefaults(t *testing.T) {
	bitsPerKey := func(opts ...Option) float64 {
		s := mustScalable(t, 1000, 0.01, opts...)
		var sum float64
		for e := 0; e <= 300; e++ {
			n := uint64(math.Round(math.Pow(10, 4+float64(e)/100)))
			var bits, held uint64
			for i := 0; held < n; i++ {
				c, _, m, _, err := s.subSize(i)
				if err != nil {
					t.Fatal(err)
				}
				bits += m
				held += c
			}
			sum += float64(bits) / float64(n)
		}
		return sum / 301
	}
	best, bestName := math.Inf(1), ""
	for _, g := range []float64{1.5, 2, 4} {
		row := fmt.Sprintf("| Exponential %v |", g)
		for _, r := range []float64{0.5, 0.8, 0.85, 0.9, 0.95} {
			b := bitsPerKey(Exponential(g), Tightening(r))
			row += fmt.Sprintf(" %.1f |", b)
			if b < best {
				best, bestName = b, fmt.Sprintf("Exponential(%v)/Tightening(%v)", g, r)
			}
		}
		t.Log(row)
	}
	def := bitsPerKey()
	t.Logf("defaults: %.2f bits/key; cheapest measured: %s at %.2f", def, bestName, best)
	if def > best {
		t.Errorf("the defaults cost %.2f bits/key, but %s costs %.2f", def, bestName, best)
	}
}

// ---- concurrency ----

// TestScalableConcurrentMixed runs every Add, Test and TestAndAdd form from
// 16 goroutines at once on a filter that grows many times meanwhile, while
// another goroutine copies and encodes it: no added key may test absent,
// during the run or after it.
func TestScalableConcurrentMixed(t *testing.T) {
	s := mustScalable(t, 1000, 0.01, Concurrent())
	var snapshots int
	hammer(t, s, func() {
		snapshots++
		enc, err := s.MarshalBinary()
		if err != nil {
			t.Error(err)
			return
		}
		var dec ScalableBloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
		c := s.Clone()
		_ = c.Equal(s) || s.Saturated() || s.Capacity() < s.Count() || s.EstimatedErrorRate() > 1
	})
	t.Logf("Count %d in %d sub-filters, %d snapshots during the run", s.Count(), s.NumFilters(), snapshots)
	if s.NumFilters() < 10 {
		t.Errorf("only %d sub-filters: the test should make the filter grow", s.NumFilters())
	}
	if s.Count() > s.Capacity() {
		t.Errorf("Count %d exceeds Capacity %d", s.Count(), s.Capacity())
	}
}

// TestScalableConcurrentTestAndAddExactlyOnce races TestAndAdd on the same
// 10^4 keys while the filter grows from 100 keys.
func TestScalableConcurrentTestAndAddExactlyOnce(t *testing.T) {
	for round := range 5 {
		exactlyOnce(t, mustScalable(t, 100, 1e-9, Concurrent(), Seed(uint32(round))), 10_000)
		if t.Failed() {
			break
		}
	}
}

// TestScalableConcurrentGrowth adds distinct keys with TestAndAdd from 16
// goroutines and checks that the filter grew exactly as a serial run that
// inserts as many keys: every sub-filter but the newest filled to its
// capacity, none past it, none added early, and so the same sub-filters and
// Capacity; Count is the number of calls that reported their key new. The
// error rate is tiny so that nearly every key is new and the serial run has
// the same keys; the smallest sub-filters still make a rare false positive,
// at keys that depend on the order.
func TestScalableConcurrentGrowth(t *testing.T) {
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	for _, tc := range []struct {
		name    string
		initial uint64
		keys    int
		opts    []Option
	}{
		{"exponential/initial=10", 10, 20_000, nil},
		{"linear/initial=16", 16, 12_000, []Option{Linear(1)}},
		{"exponential=1.1/initial=20", 20, 20_000, []Option{Exponential(1.1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range rounds {
				s := mustScalable(t, tc.initial, 1e-9, append(tc.opts, Concurrent(), Classic())...)
				news := make([]uint64, concurrentWorkers)
				runWorkers(concurrentWorkers, func(g int) {
					buf := make([]byte, 16)
					for i := g; i < tc.keys; i += concurrentWorkers {
						if !s.TestAndAdd(keyOf(buf, 0, uint64(i))) {
							news[g]++
						}
					}
				})
				var inserted uint64
				for _, n := range news {
					inserted += n
				}
				if s.Count() != inserted || inserted+3 < uint64(tc.keys) {
					t.Fatalf("round %d: Count %d, %d of %d keys reported new", round, s.Count(), inserted, tc.keys)
				}
				filters, _ := s.subFilters()
				for i, f := range filters {
					newest := i == len(filters)-1
					if c := f.Count(); c > f.capacity || !newest && c != f.capacity || newest && i > 0 && c == 0 {
						t.Fatalf("round %d: sub-filter %d of %d holds %d keys, capacity %d", round, i, len(filters), c, f.capacity)
					}
				}
				serial := mustScalable(t, tc.initial, 1e-9, append(tc.opts, Classic())...)
				buf := make([]byte, 16)
				for i := uint64(0); serial.Count() < inserted; i++ {
					serial.Add(keyOf(buf, 0, i))
				}
				if s.NumFilters() != serial.NumFilters() || s.Capacity() != serial.Capacity() {
					t.Fatalf("round %d: %d sub-filters, Capacity %d; serially %d, %d", round,
						s.NumFilters(), s.Capacity(), serial.NumFilters(), serial.Capacity())
				}
				for i := range tc.keys {
					if !s.Test(keyOf(buf, 0, uint64(i))) {
						t.Fatalf("round %d: key %d lost", round, i)
					}
				}
				// The keys went into the sub-filters in another order than
				// serially, so the bits differ; the decoder checks the structure.
				enc, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				var dec ScalableBloomFilter
				if err := dec.UnmarshalBinary(enc); err != nil || !dec.Equal(s) {
					t.Fatalf("round %d: round trip: %v", round, err)
				}
				t.Logf("round %d: %d keys, %d false positives: %d sub-filters, Capacity %d",
					round, tc.keys, uint64(tc.keys)-inserted, s.NumFilters(), s.Capacity())
			}
		})
	}
}

// TestScalableConcurrentMode checks that the mode survives copying and
// decoding and changes neither the encoding nor Equal.
func TestScalableConcurrentMode(t *testing.T) {
	s := mustScalable(t, 10, 0.01, Concurrent())
	plain := mustScalable(t, 10, 0.01)
	for i := range 100 {
		s.AddString(fmt.Sprint(i))
		plain.AddString(fmt.Sprint(i))
	}
	if !s.Equal(plain) || !plain.Equal(s) {
		t.Fatal("a concurrent filter is not Equal to the same plain one")
	}
	enc, _ := s.MarshalBinary()
	want, _ := plain.MarshalBinary()
	if !bytes.Equal(enc, want) {
		t.Fatal("a concurrent filter encodes differently")
	}
	var w bytes.Buffer
	if _, err := s.WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), enc) {
		t.Errorf("WriteTo differs from MarshalBinary: %v", err)
	}
	if s.EncodedSize() != len(enc) {
		t.Errorf("EncodedSize = %d, encoding has %d bytes", s.EncodedSize(), len(enc))
	}
	decoded := mustScalable(t, 1, 0.5, Concurrent())
	if err := decoded.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	read := mustScalable(t, 1, 0.5, Concurrent())
	if _, err := read.ReadFrom(bytes.NewReader(enc)); err != nil {
		t.Fatal(err)
	}
	var zero ScalableBloomFilter
	if err := zero.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		g          *ScalableBloomFilter
		concurrent bool
	}{
		"clone": {s.Clone(), true}, "decoded into concurrent": {decoded, true},
		"read into concurrent": {read, true}, "decoded into zero": {&zero, false},
	} {
		if (tc.g.conc != nil) != tc.concurrent {
			t.Errorf("%s: concurrent = %v, want %v", name, tc.g.conc != nil, tc.concurrent)
		}
		if !tc.g.Equal(plain) || !tc.g.TestString("7") {
			t.Errorf("%s: differs from the original", name)
		}
		// Both go on growing as the original would.
		for i := 100; i < 300; i++ {
			tc.g.AddString(fmt.Sprint(i))
		}
	}
	for i := 100; i < 300; i++ {
		plain.AddString(fmt.Sprint(i))
	}
	if !decoded.Equal(plain) || !zero.Equal(plain) {
		t.Error("decoded filters grew differently from the original")
	}
	c := s.Clone()
	c.AddString("new")
	if s.Equal(c) || s.Count() != 100 {
		t.Error("clone shares state with the original")
	}
	s.Clear()
	if s.NumFilters() != 1 || s.Count() != 0 || s.TestString("7") || s.Saturated() {
		t.Error("Clear did not reset the filter")
	}
	if !c.TestString("7") {
		t.Error("Clear changed a clone")
	}
}

func TestScalableConcurrentHotPathDoesNotAllocate(t *testing.T) {
	s := mustScalable(t, 1e6, 0.01, Concurrent())
	long := strings.Repeat("https://example.com/path/", 5)
	checkHotPathAllocs(t, s, freshKeys(), long, long)
}

// BenchmarkScalableConcurrent is BenchmarkConcurrent for a
// ScalableBloomFilter that starts at 10^6 keys:
//
//	go test -run XXX -bench ScalableConcurrent -cpu 1,2,4 .
func BenchmarkScalableConcurrent(b *testing.B) {
	const n, p = 1_000_000, 0.01
	benchConcurrent(b, map[string]func(b *testing.B) parallelFilter{
		"concurrent": func(b *testing.B) parallelFilter { return mustScalable(b, n, p, Concurrent()) },
		"rwmutex": func(b *testing.B) parallelFilter {
			return &rwFilter[*ScalableBloomFilter]{f: mustScalable(b, n, p)}
		},
	})
}

// TestScalableConcurrentSnapshotMidInsert copies and encodes a concurrent
// filter while a key has taken its slot in a new sub-filter but not yet set
// its bits: the results must still be valid.
func TestScalableConcurrentSnapshotMidInsert(t *testing.T) {
	s := mustScalable(t, 10, 0.01, Concurrent())
	for i := range 10 {
		s.AddString(fmt.Sprint(i))
	}
	c := s.conc.chain.Load()
	if newest := s.reserve(c); newest == c.filters[0] || newest.setBits() != 0 {
		t.Fatal("reserve did not grow the filter")
	}
	enc, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if _, err := s.WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), enc) {
		t.Fatalf("WriteTo differs from MarshalBinary: %v", err)
	}
	var dec ScalableBloomFilter
	if err := dec.UnmarshalBinary(enc); err != nil {
		t.Fatalf("encoding made mid-insert does not decode: %v", err)
	}
	clone, _ := s.Clone().MarshalBinary()
	if !bytes.Equal(clone, enc) {
		t.Error("a clone made mid-insert encodes differently")
	}
	// The reserved key counts once it has set a bit, not before.
	if dec.NumFilters() != 2 || dec.Count() != 10 || s.Count() != 10 {
		t.Errorf("decoded %d sub-filters, Count %d (filter: %d)", dec.NumFilters(), dec.Count(), s.Count())
	}
}

// TestScalableSideBySideProbing checks that probing the sub-filters side by
// side answers exactly as testing them one by one, with more than 64
// sub-filters, with sub-filters of 1 to many hash functions, and with every
// sub-filter read four positions deep in the first round or none.
func TestScalableSideBySideProbing(t *testing.T) {
	for _, conc := range []bool{false, true} {
		// From 0.99 with Tightening(0.6), k goes from 1 to 54 in 80 steps.
		opts := []Option{Linear(0.05), Tightening(0.6)}
		if conc {
			opts = append(opts, Concurrent())
		}
		s := mustScalable(t, 10, 0.99, opts...)
		buf := make([]byte, 16)
		var n uint64
		for ; s.NumFilters() < 80; n++ {
			s.Add(keyOf(buf, 0, n))
		}
		filters, _ := s.subFilters()
		if filters[0].k != 1 || filters[79].k < 50 {
			t.Fatalf("hash counts from %d to %d, want from 1 to >= 50", filters[0].k, filters[79].k)
		}
		oneByOne := func(k []byte) bool {
			for _, f := range filters {
				if f.Test(k) {
					return true
				}
			}
			return false
		}
		var present, absent int
		for i := range n + 200_000 {
			k := keyOf(buf, 0, i)
			got := s.Test(k)
			if got != oneByOne(k) {
				t.Fatalf("concurrent=%v key %d: Test = %v, one by one %v", conc, i, got, !got)
			}
			h1, h2 := murmur3.Sum128WithSeed(k, s.seed)
			if subs := subsOf(filters); classic.AnyHolds(subs, h1, h2, 0, conc) != got || classic.AnyHolds(subs, h1, h2, math.MaxUint64, conc) != got {
				t.Fatalf("concurrent=%v key %d: Test = %v, but not with all or no filters deep", conc, i, got)
			}
			if got {
				present++
			} else {
				absent++
			}
		}
		if absent == 0 || present < int(n) {
			t.Fatalf("degenerate test: %d present, %d absent", present, absent)
		}
	}
}

// resealScalable recomputes every checksum of a scalable encoding whose
// structure is intact up to where it can be followed: each sub-filter's, then
// the outer one, so that tests and fuzzing reach the checks behind them.
func resealScalable(b []byte) []byte {
	if len(b) >= format.V3HeaderSize && format.IsV3(b) {
		return resealScalableV3(b)
	}
	if len(b) < format.ScalableHeaderSize+format.CRCSize {
		return b
	}
	n := binary.LittleEndian.Uint32(b[48:])
	off := uint64(format.ScalableHeaderSize)
	for range min(n, format.MaxSubFilters) {
		if uint64(len(b)) < off+format.HeaderSize {
			break
		}
		m := binary.LittleEndian.Uint64(b[off+16:])
		if m > MaxBits {
			break
		}
		size := format.HeaderSize + 8*((m+63)/64) + format.CRCSize
		if uint64(len(b)) < off+size+format.CRCSize {
			break
		}
		reseal(b[off : off+size])
		off += size
	}
	return reseal(b)
}

// hostileScalable is the input of issue 11, item 1: one valid sub-filter of
// initial capacity 1, Exponential growth with the given scale, the
// "saturated" flag set, checksums recomputed. With scale 2.5e11 the next
// sub-filter would take about 1.08e12 bits (126 GiB), just under MaxBits.
func hostileScalable(t testing.TB, scale float64) []byte {
	t.Helper()
	s, err := NewScalable(1, 0.5, Exponential(2), Tightening(0.5))
	if err != nil {
		t.Fatal(err)
	}
	enc := encodeScalableV1(s)
	binary.LittleEndian.PutUint64(enc[16:], math.Float64bits(scale))
	enc[6] |= 1 // saturated
	return resealScalable(enc)
}

// allocated returns the bytes allocated while fn ran, not counting the
// in-block rates of the blocked layout, which are filled beforehand.
//
// Those rates are a cache of the process, not of one input: the first call
// that needs the rates of a hash count computes and keeps them (at most
// 1.24 MB for all of them, internal/blocked TestInBlockRatesMemory), and a
// fuzzed 133-byte scalable encoding whose sizing tried the first hash counts
// allocated 1.2 MB in doing so, past allocBound.
func allocated(fn func()) uint64 {
	warmBlockedRates()
	var before, after runtimeMem
	before.read()
	fn()
	after.read()
	return after.total - before.total
}

// warmBlockedRates computes the in-block rates of every hash count, once.
var warmBlockedRates = sync.OnceFunc(func() {
	for k := uint(1); k <= MaxHashes; k++ {
		BlockedFalsePositiveRate(blocked.BlockBits, k, 1<<40)
	}
})

// randomHostileHeader returns the 60 bytes of a scalable header (with room
// for the checksum, which is not checked before the header) with random
// growth parameters and an error rate in [0.3, 0.999), blocked or classic,
// as in issue 21, item 6.
func randomHostileHeader(rng *rand.Rand, blocked bool) []byte {
	b := make([]byte, format.ScalableHeaderSize+format.CRCSize)
	copy(b, format.ScalableMagic)
	binary.LittleEndian.PutUint16(b[4:], format.Version1)
	if blocked {
		binary.LittleEndian.PutUint16(b[4:], format.Version2)
		b[13] = format.LayoutBlocked
	}
	binary.LittleEndian.PutUint32(b[8:], rng.Uint32())
	scale := math.Pow(10, -9+12*rng.Float64())
	b[12] = byte(growthLinear)
	if rng.IntN(2) == 0 {
		b[12], scale = byte(growthExponential), 1+math.Pow(10, -9+10*rng.Float64())
	}
	r := rng.Float64()
	if rng.IntN(2) == 0 {
		r = 1 - math.Pow(10, -9*rng.Float64())
	}
	binary.LittleEndian.PutUint64(b[16:], math.Float64bits(scale))
	binary.LittleEndian.PutUint64(b[24:], math.Float64bits(r))
	binary.LittleEndian.PutUint64(b[32:], max(uint64(math.Pow(2, 40*rng.Float64())), 1))
	binary.LittleEndian.PutUint64(b[40:], math.Float64bits(0.3+0.699*rng.Float64()))
	binary.LittleEndian.PutUint32(b[48:], 1)
	return b
}

// TestHostileHeaderCost is issue 21, item 6: a 60-byte blocked header with a
// high error rate cost a decoder up to 0.12 s (median 1 ms) to check, classic
// ones up to 5 ms. A decoder now spends at most headerWork units of work on
// a header (about 3.6 ms on the machine of README), refusing only what
// NewScalable refuses.
//
// The test decodes random hostile headers in three passes and keeps each
// header's fastest decode, which leaves out the in-block rates computed once
// per process. The machine it runs on may be slower than that one, or busy
// (this one often runs several test binaries on its 2 vCPUs), so each decode
// is timed against a piece of reference work done just after it, as long:
// the rates blocked.Rate works out in headerWork units. The worst header must
// take at most 3 times that, to leave room for such load (a header over it
// gets ten more tries); on a quiet machine it takes about as long, and before
// the fix it took 30 times as long.
func TestHostileHeaderCost(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 300
	}
	// The reference work: calls of blocked.Rate that add up to headerWork
	// units.
	var ref []uint64
	for units := int64(0); units < headerWork; {
		w := layout.NewMeter(math.MaxInt64)
		j := uint64(len(ref))
		blocked.Rate(512*1000, 3, 500_000+j, &w)
		units += math.MaxInt64 - w.Left()
		ref = append(ref, 500_000+j)
	}
	reference := func() time.Duration {
		start := time.Now()
		for _, n := range ref {
			BlockedFalsePositiveRate(512*1000, 3, n)
		}
		return time.Since(start)
	}
	// decode returns how long one decode of b took, in units of the reference
	// work, and in time.
	decode := func(b []byte) (float64, time.Duration, error) {
		var s ScalableBloomFilter
		start := time.Now()
		err := s.UnmarshalBinary(b)
		d := time.Since(start)
		return float64(d) / float64(reference()), d, err
	}
	const limit = 3.0
	for _, blocked := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(21, 6))
		headers := make([][]byte, n)
		for i := range headers {
			headers[i] = randomHostileHeader(rng, blocked)
		}
		// Three passes, so that the three decodes of a header are apart:
		// a burst of other work on the machine does not cover all three.
		best := make([]float64, n)
		bestTime := make([]time.Duration, n)
		errs := make([]string, n)
		var first time.Duration
		for pass := range 3 {
			for i, b := range headers {
				r, d, err := decode(b)
				switch {
				case pass == 0:
					best[i], bestTime[i], errs[i], first = r, d, fmt.Sprint(err), max(first, d)
				case fmt.Sprint(err) != errs[i]:
					t.Fatalf("two decodes of %x: %v, then %v", b, errs[i], err)
				default:
					best[i], bestTime[i] = min(best[i], r), min(bestTime[i], d)
				}
			}
		}
		worst, slowest, refused := 0, time.Duration(0), 0
		for i, b := range headers {
			// Under other load a header may come out slow three times: ten
			// more tries tell that from a header that is slow.
			for try := 0; try < 10 && best[i] > limit; try++ {
				r, _, _ := decode(b)
				best[i] = min(best[i], r)
			}
			if best[i] > best[worst] {
				worst = i
			}
			slowest = max(slowest, bestTime[i])
			if strings.Contains(errs[i], "cannot keep the error rate") {
				// Refused for its growth: so would NewScalable (growthWorks,
				// unmetered) have been.
				refused++
				if hostileParams(b).growthWorks() {
					t.Errorf("a decoder refused %x, whose parameters NewScalable accepts", b)
				}
			}
		}
		t.Logf("blocked %v: %d headers, %d refused for their growth; the slowest %v at best (the slowest first decode %v), the worst %.2f times the reference work (%d units)",
			blocked, n, refused, slowest, first, best[worst], headerWork)
		if best[worst] > limit {
			t.Errorf("blocked %v: header %x took %.2f times the reference work to decode, want at most %v", blocked, headers[worst], best[worst], limit)
		}
	}
}

// hostileParams returns the parameters of the header b, unchecked.
func hostileParams(b []byte) *ScalableBloomFilter {
	return &ScalableBloomFilter{
		growth:          growth(b[12]),
		scale:           math.Float64frombits(binary.LittleEndian.Uint64(b[16:])),
		tightening:      math.Float64frombits(binary.LittleEndian.Uint64(b[24:])),
		initialCapacity: binary.LittleEndian.Uint64(b[32:]),
		errorRate:       math.Float64frombits(binary.LittleEndian.Uint64(b[40:])),
		blocked:         b[13] == format.LayoutBlocked,
	}
}

// TestScalableDecodeHostileSaturated is issue 11, item 1: before the fix the
// decoder built the next sub-filter to check the saturated flag, allocating
// 0.5 GiB at scale 1e9 and dying out of memory at 2.5e11.
func TestScalableDecodeHostileSaturated(t *testing.T) {
	for _, scale := range []float64{1e9, 2.5e11} {
		t.Run(fmt.Sprintf("scale=%g", scale), func(t *testing.T) {
			data := hostileScalable(t, scale)
			if len(data) != 120 {
				t.Fatalf("hostile input is %d bytes, want the issue's 120", len(data))
			}
			checkHostileSaturated(t, data)
			// The same in version 3.
			v3, _ := mustScalable(t, 1, 0.5, Exponential(2), Tightening(0.5)).MarshalBinary()
			binary.LittleEndian.PutUint64(v3[16:], math.Float64bits(scale))
			v3[6] |= 1
			checkHostileSaturated(t, resealScalable(v3))
		})
	}
}

func checkHostileSaturated(t *testing.T, data []byte) {
	t.Helper()
	var s ScalableBloomFilter
	if got := allocated(func() {
		if err := s.UnmarshalBinary(data); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "growth") {
			t.Errorf("UnmarshalBinary: %v, want ErrCorrupt for the growth", err)
		}
	}); got > 64<<10 {
		t.Errorf("UnmarshalBinary allocated %d bytes for %d", got, len(data))
	}
	if got := allocated(func() {
		if _, err := s.ReadFrom(bytes.NewReader(data)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "growth") {
			t.Errorf("ReadFrom: %v, want ErrCorrupt for the growth", err)
		}
	}); got > 64<<10 {
		t.Errorf("ReadFrom allocated %d bytes for %d", got, len(data))
	}
}

// TestScalableDecodeSaturatedLie sets the saturated flag on a filter whose
// parameters are valid and whose next sub-filter (10^8 keys, 114 MB) fits:
// the decoder must reject it from arithmetic, without building that
// sub-filter.
func TestScalableDecodeSaturatedLie(t *testing.T) {
	s := mustScalable(t, 1, 0.1, Exponential(1e4), Tightening(0.5))
	buf := make([]byte, 16)
	for i := uint64(0); s.NumFilters() < 2; i++ {
		s.Add(keyOf(buf, 0, i))
	}
	for _, enc := range [][]byte{encodeScalableV1(s), mustMarshal(t, s)} {
		enc[6] |= 1
		checkSaturatedLie(t, resealScalable(enc))
	}
}

func checkSaturatedLie(t *testing.T, enc []byte) {
	t.Helper()
	var d ScalableBloomFilter
	limit := uint64(2*len(enc) + 64<<10)
	if got := allocated(func() {
		if err := d.UnmarshalBinary(enc); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "saturated") {
			t.Errorf("UnmarshalBinary: %v", err)
		}
	}); got > limit {
		t.Errorf("UnmarshalBinary allocated %d bytes for a %d-byte input", got, len(enc))
	}
	if got := allocated(func() {
		if _, err := d.ReadFrom(bytes.NewReader(enc)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "saturated") {
			t.Errorf("ReadFrom: %v", err)
		}
	}); got > limit {
		t.Errorf("ReadFrom allocated %d bytes for a %d-byte input", got, len(enc))
	}
}

// TestScalableConcurrentEncodingDecodes is issue 11, item 8: with one hash
// function per sub-filter (P(1-r) above about 0.45), two keys under different
// locks could both reserve a slot for the same bit, so a sub-filter's count
// passed its set bits; the encoding clamped it, and an older sub-filter
// encoded below its capacity was rejected as not full (11 of 30 runs of 2
// goroutines x 20k keys). Every encoding must decode. Many small filters,
// whose first sub-filter of a few bits has one hash function, make the
// collision frequent; a few large runs check the same at scale.
func TestScalableConcurrentEncodingDecodes(t *testing.T) {
	small, large := 8000, 4
	if testing.Short() {
		small, large = 500, 1
	}
	for round := range small + large {
		initial, keys := uint64(4), 64
		if round >= small {
			initial, keys = 2000, 20_000
		}
		s := mustScalable(t, initial, 0.9, Tightening(0.5), Concurrent(), Seed(uint32(round)))
		if filters, _ := s.subFilters(); filters[0].k != 1 {
			t.Fatalf("first sub-filter has %d hash functions, want 1", filters[0].k)
		}
		workers := 2 + round%3
		news := make([]uint64, workers)
		var ready atomic.Int32
		runWorkers(workers, func(g int) {
			buf := make([]byte, 16)
			// Start together, so that the first sub-filter fills under
			// contention.
			for ready.Add(1); ready.Load() < int32(workers); {
				runtime.Gosched()
			}
			for i := g; i < keys; i += workers {
				if !s.TestAndAdd(keyOf(buf, uint64(round), uint64(i))) {
					news[g]++
				}
			}
		})
		var inserted uint64
		for _, n := range news {
			inserted += n
		}
		filters, _ := s.subFilters()
		for i, f := range filters {
			if c, set := f.Count(), f.setBits(); c > set || c > f.capacity || i < len(filters)-1 && c != f.capacity {
				t.Fatalf("round %d: sub-filter %d of %d: count %d, %d set bits, capacity %d", round, i, len(filters), c, set, f.capacity)
			}
		}
		if s.Count() != inserted {
			t.Fatalf("round %d: Count %d, %d keys reported new", round, s.Count(), inserted)
		}
		enc, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d ScalableBloomFilter
		if err := d.UnmarshalBinary(enc); err != nil || !d.Equal(s) {
			t.Fatalf("round %d (%d workers, %d sub-filters): own encoding does not decode: %v", round, workers, len(filters), err)
		}
		var w bytes.Buffer
		s.WriteTo(&w)
		if _, err := d.ReadFrom(&w); err != nil {
			t.Fatalf("round %d: ReadFrom: %v", round, err)
		}
	}
}

// TestScalableZeroValue checks every exported method of a zero
// ScalableBloomFilter against the type's doc. Clear used to panic with an
// index out of range and EncodedSize to report 60 bytes.
func TestScalableZeroValue(t *testing.T) {
	var s ScalableBloomFilter
	g := mustScalable(t, 10, 0.1)
	panics := func(fn func()) zeroCase { return zeroCase{true, func() string { fn(); return "" }} }
	returns := func(fn func() string) zeroCase { return zeroCase{false, fn} }
	checkZeroValue(t, reflect.TypeOf(&s), errZeroScalable, map[string]zeroCase{
		"Add":              panics(func() { s.Add([]byte("x")) }),
		"AddString":        panics(func() { s.AddString("x") }),
		"Test":             panics(func() { s.Test([]byte("x")) }),
		"TestString":       panics(func() { s.TestString("x") }),
		"TestAndAdd":       panics(func() { s.TestAndAdd(nil) }),
		"TestAndAddString": panics(func() { s.TestAndAddString("x") }),
		// The batch calls panic once there is a key; with none they do
		// nothing (TestBatchZeroValue).
		"AddMany":               panics(func() { s.AddMany([][]byte{nil}) }),
		"AddManyStrings":        panics(func() { s.AddManyStrings([]string{"x"}) }),
		"TestMany":              panics(func() { s.TestMany([][]byte{nil}, nil) }),
		"TestManyStrings":       panics(func() { s.TestManyStrings([]string{"x"}, nil) }),
		"TestAndAddMany":        panics(func() { s.TestAndAddMany([][]byte{nil}, nil) }),
		"TestAndAddManyStrings": panics(func() { s.TestAndAddManyStrings([]string{"x"}, nil) }),
		"AddHash":               panics(func() { s.AddHash(1) }),
		"TestHash":              panics(func() { s.TestHash(1) }),
		"TestAndAddHash":        panics(func() { s.TestAndAddHash(1) }),
		"AddManyHashes":         panics(func() { s.AddManyHashes([]uint64{1}) }),
		"TestManyHashes":        panics(func() { s.TestManyHashes([]uint64{1}, nil) }),
		"TestAndAddManyHashes":  panics(func() { s.TestAndAddManyHashes([]uint64{1}, nil) }),
		"Clone":                 panics(func() { s.Clone() }),
		"Count":                 returns(func() string { return zeroIs(s.Count()) }),
		"Capacity":              returns(func() string { return zeroIs(s.Capacity()) }),
		"ErrorRate":             returns(func() string { return zeroIs(s.ErrorRate()) }),
		"InitialCapacity":       returns(func() string { return zeroIs(s.InitialCapacity()) }),
		"Seed":                  returns(func() string { return zeroIs(s.Seed()) }),
		"Blocked":               returns(func() string { return zeroIs(s.Blocked()) }),
		"Layout":                returns(func() string { return zeroIs(s.Layout()) }),
		"EstimatedErrorRate":    returns(func() string { return zeroIs(s.EstimatedErrorRate()) }),
		"Bits":                  returns(func() string { return zeroIs(s.Bits()) }),
		"NumFilters":            returns(func() string { return zeroIs(s.NumFilters()) }),
		"Saturated":             returns(func() string { return zeroIs(s.Saturated()) }),
		"EncodedSize":           returns(func() string { return zeroIs(s.EncodedSize()) }),
		"Clear":                 returns(func() string { s.Clear(); return zeroIs(s.NumFilters()) }),
		"Equal": returns(func() string {
			if !s.Equal(&ScalableBloomFilter{}) || s.Equal(g) || g.Equal(&s) {
				return "Equal is wrong"
			}
			return ""
		}),
		"AppendBinary": returns(func() string {
			_, err := s.AppendBinary(nil)
			return errIs(err, nil)
		}),
		"MarshalBinary": returns(func() string {
			_, err := s.MarshalBinary()
			return errIs(err, nil)
		}),
		"WriteTo": returns(func() string {
			var w bytes.Buffer
			n, err := s.WriteTo(&w)
			return errIs(err, nil) + zeroIs(n) + zeroIs(w.Len())
		}),
		"FillRatio":      returns(func() string { return zeroIs(s.FillRatio()) }),
		"EstimatedCount": returns(func() string { return zeroIs(s.EstimatedCount()) }),
		"AppendText": returns(func() string {
			b, err := s.AppendText([]byte("x"))
			return errIs(err, nil) + zeroIs(string(b[1:]))
		}),
		"MarshalText": returns(func() string {
			_, err := s.MarshalText()
			return errIs(err, nil)
		}),
		"UnmarshalText": returns(func() string {
			var h ScalableBloomFilter
			text, _ := g.MarshalText()
			if err := h.UnmarshalText(text); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
		"UnmarshalBinary": returns(func() string {
			var h ScalableBloomFilter
			enc, _ := g.MarshalBinary()
			if err := h.UnmarshalBinary(enc); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
		"ReadFrom": returns(func() string {
			var h ScalableBloomFilter
			enc, _ := g.MarshalBinary()
			if _, err := h.ReadFrom(bytes.NewReader(enc)); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
	})
}

// TestScalableRefusesGrowthThatCannotWork is issue 11, item 2: growth
// parameters that cannot work were accepted, at construction and in the
// decoder. Each must be refused with the parameter named and a bound that
// works, and that bound must work.
func TestScalableRefusesGrowthThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       uint64
		p       float64
		opts    []Option
		fix     func(bound float64) []Option // the options with the bound the error gives
		keyword string
	}{
		{"Exponential(2.5e11)/n=1/p=0.5", 1, 0.5, []Option{Tightening(0.5), Exponential(2.5e11)},
			func(b float64) []Option { return []Option{Tightening(0.5), Exponential(b)} }, "scale of at most"},
		{"Exponential(2.5e11)/n=1/p=0.01", 1, 0.01, []Option{Exponential(2.5e11)},
			func(b float64) []Option { return []Option{Exponential(b)} }, "scale of at most"},
		{"Linear(1e12)/n=1000", 1000, 0.01, []Option{Linear(1e12)},
			func(b float64) []Option { return []Option{Linear(b)} }, "scale of at most"},
		{"Tightening(5e-324)", 1000, 0.01, []Option{Tightening(5e-324)},
			func(b float64) []Option { return []Option{Tightening(b)} }, "Tightening of at least"},
		{"Tightening(1e-160)/p=1e-6", 10, 1e-6, []Option{Tightening(1e-160)},
			func(b float64) []Option { return []Option{Tightening(b)} }, "Tightening of at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewScalable(tc.n, tc.p, tc.opts...)
			if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), tc.keyword) {
				t.Fatalf("NewScalable: %v, want an ErrInvalidParameter giving the %s", err, tc.keyword)
			}
			msg := err.Error()
			var bound float64
			if _, err := fmt.Sscan(msg[strings.LastIndex(msg, " ")+1:], &bound); err != nil {
				t.Fatalf("no bound in %q", msg)
			}
			s, err := NewScalable(tc.n, tc.p, tc.fix(bound)...)
			if err != nil {
				t.Fatalf("the bound the error gives, %v, does not work: %v", bound, err)
			}
			if s.NumFilters() != 1 {
				t.Fatal("not a new filter")
			}
			// The same parameters in an encoding: the decoder refuses them.
			enc, _ := s.MarshalBinary()
			var scale, tight float64 = s.scale, s.tightening
			settings, _ := newSettings(tc.opts)
			if settings.growth != growthNone {
				scale = settings.scale
			}
			if settings.tightening != 0 {
				tight = settings.tightening
			}
			binary.LittleEndian.PutUint64(enc[16:], math.Float64bits(scale))
			binary.LittleEndian.PutUint64(enc[24:], math.Float64bits(tight))
			resealScalable(enc)
			var d ScalableBloomFilter
			if err := d.UnmarshalBinary(enc); !errors.Is(err, ErrCorrupt) {
				t.Errorf("UnmarshalBinary: %v, want ErrCorrupt", err)
			}
			if _, err := d.ReadFrom(bytes.NewReader(enc)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ReadFrom: %v, want ErrCorrupt", err)
			}
		})
	}
	for name, opts := range map[string][]Option{
		"Tightening twice":        {Tightening(0.5), Tightening(0.9)},
		"Linear then Exponential": {Linear(1), Exponential(2)},
		"Exponential twice":       {Exponential(2), Exponential(3)},
	} {
		if _, err := NewScalable(100, 0.01, opts...); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: %v, want ErrInvalidParameter", name, err)
		}
	}
}

// TestScalableHighRateKeepsBound is issue 11, item 10: a sub-filter counts
// only keys that set a clear bit, so it fills past the rate it was sized for,
// most where that rate is high: P = 0.5 with r = 0.1 measured 0.62, and P =
// 0.9 with r = 0.1 never grew (its first sub-filter has fewer bits than
// keys) and answered "present" for everything. Such configurations must be
// refused; those accepted must keep P, measured with every sub-filter full
// (the worst moment) over several seeds. The measurement must see the 1.24x
// of P = 0.5 with r = 0.1, built here past the check.
func TestScalableHighRateKeepsBound(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	// measure returns the false-positive rate over seeds filters that
	// build makes, each filled until at least 5 sub-filters are all full.
	measure := func(t *testing.T, build func(seed uint32) *ScalableBloomFilter) (float64, uint64) {
		const absent = 40_000
		var fp, trials uint64
		buf := make([]byte, 16)
		for seed := range uint32(seeds) {
			s := build(seed)
			for i := uint64(0); s.NumFilters() < 5 || s.Count() < s.Capacity(); i++ {
				s.Add(keyOf(buf, 0, i))
				if i > 1e6 {
					break // never fills: measure it as it is
				}
			}
			for i := range uint64(absent) {
				if s.Test(keyOf(buf, 1+uint64(seed), i)) {
					fp++
				}
			}
			trials += absent
		}
		return float64(fp) / float64(trials), trials
	}
	for _, c := range []struct{ p, r float64 }{{0.5, 0.1}, {0.9, 0.1}, {0.3, 0.1}, {0.2, 0.01}} {
		t.Run(fmt.Sprintf("refused/p=%v/r=%v", c.p, c.r), func(t *testing.T) {
			_, err := NewScalable(100, c.p, Tightening(c.r))
			if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "Tightening of at least") {
				t.Errorf("NewScalable(100, %v, Tightening(%v)): %v, want it refused", c.p, c.r, err)
			}
			got, trials := measure(t, func(seed uint32) *ScalableBloomFilter {
				s := &ScalableBloomFilter{seed: seed, initialCapacity: 100, errorRate: c.p,
					growth: growthExponential, scale: DefaultScale, tightening: c.r}
				first, err := s.newSubFilter(0, 0)
				if err != nil {
					t.Fatal(err)
				}
				s.setFilters([]*BloomFilter{first})
				return s
			})
			t.Logf("built past the check: measured %.4f (%.3fx the target)", got, got/c.p)
			if within(got, c.p, trials) {
				t.Errorf("the measurement does not see the excess of a refused configuration: %.4f", got)
			}
		})
	}
	for _, c := range []struct{ p, r float64 }{{0.9, 0.5}, {0.5, 0.5}, {0.5, 0.4}, {0.2, 0.4}, {0.1, 0.4}, {0.05, 0.5}} {
		t.Run(fmt.Sprintf("p=%v/r=%v", c.p, c.r), func(t *testing.T) {
			got, trials := measure(t, func(seed uint32) *ScalableBloomFilter {
				s, err := NewScalable(100, c.p, Tightening(c.r), Seed(seed))
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return s
			})
			t.Logf("measured %.4f over %d absent keys (%.3fx the target)", got, trials, got/c.p)
			if !within(got, c.p, trials) {
				t.Errorf("measured rate %.4f exceeds the target %v", got, c.p)
			}
		})
	}
}

// TestScalableSmallStart measures filters that start with room for one key,
// whose first sub-filters are tiny, averaged over many filters (one seed
// each) grown to 10^4 keys: counting false positives where 1000 are expected
// at the target (a 1.2x excess is then 6 standard deviations away), and for
// tiny rates averaging each filter's rate for absent keys with independent
// positions, 1 - prod(1 - (set bits/m)^k) over its sub-filters. Before Size
// used the exact rate the issue measured 2.13x for Tightening(0.5) at 1e-3,
// 1.55x at 1e-4 and 2.08x at 1e-6.
func TestScalableSmallStart(t *testing.T) {
	const n = 10_000
	for _, tc := range []struct {
		p      float64
		opts   []Option
		name   string
		byFill bool
	}{
		{1e-2, nil, "p=0.01", false},
		{1e-3, []Option{Tightening(0.5)}, "p=0.001/Tightening(0.5)", false},
		{1e-4, nil, "p=1e-4", true},
		{1e-6, nil, "p=1e-6", true},
	} {
		t.Run("n=1/"+tc.name, func(t *testing.T) {
			t.Parallel()
			filters, queries := 40, uint64(1000/tc.p)/40
			if tc.byFill {
				filters, queries = 100, 0
			}
			if testing.Short() && !tc.byFill {
				filters /= 2
				queries *= 2
			}
			buf := make([]byte, 16)
			var fp uint64
			var sum, sumSq float64
			for seed := range uint32(filters) {
				s := mustScalable(t, 1, tc.p, append(tc.opts, Seed(seed*0x9E3779B1+5))...)
				for i := range uint64(n) {
					s.Add(keyOf(buf, 0, uint64(seed)<<32|i))
				}
				for i := range queries {
					if s.Test(keyOf(buf, 1, uint64(seed)<<32|i)) {
						fp++
					}
				}
				miss := 1.0
				for _, f := range s.filters {
					miss *= 1 - math.Pow(f.FillRatio(), float64(f.Hashes()))
				}
				sum += 1 - miss
				sumSq += (1 - miss) * (1 - miss)
			}
			if !tc.byFill {
				trials := uint64(filters) * queries
				got := float64(fp) / float64(trials)
				t.Logf("measured %.4g over %d queries, %.3fx the target", got, trials, got/tc.p)
				if !within(got, tc.p, trials) {
					t.Errorf("measured %.4g, %.2fx the target %g", got, got/tc.p, tc.p)
				}
				return
			}
			mean := sum / float64(filters)
			se := math.Sqrt((sumSq/float64(filters) - mean*mean) / float64(filters))
			t.Logf("%.4g ± %.2g over %d filters, %.3fx the target", mean, se, filters, mean/tc.p)
			if se > 0.05*mean {
				t.Errorf("standard error %.2g too large to see a 1.2x excess", se)
			}
			if mean > tc.p+4*se {
				t.Errorf("average rate %.4g, %.2fx the target %g", mean, mean/tc.p, tc.p)
			}
		})
	}
}

// TestScalableEstimatedErrorRateTiny is issue 13's case: one sub-filter
// holding 183,291 keys, whose own rate is about 1.6e-22. 1 - prod(1 - p_i)
// rounded that to 0.
func TestScalableEstimatedErrorRateTiny(t *testing.T) {
	s, err := NewScalable(200_000, 1e-20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 183_291 {
		s.AddString(strconv.Itoa(i))
	}
	if s.NumFilters() != 1 {
		t.Fatalf("%d sub-filters, want 1", s.NumFilters())
	}
	plain := s.filters[0].EstimatedErrorRate()
	got := s.EstimatedErrorRate()
	t.Logf("sub-filter %.3g, scalable %.3g", plain, got)
	if !(plain > 0 && plain < 1e-16) {
		t.Fatalf("sub-filter rate %v: the test needs one below 1e-16", plain)
	}
	if math.Abs(got-plain) > 1e-12*plain {
		t.Errorf("EstimatedErrorRate = %v, want the sub-filter's %v", got, plain)
	}
}

// TestScalableEstimatedErrorRateSeveral checks -expm1(sum log1p(-p_i))
// against 1 - prod(1 - p_i) where the latter is exact enough, and at the
// ends: a full sub-filter gives 1.
func TestScalableEstimatedErrorRateSeveral(t *testing.T) {
	s, err := NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		s.AddString(strconv.Itoa(i))
	}
	miss := 1.0
	for _, f := range s.filters {
		miss *= 1 - f.EstimatedErrorRate()
	}
	if got, want := s.EstimatedErrorRate(), 1-miss; math.Abs(got-want) > 1e-12 {
		t.Errorf("EstimatedErrorRate = %v, want %v", got, want)
	}
	for i := range s.filters[0].words {
		s.filters[0].words[i] = math.MaxUint64
	}
	s.filters[0].words[len(s.filters[0].words)-1] >>= (64 - s.filters[0].m%64) % 64
	if got := s.EstimatedErrorRate(); got != 1 {
		t.Errorf("with a full sub-filter EstimatedErrorRate = %v, want 1", got)
	}
}

// TestScalableFillRatioEstimatedCount checks the definitions: FillRatio is
// the set bits over all bits, EstimatedCount the sum of the sub-filters'
// estimates, math.MaxUint64 if one of them has every bit set.
func TestScalableFillRatioEstimatedCount(t *testing.T) {
	for _, conc := range []bool{false, true} {
		var opts []Option
		if conc {
			opts = append(opts, Concurrent())
		}
		s, err := NewScalable(1000, 0.01, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if s.FillRatio() != 0 || s.EstimatedCount() != 0 {
			t.Errorf("empty: FillRatio %v, EstimatedCount %d", s.FillRatio(), s.EstimatedCount())
		}
		const n = 50_000
		for i := range n {
			s.AddString(strconv.Itoa(i))
		}
		filters, _ := s.subFilters()
		var set, all, est uint64
		for _, f := range filters {
			set += f.setBits()
			all += f.m
			est += f.EstimatedCount()
		}
		if got, want := s.FillRatio(), float64(set)/float64(all); got != want {
			t.Errorf("FillRatio = %v, want %v", got, want)
		}
		if got := s.EstimatedCount(); got != est || math.Abs(float64(got)-n) > 0.02*n {
			t.Errorf("EstimatedCount = %d, want %d (about %d)", got, est, n)
		}
	}
	var zero ScalableBloomFilter
	if zero.FillRatio() != 0 || zero.EstimatedCount() != 0 {
		t.Errorf("zero value: FillRatio %v, EstimatedCount %d", zero.FillRatio(), zero.EstimatedCount())
	}
	s, _ := NewScalable(10, 0.1)
	for i := range s.filters[0].words {
		s.filters[0].words[i] = math.MaxUint64
	}
	s.filters[0].words[len(s.filters[0].words)-1] >>= (64 - s.filters[0].m%64) % 64
	if got := s.EstimatedCount(); got != math.MaxUint64 {
		t.Errorf("every bit set: EstimatedCount = %d, want MaxUint64", got)
	}
}

// TestConcurrentLockTableScales is issue 13 item 5: Concurrent gave every
// filter 64 KiB of locks, a 256-byte filter 65,807 bytes in all.
func TestConcurrentLockTableScales(t *testing.T) {
	for _, tc := range []struct {
		bits    uint64
		stripes int
		bytes   uint64 // at most, in all
	}{
		{2048, layout.MinStripes, 2048/8 + 1024 + 512},
		{1 << 20, 1 << 20 / 64 / layout.StripeWords, 1<<20/8 + 1<<20/64 + 1024},
		{1 << 26, layout.MaxStripes, 1<<26/8 + 64<<10 + 1024},
	} {
		var plainBytes uint64
		for _, conc := range []bool{false, true} {
			opts := []Option{}
			if conc {
				opts = append(opts, Concurrent())
			}
			var f *BloomFilter
			got := allocated(func() { f = mustNewWithSize(t, tc.bits, 7, opts...) })
			if !conc {
				plainBytes = got
				continue
			}
			t.Logf("%d bits: %d bytes plain, %d concurrent (%d locks)", tc.bits, plainBytes, got, f.conc.Locks.Len())
			if n := f.conc.Locks.Len(); n != tc.stripes {
				t.Errorf("%d bits: %d locks, want %d", tc.bits, n, tc.stripes)
			}
			if got > tc.bytes {
				t.Errorf("%d bits: Concurrent filter takes %d bytes, want at most %d", tc.bits, got, tc.bytes)
			}
			if c := f.Clone(); c.conc.Locks.Len() != tc.stripes {
				t.Errorf("%d bits: clone has %d locks", tc.bits, c.conc.Locks.Len())
			}
		}
	}
}

func mustNewWithSize(t testing.TB, bits uint64, hashes uint, opts ...Option) *BloomFilter {
	t.Helper()
	f, err := NewWithSize(bits, hashes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDecodeIntoConcurrentSizesLocks: decoding into a Concurrent filter of
// another size gives the decoded filter the locks its own size calls for.
func TestDecodeIntoConcurrentSizesLocks(t *testing.T) {
	big := mustNewWithSize(t, 1<<26, 3)
	enc, _ := big.MarshalBinary()
	f := mustNewWithSize(t, 64, 3, Concurrent())
	if err := f.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if n := f.conc.Locks.Len(); n != layout.MaxStripes {
		t.Errorf("decoded 2^26 bits into a small concurrent filter: %d locks, want %d", n, layout.MaxStripes)
	}
	small, _ := mustNewWithSize(t, 64, 3).MarshalBinary()
	if err := f.UnmarshalText([]byte(base64.StdEncoding.EncodeToString(small))); err != nil {
		t.Fatal(err)
	}
	if n := f.conc.Locks.Len(); n != layout.MinStripes {
		t.Errorf("decoded 64 bits into a large concurrent filter: %d locks, want %d", n, layout.MinStripes)
	}
}

// Window filters.

func mustWindow(t testing.TB, n uint64, p float64, opts ...Option) *WindowFilter {
	t.Helper()
	w, err := NewWindow(n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// windowKey is the i-th key of a test of windows: 16 bytes, distinct for
// distinct (tag, i).
func windowKey(buf *[16]byte, tag, i uint64) []byte {
	binary.LittleEndian.PutUint64(buf[:8], tag)
	binary.LittleEndian.PutUint64(buf[8:], i)
	return buf[:]
}

// TestWindowRate is the second promise, measured: a window of 20,000 keys
// (2,000 with -short)
// at p is fed 50 generations of distinct keys, and after every tenth of a
// generation the rate of absent keys is measured. Every sample must be
// within 4 standard deviations of p; the mean at the worst moment, the
// newest generation full, over the 50 generations, must be within 3, which
// the test checks is below 1.2p: a ring 1.2x over its rate fails it.
// For r = 2..16 at p = 0.01, and a few r at p = 0.001, unless -short (r = 2,
// 7, 16 at 0.01: CI runs -race -short). The
// first promise is checked on the way: the last window keys test present.
func TestWindowRate(t *testing.T) {
	type cfg struct {
		r int
		p float64
	}
	var cfgs []cfg
	for r := 2; r <= 16; r++ {
		if !testing.Short() || r == 2 || r == 7 || r == 16 {
			cfgs = append(cfgs, cfg{r, 0.01})
		}
	}
	if !testing.Short() {
		cfgs = append(cfgs, cfg{3, 0.001}, cfg{8, 0.001}, cfg{16, 0.001})
	}
	const gens = 50
	window := uint64(20_000)
	if testing.Short() {
		window = 2000 // -race -short on CI
	}
	for _, c := range cfgs {
		t.Run(fmt.Sprintf("r=%d/p=%g", c.r, c.p), func(t *testing.T) {
			w := mustWindow(t, window, c.p, Generations(c.r), Seed(uint32(c.r)))
			step := max(w.GenerationCapacity()/10, 1)
			sample := int(50 / c.p)         // absent keys per sample: 50 expected positives
			worst := int(2000 / c.p / gens) // per worst moment: 2000 in all
			sd := math.Sqrt(c.p / float64(worst*gens))
			if limit := c.p + 3*sd; limit >= 1.2*c.p {
				t.Fatalf("test too weak: limit %v does not rule out 1.2p", limit)
			}
			var buf [16]byte
			probe := uint64(0)
			rate := func(n int) float64 {
				fp := 0
				for range n {
					probe++
					if w.Test(windowKey(&buf, 2, probe)) {
						fp++
					}
				}
				return float64(fp) / float64(n)
			}
			var worstSum float64
			added := uint64(0)
			for range gens {
				for s := uint64(0); s < w.GenerationCapacity(); s += step {
					for range min(step, w.GenerationCapacity()-s) {
						w.Add(windowKey(&buf, 1, added))
						added++
					}
					if got, sd := rate(sample), math.Sqrt(c.p/float64(sample)); got > c.p+4*sd {
						t.Fatalf("after %d keys: rate %v above %v + 4 sd", added, got, c.p)
					}
				}
				// The newest generation is full: the worst moment.
				worstSum += rate(worst)
				for i := added - min(added, window); i < added; i++ {
					if !w.Test(windowKey(&buf, 1, i)) {
						t.Fatalf("key %d of the last %d added (of %d) absent", i, window, added)
					}
				}
			}
			if got := worstSum / gens; got > c.p+3*sd {
				t.Errorf("mean rate at the worst moment %v above %v + 3 sd (%v)", got, c.p, sd)
			} else {
				t.Logf("mean rate at the worst moment %.5f (target %g, %.2fx)", got, c.p, got/c.p)
			}
			if w.Rotations() < uint64(gens-c.r-1) {
				t.Fatalf("%d rotations in %d generations' keys", w.Rotations(), gens)
			}
		})
	}
}

// TestWindowLastKeys checks the first promise through the public API with
// the real sizing, after every addition: windows of 1 to 300 keys, r chosen
// and forced, keys distinct or repeated.
func TestWindowLastKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []uint64{1, 2, 17, 300} {
		for _, r := range []int{0, 2, 5, 16} {
			for _, pool := range []uint64{0, n + 1} {
				opts := []Option{}
				if r != 0 {
					opts = append(opts, Generations(r))
				}
				w := mustWindow(t, n, 0.01, opts...)
				var last []uint64
				var buf [16]byte
				for i := range 3*uint64(w.Generations())*w.GenerationCapacity() + 10 {
					key := i
					if pool != 0 {
						key = rng.Uint64N(pool)
					}
					if i%2 == 0 {
						w.Add(windowKey(&buf, 0, key))
					} else {
						w.TestAndAddHash(key) // another key space
						key |= 1 << 63
					}
					last = append(last, key)
					if uint64(len(last)) > n {
						last = last[1:]
					}
					for _, k := range last {
						in := false
						if k>>63 != 0 {
							in = w.TestHash(k &^ (1 << 63))
						} else {
							in = w.Test(windowKey(&buf, 0, k))
						}
						if !in {
							t.Fatalf("n=%d r=%d pool=%d: a key of the last %d added is absent at step %d", n, w.Generations(), pool, n, i)
						}
					}
				}
			}
		}
	}
}

// TestWindowMemory measures the bits per window key from the heap at 10^7
// keys: at most 17 at 1% and 25 at 0.1%.
func TestWindowMemory(t *testing.T) {
	for _, c := range []struct {
		p, max float64
	}{{0.01, 17}, {0.001, 25}} {
		const n = 10_000_000
		// A first window of the same size fills the sizing's caches (the
		// in-block rate tables), which are the process's, not the window's.
		mustWindow(t, n, c.p)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := mustWindow(t, n, c.p)
		runtime.GC()
		runtime.ReadMemStats(&after)
		bits := float64(after.HeapAlloc-before.HeapAlloc) * 8 / n
		t.Logf("p=%g: r=%d, %.4f bits per window key on the heap, %d bytes (Bits: %.4f)", c.p, w.Generations(), bits, after.HeapAlloc-before.HeapAlloc, float64(w.Bits())/n)
		if bits > c.max {
			t.Errorf("p=%g: %.3f bits per window key, want <= %v", c.p, bits, c.max)
		}
		runtime.KeepAlive(w)
	}
}

// TestWindowTime drives a time window with a fake clock through the public
// API: keys kept for Every's d, forgotten by d*r/(r-1), bursts under each
// policy.
func TestWindowTime(t *testing.T) {
	now := time.Unix(1e9, 0)
	clock := func() time.Time { return now }
	const d = 6 * time.Hour
	w := mustWindow(t, 1000, 0.01, Every(d), Clock(clock), Generations(4))
	if w.Duration() != d {
		t.Fatalf("Duration %v, want %v", w.Duration(), d)
	}
	w.AddString("old")
	now = now.Add(d - time.Second)
	if !w.TestString("old") {
		t.Fatal("key forgotten before d")
	}
	now = now.Add(d/3 + 2*time.Second) // d*4/3 after the add
	if w.TestString("old") {
		t.Fatal("key kept after d*r/(r-1) with no add in between")
	}
	if w.Count() != 0 || w.EstimatedCount() != 0 {
		t.Fatalf("Count %d, EstimatedCount %d after the window", w.Count(), w.EstimatedCount())
	}

	var buf [16]byte
	for _, pol := range []Overflow{RotateEarly, Saturate} {
		now = time.Unix(2e9, 0)
		w := mustWindow(t, 1000, 0.01, Every(d), Clock(clock), Generations(4), OnOverflow(pol))
		for i := range uint64(10_000) { // ten windows' keys in one instant
			w.Add(windowKey(&buf, 3, i))
		}
		switch pol {
		case RotateEarly:
			if w.EstimatedErrorRate() > 0.01 || w.Rotations() < 20 {
				t.Fatalf("RotateEarly: rate %v, %d rotations", w.EstimatedErrorRate(), w.Rotations())
			}
			for i := uint64(9000); i < 10_000; i++ {
				if !w.Test(windowKey(&buf, 3, i)) {
					t.Fatal("RotateEarly lost one of the last window keys")
				}
			}
			if !w.RetainedSince().Equal(now) {
				t.Fatalf("RetainedSince %v, want %v", w.RetainedSince(), now)
			}
		case Saturate:
			if w.EstimatedErrorRate() <= 0.01 || w.Rotations() != 0 {
				t.Fatalf("Saturate: rate %v (not reported above target), %d rotations", w.EstimatedErrorRate(), w.Rotations())
			}
			for i := range uint64(10_000) {
				if !w.Test(windowKey(&buf, 3, i)) {
					t.Fatal("Saturate lost a key within its time")
				}
			}
			if !w.RetainedSince().Equal(time.Unix(2e9, 0)) {
				t.Fatalf("RetainedSince %v", w.RetainedSince())
			}
		}
	}
}

// TestWindowRetainedSince checks RetainedSince's promise on a time window
// fed at random paces, with bursts of many keys in one instant that rotate
// it early: after every add, every key added after RetainedSince tests
// present. (A key added at that very instant may not: a burst that rotated
// early at t0 put keys of t0 in the generation it later dropped first; this
// test found that RetainedSince was documented as inclusive.)
func TestWindowRetainedSince(t *testing.T) {
	for _, pol := range []Overflow{RotateEarly, Saturate, Grow} {
		t.Run(pol.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(pol)))
			now := time.Unix(2e9, 0)
			const d = 7 * 24 * time.Hour
			w := mustWindow(t, 100, 0.01, Every(d), Clock(func() time.Time { return now }), Generations(4), OnOverflow(pol))
			type added struct {
				i  uint64
				at time.Time
			}
			var keys []added
			var buf [16]byte
			still := 0 // adds left in the current burst
			for i := range uint64(3000) {
				switch x := rng.IntN(100); {
				case still > 0: // a burst: the clock stands still
					still--
				case x < 2:
					still = 20 + rng.IntN(60)
				case x < 90:
					now = now.Add(time.Duration(rng.Int64N(int64(d / 100))))
				default:
					now = now.Add(time.Duration(rng.Int64N(int64(d / 3))))
				}
				w.Add(windowKey(&buf, 9, i))
				keys = append(keys, added{i, now})
				since := w.RetainedSince()
				if since.After(now) {
					t.Fatalf("add %d: RetainedSince %v after now %v", i, since, now)
				}
				for j := len(keys) - 1; j >= 0 && keys[j].at.After(since); j-- {
					if !w.Test(windowKey(&buf, 9, keys[j].i)) {
						t.Fatalf("add %d: key %d added at %v, after RetainedSince %v, absent", i, keys[j].i, keys[j].at, since)
					}
				}
			}
			if pol == RotateEarly && w.Rotations() == 0 {
				t.Fatal("no rotation: the test did not exercise early rotations")
			}
		})
	}
}

// growBurst drives a time window under Grow with a fake clock: r periods
// of a generation's share of keys each, spread evenly, then a burst of b
// shares within one period, spread evenly up to just before its end. It
// calls check after every add, and at before its end the sample
// moments: after each tenth of the burst. It returns the window, the clock
// and the times of the keys, key i being windowKey(&buf, tag, i).
type growRun struct {
	w     *WindowFilter
	now   time.Time
	at    []time.Time // when key i was added
	tag   uint64
	base  uint64 // Bits before any burst
	start time.Time
}

func newGrowRun(t *testing.T, window uint64, p float64, tag uint64, opts ...Option) *growRun {
	g := &growRun{now: time.Unix(1e9, 0), tag: tag}
	opts = append([]Option{Every(6 * time.Hour), Clock(func() time.Time { return g.now }), OnOverflow(Grow), Seed(uint32(tag))}, opts...)
	g.w = mustWindow(t, window, p, opts...)
	g.base = g.w.Bits()
	g.start = g.now
	return g
}

func (g *growRun) period() time.Duration {
	return g.w.Duration() / time.Duration(g.w.Generations()-1)
}

// feed adds n keys spread evenly over the period that starts at g.now,
// calling each after every add (if not nil), and leaves g.now at the
// period's end.
func (g *growRun) feed(n uint64, each func(i uint64)) {
	var buf [16]byte
	start, per := g.now, g.period()
	for i := range n {
		g.now = start.Add(time.Duration(uint64(per-1) * i / n))
		k := uint64(len(g.at))
		g.w.Add(windowKey(&buf, g.tag, k))
		g.at = append(g.at, g.now)
		if each != nil {
			each(k)
		}
	}
	g.now = start.Add(per - 1)
}

// keptAll fails t unless every key added within Duration of g.now tests
// present.
func (g *growRun) keptAll(t *testing.T) {
	t.Helper()
	var buf [16]byte
	from := g.now.Add(-g.w.Duration())
	for i := len(g.at) - 1; i >= 0 && g.at[i].After(from); i-- {
		if !g.w.Test(windowKey(&buf, g.tag, uint64(i))) {
			t.Fatalf("key %d, added %v before now (window %v), tests absent", i, g.now.Sub(g.at[i]), g.w.Duration())
		}
	}
}

// TestWindowGrowKeepsAll is the first promise under Grow, after every add:
// a window of 60 keys in 6 hours (r = 4, 20 keys a generation) is fed its
// share for four periods, then bursts of 2, 10 and 100 times a
// generation's share in one period, and then its share again; after every
// add, every key added within the 6 hours tests present. No rotation is
// early: the retained time stays the duration.
func TestWindowGrowKeepsAll(t *testing.T) {
	for _, b := range []uint64{2, 10, 100} {
		t.Run(fmt.Sprintf("burst=%dx", b), func(t *testing.T) {
			g := newGrowRun(t, 60, 0.01, 10+b, Generations(4))
			share := g.w.GenerationCapacity()
			check := func(uint64) { g.keptAll(t) }
			for range 4 {
				g.feed(share, check)
				g.now = g.now.Add(1)
			}
			g.feed(b*share, check)
			if g.w.Extensions() == 0 || g.w.Bits() <= g.base {
				t.Fatalf("burst of %dx: %d extensions, %d bits (base %d)", b, g.w.Extensions(), g.w.Bits(), g.base)
			}
			if got, want := g.w.RetainedSince(), g.now.Add(-g.w.Duration()); got.After(want) {
				t.Fatalf("RetainedSince %v, after now - Duration %v: rotated early", got, want)
			}
			for range 5 {
				g.now = g.now.Add(1)
				g.feed(share, check)
			}
			if g.w.Extensions() != 0 || g.w.Bits() != g.base {
				t.Fatalf("after the burst left the window: %d extensions, %d bits, want 0 and %d", g.w.Extensions(), g.w.Bits(), g.base)
			}
		})
	}
}

// TestWindowSize: WindowSize reports what NewWindow builds (generations,
// capacity, bits, hashes, seed, period, policy) and refuses what it
// refuses with the same error; under Grow, a burst on a stopped clock makes
// the window's Bits the ring's plus the first extensions of WindowSize, one
// level at a time, through all 16 levels.
func TestWindowSize(t *testing.T) {
	hour := Every(time.Hour)
	cases := [][]Option{nil, {Seed(7)}, {Generations(2)}, {Generations(16)}, {hour}, {hour, Generations(3)},
		{hour, OnOverflow(Saturate)}, {hour, OnOverflow(Grow)}, {hour, OnOverflow(Grow), Generations(5), Seed(9)}}
	for _, window := range []uint64{1, 2, 99, 1000, 123_457} {
		for _, p := range []float64{0.5, 0.01, 1e-4} {
			for _, opts := range cases {
				z, err := WindowSize(window, p, opts...)
				if err != nil {
					t.Fatalf("WindowSize(%d, %v, %d options): %v", window, p, len(opts), err)
				}
				w := mustWindow(t, window, p, opts...)
				if z.Generations != w.Generations() || z.GenerationCapacity != w.GenerationCapacity() || z.Hashes != w.Hashes() ||
					z.Bits() != w.Bits() || z.Seed != w.Seed() || z.Overflow != w.Overflow() ||
					z.Period*time.Duration(max(z.Generations-1, 1)) != w.Duration() || z.GenerationBits%BlockBits != 0 {
					t.Fatalf("WindowSize(%d, %v, %d options) = %+v; the window has r %d, capacity %d, k %d, bits %d, seed %d, %v, duration %v",
						window, p, len(opts), z, w.Generations(), w.GenerationCapacity(), w.Hashes(), w.Bits(), w.Seed(), w.Overflow(), w.Duration())
				}
				if grow := w.Overflow() == Grow; grow != (len(z.Extensions) > 0) {
					t.Fatalf("WindowSize(%d, %v, %d options): %d extension levels under %v", window, p, len(opts), len(z.Extensions), w.Overflow())
				}
			}
		}
	}
	for _, bad := range []struct {
		window uint64
		p      float64
		opts   []Option
	}{{0, 0.01, nil}, {10, 0, nil}, {10, 1, nil}, {10, 0.01, []Option{Classic()}}, {10, 0.01, []Option{OnOverflow(Grow)}},
		{10, 0.01, []Option{Generations(1)}}, {10, 0.01, []Option{Linear(2)}}, {1 << 62, 1e-9, nil}} {
		_, zerr := WindowSize(bad.window, bad.p, bad.opts...)
		_, werr := NewWindow(bad.window, bad.p, bad.opts...)
		if zerr == nil || werr == nil || zerr.Error() != werr.Error() || !errors.Is(zerr, ErrInvalidParameter) {
			t.Fatalf("WindowSize(%d, %v): %v; NewWindow: %v", bad.window, bad.p, zerr, werr)
		}
	}

	// Each extension a burst adds has the next level's size.
	g := newGrowRun(t, 20, 0.01, 77)
	z, err := WindowSize(20, 0.01, Every(6*time.Hour), OnOverflow(Grow), Seed(77))
	if err != nil || len(z.Extensions) != 16 {
		t.Fatalf("WindowSize: %d extension levels, %v; want 16", len(z.Extensions), err)
	}
	want, levels := z.Bits(), 0
	var buf [16]byte
	for i := uint64(0); levels < len(z.Extensions); i++ {
		g.w.Add(windowKey(&buf, 77, i))
		if n := g.w.Extensions(); n != levels {
			if n != levels+1 {
				t.Fatalf("key %d: %d extensions after %d", i, n, levels)
			}
			want += z.Extensions[levels].Bits
			levels = n
		}
		if g.w.Bits() != want {
			t.Fatalf("key %d, %d extensions: Bits %d, want %d from WindowSize", i, levels, g.w.Bits(), want)
		}
		if levels > 0 && z.Extensions[levels-1].Capacity != z.GenerationCapacity<<(levels-1) {
			t.Fatalf("extension %d: capacity %d, want %d", levels, z.Extensions[levels-1].Capacity, z.GenerationCapacity<<(levels-1))
		}
	}
}

// TestWindowGrowRate is the second promise under Grow, measured at the worst
// moment: the ring full (a generation's share in each of r periods), then a
// burst of 2, 10 and 100 times a generation's share in the newest
// generation's period, measured just before that period ends, on 10^6
// absent keys (2*10^5 with -short), whose mean must be within 3 standard
// deviations of p, which the test checks is below 1.2p. After each tenth of
// the burst the rate of 50/p absent keys is within 4 standard deviations,
// EstimatedErrorRate at most p, and every key of the duration present.
// Bits grows with the burst and comes back to the ring's once the burst has
// left the window.
func TestWindowGrowRate(t *testing.T) {
	window, absent := uint64(20_000), 1_000_000
	if testing.Short() {
		window, absent = 2000, 200_000
	}
	for _, p := range []float64{0.01, 0.001} {
		for _, b := range []uint64{2, 10, 100} {
			if p == 0.001 && (testing.Short() || b == 2) {
				continue
			}
			t.Run(fmt.Sprintf("p=%g/burst=%dx", p, b), func(t *testing.T) {
				g := newGrowRun(t, window, p, 20+b)
				share := g.w.GenerationCapacity()
				sd := math.Sqrt(p / float64(absent))
				if limit := p + 3*sd; limit >= 1.2*p {
					t.Fatalf("test too weak: limit %v does not rule out 1.2p", limit)
				}
				var buf [16]byte
				probe := uint64(0)
				rate := func(n int) float64 {
					fp := 0
					for range n {
						probe++
						if g.w.Test(windowKey(&buf, 1<<32, probe)) {
							fp++
						}
					}
					return float64(fp) / float64(n)
				}
				for range g.w.Generations() {
					g.feed(share, nil)
					g.now = g.now.Add(1)
				}
				step := b * share / 10
				g.feed(b*share, func(i uint64) {
					if (i+1)%step != 0 {
						return
					}
					g.keptAll(t)
					if got, sd := rate(int(50/p)), math.Sqrt(p/(50/p)); got > p+4*sd {
						t.Fatalf("during the burst, key %d: rate %v above %v + 4 sd", i, got, p)
					}
					if e := g.w.EstimatedErrorRate(); e > p {
						t.Fatalf("during the burst, key %d: EstimatedErrorRate %v above %v", i, e, p)
					}
				})
				// Just before the burst's period ends: the worst moment.
				bits := g.w.Bits()
				got := rate(absent)
				if got > p+3*sd {
					t.Errorf("rate at the worst moment %v above %v + 3 sd (%v)", got, p, sd)
				}
				t.Logf("burst %dx: rate %.5f at the worst moment (target %g, %.2fx), EstimatedErrorRate %.5f; %d extensions, Bits %.2fx the ring's (%.2f bits per window key)",
					b, got, p, got/p, g.w.EstimatedErrorRate(), g.w.Extensions(), float64(bits)/float64(g.base), float64(bits)/float64(window))
				if g.w.Extensions() == 0 || bits <= g.base {
					t.Fatalf("%d extensions, %d bits: no growth", g.w.Extensions(), bits)
				}
				g.keptAll(t)
				for range g.w.Generations() {
					g.now = g.now.Add(1)
					g.feed(share, nil)
				}
				if g.w.Extensions() != 0 || g.w.Bits() != g.base {
					t.Fatalf("after the burst left the window: %d extensions, %d bits, want 0 and %d", g.w.Extensions(), g.w.Bits(), g.base)
				}
			})
		}
	}
}

// TestWindowGrowLimit drives a window under Grow past its limit: a
// generation of 1 key (3 keys in 4 generations) has at most 16 extensions,
// 2^16 keys in all; a burst of 5 times that within one instant rotates
// early, and then the rate is kept, the last window keys are kept, and
// RetainedSince reports the shorter time.
func TestWindowGrowLimit(t *testing.T) {
	const p = 0.01
	g := newGrowRun(t, 3, p, 30, Generations(4))
	if g.w.GenerationCapacity() != 1 {
		t.Fatalf("generation capacity %d", g.w.GenerationCapacity())
	}
	var buf [16]byte
	const n = 5 << 16
	for i := range uint64(n) {
		g.w.Add(windowKey(&buf, g.tag, i))
	}
	if g.w.Rotations() < 4 || !g.w.RetainedSince().Equal(g.now) {
		t.Fatalf("%d rotations, RetainedSince %v, want >= 4 and %v", g.w.Rotations(), g.w.RetainedSince(), g.now)
	}
	if e := g.w.Extensions(); e > 4*16 || e < 16 {
		t.Fatalf("%d extensions, want 16 to 64", e)
	}
	for i := uint64(n - 3); i < n; i++ {
		if !g.w.Test(windowKey(&buf, g.tag, i)) {
			t.Fatalf("key %d, one of the last 3, absent", i)
		}
	}
	const absent = 200_000
	fp := 0
	for i := range uint64(absent) {
		if g.w.Test(windowKey(&buf, 1<<33, i)) {
			fp++
		}
	}
	got, sd := float64(fp)/absent, math.Sqrt(p/absent)
	if got > p+4*sd || g.w.EstimatedErrorRate() > p {
		t.Fatalf("past the limit: rate %v, EstimatedErrorRate %v, target %v", got, g.w.EstimatedErrorRate(), p)
	}
	t.Logf("past the limit: rate %.5f, EstimatedErrorRate %.5f, %d rotations, %d extensions, %d bits", got, g.w.EstimatedErrorRate(), g.w.Rotations(), g.w.Extensions(), g.w.Bits())
}

func TestWindowOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		n    uint64
		p    float64
		opts []Option
	}{
		{"window 0", 0, 0.01, nil},
		{"rate 0", 10, 0, nil},
		{"rate 1", 10, 1, nil},
		{"Classic", 10, 0.01, []Option{Classic()}},
		{"Linear", 10, 0.01, []Option{Linear(2)}},
		{"Generations 1", 10, 0.01, []Option{Generations(1)}},
		{"Generations 65", 10, 0.01, []Option{Generations(65)}},
		{"Every 0", 10, 0.01, []Option{Every(0)}},
		{"Every twice", 10, 0.01, []Option{Every(1), Every(2)}},
		{"OnOverflow alone", 10, 0.01, []Option{OnOverflow(Saturate)}},
		{"Clock alone", 10, 0.01, []Option{Clock(time.Now)}},
		{"bad policy", 10, 0.01, []Option{Every(1), OnOverflow(7)}},
		{"policy 3", 10, 0.01, []Option{Every(1), OnOverflow(Grow + 1)}},
		{"Grow alone", 10, 0.01, []Option{OnOverflow(Grow)}},
		{"too large", 1 << 62, 1e-9, nil},
	} {
		if _, err := NewWindow(c.n, c.p, c.opts...); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("%s: %v, want ErrInvalidParameter", c.name, err)
		}
	}
	if _, err := New(10, 0.01, Every(time.Hour)); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("New with Every: %v", err)
	}
	if _, err := NewScalable(10, 0.01, Generations(3)); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("NewScalable with Generations: %v", err)
	}
	var zero WindowFilter
	defer func() {
		if recover() != errZeroWindow {
			t.Error("zero WindowFilter did not panic with its message")
		}
	}()
	zero.TestString("x")
}

// TestWindowEncoding round-trips windows through every encoder and decoder
// of the package, ReadAny included, and refuses damage.
func TestWindowEncoding(t *testing.T) {
	now := time.Unix(5e8, 0)
	clock := func() time.Time { return now }
	for _, w := range []*WindowFilter{
		mustWindow(t, 500, 0.01),
		mustWindow(t, 500, 0.001, Every(time.Minute), Clock(clock), OnOverflow(Saturate), Seed(9)),
		mustWindow(t, 500, 0.001, Every(time.Minute), Clock(clock), OnOverflow(Grow), Seed(9)),
	} {
		var buf [16]byte
		for i := range uint64(1700) {
			w.Add(windowKey(&buf, 4, i))
			now = now.Add(time.Second / 10)
		}
		if w.f.Policy == 2 && w.Extensions() == 0 {
			t.Fatal("Grow: no extension to encode")
		}
		data, _ := w.MarshalBinary()
		if len(data) != w.EncodedSize() {
			t.Fatalf("MarshalBinary %d bytes, EncodedSize %d", len(data), w.EncodedSize())
		}
		var u WindowFilter
		if err := u.UnmarshalBinary(data); err != nil || !u.Equal(w) {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		text, _ := w.MarshalText()
		var v WindowFilter
		if err := v.UnmarshalText(text); err != nil || !v.Equal(w) {
			t.Fatalf("UnmarshalText: %v", err)
		}
		var out bytes.Buffer
		if _, err := w.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("WriteTo: %v", err)
		}
		out.WriteString("tail")
		r := bytes.NewReader(out.Bytes())
		f, err := ReadAny(r, Concurrent(), Clock(clock))
		if err != nil {
			t.Fatal(err)
		}
		if g := f.(*WindowFilter); !g.Equal(w) || g.conc == nil || r.Len() != 4 {
			t.Fatalf("ReadAny: not equal, not concurrent or read past the end (%d left)", r.Len())
		}
		if _, err := ReadWindow(bytes.NewReader(data), Seed(1)); !errors.Is(err, ErrInvalidParameter) {
			t.Fatalf("ReadWindow with another seed: %v", err)
		}
		if _, err := ReadWindow(bytes.NewReader(nil)); err != io.EOF {
			t.Fatalf("ReadWindow of nothing: %v", err)
		}
		c := w.Clone()
		if !c.Equal(w) {
			t.Fatal("Clone differs")
		}
		c.AddString("more")
		if c.Equal(w) && !w.TestString("more") {
			t.Fatal("Clone shares state")
		}
		d := bytes.Clone(data)
		d[len(d)/2] ^= 1
		if err := u.UnmarshalBinary(d); !errors.Is(err, ErrCorrupt) || !u.Equal(w) {
			t.Fatalf("damaged encoding: %v, receiver changed: %v", err, !u.Equal(w))
		}
	}
}

// TestWindowBatchMatchesLoop checks through the public API that the batch
// calls answer and leave the window as the loops of single calls do.
func TestWindowBatchMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	now := time.Unix(0, 0)
	clock := Clock(func() time.Time { return now })
	for _, opts := range [][]Option{nil, {Every(time.Hour), clock, OnOverflow(Grow)}} {
		a, b := mustWindow(t, 5000, 0.01, opts...), mustWindow(t, 5000, 0.01, opts...)
		windowBatchMatchesLoop(t, rng, a, b)
		if len(opts) != 0 && a.Extensions() == 0 {
			t.Fatal("Grow: no extension")
		}
	}
}

func windowBatchMatchesLoop(t *testing.T, rng *rand.Rand, a, b *WindowFilter) {
	for range 10 {
		keys := make([]string, rng.IntN(3000))
		hashes := make([]uint64, len(keys))
		for i := range keys {
			hashes[i] = rng.Uint64N(8000)
			keys[i] = strconv.FormatUint(hashes[i], 10)
		}
		want := make([]bool, len(keys))
		for i, k := range keys {
			want[i] = a.TestAndAddString(k)
		}
		if got := b.TestAndAddManyStrings(keys, nil); !slices.Equal(got, want) {
			t.Fatal("TestAndAddManyStrings differs from the loop")
		}
		for _, h := range hashes {
			a.AddHash(h)
		}
		b.AddManyHashes(hashes)
		if !a.Equal(b) {
			t.Fatal("batch calls left another window than the loops")
		}
		got := b.TestManyHashes(hashes, nil)
		for i, h := range hashes {
			if got[i] != a.TestHash(h) {
				t.Fatal("TestManyHashes differs from TestHash")
			}
		}
	}
}

func TestWindowDoesNotAllocate(t *testing.T) {
	now := time.Unix(0, 0)
	// A window under Grow with extensions: no call below makes one more
	// (the same keys again), and tests read them.
	grow := func(opts ...Option) *WindowFilter {
		w := mustWindow(t, 1e3, 0.01, append(opts, Every(time.Hour), Clock(func() time.Time { return now }), OnOverflow(Grow))...)
		w.AddManyHashes(slices.Collect(func(yield func(uint64) bool) {
			for i := range uint64(5000) {
				yield(i << 20)
			}
		}))
		if w.Extensions() == 0 {
			t.Fatal("no extension")
		}
		return w
	}
	for _, w := range []*WindowFilter{
		mustWindow(t, 1e5, 0.01),
		mustWindow(t, 1e5, 0.01, Every(time.Hour), Clock(func() time.Time { return now })),
		mustWindow(t, 1e5, 0.01, Concurrent()),
		mustWindow(t, 1e5, 0.01, Concurrent(), Every(time.Hour), Clock(func() time.Time { return now })),
		grow(),
		grow(Concurrent()),
	} {
		key, s := []byte("some key"), "some string"
		keys, strs, hashes := [][]byte{key, key}, []string{s, s}, []uint64{1, 2}
		res := make([]bool, 2)
		for name, fn := range map[string]func(){
			"Add": func() { w.Add(key) }, "AddString": func() { w.AddString(s) }, "AddHash": func() { w.AddHash(3) },
			"Test": func() { w.Test(key) }, "TestString": func() { w.TestString(s) }, "TestHash": func() { w.TestHash(3) },
			"TestAndAdd": func() { w.TestAndAdd(key) }, "TestAndAddString": func() { w.TestAndAddString(s) },
			"TestAndAddHash": func() { w.TestAndAddHash(4) },
			"AddMany":        func() { w.AddMany(keys) }, "AddManyStrings": func() { w.AddManyStrings(strs) },
			"AddManyHashes": func() { w.AddManyHashes(hashes) }, "TestMany": func() { w.TestMany(keys, res) },
			"TestManyStrings": func() { w.TestManyStrings(strs, res) }, "TestManyHashes": func() { w.TestManyHashes(hashes, res) },
			"TestAndAddMany": func() { w.TestAndAddMany(keys, res) },
		} {
			if a := testing.AllocsPerRun(100, fn); a != 0 {
				t.Errorf("%s: %v allocations", name, a)
			}
		}
	}
}

// TestWindowConcurrent adds and tests from several goroutines at once
// (run it with -race): with a window larger than all the keys, every key
// added stays present, and a key added by all at once is reported absent
// to exactly one, but for false positives.
func TestWindowConcurrent(t *testing.T) {
	const workers, per = 4, 20_000
	w := mustWindow(t, 2*workers*per, 0.01, Concurrent(), Generations(4))
	var firsts atomic.Int64
	done := make(chan error)
	for g := range uint64(workers) {
		go func() {
			var buf [16]byte
			for i := range uint64(per) {
				if !w.TestAndAdd(windowKey(&buf, 100, i)) {
					firsts.Add(1)
				}
				w.Add(windowKey(&buf, g, i))
				if i >= 1000 && !w.Test(windowKey(&buf, g, i-1000)) {
					done <- fmt.Errorf("worker %d: key %d absent", g, i-1000)
					return
				}
				if i%5000 == 0 {
					w.EstimatedErrorRate()
					w.Clone()
				}
			}
			done <- nil
		}()
	}
	waitWindowWorkers(t, w, done, workers, per)
	if w.Rotations() == 0 {
		t.Fatal("no rotation under concurrent adds")
	}
	if n := firsts.Load(); n > per || n < per*99/100 {
		t.Fatalf("%d shared keys reported new, want about %d", n, per)
	}
}

// waitWindowWorkers waits for the workers of a concurrent window test, each
// of which sends its error (or nil) on done, and checks that every key each
// worker g added, windowKey(g, i) for i < per, is present in w.
func waitWindowWorkers(t *testing.T, w *WindowFilter, done <-chan error, workers, per int) {
	t.Helper()
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var buf [16]byte
	for g := range uint64(workers) {
		for i := range uint64(per) {
			if !w.Test(windowKey(&buf, g, i)) {
				t.Fatalf("worker %d: key %d absent at the end", g, i)
			}
		}
	}
}

// TestWindowGrowConcurrent grows a Concurrent window under Grow from several
// goroutines at once (run it with -race): 40 times its keys within one
// period, every key added stays present, and readers see the extensions.
func TestWindowGrowConcurrent(t *testing.T) {
	const workers, per = 4, 10_000
	at := time.Unix(1e9, 0)
	w := mustWindow(t, 1000, 0.01, Concurrent(), Every(time.Hour), Clock(func() time.Time { return at }), OnOverflow(Grow))
	done := make(chan error)
	for g := range uint64(workers) {
		go func() {
			var buf [16]byte
			keys := make([][]byte, 0, 8)
			for i := range uint64(per) {
				if i%2 == 0 {
					w.Add(windowKey(&buf, g, i))
				} else {
					keys = append(keys[:0], windowKey(new([16]byte), g, i))
					w.TestAndAddMany(keys, nil)
				}
				if i >= 100 && !w.Test(windowKey(&buf, g, i-100)) {
					done <- fmt.Errorf("worker %d: key %d absent", g, i-100)
					return
				}
				if i%2000 == 0 {
					w.EstimatedErrorRate()
					w.Bits()
					w.Clone()
				}
			}
			done <- nil
		}()
	}
	waitWindowWorkers(t, w, done, workers, per)
	if w.Rotations() != 0 || w.Extensions() == 0 || w.EstimatedErrorRate() > 0.01 {
		t.Fatalf("%d rotations, %d extensions, EstimatedErrorRate %v", w.Rotations(), w.Extensions(), w.EstimatedErrorRate())
	}
}

// TestWindowConcurrentPromises checks the promise of no false negative of
// a Concurrent window whose tests take no lock, against one writer that
// rotates it (run it with -race): the writer adds keys 0, 1, 2, ...,
// publishing the last one added; readers pick a key j at most a window
// behind it, test it (Test, and TestManyHashes among others), and if j was
// still inside the window's promise once the test returned (for a count
// window, less than Window keys behind the last one added; for a time
// window, added less than Duration before the clock then), a false answer
// is a failure. The writer of the time windows advances a fake clock,
// sometimes by several periods, and under Grow adds bursts, so extensions
// come and go. It failed when rotate published newest before it cleared
// the generation and stored its start (readers saw a new newest with an
// old start and skipped live generations: 11 runs of 12 with -short, every
// run with -race), and under -race when the tests read the writer's list
// of extensions instead of its published snapshot.
func TestWindowConcurrentPromises(t *testing.T) {
	const n = 20_000 // keys per window
	keys := 300_000
	if testing.Short() {
		keys = 150_000
	}
	for _, c := range []struct {
		name string
		opts []Option
		time bool
		grow bool
	}{
		{"count", nil, false, false},
		{"time", []Option{Every(time.Second)}, true, false},
		{"grow", []Option{Every(time.Second), OnOverflow(Grow)}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(1e18)
			opts := append([]Option{Concurrent()}, c.opts...)
			if c.time {
				opts = append(opts, Clock(func() time.Time { return time.Unix(0, clock.Load()) }))
			}
			w := mustWindow(t, n, 1e-4, opts...)
			period := int64(w.Duration()) / int64(w.Generations()-1)
			times := make([]int64, keys) // times[i]: when key i was added
			var last atomic.Int64        // the last key added, -1 for none
			last.Store(-1)
			var stop atomic.Bool
			var checked, failed atomic.Int64
			var failure atomic.Pointer[string]
			check := func(x uint64, got bool, i2, c2 int64) {
				in := int64(x) > i2-n // the last n keys
				if c.time {
					in = c2-times[x] < int64(w.Duration())
				}
				if !in {
					return
				}
				checked.Add(1)
				if !got {
					failed.Add(1)
					msg := fmt.Sprintf("key %d absent with %d the last added (clock %d periods after it was added)", x, i2, (c2-times[x])/max(period, 1))
					failure.CompareAndSwap(nil, &msg)
				}
			}
			const readers = 3
			done := make(chan struct{})
			for r := range uint64(readers) {
				go func() {
					defer func() { done <- struct{}{} }()
					rng := rand.New(rand.NewPCG(r, 7))
					batch := make([]uint64, 20)
					res := make([]bool, len(batch))
					for !stop.Load() {
						i1 := last.Load()
						if i1 < int64(len(batch)) {
							continue
						}
						j := uint64(i1) - rng.Uint64N(min(uint64(i1)+1-uint64(len(batch)), 2*n))
						got := w.TestHash(j)
						for i := range batch {
							batch[i] = j - uint64(i)
						}
						w.TestManyHashes(batch, res)
						i2, c2 := last.Load(), clock.Load()
						check(j, got, i2, c2)
						for i, x := range batch {
							check(x, res[i], i2, c2)
						}
					}
				}()
			}
			gen := int64(w.GenerationCapacity())
			var grew, shrank bool // extensions came, and went
			for i := range uint64(keys) {
				if c.grow && i%1000 == 0 {
					x := w.Extensions()
					shrank = shrank || grew && x == 0
					grew = grew || x > 0
				}
				if c.time {
					// 1/4 of a generation's keys per period, bursts of
					// 4 generations' keys in one period under Grow, and
					// now and then a jump of 2 or of r+1 periods.
					step := period * 4 / gen
					if c.grow && i/(4*uint64(gen))%4 == 1 {
						step = period / (4 * gen)
					}
					if i%25_000 == 24_999 {
						step = period * (2 + int64(i/25_000%2)*int64(w.Generations()-1))
					}
					clock.Add(step)
					times[i] = clock.Load()
				}
				w.AddHash(i)
				last.Store(int64(i))
			}
			stop.Store(true)
			for range readers {
				<-done
			}
			if w.Rotations() == 0 || c.grow && !shrank {
				t.Errorf("%d rotations; under Grow extensions came %v and went %v", w.Rotations(), grew, shrank)
			}
			if checked.Load() < 10_000 {
				t.Errorf("only %d keys checked", checked.Load())
			}
			if f := failed.Load(); f != 0 {
				t.Fatalf("%d false negatives of %d keys checked, the first: %s", f, checked.Load(), *failure.Load())
			}
			t.Logf("%d keys checked, %d rotations", checked.Load(), w.Rotations())
		})
	}
}

// windowBench is a window of 10^7 keys at 1% filled to its worst moment,
// beside a blocked BloomFilter sized for the same 10^7 keys and filled.
var windowBench struct {
	w *WindowFilter
	f *BloomFilter
}

func windowBenchSetup(b *testing.B) {
	if windowBench.w != nil {
		return
	}
	windowBench.w, windowBench.f = windowBenchFilters(b, 0)
}

// windowBenchFilters returns a window of 10^7 keys at 1% (of r generations,
// or as many as NewWindow chooses for 0) filled to its worst moment, every
// generation full, and a blocked BloomFilter sized for the same keys and
// holding them.
func windowBenchFilters(b *testing.B, r int) (*WindowFilter, *BloomFilter) {
	const n = 10_000_000
	var opts []Option
	if r != 0 {
		opts = append(opts, Generations(r))
	}
	w, err := NewWindow(n, 0.01, opts...)
	if err != nil {
		b.Fatal(err)
	}
	f, err := New(n, 0.01, Blocked())
	if err != nil {
		b.Fatal(err)
	}
	fillWindowBench(n, f, w)
	return w, f
}

// fillWindowBench adds keys 0..n-1 (16 bytes each) to f and to each of
// ws, in batches, then fills each window's newest generation but for one
// key (every generation full: the worst moment for a test).
func fillWindowBench(n uint64, f *BloomFilter, ws ...*WindowFilter) {
	keys := make([][]byte, 1000)
	for lo := uint64(0); lo < n; lo += 1000 {
		for i := range keys {
			keys[i] = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(keys[i][:0], 1), lo+uint64(i))
		}
		f.AddMany(keys)
		for _, w := range ws {
			w.AddMany(keys)
		}
	}
	for _, w := range ws {
		for i := w.Count(); i < uint64(w.Generations())*w.GenerationCapacity()-1; i++ {
			w.AddHash(i)
		}
	}
}

// BenchmarkWindow compares a window of 10^7 keys at 1% with a blocked
// BloomFilter of 10^7 keys, side by side, on 16-byte keys never seen before
// (so that neither filter finds them in the caches): go test -run '^$'
// -bench 'Window' -count 5. Add keeps adding new keys (the window rotates;
// the BloomFilter's rate degrades, which does not change its speed); the
// tests are of absent keys.
func BenchmarkWindow(b *testing.B) {
	windowBenchSetup(b)
	w, f := windowBench.w, windowBench.f
	var buf [16]byte
	next := uint64(0)
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = make([]byte, 16)
	}
	res := make([]bool, len(batch))
	fill := func() [][]byte {
		for _, k := range batch {
			next++
			binary.LittleEndian.PutUint64(k, 2)
			binary.LittleEndian.PutUint64(k[8:], next)
		}
		return batch
	}
	for _, c := range []struct {
		name string
		fn   func(b *testing.B)
	}{
		{"Add/bloom", func(b *testing.B) {
			for range b.N {
				next++
				f.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Add/window", func(b *testing.B) {
			for range b.N {
				next++
				w.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Test/bloom", func(b *testing.B) {
			for range b.N {
				next++
				f.Test(windowKey(&buf, 2, next))
			}
		}},
		{"Test/window", func(b *testing.B) {
			for range b.N {
				next++
				w.Test(windowKey(&buf, 2, next))
			}
		}},
		{"TestMany/bloom", func(b *testing.B) {
			for i := 0; i < b.N; i += len(batch) {
				f.TestMany(fill(), res)
			}
		}},
		{"TestMany/window", func(b *testing.B) {
			for i := 0; i < b.N; i += len(batch) {
				w.TestMany(fill(), res)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c.fn(b)
		})
	}
}

// BenchmarkWindowRatio measures the targets of the window filter as ratios
// of time to the blocked BloomFilter of BenchmarkWindow, interleaving the two
// in chunks of 20,000 keys so that a shared machine's load, which moves
// single timings several-fold, moves both sides alike: it reports the
// median over the chunks of window time / BloomFilter time, per operation.
// go test -run '^$' -bench WindowRatio -benchtime 1x.
func BenchmarkWindowRatio(b *testing.B) {
	windowBenchSetup(b)
	windowRatio(b, windowBench.w, windowBench.f)
}

// BenchmarkWindowGenerations is BenchmarkWindowRatio for windows of 2 to 8
// generations (Generations(r)), each beside its own BloomFilter, and reports
// their bits per window key: the trade between memory and the cache lines a
// test of an absent key reads, one per generation.
// go test -run '^$' -bench WindowGenerations -benchtime 1x.
func BenchmarkWindowGenerations(b *testing.B) {
	for r := 2; r <= 8; r++ {
		b.Run(fmt.Sprintf("r=%d", r), func(b *testing.B) {
			w, f := windowBenchFilters(b, r)
			windowRatio(b, w, f)
		})
	}
}

// windowRatio runs the side-by-side timings of BenchmarkWindowRatio on w
// and f.
func windowRatio(b *testing.B, w *WindowFilter, f *BloomFilter) {
	const chunk, rounds = 20_000, 41
	var buf [16]byte
	next := uint64(1 << 40)
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = make([]byte, 16)
	}
	res := make([]bool, len(batch))
	fill := func(tag uint64) [][]byte {
		for _, k := range batch {
			next++
			binary.LittleEndian.PutUint64(k, tag)
			binary.LittleEndian.PutUint64(k[8:], next)
		}
		return batch
	}
	timeIt := func(fn func()) float64 {
		start := time.Now()
		fn()
		return float64(time.Since(start))
	}
	for _, op := range []struct {
		name          string
		bloom, window func()
	}{
		{"Add", func() {
			for range chunk {
				next++
				f.Add(windowKey(&buf, 3, next))
			}
		}, func() {
			for range chunk {
				next++
				w.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Test", func() {
			for range chunk {
				next++
				f.Test(windowKey(&buf, 2, next))
			}
		}, func() {
			for range chunk {
				next++
				w.Test(windowKey(&buf, 2, next))
			}
		}},
		{"TestMany", func() {
			for range chunk / len(batch) {
				f.TestMany(fill(2), res)
			}
		}, func() {
			for range chunk / len(batch) {
				w.TestMany(fill(2), res)
			}
		}},
	} {
		b.Run(op.name, func(b *testing.B) {
			for range b.N {
				ratios := make([]float64, rounds)
				var tb, tw float64
				for i := range ratios {
					x, y := timeIt(op.bloom), timeIt(op.window)
					if i%2 == 1 { // alternate which goes first
						y, x = timeIt(op.window), timeIt(op.bloom)
					}
					ratios[i] = y / x
					tb, tw = tb+x, tw+y
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[rounds/2], "window/bloom")
				b.ReportMetric(tb/rounds/chunk, "bloom-ns/key")
				b.ReportMetric(tw/rounds/chunk, "window-ns/key")
				b.ReportMetric(float64(w.Bits())/float64(w.Window()), "bits/key")
			}
		})
	}
}

// goldenWindows builds the windows of testdata/window: one of the last 100
// keys and one of the keys of the last hour (sized for 100 keys in it) at
// 1%, seed 23, fed the keys "window-0" to "window-299", the time window one
// key a minute from a fixed clock.
func goldenWindows(t testing.TB) map[string]*WindowFilter {
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	count := mustWindow(t, 100, 0.01, Seed(23))
	timed := mustWindow(t, 100, 0.01, Seed(23), Every(time.Hour), Clock(clock))
	for i := range 300 {
		key := "window-" + strconv.Itoa(i)
		count.AddString(key)
		timed.AddString(key)
		now = now.Add(time.Minute)
	}
	return map[string]*WindowFilter{
		"testdata/window/count-n100-p0.01.bin":   count,
		"testdata/window/time-1h-n100-p0.01.bin": timed,
	}
}

// TestWindowGolden pins the encoding, the sizing and the positions of
// windows: the files of testdata/window are what MarshalBinary writes for
// goldenWindows, byte for byte, and they decode to windows that hold the
// last keys added (the time window read with a clock at its last add; by
// the real clock, later, it has forgotten them).
func TestWindowGolden(t *testing.T) {
	for path, w := range goldenWindows(t) {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := w.MarshalBinary()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: MarshalBinary of the same window differs from the file (%d bytes, file %d)", path, len(got), len(want))
		}
		// Read at the time of the last add (the clock is not in the
		// encoding).
		end := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
		d, err := ReadWindow(bytes.NewReader(want), Clock(func() time.Time { return end }))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := 250; i < 300; i++ {
			if !d.TestString("window-" + strconv.Itoa(i)) {
				t.Errorf("%s: window-%d absent", path, i)
			}
		}
		if u, _ := ReadWindow(bytes.NewReader(want)); u.Duration() != 0 && u.TestString("window-299") {
			t.Errorf("%s: by the real clock, long after, window-299 is still present", path)
		}
	}
}

// goldenGrowWindow builds testdata/window/grow-1h-n100-p0.01.bin: a window
// of the keys of the last hour under Grow, sized for 100 keys in it, at 1%,
// seed 23, fed "window-0" to "window-299" one every 10 seconds from a fixed
// clock: 4 generations (the fewest bits for 100 keys under Grow) of 34
// keys and 20 minutes, fed 120 keys each, so that each of the generations
// of the last 50 minutes has one or two extensions, 5 in all.
func goldenGrowWindow(t testing.TB) *WindowFilter {
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	w := mustWindow(t, 100, 0.01, Seed(23), Every(time.Hour), Clock(func() time.Time { return now }), OnOverflow(Grow))
	for i := range 300 {
		w.AddString("window-" + strconv.Itoa(i))
		now = now.Add(10 * time.Second)
	}
	return w
}

// TestWindowGoldenGrow pins the encoding of a window under Grow with
// extensions (policy 2: extension counts and records in the table, their
// words after the ring's) and the sizing of its extensions: the file is
// what MarshalBinary writes for goldenGrowWindow, and it decodes, by every
// decoder, to a window that holds all 300 keys at the time of the last
// add, with 5 extensions and a rate at most 1%.
func TestWindowGoldenGrow(t *testing.T) {
	const path = "testdata/window/grow-1h-n100-p0.01.bin"
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := goldenGrowWindow(t)
	if got, _ := w.MarshalBinary(); !bytes.Equal(got, want) {
		t.Errorf("%s: MarshalBinary of the same window differs from the file (%d bytes, file %d)", path, len(got), len(want))
	}
	end := time.Date(2026, 12, 4, 0, 50, 0, 0, time.UTC)
	clock := Clock(func() time.Time { return end })
	text, _ := w.MarshalText()
	var u, v WindowFilter
	uerr, verr := u.UnmarshalBinary(want), v.UnmarshalText(text)
	d, err := ReadWindow(bytes.NewReader(want), clock)
	a, aerr := ReadAny(bytes.NewReader(want), clock)
	if err != nil || uerr != nil || verr != nil || aerr != nil {
		t.Fatalf("%s: ReadWindow %v, UnmarshalBinary %v, UnmarshalText %v, ReadAny %v", path, err, uerr, verr, aerr)
	}
	if !u.Equal(d) || !v.Equal(d) || !a.(*WindowFilter).Equal(d) || !d.Equal(w) {
		t.Fatalf("%s: the decoders disagree", path)
	}
	if d.Generations() != 4 || d.Extensions() != 5 {
		t.Fatalf("%s: %d generations, %d extensions, want 4 and 5", path, d.Generations(), d.Extensions())
	}
	for i := range 300 {
		if !d.TestString("window-" + strconv.Itoa(i)) {
			t.Errorf("%s: window-%d absent", path, i)
		}
	}
	fp := 0
	for i := range 10_000 {
		if d.TestString("absent-" + strconv.Itoa(i)) {
			fp++
		}
	}
	if fp > 150 || d.EstimatedErrorRate() > 0.01 {
		t.Errorf("%s: %d of 10,000 absent keys present, EstimatedErrorRate %v", path, fp, d.EstimatedErrorRate())
	}
}

// FuzzWindowDecode feeds the decoders of WindowFilter any bytes, the
// golden windows (one under Grow, with extensions) as seeds: they agree,
// an error leaves no usable result and the receiver unchanged, a decoded
// window re-encodes to its input and is usable, and none allocates more
// than the input justifies.
func FuzzWindowDecode(f *testing.F) {
	var seedWindow []byte
	for _, path := range []string{"count-n100-p0.01.bin", "time-1h-n100-p0.01.bin", "grow-1h-n100-p0.01.bin"} {
		data, err := os.ReadFile("testdata/window/" + path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		seedWindow = data
	}
	// Trailing bytes: UnmarshalBinary refuses them, ReadWindow leaves them
	// unread.
	f.Add(append(bytes.Clone(seedWindow), 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		var u WindowFilter
		var uerr, rerr error
		checkDecodeAllocs(t, "UnmarshalBinary", data, func() { uerr = u.UnmarshalBinary(data) })
		var r *WindowFilter
		rd := bytes.NewReader(data)
		checkDecodeAllocs(t, "ReadWindow", data, func() { r, rerr = ReadWindow(rd) })
		var v WindowFilter
		verr := v.UnmarshalText([]byte(base64.StdEncoding.EncodeToString(data)))
		a, aerr := ReadAny(bytes.NewReader(data))
		if (uerr == nil) != (rerr == nil && rd.Len() == 0) || (uerr == nil) != (verr == nil) {
			t.Fatalf("UnmarshalBinary %v, ReadWindow %v with %d bytes left, UnmarshalText %v", uerr, rerr, rd.Len(), verr)
		}
		if rerr != nil && r != nil {
			t.Fatal("ReadWindow: a result with an error")
		}
		if uerr != nil {
			if u.f != nil || v.f != nil {
				t.Fatal("a changed receiver on error")
			}
			return
		}
		if aerr != nil || !a.(*WindowFilter).Equal(&u) || !r.Equal(&u) || !v.Equal(&u) {
			t.Fatalf("the decoders disagree (ReadAny %v)", aerr)
		}
		if out, _ := u.MarshalBinary(); !bytes.Equal(out, data) {
			t.Fatal("re-encoding differs")
		}
		u.AddString("x")
		if !u.TestString("x") {
			t.Fatal("decoded window does not keep a key")
		}
	})
}

// windowConcBench is a Concurrent window of 10^7 keys at 1%, filled as
// windowBenchFilters fills its window, beside a Concurrent blocked
// BloomFilter holding the same keys, and a plain window holding them too,
// which rwTest tests under the read lock of mu: the read path of the
// Concurrent window before its tests took no lock (a sync.RWMutex, tests
// as readers), kept for comparison.
var windowConcBench struct {
	w, plain *WindowFilter
	f        *BloomFilter
	mu       sync.RWMutex
}

func windowConcBenchSetup(b *testing.B) {
	if windowConcBench.w != nil {
		return
	}
	const n = 10_000_000
	w := mustWindow(b, n, 0.01, Concurrent())
	plain := mustWindow(b, n, 0.01)
	f, err := New(n, 0.01, Blocked(), Concurrent())
	if err != nil {
		b.Fatal(err)
	}
	fillWindowBench(n, f, w, plain)
	windowConcBench.w, windowConcBench.plain, windowConcBench.f = w, plain, f
}

// rwTest is TestString on windowConcBench's plain window under the read
// lock, as the Concurrent window's was.
func rwTest(key string) bool {
	windowConcBench.mu.RLock()
	defer windowConcBench.mu.RUnlock()
	return windowConcBench.plain.TestString(key)
}

// BenchmarkWindowConcurrent measures TestString of absent 16-byte keys from
// b.RunParallel goroutines on windowConcBench's window and BloomFilter:
// go test -run '^$' -bench WindowConcurrent -cpu 1,2 -count 3. The window's
// tests take no lock, as the BloomFilter's do not: with more cores, tests
// that share a lock bounce its cache line between them.
func BenchmarkWindowConcurrent(b *testing.B) {
	windowConcBenchSetup(b)
	var seq atomic.Uint64
	// The calls are written out, not through a func value, through which
	// string(buf[:]) would escape and allocate.
	b.Run("window", func(b *testing.B) {
		b.ReportAllocs()
		w := windowConcBench.w
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				w.TestString(string(buf[:]))
			}
		})
	})
	b.Run("rwmutex", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				rwTest(string(buf[:]))
			}
		})
	})
	b.Run("bloom", func(b *testing.B) {
		b.ReportAllocs()
		f := windowConcBench.f
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				f.TestString(string(buf[:]))
			}
		})
	})
}

// BenchmarkWindowConcurrentRatio is BenchmarkWindowConcurrent's window
// against its rwmutex, interleaved as BenchmarkWindowRatio interleaves
// its two sides, so that a shared machine's load moves both alike: phases
// of GOMAXPROCS goroutines each testing 20,000 absent keys, alternately
// lock-free and under the read lock; it reports the median over 41 pairs
// of phases of each side's wall time per test and of rwmutex/lockfree.
// go test -run '^$' -bench WindowConcurrentRatio -benchtime 1x -cpu 1,2.
func BenchmarkWindowConcurrentRatio(b *testing.B) {
	windowConcBenchSetup(b)
	const chunk, rounds = 20_000, 41
	w := windowConcBench.w
	procs := runtime.GOMAXPROCS(0)
	next := uint64(1 << 40)
	phase := func(lockFree bool) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for g := range procs {
			lo := next + uint64(g)*chunk
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf [16]byte
				binary.LittleEndian.PutUint64(buf[:8], 6)
				for i := lo; i < lo+chunk; i++ {
					binary.LittleEndian.PutUint64(buf[8:], i)
					if lockFree {
						w.TestString(string(buf[:]))
					} else {
						rwTest(string(buf[:]))
					}
				}
			}()
		}
		wg.Wait()
		next += uint64(procs) * chunk
		return float64(time.Since(start)) / float64(procs*chunk)
	}
	for range b.N {
		free, locked, ratios := make([]float64, rounds), make([]float64, rounds), make([]float64, rounds)
		for r := range rounds {
			free[r], locked[r] = phase(true), phase(false)
			ratios[r] = locked[r] / free[r]
		}
		slices.Sort(free)
		slices.Sort(locked)
		slices.Sort(ratios)
		b.ReportMetric(free[rounds/2], "lockfree-ns/test")
		b.ReportMetric(locked[rounds/2], "rwmutex-ns/test")
		b.ReportMetric(ratios[rounds/2], "rwmutex/lockfree")
	}
}
