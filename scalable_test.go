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
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/spaolacci/murmur3"
)

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
		// -short flips every bit of the first 256 bytes (the headers and
		// the first sub-filter's) and every 5th bit after; the full run all.
		if testing.Short() && i >= 8*256 && i%5 != 0 {
			continue
		}
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
	// The hostile input, from a valid encoding by two edits: scale
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

// TestScalableDefaults computes the table in docs/scalable.md: bits per key averaged
// over final sizes from 10^4 to 10^7 keys (301 log-spaced sizes), starting at
// 1,000 keys with p = 0.01, for the growth settings the defaults were chosen
// from. The sizes are what NewScalable allocates, sub-filter by sub-filter. It
// fails if the defaults stop being the cheapest setting measured.
func TestScalableDefaults(t *testing.T) {
	bitsPerKey := func(opts ...Option) float64 {
		s := mustScalable(t, 1000, 0.01, opts...)
		// The sub-filters' sizes, computed once: the running totals of bits
		// and capacity after each one (subSize is the costly part).
		var bits, held []uint64
		var sum float64
		for e := 0; e <= 300; e++ {
			n := uint64(math.Round(math.Pow(10, 4+float64(e)/100)))
			for len(held) == 0 || held[len(held)-1] < n {
				c, _, m, _, err := s.subSize(len(held))
				if err != nil {
					t.Fatal(err)
				}
				if i := len(held); i > 0 {
					c, m = c+held[i-1], m+bits[i-1]
				}
				bits, held = append(bits, m), append(held, c)
			}
			i := 0
			for held[i] < n {
				i++
			}
			sum += float64(bits[i]) / float64(n)
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
		"FillRatio": returns(func() string { return zeroIs(s.FillRatio()) }),
		"Stats": returns(func() string {
			if st := s.Stats(); st != (Stats{}) {
				return fmt.Sprintf("Stats %+v, want zero", st)
			}
			return ""
		}),
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
