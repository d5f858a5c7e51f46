package bloom

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/bloomfilters/bloom/internal/blockbits"
	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/classic"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/spaolacci/murmur3"
)

// keyOf writes a distinct 16-byte key for i into buf: members use tag 0,
// absent keys tag 1, so the two sets never overlap.
func keyOf(buf []byte, tag, i uint64) []byte {
	binary.LittleEndian.PutUint64(buf[0:], i)
	binary.LittleEndian.PutUint64(buf[8:], tag)
	return buf[:16]
}

func mustNew(t testing.TB, n uint64, p float64, opts ...Option) *BloomFilter {
	t.Helper()
	f, err := New(n, p, opts...)
	if err != nil {
		t.Fatalf("New(%d, %v): %v", n, p, err)
	}
	return f
}

// ---- sizing ----

func TestOptimalHashesMinimisesRate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + r.Uint64N(1e7)
		m := 1 + r.Uint64N(40*n)
		k := OptimalHashes(m, n)
		if k < 1 {
			t.Fatalf("OptimalHashes(%d, %d) = 0", m, n)
		}
		got := FalsePositiveRate(m, k, n)
		if k > 1 && FalsePositiveRate(m, k-1, n) < got {
			t.Errorf("OptimalHashes(%d, %d) = %d but k-1 gives a lower rate", m, n, k)
		}
		if FalsePositiveRate(m, k+1, n) < got {
			t.Errorf("OptimalHashes(%d, %d) = %d but k+1 gives a lower rate", m, n, k)
		}
	}
}

// TestSizeGolden pins the sizes New chooses; changing them changes what
// every program allocates, so it must be deliberate.
func TestSizeGolden(t *testing.T) {
	tests := []struct {
		n        uint64
		p        float64
		m        uint64
		k        uint
		textbook uint64
	}{
		// Few keys: the exact rate (FalsePositiveRate) needs more bits than
		// the closed form and fewer hash functions than (m/n) ln 2. Before
		// it, Size gave 34 bits and 24 hashes for (1, 1e-7), 9593 bits for
		// (1000, 0.01).
		{1, 1e-7, 38, 20, 34},
		{1, 1e-6, 33, 18, 29},
		{2, 1e-7, 72, 21, 68},
		{5, 1e-6, 149, 19, 144},
		{10, 1e-6, 293, 20, 288},
		{100, 1e-18, 8641, 60, 8627},
		{1, 1e-30, 166, 64, 144}, // MaxHashes
		{1000, 0.1, 4810, 3, 4793},
		{1000, 0.01, 9595, 7, 9586},
		{1000, 0.001, 14381, 10, 14378},
		{1000000, 0.01, 9592955, 7, 9585059},
		{1000000, 0.001, 14377640, 10, 14377588},
		{1000000, 0.0001, 19172955, 13, 19170117},
		{10000000, 0.01, 95929548, 7, 95850584},
	}
	for _, tt := range tests {
		if got := OptimalBits(tt.n, tt.p); got != tt.textbook {
			t.Errorf("OptimalBits(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.textbook)
		}
		m, k, err := Size(tt.n, tt.p)
		if err != nil || m != tt.m || k != tt.k {
			t.Errorf("Size(%d, %v) = %d, %d, %v; want %d, %d", tt.n, tt.p, m, k, err, tt.m, tt.k)
		}
		if r := FalsePositiveRate(m, k, tt.n); r > tt.p {
			t.Errorf("Size(%d, %v): rate %v exceeds the target", tt.n, tt.p, r)
		}
		if m > tt.textbook && FalsePositiveRate(m-1, min(OptimalHashes(m-1, tt.n), MaxHashes), tt.n) <= tt.p {
			t.Errorf("Size(%d, %v) = %d is not the smallest size meeting the target", tt.n, tt.p, m)
		}
	}
	// The case the issue names: the textbook size overshoots with k = 7.
	if r := FalsePositiveRate(9585059, 7, 1e6); r <= 0.01 {
		t.Errorf("textbook m no longer overshoots (%v); the golden table above needs a look", r)
	}
}

func TestSizeMeetsTargetEverywhere(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		n := 1 + r.Uint64N(1e8)
		p := math.Pow(10, -r.Float64()*12)
		if p >= 1 {
			continue
		}
		m, k, err := Size(n, p)
		if err != nil {
			continue // beyond MaxBits
		}
		if got := FalsePositiveRate(m, k, n); got > p {
			t.Fatalf("Size(%d, %v) = (%d, %d) gives %v", n, p, m, k, got)
		}
	}
}

func TestEstimateCount(t *testing.T) {
	if got := EstimateCount(100, 3, 100); !math.IsInf(got, 1) {
		t.Errorf("full filter: got %v, want +Inf", got)
	}
	if got := EstimateCount(1000, 5, 0); got != 0 {
		t.Errorf("empty filter: got %v, want 0", got)
	}
	// The expected fill for n keys is m(1 - e^(-kn/m)); the estimate inverts it.
	m, k, n := uint64(1e6), uint(7), 50000.0
	fill := float64(m) * -math.Expm1(-float64(k)*n/float64(m))
	if got := EstimateCount(m, k, uint64(math.Round(fill))); math.Abs(got-n) > 1 {
		t.Errorf("EstimateCount = %v, want about %v", got, n)
	}
}

// ---- constructors ----

func TestConstructorErrors(t *testing.T) {
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"capacity 0", func() error { _, err := New(0, 0.01); return err }, "capacity"},
		{"rate 0", func() error { _, err := New(10, 0); return err }, "errorRate"},
		{"rate 1", func() error { _, err := New(10, 1); return err }, "errorRate"},
		{"rate negative", func() error { _, err := New(10, -0.5); return err }, "errorRate"},
		{"rate NaN", func() error { _, err := New(10, math.NaN()); return err }, "errorRate"},
		{"rate Inf", func() error { _, err := New(10, math.Inf(1)); return err }, "errorRate"},
		{"too large", func() error { _, err := New(1<<40, 0.01); return err }, "MaxBits"},
		{"rate too small", func() error { _, err := New(1e9, 1e-100); return err }, "lowest rate"},
		{"bits 0", func() error { _, err := NewWithSize(0, 3); return err }, "bits"},
		{"bits too many", func() error { _, err := NewWithSize(MaxBits+1, 3); return err }, "bits"},
		{"hashes 0", func() error { _, err := NewWithSize(64, 0); return err }, "hashes"},
		{"hashes absurd", func() error { _, err := NewWithSize(64, 1000); return err }, "hashes"},
		{"zero option", func() error { _, err := New(10, 0.1, Option{}); return err }, "Option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if !errors.Is(err, ErrInvalidParameter) {
				t.Fatalf("got %v, want an error wrapping ErrInvalidParameter", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "bloom: ") {
				t.Errorf("error %q should start with \"bloom: \" and name %q", err, tt.want)
			}
		})
	}
}

func TestNewWithSize(t *testing.T) {
	f, err := NewWithSize(1000, 5, Seed(9))
	if err != nil {
		t.Fatal(err)
	}
	if f.Bits() != 1000 || f.Hashes() != 5 || f.Seed() != 9 {
		t.Fatalf("got m=%d k=%d seed=%d", f.Bits(), f.Hashes(), f.Seed())
	}
	if f.Capacity() != 139 { // round(1000 ln 2 / 5)
		t.Errorf("Capacity = %d, want 139", f.Capacity())
	}
	if want := FalsePositiveRate(1000, 5, 139); f.ErrorRate() != want {
		t.Errorf("ErrorRate = %v, want %v", f.ErrorRate(), want)
	}
	g := mustNew(t, 1000, 0.01)
	if g.Seed() != DefaultSeed {
		t.Errorf("default seed %#x, want DefaultSeed", g.Seed())
	}
}

func TestZeroValuePanics(t *testing.T) {
	var f BloomFilter
	for name, call := range map[string]func(){
		"Add":        func() { f.Add([]byte("x")) },
		"Test":       func() { f.Test([]byte("x")) },
		"TestString": func() { f.TestString("x") },
		"TestAndAdd": func() { f.TestAndAdd(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a zero BloomFilter did not panic", name)
				}
			}()
			call()
		}()
	}
	if _, err := f.MarshalBinary(); err == nil {
		t.Error("MarshalBinary of a zero BloomFilter succeeded")
	}
	g := mustNew(t, 10, 0.1)
	if _, err := g.Union(&f); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Union with a zero filter: %v", err)
	}
}

// zeroCase is the expected behaviour of one method on a zero value: it
// panics with the zero-value message, or it returns and check, if set,
// reports what is wrong with its result.
type zeroCase struct {
	panics bool
	call   func() string // "" when the result is as documented
}

// checkZeroValue runs cases, which must cover every exported method of typ.
func checkZeroValue(t *testing.T, typ reflect.Type, want string, cases map[string]zeroCase) {
	t.Helper()
	for i := range typ.NumMethod() {
		if _, ok := cases[typ.Method(i).Name]; !ok {
			t.Errorf("%v.%s: no zero-value case", typ, typ.Method(i).Name)
		}
	}
	for name, c := range cases {
		func() {
			defer func() {
				r := recover()
				switch {
				case c.panics && r == nil:
					t.Errorf("%s on a zero value did not panic", name)
				case c.panics && r != want:
					t.Errorf("%s on a zero value panicked with %v, want %q", name, r, want)
				case !c.panics && r != nil:
					t.Errorf("%s on a zero value panicked: %v", name, r)
				}
			}()
			if msg := c.call(); msg != "" && !c.panics {
				t.Errorf("%s on a zero value: %s", name, msg)
			}
		}()
	}
}

// zeroIs returns "" if got is 0 (or false), or a complaint.
func zeroIs[T comparable](got T) string {
	var zero T
	if got != zero {
		return fmt.Sprintf("got %v, want %v", got, zero)
	}
	return ""
}

// errIs returns "" if err is non-nil and matches target (any error if target
// is nil), or a complaint.
func errIs(err, target error) string {
	if err == nil || target != nil && !errors.Is(err, target) {
		return fmt.Sprintf("error %v, want one matching %v", err, target)
	}
	return ""
}

// TestZeroValue checks every exported method of a zero BloomFilter against
// the type's doc. Clone used to panic with a nil dereference and
// EstimatedCount with another, EstimatedErrorRate reported 1 and IsFull true.
func TestZeroValue(t *testing.T) {
	var f BloomFilter
	g := mustNew(t, 10, 0.1)
	panics := func(fn func()) zeroCase { return zeroCase{true, func() string { fn(); return "" }} }
	returns := func(fn func() string) zeroCase { return zeroCase{false, fn} }
	checkZeroValue(t, reflect.TypeOf(&f), errZeroValue, map[string]zeroCase{
		"Add":              panics(func() { f.Add([]byte("x")) }),
		"AddString":        panics(func() { f.AddString("x") }),
		"Test":             panics(func() { f.Test([]byte("x")) }),
		"TestString":       panics(func() { f.TestString("x") }),
		"TestAndAdd":       panics(func() { f.TestAndAdd(nil) }),
		"TestAndAddString": panics(func() { f.TestAndAddString("x") }),
		// The batch calls panic once there is a key; with none they do
		// nothing (TestBatchZeroValue).
		"AddMany":               panics(func() { f.AddMany([][]byte{nil}) }),
		"AddManyStrings":        panics(func() { f.AddManyStrings([]string{"x"}) }),
		"TestMany":              panics(func() { f.TestMany([][]byte{nil}, nil) }),
		"TestManyStrings":       panics(func() { f.TestManyStrings([]string{"x"}, nil) }),
		"TestAndAddMany":        panics(func() { f.TestAndAddMany([][]byte{nil}, nil) }),
		"TestAndAddManyStrings": panics(func() { f.TestAndAddManyStrings([]string{"x"}, nil) }),
		"AddHash":               panics(func() { f.AddHash(1) }),
		"TestHash":              panics(func() { f.TestHash(1) }),
		"TestAndAddHash":        panics(func() { f.TestAndAddHash(1) }),
		"AddManyHashes":         panics(func() { f.AddManyHashes([]uint64{1}) }),
		"TestManyHashes":        panics(func() { f.TestManyHashes([]uint64{1}, nil) }),
		"TestAndAddManyHashes":  panics(func() { f.TestAndAddManyHashes([]uint64{1}, nil) }),
		"Clone":                 panics(func() { f.Clone() }),
		"Bits":                  returns(func() string { return zeroIs(f.Bits()) }),
		"Hashes":                returns(func() string { return zeroIs(f.Hashes()) }),
		"Blocked":               returns(func() string { return zeroIs(f.Blocked()) }),
		"Layout":                returns(func() string { return zeroIs(f.Layout()) }),
		"Seed":                  returns(func() string { return zeroIs(f.Seed()) }),
		"Capacity":              returns(func() string { return zeroIs(f.Capacity()) }),
		"ErrorRate":             returns(func() string { return zeroIs(f.ErrorRate()) }),
		"Count":                 returns(func() string { return zeroIs(f.Count()) }),
		"IsFull":                returns(func() string { return zeroIs(f.IsFull()) }),
		"FillRatio":             returns(func() string { return zeroIs(f.FillRatio()) }),
		"EstimatedCount":        returns(func() string { return zeroIs(f.EstimatedCount()) }),
		"EstimatedErrorRate":    returns(func() string { return zeroIs(f.EstimatedErrorRate()) }),
		"EncodedSize":           returns(func() string { return zeroIs(f.EncodedSize()) }),
		"Clear":                 returns(func() string { f.Clear(); return zeroIs(f.Count()) }),
		"Equal": returns(func() string {
			if !f.Equal(&BloomFilter{}) || f.Equal(g) || g.Equal(&f) {
				return "Equal is wrong"
			}
			return ""
		}),
		"Union": returns(func() string {
			_, err := f.Union(g)
			_, err2 := g.Union(&f)
			return errIs(err, ErrIncompatible) + errIs(err2, ErrIncompatible)
		}),
		"Intersection": returns(func() string {
			_, err := f.Intersection(g)
			return errIs(err, ErrIncompatible)
		}),
		"AppendBinary": returns(func() string {
			_, err := f.AppendBinary(nil)
			return errIs(err, nil)
		}),
		"MarshalBinary": returns(func() string {
			_, err := f.MarshalBinary()
			return errIs(err, nil)
		}),
		"WriteTo": returns(func() string {
			var w bytes.Buffer
			n, err := f.WriteTo(&w)
			return errIs(err, nil) + zeroIs(n) + zeroIs(w.Len())
		}),
		"AppendText": returns(func() string {
			b, err := f.AppendText([]byte("x"))
			return errIs(err, nil) + zeroIs(string(b[1:]))
		}),
		"MarshalText": returns(func() string {
			_, err := f.MarshalText()
			return errIs(err, nil)
		}),
		"Merge": returns(func() string {
			return errIs(f.Merge(g), ErrIncompatible) + errIs(g.Clone().Merge(&f), ErrIncompatible)
		}),
		"Header":      returns(func() string { return zeroIs(f.Header()) }),
		"AppendWords": returns(func() string { return zeroIs(len(f.AppendWords(nil))) }),
		"UnmarshalText": returns(func() string {
			var h BloomFilter
			text, _ := g.MarshalText()
			if err := h.UnmarshalText(text); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
		// Decoding into a zero value makes it usable; run last, on a copy.
		"UnmarshalBinary": returns(func() string {
			var h BloomFilter
			enc, _ := g.MarshalBinary()
			if err := h.UnmarshalBinary(enc); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
		"ReadFrom": returns(func() string {
			var h BloomFilter
			enc, _ := g.MarshalBinary()
			if _, err := h.ReadFrom(bytes.NewReader(enc)); err != nil || !h.Equal(g) {
				return fmt.Sprint(err)
			}
			return ""
		}),
	})
}

// ---- behaviour ----

func TestAddTestCount(t *testing.T) {
	f := mustNew(t, 1000, 0.01)
	if f.TestString("a") || f.Test(nil) {
		t.Fatal("empty filter reports a key present")
	}
	if f.TestAndAddString("a") {
		t.Error("TestAndAdd reported a new key present")
	}
	if !f.TestAndAdd([]byte("a")) {
		t.Error("TestAndAdd reported an added key absent")
	}
	f.Add(nil)
	f.AddString("")
	f.AddString("a")
	if f.Count() != 2 {
		t.Errorf("Count = %d, want 2 (duplicates do not count)", f.Count())
	}
	if !f.Test([]byte{}) || !f.TestString("a") || !f.Test([]byte("a")) {
		t.Error("false negative")
	}
	buf := make([]byte, 16)
	for i := range uint64(1010) {
		f.Add(keyOf(buf, 0, i))
	}
	// A new key whose bits are all set already (a false positive) does not
	// count: about 0.5% of them while the filter fills.
	if f.Count() < 1000 || f.Count() > 1012 || !f.IsFull() {
		t.Errorf("Count = %d IsFull = %v after 1012 distinct keys", f.Count(), f.IsFull())
	}
	if e := f.EstimatedCount(); e < 950 || e > 1050 {
		t.Errorf("EstimatedCount = %d, want about 1000", e)
	}
	if r := f.FillRatio(); r < 0.45 || r > 0.55 {
		t.Errorf("FillRatio = %v, want about 0.5 at capacity", r)
	}
	if r := f.EstimatedErrorRate(); r < 0.005 || r > 0.02 {
		t.Errorf("EstimatedErrorRate = %v, want about 0.01", r)
	}
	f.Clear()
	if f.Count() != 0 || f.FillRatio() != 0 || f.TestString("a") {
		t.Error("Clear left keys behind")
	}
}

func TestUnionIntersection(t *testing.T) {
	a, b := mustNew(t, 1000, 0.01, Classic()), mustNew(t, 1000, 0.01, Classic())
	buf := make([]byte, 16)
	for i := range uint64(600) {
		a.Add(keyOf(buf, 0, i))
		b.Add(keyOf(buf, 0, i+400))
	}
	aBefore, bBefore := a.Clone(), b.Clone()
	u, err := a.Union(b)
	if err != nil {
		t.Fatal(err)
	}
	in, err := a.Intersection(b)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(aBefore) || !b.Equal(bBefore) {
		t.Fatal("Union or Intersection changed an input")
	}
	for i := range uint64(1000) {
		if !u.Test(keyOf(buf, 0, i)) {
			t.Fatalf("union lost key %d", i)
		}
		if i >= 400 && i < 600 && !in.Test(keyOf(buf, 0, i)) {
			t.Fatalf("intersection lost key %d", i)
		}
	}
	if c := u.Count(); c < 950 || c > 1050 {
		t.Errorf("union Count = %d, want about 1000", c)
	}
	if c := in.Count(); c < 150 || c > 300 {
		t.Errorf("intersection Count = %d, want about 200", c)
	}

	for name, other := range map[string]*BloomFilter{
		"bits":   mustNew(t, 1001, 0.01, Classic()),
		"hashes": func() *BloomFilter { f, _ := NewWithSize(a.Bits(), a.Hashes()+1); return f }(),
		"seed":   mustNew(t, 1000, 0.01, Seed(1), Classic()),
		"nil":    nil,
	} {
		if g, err := a.Union(other); !errors.Is(err, ErrIncompatible) || g != nil {
			t.Errorf("Union with different %s: %v, %v", name, g, err)
		}
		if g, err := a.Intersection(other); !errors.Is(err, ErrIncompatible) || g != nil {
			t.Errorf("Intersection with different %s: %v, %v", name, g, err)
		}
	}
}

func TestCloneEqual(t *testing.T) {
	f := mustNew(t, 100, 0.01)
	f.AddString("x")
	g := f.Clone()
	if !g.Equal(f) || !f.Equal(g) {
		t.Fatal("clone differs")
	}
	g.AddString("y")
	if g.Equal(f) || f.TestString("y") && !g.Equal(f) && f.Count() != 1 {
		t.Fatal("clone shares state with the original")
	}
	if f.Equal(nil) || !(*BloomFilter)(nil).Equal(nil) {
		t.Error("Equal with nil")
	}
	h := mustNew(t, 100, 0.01, Seed(5))
	h.AddString("x")
	if h.Equal(f) {
		t.Error("filters with different seeds are Equal")
	}
}

// TestNoFalseNegatives is the core property: over many random
// configurations, every added key tests present, including empty and binary
// keys, and after Union, Clone and a binary round trip.
func TestNoFalseNegatives(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 43))
	configs := 120
	if testing.Short() {
		configs = 30
	}
	for c := range configs {
		n := 1 + r.Uint64N(20000)
		p := math.Pow(10, -0.2-r.Float64()*6)
		f := mustNew(t, n, p, Seed(r.Uint32()), Classic())
		other, _ := NewWithSize(f.Bits(), f.Hashes(), Seed(f.Seed()))
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
			if i%2 == 0 {
				f.Add(k)
			} else {
				f.AddString(string(k))
			}
			other.AddString("other" + string(k))
		}
		u, err := f.Union(other)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var dec BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		var streamed BloomFilter
		if _, err := streamed.ReadFrom(bytes.NewReader(enc)); err != nil {
			t.Fatal(err)
		}
		for name, g := range map[string]*BloomFilter{"filter": f, "union": u, "clone": f.Clone(), "decoded": &dec, "read": &streamed} {
			for _, k := range keys {
				if !g.Test(k) || !g.TestString(string(k)) {
					t.Fatalf("config %d (n=%d p=%g) %s: false negative for %x", c, n, p, name, k)
				}
			}
		}
	}
}

// ---- statistics ----

// measureFPR adds n member keys and tests absent keys, returning the
// measured rate and the rate predicted from the fill, FillRatio^k.
func measureFPR(f *BloomFilter, n, absent uint64) (measured, predicted float64) {
	buf := make([]byte, 16)
	for i := range n {
		f.Add(keyOf(buf, 0, i))
	}
	fp := 0
	for i := range absent {
		if f.Test(keyOf(buf, 1, i)) {
			fp++
		}
	}
	return float64(fp) / float64(absent), f.EstimatedErrorRate()
}

func TestFalsePositiveRate(t *testing.T) {
	for _, n := range []uint64{1e3, 1e5, 1e6} {
		for _, p := range []float64{0.1, 0.01, 0.001, 0.0001} {
			// At least 10^6 absent keys, and enough to expect 2000 false
			// positives, so that 1.1x the target is 4.5 sigma away.
			absent := max(uint64(1_000_000), uint64(2000/p))
			t.Run(fmt.Sprintf("n=%g/p=%g", float64(n), p), func(t *testing.T) {
				if testing.Short() && n > 1e5 {
					t.Skip("large filter in -short mode")
				}
				f := mustNew(t, n, p)
				got, want := measureFPR(f, n, absent)
				sigma := math.Sqrt(want * (1 - want) / float64(absent))
				if math.Abs(got-want) > 5*sigma {
					t.Errorf("measured %.6f, fill predicts %.6f (5 sigma = %.6f)", got, want, 5*sigma)
				}
				if n >= 1e5 && got > 1.1*p {
					t.Errorf("measured %.6f at capacity, more than 1.1x the target %v", got, p)
				}
				t.Logf("measured %.6f, predicted %.6f, target %v, ratio %.3f", got, want, p, got/p)
			})
		}
	}
}

// averageRatio returns the measured false-positive rate of n-key filters at
// p, averaged over 40 seeds starting at seed0, divided by p.
func averageRatio(t *testing.T, n uint64, p float64, absent uint64, seed0 uint32) float64 {
	const seeds = 40
	var sum float64
	for s := range uint32(seeds) {
		f := mustNew(t, n, p, Seed(s*0x9E3779B1+seed0))
		got, _ := measureFPR(f, n, absent)
		sum += got
	}
	ratio := sum / seeds / p
	t.Logf("n=%d p=%g over %d seeds: measured/target = %.3f", n, p, seeds, ratio)
	return ratio
}

// TestSmallFilterTinyRate guards the known pitfall of double hashing under a
// multiply-shift: small n and tiny p drift above target unless the
// correction reaches the high bits.
func TestSmallFilterTinyRate(t *testing.T) {
	if ratio := averageRatio(t, 1000, 1e-5, 500_000, 1); ratio > 1.3 {
		t.Errorf("measured rate is %.2fx the target, want <= 1.3x", ratio)
	}
}

// TestTinyFilterTinyRate guards the other small-filter pitfall: without the
// mix in locate, two keys with close (h1, h2) share all their positions with
// a probability of the order of 1/m^2, which at n = 10, p = 1e-6 (m = 288
// bits) put the rate at 2.5x the target. What remained then (1.47x) was the
// closed form's optimism for tiny m, which Size now corrects with the exact
// rate. Expecting only 30 false positives, this test sees gross excesses
// only; TestSmallFilterRate and TestSmallFilterRateByFill see 1.2x.
func TestTinyFilterTinyRate(t *testing.T) {
	if ratio := averageRatio(t, 10, 1e-6, 750_000, 7); ratio > 1.6 {
		t.Errorf("measured rate is %.2fx the target, want <= 1.6x", ratio)
	}
}

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

// goldenFilter is a small filter whose encoding is pinned below.
func goldenFilter(t testing.TB) *BloomFilter {
	f, err := NewWithSize(100, 3, Seed(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cat", "dog", "fox"} {
		f.AddString(k)
	}
	return f
}

// goldenEncoding is the version-1 encoding of goldenFilter, which decoders
// keep reading: the format promise in bytes. Its error rate field (bytes
// 32-39) is FalsePositiveRate(100, 3, 23), which became the exact rate
// 0.1263 (was the closed form's 0.1238) when sizing moved to it; every other
// byte is unchanged.
const goldenEncoding = "424c4d4601000000070000000300000064000000000000001700000000000000377a0d7a9529c03f03000000000000000040000805000028080000020000000017a73f7a"

// goldenEncodingV3 is the version-3 encoding of goldenFilter, which
// MarshalBinary and WriteTo write.
const goldenEncodingV3 = "424c4d4603000000070000000300000064000000000000001700000000000000377a0d7a9529c03f03000000000000000000100000000000000000002a17967c00400008050000280800000200000000414b31c2"

// v3FromV1 builds the version-3 encoding of a BloomFilter from its
// version-1 or 2 encoding as the package doc lays it out: the same first 48
// bytes but for the version (3) and the layout at offset 6, the section size
// (1 MiB), 8 zero bytes and the CRC-32C of those 60 bytes; the same words;
// the CRC-32C of each MiB of them.
func v3FromV1(v1 []byte) []byte {
	b := bytes.Clone(v1[:format.HeaderSize])
	if b[4] == 1 {
		b[6] = 0
	} else {
		b[6] = 1
	}
	b[4] = 3
	b = binary.LittleEndian.AppendUint32(b, 1<<20)
	b = append(b, make([]byte, 8)...)
	b = binary.LittleEndian.AppendUint32(b, crc32Checksum(b))
	words := v1[format.HeaderSize : len(v1)-format.CRCSize]
	b = append(b, words...)
	for lo := 0; lo < len(words); lo += 1 << 20 {
		b = binary.LittleEndian.AppendUint32(b, crc32Checksum(words[lo:min(lo+1<<20, len(words))]))
	}
	return b
}

// scalableV3FromV1 builds the version-3 encoding of a ScalableBloomFilter
// from its version-1 or 2 encoding as the package doc lays it out: its first
// 52 bytes with version 3; the CRC-32C of the table, 4 zero bytes and the
// CRC-32C of those 60 bytes; the table of the sub-filters' offsets, each the
// end of the one before rounded up to a multiple of 64; the sub-filters in
// version 3 (v3FromV1), with zeros up to the next one's offset.
func scalableV3FromV1(v1 []byte) []byte {
	n := int(binary.LittleEndian.Uint32(v1[48:]))
	var subs [][]byte
	for off := format.ScalableHeaderSize; len(subs) < n; {
		m := binary.LittleEndian.Uint64(v1[off+16:])
		size := format.HeaderSize + 8*int((m+63)/64) + format.CRCSize
		subs = append(subs, v3FromV1(v1[off:off+size]))
		off += size
	}
	align := func(x int) int { return (x + 63) / 64 * 64 }
	var table []byte
	at := align(64 + 8*n)
	for _, sub := range subs {
		table = binary.LittleEndian.AppendUint64(table, uint64(at))
		at = align(at + len(sub))
	}
	b := bytes.Clone(v1[:52])
	b[4] = 3
	b = binary.LittleEndian.AppendUint32(b, crc32Checksum(table))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, crc32Checksum(b))
	b = append(b, table...)
	for _, sub := range subs {
		b = append(b, make([]byte, align(len(b))-len(b))...)
		b = append(b, sub...)
	}
	return b
}

func TestGoldenEncoding(t *testing.T) {
	f := goldenFilter(t)
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(enc); got != goldenEncodingV3 {
		t.Errorf("encoding changed:\n got %s\nwant %s", got, goldenEncodingV3)
	}
	v1, _ := hex.DecodeString(goldenEncoding)
	if !bytes.Equal(enc, v3FromV1(v1)) {
		t.Errorf("encoding is not the documented version 3 of the version-1 golden bytes:\n got %x\nwant %x", enc, v3FromV1(v1))
	}
	again, _ := goldenFilter(t).MarshalBinary()
	if !bytes.Equal(enc, again) {
		t.Error("the same filter encoded to different bytes")
	}
	var w bytes.Buffer
	if n, err := f.WriteTo(&w); err != nil || n != int64(len(enc)) || !bytes.Equal(w.Bytes(), enc) {
		t.Errorf("WriteTo wrote %d bytes (%v), differing from MarshalBinary", n, err)
	}
	if len(enc) != f.EncodedSize() {
		t.Errorf("EncodedSize = %d, encoding has %d bytes", f.EncodedSize(), len(enc))
	}
	// Version 1 still decodes, to the same filter, and encodeV1, which
	// the tests of old encodings use, writes it byte for byte.
	if got := hex.EncodeToString(encodeV1(f)); got != goldenEncoding {
		t.Errorf("encodeV1 differs from the golden version 1:\n got %s\nwant %s", got, goldenEncoding)
	}
	var g BloomFilter
	if err := g.UnmarshalBinary(v1); err != nil || !g.Equal(f) {
		t.Errorf("the version-1 golden bytes decode to another filter: %v", err)
	}
}

// ---- decoding ----

func TestDecodeRejectsDamage(t *testing.T) {
	f := goldenFilter(t)
	before := mustNew(t, 10, 0.1)
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
	for _, enc := range [][]byte{encodeV1(f), mustMarshal(t, f)} {
		for i := range len(enc) {
			var err error
			if err = before.UnmarshalBinary(enc[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("truncation to %d bytes: got %v, want io.ErrUnexpectedEOF", i, err)
			}
			if _, err = before.ReadFrom(bytes.NewReader(enc[:i])); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadFrom of truncation to %d bytes: got %v, want io.ErrUnexpectedEOF", i, err)
			}
			check(fmt.Sprintf("truncation to %d bytes", i), enc[:i])
		}
		for i := range 8 * len(enc) {
			bad := bytes.Clone(enc)
			bad[i/8] ^= 1 << (i % 8)
			check(fmt.Sprintf("bit %d flipped", i), bad)
		}
		check("trailing bytes", append(bytes.Clone(enc), 0))
	}
}

// reseal recomputes the checksums of the BloomFilter encoding b, of any
// version, so that a test can reach the checks behind them: the one at the
// end of versions 1 and 2; in version 3 the header's and, if the length is
// what the header declares, every section's.
func reseal(b []byte) []byte {
	if len(b) >= format.V3HeaderSize && format.IsV3(b) {
		return resealV3(b)
	}
	if len(b) < format.CRCSize {
		return b
	}
	body := b[:len(b)-format.CRCSize]
	binary.LittleEndian.PutUint32(b[len(b)-format.CRCSize:], crc32Checksum(body))
	return b
}

// resealV3 is reseal for version 3.
func resealV3(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[60:], crc32Checksum(b[:60]))
	m, sec := binary.LittleEndian.Uint64(b[16:]), uint64(binary.LittleEndian.Uint32(b[48:]))
	if m == 0 || m > MaxBits || sec < 64 || sec&(sec-1) != 0 {
		return b
	}
	words := 8 * ((m + 63) / 64)
	sections := (words + sec - 1) / sec
	if uint64(len(b)) != format.V3HeaderSize+words+4*sections {
		return b
	}
	body, table := b[format.V3HeaderSize:][:words], b[format.V3HeaderSize+words:]
	for i := range sections {
		binary.LittleEndian.PutUint32(table[4*i:], crc32Checksum(body[i*sec:min((i+1)*sec, words)]))
	}
	return b
}

// encodeV1 returns the encoding of f in format version 1, or 2 for the
// blocked layout: what MarshalBinary wrote before version 3, which every
// decoder keeps reading, written by the format package's writer of those
// versions. TestGoldenEncoding pins it to the golden bytes.
func encodeV1(f *BloomFilter) []byte {
	return format.Append(nil, f.header(), f.words, f.conc != nil)
}

// encodeScalableV1 is encodeV1 for a ScalableBloomFilter.
func encodeScalableV1(s *ScalableBloomFilter) []byte {
	filters, saturated := s.subFilters()
	b := format.AppendScalableHeader(nil, s.header(filters, saturated))
	for _, f := range filters {
		b = append(b, encodeV1(f)...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32Checksum(b))
}

// sameVersion returns the encoding of f in the format version of data:
// MarshalBinary's for version 3, encodeV1's for the others.
func sameVersion(f interface{ MarshalBinary() ([]byte, error) }, data []byte) []byte {
	// Version 3 records its section size, which decoders accept as any
	// power of two in [64, 2^30] and encoders write as 2^20: re-encode with
	// the sizes data has.
	if len(data) >= format.V3HeaderSize && format.IsV3(data) {
		switch f := f.(type) {
		case *BloomFilter:
			h := format.V3Header{Header: f.header(), SectionSize: uint64(binary.LittleEndian.Uint32(data[48:]))}
			return format.AppendV3(nil, h, f.words, false)
		case *ScalableBloomFilter:
			_, subs, err := format.WalkV3Scalable(data)
			if err != nil || len(subs) != len(f.filters) {
				return nil
			}
			sizes := make([]uint64, len(subs))
			for i, sub := range subs {
				h := format.V3Header{Header: f.filters[i].header(), SectionSize: sub.H.SectionSize}
				sizes[i] = h.Size()
			}
			offsets, _ := format.V3ScalableOffsets(sizes)
			b := format.AppendV3ScalableHeader(nil, format.V3ScalableHeader{ScalableHeader: f.header(f.filters, f.saturated)}, offsets)
			for i, g := range f.filters {
				b = append(b, make([]byte, int(offsets[i])-len(b))...)
				b = format.AppendV3(b, format.V3Header{Header: g.header(), SectionSize: subs[i].H.SectionSize}, g.words, false)
			}
			return b
		}
	}
	if len(data) >= 6 && !format.IsV3(data) {
		switch f := f.(type) {
		case *BloomFilter:
			return encodeV1(f)
		case *ScalableBloomFilter:
			return encodeScalableV1(f)
		}
	}
	b, _ := f.MarshalBinary()
	return b
}

// hostileHeaders returns, in each format version, the header of a
// BloomFilter that claims MaxBits bits, with a valid checksum where the
// header has one.
func hostileHeaders() map[string][]byte {
	f, _ := NewWithSize(64, 1)
	v1 := encodeV1(f)[:format.HeaderSize]
	binary.LittleEndian.PutUint64(v1[16:], MaxBits)
	enc, _ := f.MarshalBinary()
	v3 := enc[:format.V3HeaderSize]
	binary.LittleEndian.PutUint64(v3[16:], MaxBits)
	return map[string][]byte{"v1": v1, "v3": resealV3(v3)}
}

func TestDecodeRejectsInconsistentHeaders(t *testing.T) {
	f := goldenFilter(t)
	for version, enc := range map[string][]byte{"v1": encodeV1(f), "v3": mustMarshal(t, f)} {
		words := format.HeaderSize // where the words start
		if version == "v3" {
			words = format.V3HeaderSize
		}
		tests := map[string]func(b []byte){
			"k 0":            func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 0) },
			"k huge":         func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 1<<31) },
			"m 0":            func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 0) },
			"m larger":       func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 200) },
			"m smaller":      func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 64) },
			"m max":          func(b []byte) { binary.LittleEndian.PutUint64(b[16:], math.MaxUint64) },
			"capacity 0":     func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 0) },
			"rate NaN":       func(b []byte) { binary.LittleEndian.PutUint64(b[32:], math.Float64bits(math.NaN())) },
			"rate 1":         func(b []byte) { binary.LittleEndian.PutUint64(b[32:], math.Float64bits(1)) },
			"count too high": func(b []byte) { binary.LittleEndian.PutUint64(b[40:], 50) },
			"padding bit":    func(b []byte) { b[words+8+7] |= 0x80 },
			"version 2":      func(b []byte) { b[4] = 2 },
			"flags":          func(b []byte) { b[6] = 1 },
		}
		for name, damage := range tests {
			t.Run(version+"/"+name, func(t *testing.T) {
				b := bytes.Clone(enc)
				damage(b)
				reseal(b)
				var f BloomFilter
				if err := f.UnmarshalBinary(b); err == nil {
					t.Error("UnmarshalBinary accepted it")
				}
				if _, err := f.ReadFrom(bytes.NewReader(b)); err == nil {
					t.Error("ReadFrom accepted it")
				}
			})
		}
	}
}

// TestDecodeHostileHeaderDoesNotAllocate feeds a header that claims the
// largest filter, followed by a few bytes: the decoders must fail without
// allocating anything near what the header claims.
func TestDecodeHostileHeaderDoesNotAllocate(t *testing.T) {
	for version, hdr := range hostileHeaders() {
		t.Run(version, func(t *testing.T) { checkHostileHeader(t, append(hdr, make([]byte, 1000)...)) })
	}
}

func checkHostileHeader(t *testing.T, data []byte) {
	var g BloomFilter
	allocs := testing.AllocsPerRun(5, func() {
		if err := g.UnmarshalBinary(data); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("got %v", err)
		}
	})
	if allocs > 0 {
		t.Errorf("UnmarshalBinary allocated %v times for a hostile header", allocs)
	}
	var ms0, ms1 runtimeMem
	ms0.read()
	if _, err := g.ReadFrom(bytes.NewReader(data)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadFrom: got %v", err)
	}
	ms1.read()
	if d := ms1.total - ms0.total; d > 1<<20 {
		t.Errorf("ReadFrom allocated %d bytes for a 1 KB input", d)
	}
}

// TestReadFromAllocatesWhatArrives bounds what ReadFrom allocates by what the
// input holds: about its size for a header that claims more than follows,
// about twice for a valid filter from a stream of unknown size (the chunks,
// then the filter; TestReadKnownSizeAllocatesOnce has the readers that tell
// their size). Growing one slice as the words came in cost about 5x.
func TestReadFromAllocatesWhatArrives(t *testing.T) {
	const size = 8 << 20 // bytes of words supplied
	hostile := hostileHeaders()
	valid, _ := NewWithSize(8*size, 3)
	enc, _ := valid.MarshalBinary()
	for _, tc := range []struct {
		name  string
		data  []byte
		ratio float64 // allowed bytes allocated per byte of input
		err   error
	}{
		{"hostile header v1", append(hostile["v1"], make([]byte, size)...), 1.2, io.ErrUnexpectedEOF},
		{"hostile header v3", append(hostile["v3"], make([]byte, size)...), 1.2, io.ErrUnexpectedEOF},
		{"valid v1", encodeV1(valid), 2.2, nil},
		{"valid", enc, 2.2, nil},
	} {
		var g BloomFilter
		got := allocated(func() {
			if _, err := g.ReadFrom(struct{ io.Reader }{bytes.NewReader(tc.data)}); err != tc.err {
				t.Errorf("%s: ReadFrom: %v, want %v", tc.name, err, tc.err)
			}
		})
		r := float64(got) / float64(len(tc.data))
		t.Logf("%s: %d bytes allocated for %d read: %.2fx", tc.name, got, len(tc.data), r)
		if r > tc.ratio {
			t.Errorf("%s: ReadFrom allocated %.2fx the %d bytes of input, want at most %vx", tc.name, r, len(tc.data), tc.ratio)
		}
	}
}

// lyingLen claims to hold far more than it does.
type lyingLen struct{ r io.Reader }

func (l lyingLen) Read(p []byte) (int, error) { return l.r.Read(p) }
func (lyingLen) Len() int                     { return math.MaxInt }
func (lyingLen) Size() int64                  { return math.MaxInt64 }

// TestReadKnownSizeAllocatesOnce is issue 21, item 8: ReadFrom, Read,
// ReadAny and ReadScalable allocated twice the bytes they read for a valid
// 9 MB filter (the chunks, then one copy), whatever the reader. When the
// reader tells how much it holds (bytes.Reader, bytes.Buffer, strings.Reader,
// io.SectionReader, a regular *os.File) and that confirms what the header
// declares, the words are read into one slice: at most 1.1x the input. A
// reader that does not tell keeps the chunks; one whose Len or Size claims
// more than it holds gets no larger allocation than the chunks would.
func TestReadKnownSizeAllocatesOnce(t *testing.T) {
	bits := uint64(72 << 20) // 9 MiB of words
	if testing.Short() {
		bits = 16 << 20
	}
	plain := mustNewWithSize(t, bits, 3)
	blocked := mustNewWithSize(t, bits, 3, Blocked())
	scalable := mustScalable(t, bits/10, 0.01)
	buf := make([]byte, 16)
	for i := range uint64(1000) {
		plain.Add(keyOf(buf, 0, i))
		blocked.Add(keyOf(buf, 0, i))
		scalable.Add(keyOf(buf, 0, i))
	}
	dir := t.TempDir()
	type decoder struct {
		name   string
		decode func(io.Reader) (Filter, error)
	}
	intoPlain := func(r io.Reader) (Filter, error) {
		var g BloomFilter
		_, err := g.ReadFrom(r)
		return &g, err
	}
	intoScalable := func(r io.Reader) (Filter, error) {
		var g ScalableBloomFilter
		_, err := g.ReadFrom(r)
		return &g, err
	}
	readAny := func(r io.Reader) (Filter, error) { return ReadAny(r) }
	plainDecoders := []decoder{
		{"ReadFrom", intoPlain},
		{"Read", func(r io.Reader) (Filter, error) { return Read(r, Concurrent()) }},
		{"ReadAny", readAny},
	}
	scalableDecoders := []decoder{
		{"ReadFrom", intoScalable},
		{"ReadScalable", func(r io.Reader) (Filter, error) { return ReadScalable(r) }},
		{"ReadAny", readAny},
	}
	for _, tc := range []struct {
		name     string
		f        Filter
		enc      []byte
		decoders []decoder
	}{
		{"classic", plain, mustMarshal(t, plain), plainDecoders},
		{"classic v1", plain, encodeV1(plain), plainDecoders},
		{"blocked", blocked, mustMarshal(t, blocked), []decoder{{"ReadFrom", intoPlain}, {"ReadAny", readAny}}},
		{"scalable", scalable, mustMarshal(t, scalable), scalableDecoders},
		{"scalable v1", scalable, encodeScalableV1(scalable), scalableDecoders},
	} {
		enc := tc.enc
		const prefix = 100 // bytes in the file before the filter
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, append(make([]byte, prefix), enc...), 0o600); err != nil {
			t.Fatal(err)
		}
		str := string(enc)
		worst := 0.0
		readers := map[string]func() io.Reader{
			"bytes.Reader":     func() io.Reader { return bytes.NewReader(enc) },
			"bytes.Buffer":     func() io.Reader { return bytes.NewBuffer(enc) },
			"strings.Reader":   func() io.Reader { return strings.NewReader(str) },
			"io.SectionReader": func() io.Reader { return io.NewSectionReader(bytes.NewReader(enc), 0, int64(len(enc))) },
			"os.File": func() io.Reader {
				fd, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { fd.Close() })
				if _, err := fd.Seek(prefix, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				return fd
			},
		}
		for _, d := range tc.decoders {
			for rname, newReader := range readers {
				r := newReader()
				var got Filter
				var err error
				n := allocated(func() { got, err = d.decode(r) })
				ratio := float64(n) / float64(len(enc))
				if err != nil || !bytes.Equal(sameVersion(got, enc), enc) {
					t.Fatalf("%s %s from %s: %v, or the filter differs", tc.name, d.name, rname, err)
				}
				if ratio > 1.1 {
					t.Errorf("%s %s from %s: allocated %.2fx the %d bytes of input, want at most 1.1x", tc.name, d.name, rname, ratio, len(enc))
				}
				worst = max(worst, ratio)
			}
			// A stream of unknown size keeps the bounded chunks.
			r := struct{ io.Reader }{bytes.NewReader(enc)}
			var err error
			n := allocated(func() { _, err = d.decode(r) })
			if ratio := float64(n) / float64(len(enc)); err != nil || ratio > 2.2 {
				t.Errorf("%s %s from a stream: %v, allocated %.2fx", tc.name, d.name, err, ratio)
			}
		}
		t.Logf("%s, %d bytes: at most %.3fx allocated from a reader that tells its size", tc.name, len(enc), worst)
	}

	// A header that claims MaxBits bits, then 1 KB: a size that confirms
	// nothing, or lies, must not make the decoder trust the header.
	for version, hdr := range hostileHeaders() {
		checkHostileReaders(t, dir, version, append(hdr, make([]byte, 1000)...))
	}
}

// checkHostileReaders feeds the hostile header of a format version from
// readers that tell, or lie about, their size.
func checkHostileReaders(t *testing.T, dir, version string, hostile []byte) {
	hostilePath := filepath.Join(dir, "hostile-"+version)
	if err := os.WriteFile(hostilePath, hostile, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(hostilePath)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	for name, r := range map[string]io.Reader{
		"bytes.Reader":                     bytes.NewReader(hostile),
		"os.File":                          fd,
		"io.SectionReader of MaxInt64":     io.NewSectionReader(bytes.NewReader(hostile), 0, math.MaxInt64),
		"a reader whose Len and Size lie":  lyingLen{bytes.NewReader(hostile)},
		"an os.File behind a lying reader": lyingLen{io.NewSectionReader(fd, 0, math.MaxInt64)},
	} {
		g := goldenFilter(t)
		before := g.Clone()
		n := allocated(func() { _, err = g.ReadFrom(r) })
		if !errors.Is(err, io.ErrUnexpectedEOF) || !g.Equal(before) {
			t.Errorf("%s: hostile header from %s: %v, or the receiver changed", version, name, err)
		}
		if n > 1<<20 {
			t.Errorf("%s: hostile header from %s: allocated %d bytes for a %d-byte input", version, name, n, len(hostile))
		}
	}
}

func TestReadFromStopsAtTheEnd(t *testing.T) {
	a := goldenFilter(t)
	b := mustNew(t, 5000, 0.001)
	b.AddString("second")
	var stream bytes.Buffer
	a.WriteTo(&stream)
	b.WriteTo(&stream)
	stream.WriteString("tail")
	var ga, gb BloomFilter
	na, err := ga.ReadFrom(&stream)
	if err != nil || na != int64(a.EncodedSize()) {
		t.Fatalf("first ReadFrom: %d, %v", na, err)
	}
	if _, err := gb.ReadFrom(&stream); err != nil {
		t.Fatal(err)
	}
	if !ga.Equal(a) || !gb.Equal(b) || stream.String() != "tail" {
		t.Errorf("ReadFrom read past its filter (left %q)", stream.String())
	}
}

func TestGob(t *testing.T) {
	f := goldenFilter(t)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(f); err != nil {
		t.Fatal(err)
	}
	var g BloomFilter
	if err := gob.NewDecoder(&buf).Decode(&g); err != nil {
		t.Fatal(err)
	}
	if !g.Equal(f) {
		t.Error("gob round trip changed the filter")
	}
}

// headerField is a field of an encoding header that the structured fuzz
// mutator may edit: its offset and width in bytes.
type headerField struct{ off, width int }

// filterFields are the header fields of the BloomFilter format.
// Those from offset 48 on, the section size and reserved bytes of version
// 3, are words in versions 1 and 2.
var filterFields = []headerField{{4, 2}, {6, 2}, {8, 4}, {12, 4}, {16, 8}, {24, 8}, {32, 8}, {40, 8}, {48, 4}, {52, 8}}

// editOpSize is the length of one edit of the structured fuzz mutator: a
// field index, a sub-filter index, and 8 bytes of value.
const editOpSize = 10

// applyEdits is the structured fuzz mutator: it returns a copy of data with
// the header fields that edits chooses overwritten. Each edit is editOpSize
// bytes: the field (an index into fields, then into subFields), the
// sub-filter for a field of subFields (whose header at is located), and the
// little-endian value, truncated to the field's width. The caller recomputes
// the checksums, so that the checks behind them are reached.
func applyEdits(data, edits []byte, fields, subFields []headerField, at func(b []byte, sub int) int) []byte {
	b := bytes.Clone(data)
	for ; len(edits) >= editOpSize; edits = edits[editOpSize:] {
		i, base := int(edits[0])%(len(fields)+len(subFields)), 0
		var f headerField
		if i < len(fields) {
			f = fields[i]
		} else {
			f = subFields[i-len(fields)]
			if base = at(b, int(edits[1])); base < 0 {
				continue
			}
		}
		if base+f.off+f.width <= len(b) {
			copy(b[base+f.off:base+f.off+f.width], edits[2:2+f.width])
		}
	}
	return b
}

// allocBound is the most a decoder may allocate for an input of n bytes:
// about twice the input (a decoded filter, plus ReadFrom's chunks), and the
// fixed buffers of ReadFrom.
func allocBound(n int) uint64 { return uint64(3*n) + 512<<10 }

// checkDecodeAllocs fails t if decode allocates more than allocBound for
// data.
func checkDecodeAllocs(t *testing.T, name string, data []byte, decode func()) {
	t.Helper()
	if got := allocated(decode); got > allocBound(len(data)) {
		t.Fatalf("%s allocated %d bytes for a %d-byte input", name, got, len(data))
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	enc, _ := goldenFilter(f).MarshalBinary()
	f.Add(enc, []byte(nil))
	f.Add(encodeV1(goldenFilter(f)), []byte(nil))
	f.Add(encodeV1(goldenBlockedFilter(f)), []byte(nil))
	g := mustNew(f, 300, 0.01)
	g.AddString("x")
	enc2, _ := g.MarshalBinary()
	f.Add(enc2, []byte(nil))
	f.Add([]byte(format.Magic), []byte(nil))
	blocked, _ := goldenBlockedFilter(f).MarshalBinary()
	f.Add(blocked, []byte(nil))
	// m = MaxBits: the decoder must not believe it.
	f.Add(enc, []byte{4, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		check := func(data []byte) {
			var b BloomFilter
			var err error
			checkDecodeAllocs(t, "UnmarshalBinary", data, func() { err = b.UnmarshalBinary(data) })
			if err != nil {
				if b.k != 0 {
					t.Fatal("receiver changed on error")
				}
				return
			}
			// A decoded filter is usable and re-encodes to the same bytes,
			// in its version.
			b.Test(data)
			if out := sameVersion(&b, data); !bytes.Equal(out, data) {
				t.Fatal("re-encoding differs")
			}
		}
		check(data)
		if len(edits) >= editOpSize && len(data) >= format.HeaderSize+format.CRCSize {
			check(reseal(applyEdits(data, edits, filterFields, nil, nil)))
		}
		if len(data) >= 6 && !format.IsV3(data) {
			// Every version-1 or 2 encoding that decodes has a version 3
			// that decodes to the same filter.
			var b BloomFilter
			if b.UnmarshalBinary(data) == nil {
				var c BloomFilter
				if err := c.UnmarshalBinary(mustMarshal(t, &b)); err != nil || !c.Equal(&b) {
					t.Fatalf("version 3 of a version-%d encoding: %v", data[4], err)
				}
			}
		}
	})
}

func FuzzReadFrom(f *testing.F) {
	enc, _ := goldenFilter(f).MarshalBinary()
	f.Add(enc, []byte(nil))
	f.Add(append(bytes.Clone(enc), enc...), []byte(nil))
	f.Add(enc, []byte{4, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	blocked, _ := goldenBlockedFilter(f).MarshalBinary()
	f.Add(append(blocked, enc...), []byte(nil))
	f.Add(append(encodeV1(goldenFilter(f)), enc...), []byte(nil))
	f.Add(append(bytes.Clone(enc), encodeV1(goldenBlockedFilter(f))...), []byte(nil))
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		check := func(data []byte) {
			var b BloomFilter
			var n int64
			var err error
			checkDecodeAllocs(t, "ReadFrom", data, func() { n, err = b.ReadFrom(bytes.NewReader(data)) })
			if n > int64(len(data)) {
				t.Fatalf("read %d bytes of %d", n, len(data))
			}
			if err != nil {
				if b.k != 0 {
					t.Fatal("receiver changed on error")
				}
				return
			}
			if out := sameVersion(&b, data[:n]); !bytes.Equal(out, data[:n]) {
				t.Fatal("re-encoding differs from the bytes read")
			}
			var c BloomFilter
			if c.UnmarshalBinary(data[:n]) != nil || !c.Equal(&b) {
				t.Fatal("UnmarshalBinary disagrees with ReadFrom")
			}
		}
		check(data)
		if len(edits) >= editOpSize && len(data) >= format.HeaderSize+format.CRCSize {
			// Reseal the first filter of the stream only.
			b := applyEdits(data, edits, filterFields, nil, nil)
			if m := binary.LittleEndian.Uint64(b[16:]); m > 0 && m <= MaxBits {
				end := format.HeaderSize + 8*((m+63)/64) + format.CRCSize
				if format.IsV3(b) {
					end = format.V3Size(m)
				}
				if end <= uint64(len(b)) {
					reseal(b[:end])
				}
			}
			check(b)
		}
	})
}

func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// runtimeMem reads the total bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (r *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.total = ms.TotalAlloc
}

// ---- allocations ----

// hotPath is the Add and Test family that BloomFilter and
// ScalableBloomFilter share.
type hotPath interface {
	Add(key []byte)
	AddString(key string)
	Test(key []byte) bool
	TestString(key string) bool
	TestAndAdd(key []byte) bool
	TestAndAddString(key string) bool
	AddHash(h uint64)
	TestHash(h uint64) bool
	TestAndAddHash(h uint64) bool
}

// checkHotPathAllocs fails t if a call of the hot path of f allocates. Add and
// TestAndAdd get the keys addKey returns, AddString addString, and the others
// long.
func checkHotPathAllocs(t *testing.T, f hotPath, addKey func() []byte, addString, long string) {
	t.Helper()
	key := []byte(long)
	for name, fn := range map[string]func(){
		"Add":              func() { f.Add(addKey()) },
		"AddString":        func() { f.AddString(addString) },
		"Test":             func() { f.Test(key) },
		"TestString":       func() { f.TestString(long) },
		"TestAndAdd":       func() { f.TestAndAdd(addKey()) },
		"TestAndAddString": func() { f.TestAndAddString(long) },
		"AddHash":          func() { f.AddHash(binary.LittleEndian.Uint64(addKey())) },
		"TestHash":         func() { f.TestHash(uint64(len(long))) },
		"TestAndAddHash":   func() { f.TestAndAddHash(binary.LittleEndian.Uint64(addKey())) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// freshKeys returns a function that returns a new 16-byte key at each call,
// in one buffer.
func freshKeys() func() []byte {
	buf := make([]byte, 16)
	var i uint64
	return func() []byte { i++; return keyOf(buf, 0, i) }
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	f := mustNew(t, 10000, 0.01)
	long := strings.Repeat("https://example.com/some/long/path?query=1&", 4)
	key := []byte(long)
	checkHotPathAllocs(t, f, func() []byte { return key }, long, long)
}

// ---- benchmarks ----

// refFilter is the minimal hand-written filter the issue measures us against:
// the same hash, position derivation and multiply-shift, and Count
// bookkeeping, on a plain []uint64 read without bounds checks.
type refFilter struct {
	m     uint64
	k     uint
	words []uint64
	count uint64
}

func (r *refFilter) word(i uint64) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.words)), i*8))
}

func (r *refFilter) add(key []byte) {
	h1, h2 := murmur3.Sum128WithSeed(key, DefaultSeed)
	var fresh uint64
	x, y, c := h1, h2, uint64(0)
	for range r.k {
		p, _ := bits.Mul64((x^x>>32)*0x94D049BB133111EB, r.m)
		w := r.word(p >> 6)
		mask := uint64(1) << (p & 63)
		fresh |= mask &^ *w
		*w |= mask
		c += 0x9E3779B97F4A7C15
		x += y
		y += c
	}
	if fresh != 0 {
		r.count++
	}
}

func (r *refFilter) test(key []byte) bool {
	h1, h2 := murmur3.Sum128WithSeed(key, DefaultSeed)
	x, y, c := h1, h2, uint64(0)
	for range r.k {
		p, _ := bits.Mul64((x^x>>32)*0x94D049BB133111EB, r.m)
		if *r.word(p >> 6)&(1<<(p&63)) == 0 {
			return false
		}
		c += 0x9E3779B97F4A7C15
		x += y
		y += c
	}
	return true
}

// benchKeys are 16-byte keys; the set is a fixed size, independent of b.N.
func benchKeys(tag uint64, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = keyOf(make([]byte, 16), tag, uint64(i)*0x9E3779B97F4A7C15)
	}
	return keys
}

var sink bool

func BenchmarkFilter(b *testing.B) {
	const keySet = 1 << 20
	for _, n := range []uint64{1e6, 1e7} {
		const p = 0.01
		present := benchKeys(0, min(int(n), keySet))
		absent := benchKeys(1, keySet)
		f := mustNew(b, n, p, Classic()) // the reference is the classic layout
		ref := &refFilter{m: f.Bits(), k: f.Hashes(), words: make([]uint64, (f.Bits()+63)/64)}
		buf := make([]byte, 16)
		for i := range n {
			f.Add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
			ref.add(keyOf(buf, 0, i*0x9E3779B97F4A7C15))
		}
		name := fmt.Sprintf("n=%g/p=%g", float64(n), p)
		b.Run(name+"/Add/ours", func(b *testing.B) {
			g := mustNew(b, n, p, Classic())
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				g.Add(absent[i&(keySet-1)])
			}
		})
		b.Run(name+"/Add/reference", func(b *testing.B) {
			r := &refFilter{m: f.Bits(), k: f.Hashes(), words: make([]uint64, (f.Bits()+63)/64)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.add(absent[i&(keySet-1)])
			}
		})
		b.Run(name+"/TestPresent/ours", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink = f.Test(present[i%len(present)])
			}
		})
		b.Run(name+"/TestPresent/reference", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink = ref.test(present[i%len(present)])
			}
		})
		b.Run(name+"/TestAbsent/ours", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink = f.Test(absent[i&(keySet-1)])
			}
		})
		b.Run(name+"/TestAbsent/reference", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink = ref.test(absent[i&(keySet-1)])
			}
		})
	}
}

// ---- batch calls ----

// benchBatch is the number of keys per batch call in the batch benchmarks: a
// batch as a user would pass it.
const benchBatch = 1000

// benchPair times loop and batch, each on its own half of keys, on alternate
// chunks of benchBatch keys, the order within each pair of chunks swapped
// every time, so that both see the machine at nearly the same moments. b.N
// counts keys through each. It reports the median ns per key of each over the
// chunks, and the median over pairs of chunks of loop time over batch time:
// medians, because on a shared machine a chunk now and then waits for the
// CPU or the memory bus far longer than it runs.
func benchPair(b *testing.B, keys [][]byte, loop, batch func(chunk [][]byte)) {
	b.Helper()
	half := len(keys) / 2
	chunks := half / benchBatch
	var tLoop, tBatch, ratio []float64
	n := 0
	b.ResetTimer()
	for i := 0; n < b.N; i++ {
		c := i % chunks
		a := keys[c*benchBatch : (c+1)*benchBatch]
		z := keys[half+c*benchBatch : half+(c+1)*benchBatch]
		var dl, db time.Duration
		if i&1 == 0 {
			t0 := time.Now()
			loop(a)
			t1 := time.Now()
			batch(z)
			dl, db = t1.Sub(t0), time.Since(t1)
		} else {
			t0 := time.Now()
			batch(a)
			t1 := time.Now()
			loop(z)
			db, dl = t1.Sub(t0), time.Since(t1)
		}
		tLoop = append(tLoop, float64(dl.Nanoseconds())/benchBatch)
		tBatch = append(tBatch, float64(db.Nanoseconds())/benchBatch)
		ratio = append(ratio, float64(dl)/float64(db))
		n += benchBatch
	}
	b.StopTimer()
	b.ReportMetric(median(tLoop), "loop-ns/key")
	b.ReportMetric(median(tBatch), "batch-ns/key")
	b.ReportMetric(median(ratio), "speedup")
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}

// BenchmarkBatch compares each batch call of BloomFilter with the loop of
// single calls it replaces, side by side on filters of 10^6, 10^7 and
// 10^8 keys at p = 0.01 (10^8: about 120 MiB of filter; select it with
// -bench 'Batch/n=1e\+08' as it takes a minute to fill), 16-byte keys,
// batches of benchBatch keys, in each layout (Batch/n=1e+07/classic/...,
// Batch/n=1e+07/blocked/...). "speedup" is loop time over batch time.
func BenchmarkBatch(b *testing.B) {
	for _, n := range []uint64{1e6, 1e7, 1e8} {
		for _, lay := range benchLayouts {
			benchBatchOf(b, n, lay.name, lay.opt)
		}
	}
}

// benchLayouts are the layouts the benchmarks measure side by side.
var benchLayouts = []struct {
	name string
	opt  Option
}{{"classic", Classic()}, {"blocked", Blocked()}}

// benchBatchOf is BenchmarkBatch for one size and layout.
func benchBatchOf(b *testing.B, n uint64, layoutName string, opt Option) {
	{
		const p, keySet = 0.01, 1 << 20
		b.Run(fmt.Sprintf("n=%g/%s", float64(n), layoutName), func(b *testing.B) {
			f := mustNew(b, n, p, opt)
			all := benchKeys(0, keySet)
			for i := uint64(0); i < n; i += keySet {
				for j := range min(keySet, n-i) {
					keyOf(all[j], 0, (i+j)*0x9E3779B97F4A7C15)
				}
				f.AddMany(all[:min(keySet, n-i)])
			}
			present := benchKeys(0, min(keySet, int(n)))
			absent := benchKeys(1, keySet)
			results := make([]bool, benchBatch)
			b.Run("TestAbsent", func(b *testing.B) {
				benchPair(b, absent, func(keys [][]byte) {
					for _, k := range keys {
						sink = f.Test(k)
					}
				}, func(keys [][]byte) { f.TestMany(keys, results) })
			})
			b.Run("TestPresent", func(b *testing.B) {
				benchPair(b, present, func(keys [][]byte) {
					for _, k := range keys {
						sink = f.Test(k)
					}
				}, func(keys [][]byte) { f.TestMany(keys, results) })
			})
			g := mustNew(b, n, p, opt)
			b.Run("Add", func(b *testing.B) {
				benchPair(b, absent, func(keys [][]byte) {
					for _, k := range keys {
						g.Add(k)
					}
				}, func(keys [][]byte) { g.AddMany(keys) })
			})
			b.Run("TestAndAdd", func(b *testing.B) {
				benchPair(b, absent, func(keys [][]byte) {
					for _, k := range keys {
						sink = g.TestAndAdd(k)
					}
				}, func(keys [][]byte) { g.TestAndAddMany(keys, results) })
			})
		})
	}
}

// batchOps is what the batch tests need from BloomFilter and
// ScalableBloomFilter.
type batchOps interface {
	filterOps
	AddMany(keys [][]byte)
	AddManyStrings(keys []string)
	TestMany(keys [][]byte, results []bool) []bool
	TestManyStrings(keys []string, results []bool) []bool
	TestAndAddMany(keys [][]byte, results []bool) []bool
	TestAndAddManyStrings(keys []string, results []bool) []bool
	AddHash(h uint64)
	TestHash(h uint64) bool
	TestAndAddHash(h uint64) bool
	AddManyHashes(hashes []uint64)
	TestManyHashes(hashes []uint64, results []bool) []bool
	TestAndAddManyHashes(hashes []uint64, results []bool) []bool
	MarshalBinary() ([]byte, error)
}

// batchOpNames are the batch calls batchVsLoop runs, by number.
var batchOpNames = [...]string{"AddMany", "AddManyStrings", "TestMany", "TestManyStrings", "TestAndAddMany",
	"TestAndAddManyStrings", "AddManyHashes", "TestManyHashes", "TestAndAddManyHashes"}

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

// FuzzBatch splits its input into keys (at 0x00) and batches (at 0x01), runs
// each batch through a batch call chosen by the batch's first byte, on a
// small BloomFilter in rounds and on a ScalableBloomFilter that grows from 2
// keys, and checks them against the loop of single calls.
func FuzzBatch(f *testing.F) {
	f.Add([]byte("a\x00b\x00a\x01\x02c\x00a\x00c\x00c\x01\x04x"))
	f.Add([]byte("\x05one\x00two\x00three\x00four\x00five\x00one\x01\x03one\x00six"))
	f.Add(bytes.Repeat([]byte("\x04k\x00kk\x00kkk\x00\x01"), 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		inRounds(t, true)
		a, _ := NewWithSize(512, 3)
		b, _ := NewWithSize(512, 3)
		sa := mustScalable(t, 2, 0.1)
		sb := mustScalable(t, 2, 0.1)
		for _, part := range bytes.Split(data, []byte{1}) {
			op := 0
			if len(part) > 0 {
				op, part = int(part[0])%len(batchOpNames), part[1:]
			}
			var keys [][]byte
			if len(part) > 0 {
				keys = bytes.Split(part, []byte{0})
			}
			batchVsLoop(t, a, b, op, keys, nil)
			batchVsLoop(t, sa, sb, op, keys, make([]bool, 0, len(keys)))
		}
	})
}

// ---- concurrency ----

// concurrentWorkers and concurrentOps are the goroutines and the operations
// each of them runs in the concurrency tests.
const (
	concurrentWorkers = 16
	concurrentOps     = 100_000
)

// filterOps is what the concurrency tests need from BloomFilter and
// ScalableBloomFilter.
type filterOps interface {
	Add([]byte)
	AddString(string)
	Test([]byte) bool
	TestString(string) bool
	TestAndAdd([]byte) bool
	TestAndAddString(string) bool
	Count() uint64
}

// runWorkers runs work(g) for g in [0, workers) on their own goroutines,
// released together, and waits for all of them.
func runWorkers(workers int, work func(g int)) {
	start, done := make(chan struct{}), make(chan struct{}, workers)
	for g := range workers {
		go func() {
			<-start
			work(g)
			done <- struct{}{}
		}()
	}
	close(start)
	for range workers {
		<-done
	}
}

// mixedKey is the key a worker uses for its operation i: it shares half of
// its keys with the other workers, so that the same key is often added by
// several at once.
func mixedKey(buf []byte, g, i int) []byte {
	if i%2 == 0 {
		return keyOf(buf, 2, uint64(i/2))
	}
	return keyOf(buf, 3+uint64(g), uint64(i/2))
}

// hammer runs concurrentWorkers goroutines of concurrentOps operations each on
// f, mixing every Add, Test and TestAndAdd form on shared and private keys
// while side() runs, and returns the keys each worker added. A key a worker
// added must test present for it from then on.
func hammer(t *testing.T, f filterOps, side func()) (added [][]int) {
	t.Helper()
	added = make([][]int, concurrentWorkers)
	failures := make([]string, concurrentWorkers)
	stop := make(chan struct{})
	sideDone := make(chan struct{})
	go func() {
		defer close(sideDone)
		for {
			select {
			case <-stop:
				return
			default:
				side()
			}
		}
	}()
	runWorkers(concurrentWorkers, func(g int) {
		buf := make([]byte, 16)
		for i := range concurrentOps {
			k := mixedKey(buf, g, i)
			switch i % 6 {
			case 0:
				f.Add(k)
			case 1:
				f.AddString(string(k))
			case 2:
				f.TestAndAdd(k)
			case 3:
				f.TestAndAddString(string(k))
			case 4:
				f.Test(k)
				continue
			case 5:
				f.TestString(string(k))
				continue
			}
			added[g] = append(added[g], i)
			// Now and then check a key added a little earlier, which others
			// may have been adding at the same time.
			if i%8 != 0 {
				continue
			}
			if j := added[g][max(0, len(added[g])-5)]; !f.Test(mixedKey(buf, g, j)) {
				failures[g] = fmt.Sprintf("worker %d: false negative for its operation %d during the run", g, j)
				return
			}
		}
	})
	close(stop)
	<-sideDone
	for _, msg := range failures {
		if msg != "" {
			t.Fatal(msg)
		}
	}
	buf := make([]byte, 16)
	for g, ops := range added {
		for _, i := range ops {
			k := mixedKey(buf, g, i)
			if !f.Test(k) || i%8 == 0 && !f.TestString(string(k)) {
				t.Fatalf("false negative for worker %d's operation %d after the run", g, i)
			}
		}
	}
	return added
}

// TestConcurrentMixed runs every Add, Test and TestAndAdd form from 16
// goroutines at once, while another goroutine copies, combines and encodes
// the filter: with -race it finds unsynchronized access, and afterwards no
// added key may test absent.
func TestConcurrentMixed(t *testing.T) {
	const n = concurrentWorkers * concurrentOps // more than will be added
	f := mustNew(t, n, 0.01, Concurrent())
	other := mustNew(t, n, 0.01, Concurrent())
	other.AddString("other")
	var snapshots int
	hammer(t, f, func() {
		snapshots++
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Error(err)
			return
		}
		var dec BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
		if _, err := f.Union(other); err != nil {
			t.Error(err)
		}
		c := f.Clone()
		_ = c.Equal(f) || f.IsFull() || f.FillRatio() > 1 || f.EstimatedCount() == 0
	})
	t.Logf("Count %d, %d snapshots during the run", f.Count(), snapshots)
	if f.Count() == 0 || f.Count() > f.setBits() {
		t.Errorf("Count = %d with %d bits set", f.Count(), f.setBits())
	}
}

// exactlyOnce has concurrentWorkers goroutines call TestAndAdd on the same
// keys, in the same order so that they race on each, and checks that exactly
// one of them reports each key new (absent) and that Count agrees.
func exactlyOnce(t *testing.T, f filterOps, keys int) {
	t.Helper()
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			k := keyOf(buf, 0, uint64(i))
			var present bool
			if g%2 == 0 {
				present = f.TestAndAdd(k)
			} else {
				present = f.TestAndAddString(string(k))
			}
			if !present {
				news[g][i]++
			}
		}
	})
	checkNewOnce(t, news, keys, f.Count())
}

// timesNew returns how many goroutines heard key i reported new; news[g][i]
// counts goroutine g's.
func timesNew(news [][]int32, i int) (n int32) {
	for g := range news {
		n += news[g][i]
	}
	return n
}

// checkNewOnce checks that each of keys keys was reported new exactly once
// across news, and that the filter counts keys keys.
func checkNewOnce(t *testing.T, news [][]int32, keys int, count uint64) {
	t.Helper()
	var bad int
	for i := range keys {
		if n := timesNew(news, i); n != 1 {
			if bad++; bad <= 5 {
				t.Errorf("key %d reported new %d times", i, n)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d keys not reported new exactly once", bad, keys)
	}
	if count != uint64(keys) {
		t.Errorf("Count = %d, want %d", count, keys)
	}
}

// TestConcurrentTestAndAddExactlyOnce races TestAndAdd on the same 10^4 keys.
// The error rate is tiny so that false positives do not blur the count.
func TestConcurrentTestAndAddExactlyOnce(t *testing.T) {
	for round := range 5 {
		exactlyOnce(t, mustNew(t, 10_000, 1e-9, Concurrent(), Seed(uint32(round))), 10_000)
		if t.Failed() {
			break
		}
	}
}

// TestConcurrentMode checks that the option is accepted, that the mode
// survives copying, combining and decoding, and that it changes neither the
// encoding nor what Equal compares.
func TestConcurrentMode(t *testing.T) {
	f, err := NewWithSize(100, 3, Seed(7), Concurrent())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cat", "dog", "fox"} {
		f.AddString(k)
	}
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(enc); got != goldenEncodingV3 {
		t.Errorf("a concurrent filter encodes differently:\n got %s\nwant %s", got, goldenEncodingV3)
	}
	var w bytes.Buffer
	if _, err := f.WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), enc) {
		t.Errorf("WriteTo differs from MarshalBinary: %v", err)
	}
	plain := goldenFilter(t)
	if !f.Equal(plain) || !plain.Equal(f) {
		t.Error("a concurrent filter is not Equal to the same plain one")
	}
	u, err := f.Union(plain)
	if err != nil {
		t.Fatal(err)
	}
	in, err := plain.Intersection(f)
	if err != nil {
		t.Fatal(err)
	}
	var decoded, read, zero BloomFilter
	if err := zero.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	decoded = *mustNew(t, 10, 0.1, Concurrent())
	if err := decoded.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	read = *mustNew(t, 10, 0.1, Concurrent())
	if _, err := read.ReadFrom(bytes.NewReader(enc)); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		g          *BloomFilter
		concurrent bool
	}{
		"clone": {f.Clone(), true}, "union": {u, true}, "intersection of plain": {in, false},
		"decoded into concurrent": {&decoded, true}, "read into concurrent": {&read, true},
		"decoded into zero": {&zero, false}, "plain clone": {plain.Clone(), false},
	} {
		if (tc.g.conc != nil) != tc.concurrent || tc.g.conc != nil && tc.g.conc.Locks == nil {
			t.Errorf("%s: concurrent = %v, want %v", name, tc.g.conc != nil, tc.concurrent)
		}
		if !tc.g.Equal(plain) || !tc.g.TestString("cat") {
			t.Errorf("%s: differs from the original", name)
		}
	}
	// A clone has its own bits and count.
	c := f.Clone()
	c.AddString("emu")
	if f.Count() != 3 || c.Count() != 4 || f.Equal(c) {
		t.Errorf("clone shares state: counts %d and %d", f.Count(), c.Count())
	}
	f.Clear()
	if f.Count() != 0 || f.FillRatio() != 0 || f.TestString("cat") {
		t.Error("Clear left keys behind")
	}
	if _, err := New(10, 0.1, Concurrent(), Linear(2)); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("Concurrent with a scalable-only option: %v", err)
	}
}

func TestConcurrentHotPathDoesNotAllocate(t *testing.T) {
	f := mustNew(t, 10000, 0.01, Concurrent())
	long := strings.Repeat("https://example.com/some/long/path?query=1&", 4)
	checkHotPathAllocs(t, f, freshKeys(), long, long)
}

// rwFilter is the usual alternative to Concurrent: a plain filter behind a
// sync.RWMutex.
type rwFilter[F parallelFilter] struct {
	mu sync.RWMutex
	f  F
}

func (r *rwFilter[F]) Add(key []byte) {
	r.mu.Lock()
	r.f.Add(key)
	r.mu.Unlock()
}

func (r *rwFilter[F]) Test(key []byte) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.f.Test(key)
}

func (r *rwFilter[F]) TestAndAdd(key []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.TestAndAdd(key)
}

// parallelFilter is what BenchmarkConcurrent runs.
type parallelFilter interface {
	Add([]byte)
	Test([]byte) bool
	TestAndAdd([]byte) bool
}

// benchParallel runs op from GOMAXPROCS goroutines (set it with -cpu), each
// on its own stream of keys: keyOf(tag g, i) for its i-th call.
func benchParallel(b *testing.B, op func(buf []byte, g, i uint64)) {
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := next.Add(1)
		buf := make([]byte, 16)
		for i := uint64(0); pb.Next(); i++ {
			op(buf, g, i)
		}
	})
}

// BenchmarkConcurrent compares a Concurrent filter with a plain one behind a
// sync.RWMutex, from 1, 2 and 4 goroutines:
//
//	go test -run XXX -bench Concurrent -cpu 1,2,4 .
//
// Add inserts new keys; Test looks up keys, half of them present;
// TestAndAdd alternates new keys with keys it added a while ago, as a crawler
// would. The filter holds 10^7 keys at 1%, more than any run adds, in each
// layout (Concurrent/Add/classic/concurrent, ...).
func BenchmarkConcurrent(b *testing.B) {
	const n, p = 10_000_000, 0.01
	filters := map[string]func(b *testing.B) parallelFilter{}
	for _, lay := range benchLayouts {
		filters[lay.name+"/concurrent"] = func(b *testing.B) parallelFilter { return mustNew(b, n, p, lay.opt, Concurrent()) }
		filters[lay.name+"/rwmutex"] = func(b *testing.B) parallelFilter { return &rwFilter[*BloomFilter]{f: mustNew(b, n, p, lay.opt)} }
	}
	benchConcurrent(b, filters)
}

// benchConcurrent runs the operations of BenchmarkConcurrent on filters made
// by each of filters, one after the other for each operation.
func benchConcurrent(b *testing.B, filters map[string]func(b *testing.B) parallelFilter) {
	ops := []struct {
		name string
		run  func(b *testing.B, f parallelFilter)
	}{
		{"Add", func(b *testing.B, f parallelFilter) {
			benchParallel(b, func(buf []byte, g, i uint64) { f.Add(keyOf(buf, 10+g, i)) })
		}},
		{"Test", func(b *testing.B, f parallelFilter) {
			buf := make([]byte, 16)
			for i := range uint64(1 << 20) {
				f.Add(keyOf(buf, 0, i))
			}
			benchParallel(b, func(buf []byte, g, i uint64) {
				sink = f.Test(keyOf(buf, i&1, (i>>1+g<<16)&(1<<20-1)))
			})
		}},
		{"TestAndAdd", func(b *testing.B, f parallelFilter) {
			benchParallel(b, func(buf []byte, g, i uint64) {
				if i&1 == 0 {
					sink = f.TestAndAdd(keyOf(buf, 10+g, i>>1))
				} else {
					sink = f.TestAndAdd(keyOf(buf, 10+g, i>>2))
				}
			})
		}},
	}
	names := slices.Sorted(maps.Keys(filters))
	for _, op := range ops {
		for _, name := range names {
			b.Run(op.name+"/"+name, func(b *testing.B) { op.run(b, filters[name](b)) })
		}
	}
}

// TestEveryWrittenEncodingDecodes is issue 11, item 12: NewWithSize(1, k)
// for k >= 38 recorded an ErrorRate of exactly 1, which the format refuses,
// so 27 (m, k) pairs wrote encodings that did not decode. Every (m, k) with
// tiny m, every k, and a few larger m, empty and after some keys.
func TestEveryWrittenEncodingDecodes(t *testing.T) {
	sizes := []uint64{}
	for m := uint64(1); m <= 130; m++ {
		sizes = append(sizes, m)
	}
	sizes = append(sizes, 191, 192, 193, 1000, 4095, 4096, 1<<16+1)
	buf := make([]byte, 16)
	failed := 0
	for _, m := range sizes {
		for k := uint(1); k <= MaxHashes; k++ {
			f, err := NewWithSize(m, k, Seed(uint32(m)))
			if err != nil {
				t.Fatalf("NewWithSize(%d, %d): %v", m, k, err)
			}
			for n := range uint64(3) {
				if n > 0 {
					f.Add(keyOf(buf, n, m))
				}
				enc, err := f.MarshalBinary()
				var d BloomFilter
				if err == nil {
					err = d.UnmarshalBinary(enc)
				}
				if err == nil && !d.Equal(f) {
					err = errors.New("decoded filter differs")
				}
				var r BloomFilter
				if _, rerr := r.ReadFrom(bytes.NewReader(enc)); err == nil && rerr != nil {
					err = rerr
				}
				if err != nil {
					if failed++; failed <= 5 {
						t.Errorf("NewWithSize(%d, %d) after %d keys (ErrorRate %v): %v", m, k, n, f.ErrorRate(), err)
					}
				}
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d encodings did not decode", failed)
	}
	t.Run("scalable sub-filter cap", checkSubFilterCap)
}

// legacyAbsent is the number of absent keys (tag 1) whose answers the
// encodings under testdata/v1 pin.
const legacyAbsent = 20000

// legacyAnswers returns how many of the legacyAbsent absent keys test present
// and the CRC-32C of the answers as a bit vector.
func legacyAnswers(test func([]byte) bool) (int, uint32) {
	buf := make([]byte, 16)
	ans := make([]byte, legacyAbsent/8)
	n := 0
	for i := range uint64(legacyAbsent) {
		if test(keyOf(buf, 1, i)) {
			ans[i/8] |= 1 << (i % 8)
			n++
		}
	}
	return n, crc32Checksum(ans)
}

// TestLegacyEncodings loads encodings written by the release before sizing
// used the exact false-positive rate (testdata/v1, written once by that code
// and never regenerated): plain filters and scalable ones, small and default
// parameters, grown and saturated. They must keep loading, answer exactly as
// they did, encode to the same bytes, and keep growing without false
// negatives. Keys 0..keys-1 (keyOf tag 0) were added.
func TestLegacyEncodings(t *testing.T) {
	tests := []struct {
		name      string
		scalable  bool
		keys      uint64
		bits      uint64
		hashes    uint // plain filters only
		count     uint64
		filters   int
		saturated bool
		fps       int    // absent keys testing present
		answers   uint32 // legacyAnswers' checksum
	}{
		{"plain-n1-p1e-7", false, 1, 34, 24, 1, 1, false, 0, 0x1a6aa448},
		{"plain-n1-p1e-6", false, 1, 29, 20, 1, 1, false, 0, 0x1a6aa448},
		{"plain-n2-p1e-7", false, 2, 68, 24, 2, 1, false, 0, 0x1a6aa448},
		{"plain-n5-p1e-6", false, 5, 144, 20, 5, 1, false, 0, 0x1a6aa448},
		{"plain-n10-p1e-3", false, 10, 144, 10, 10, 1, false, 14, 0xe909cfc7},
		{"plain-n1000-p0.01", false, 1000, 9593, 7, 998, 1, false, 199, 0xbb947a8a},
		{"plain-n10000-p1e-4", false, 5000, 191730, 13, 5000, 1, false, 0, 0x1a6aa448},
		{"scalable-n1-p1e-6", true, 40, 1705, 0, 40, 8, false, 0, 0x1a6aa448},
		{"scalable-n1-p1e-3-t0.5", true, 60, 1866, 0, 60, 9, false, 21, 0x1f00e073},
		{"scalable-n2-p1e-7-lin", true, 30, 1254, 0, 30, 6, false, 0, 0x1a6aa448},
		{"scalable-n100-p1e-18", true, 700, 74387, 0, 700, 4, false, 0, 0x1a6aa448},
		{"scalable-n1000-p0.01", true, 20000, 315196, 0, 19934, 6, false, 96, 0xa2073286},
		{"scalable-n100-p0.001-lin", true, 3000, 60074, 0, 2999, 6, false, 14, 0x52dfd4bb},
		{"scalable-saturated", true, 150, 3031, 0, 68, 63, true, 15615, 0x5ea151a},
		{"scalable-n1-p1e-18-saturated", true, 86, 6938, 0, 86, 9, true, 0, 0x1a6aa448},
	}
	buf := make([]byte, 16)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := os.ReadFile("testdata/v1/" + tt.name + ".bin")
			if err != nil {
				t.Fatal(err)
			}
			var (
				test             func([]byte) bool
				add              func([]byte)
				reencode         func() ([]byte, error)
				asV1             func() []byte // the legacy encoding again
				v3Decodes        func() bool   // MarshalBinary's version 3 decodes to an equal filter
				bits, count      uint64
				filters          = 1
				saturated, plain = false, !tt.scalable
			)
			if plain {
				var f, r BloomFilter
				if err := f.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				if _, err := r.ReadFrom(bytes.NewReader(enc)); err != nil || !r.Equal(&f) {
					t.Fatalf("ReadFrom: %v", err)
				}
				if f.Hashes() != tt.hashes {
					t.Errorf("Hashes = %d, want %d", f.Hashes(), tt.hashes)
				}
				test, add, reencode = f.Test, f.Add, f.MarshalBinary
				asV1 = func() []byte { return encodeV1(&f) }
				v3Decodes = func() bool {
					var d BloomFilter
					return d.UnmarshalBinary(mustMarshal(t, &f)) == nil && d.Equal(&f)
				}
				bits, count = f.Bits(), f.Count()
			} else {
				var s, r ScalableBloomFilter
				if err := s.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				if _, err := r.ReadFrom(bytes.NewReader(enc)); err != nil || !r.Equal(&s) {
					t.Fatalf("ReadFrom: %v", err)
				}
				test, add, reencode = s.Test, s.Add, s.MarshalBinary
				asV1 = func() []byte { return encodeScalableV1(&s) }
				v3Decodes = func() bool {
					var d ScalableBloomFilter
					return d.UnmarshalBinary(mustMarshal(t, &s)) == nil && d.Equal(&s)
				}
				bits, count, filters, saturated = s.Bits(), s.Count(), s.NumFilters(), s.Saturated()
			}
			if bits != tt.bits || count != tt.count || filters != tt.filters || saturated != tt.saturated {
				t.Errorf("bits %d, count %d, %d filters, saturated %v; want %d, %d, %d, %v",
					bits, count, filters, saturated, tt.bits, tt.count, tt.filters, tt.saturated)
			}
			if !bytes.Equal(asV1(), enc) {
				t.Error("encodes to other bytes in version 1")
			}
			if !v3Decodes() {
				t.Error("its version-3 encoding decodes to another filter")
			}
			for i := range tt.keys {
				if !test(keyOf(buf, 0, i)) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			if fps, sum := legacyAnswers(test); fps != tt.fps || sum != tt.answers {
				t.Errorf("%d absent keys test present (answers %#x); want %d (%#x)", fps, sum, tt.fps, tt.answers)
			}
			// Grow on: new sub-filters follow the current sizing, after
			// the old ones, and the result round-trips.
			more := tt.keys + 3000
			for i := tt.keys; i < more; i++ {
				add(keyOf(buf, 0, i))
			}
			for i := range more {
				if !test(keyOf(buf, 0, i)) {
					t.Fatalf("false negative for key %d after growth", i)
				}
			}
			if tt.scalable {
				grown, _ := reencode()
				var d ScalableBloomFilter
				if err := d.UnmarshalBinary(grown); err != nil {
					t.Fatalf("grown filter does not decode: %v", err)
				}
			}
		})
	}
}

// TestSizeMeetsExactRate checks Size for few keys against the exact rate:
// it meets the target, and one bit fewer does not with any k <= MaxHashes.
func TestSizeMeetsExactRate(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 5, 10, 30, 100, 300} {
		for _, p := range []float64{0.5, 0.1, 1e-2, 1e-3, 1e-5, 1e-7, 1e-12, 1e-19, 1e-30} {
			m, k, err := Size(n, p)
			if err != nil {
				t.Fatalf("Size(%d, %g): %v", n, p, err)
			}
			if got := classic.ExactRate(m, k, n, nil); got > p*(1+1e-9) {
				t.Errorf("Size(%d, %g) = (%d, %d): exact rate %v", n, p, m, k, got)
			}
			if k > MaxHashes {
				t.Errorf("Size(%d, %g) uses %d hash functions", n, p, k)
			}
			if m > 1 {
				best := 1.0
				for j := uint(1); j <= MaxHashes; j++ {
					best = min(best, classic.ExactRate(m-1, j, n, nil))
				}
				if best <= p*(1-1e-9) {
					t.Errorf("Size(%d, %g) = %d bits, but %d bits reach %v", n, p, m, m-1, best)
				}
			}
		}
	}
}

// TestSizeTinyRates: below about 1e-19 Size keeps MaxHashes hash functions
// and adds bits, up to MaxBits; beyond that its error states the real floor.
func TestSizeTinyRates(t *testing.T) {
	for _, c := range []struct {
		n uint64
		p float64
	}{{30, 1e-21}, {1, 1e-30}, {100, 1e-18 * 0.1 * math.Pow(0.9, 30)}, {1000, 1e-40}, {1e6, 1e-25}, {1, 5e-324}} {
		m, k, err := Size(c.n, c.p)
		if err != nil || k != MaxHashes || FalsePositiveRate(m, k, c.n) > c.p {
			t.Errorf("Size(%d, %g) = (%d, %d, %v), want MaxHashes hash functions meeting the rate", c.n, c.p, m, k, err)
		}
		t.Logf("Size(%d, %g) = %d bits (%.1f per key), %d hashes", c.n, c.p, m, float64(m)/float64(c.n), k)
	}
	// 10^9 keys in MaxBits bits: 1100 bits per key, k = MaxHashes.
	const n = 1_000_000_000
	floor := FalsePositiveRate(MaxBits, MaxHashes, n)
	_, _, err := Size(n, floor/2)
	if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), fmt.Sprintf("the lowest rate for %d keys is %.3g", n, floor)) ||
		!strings.Contains(err.Error(), "MaxBits") {
		t.Errorf("Size(%d, %g): %v; want the floor %.3g stated", n, floor/2, err, floor)
	}
	if m, k, err := Size(n, floor*1.01); err != nil || m > MaxBits || k != MaxHashes {
		t.Errorf("Size(%d, %g) just above the floor: (%d, %d, %v)", n, floor*1.01, m, k, err)
	}
	t.Logf("floor for %d keys: %v; error: %v", n, floor, err)
}

// emptyCopy returns an empty filter of f's size with the given seed, as
// NewWithSize would, without computing its error rate again.
func emptyCopy(f *BloomFilter, seed uint32) *BloomFilter {
	g := f.Clone()
	g.Clear()
	g.seed = seed
	return g
}

// smallConfigs are the (n, p) of the small-filter statistical tests.
func smallConfigs(ns []uint64, ps []float64) (out [][2]float64) {
	for _, n := range ns {
		for _, p := range ps {
			out = append(out, [2]float64{float64(n), p})
		}
	}
	return out
}

// TestSmallFilterRate measures the false-positive rate of small filters built
// by New, averaged over many filters (one seed each) with enough absent keys
// to expect 1000 false positives at the target: a rate 1.2x the target is
// then 6 standard deviations above it, and the test fails at 4. Before Size
// used the exact rate, n = 1 measured 1.77x at 1e-2, 2.05x at 1e-3 and 2.57x
// at 1e-4, and n = 5 1.27x at 1e-3.
func TestSmallFilterRate(t *testing.T) {
	ns, ps := []uint64{1, 2, 3, 5, 10, 20, 50, 100}, []float64{1e-2, 1e-3, 1e-4}
	if testing.Short() {
		ns = []uint64{1, 3, 10, 100}
	}
	for _, c := range smallConfigs(ns, ps) {
		n, p := uint64(c[0]), c[1]
		t.Run(fmt.Sprintf("n=%d/p=%g", n, p), func(t *testing.T) {
			t.Parallel()
			const filters = 500
			queries := uint64(1000/p) / filters
			f := mustNew(t, n, p)
			buf := make([]byte, 16)
			fp := 0
			for s := range uint32(filters) {
				g := emptyCopy(f, s*0x9E3779B1+1)
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
			t.Logf("m=%d k=%d: measured %.4g over %.0f queries, %.3fx the target", f.Bits(), f.Hashes(), got, trials, got/p)
			if !within(got, p, uint64(trials)) {
				t.Errorf("measured %.4g, %.2fx the target %g (m=%d, k=%d)", got, got/p, p, f.Bits(), f.Hashes())
			}
		})
	}
}

// TestSmallFilterRateByFill covers the tiny rates that counting false
// positives cannot reach: over many filters built by New (one seed each),
// the rate for an absent key whose k positions are independent and uniform,
// (set bits/m)^k, averages at most the target. The average has a standard
// error of a few percent, so a 1.2x excess fails. Before Size used the exact
// rate, New(1, 1e-7) averaged 7.5x by this measure, New(5, 1e-6) 1.53x and
// New(100, 1e-7) 1.07x.
// TestPositionsFollowTheModel checks the other half: absent keys' own
// positions behave as the independent ones assumed here.
func TestSmallFilterRateByFill(t *testing.T) {
	ns, ps := []uint64{1, 2, 3, 5, 10, 30, 100}, []float64{1e-5, 1e-6, 1e-7, 1e-12}
	if testing.Short() {
		ns = []uint64{1, 2, 5, 100}
	}
	for _, c := range smallConfigs(ns, ps) {
		n, p := uint64(c[0]), c[1]
		t.Run(fmt.Sprintf("n=%d/p=%g", n, p), func(t *testing.T) {
			t.Parallel()
			filters := 40000 / int(min(n, 20))
			f := mustNew(t, n, p)
			k := float64(f.Hashes())
			buf := make([]byte, 16)
			var sum, sumSq float64
			for s := range uint32(filters) {
				g := emptyCopy(f, s*0x9E3779B1+2)
				for i := range n {
					g.Add(keyOf(buf, 0, uint64(s)<<32|i))
				}
				var set int
				for _, w := range g.words {
					set += bits.OnesCount64(w)
				}
				r := math.Pow(float64(set)/float64(g.m), k)
				sum += r
				sumSq += r * r
			}
			mean := sum / float64(filters)
			se := math.Sqrt((sumSq/float64(filters) - mean*mean) / float64(filters))
			t.Logf("m=%d k=%d: %.4g ± %.2g over %d filters, %.3fx the target", f.Bits(), f.Hashes(), mean, se, filters, mean/p)
			if se > 0.05*mean {
				t.Errorf("standard error %.2g too large to see a 1.2x excess", se)
			}
			if mean > p+4*se {
				t.Errorf("average rate %.4g, %.2fx the target %g (m=%d, k=%d)", mean, mean/p, p, f.Bits(), f.Hashes())
			}
		})
	}
}

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

// ---- blocked layout ----

// blockedRateBrute is BlockedFalsePositiveRate computed another way: the
// binomial weights from log-gamma, and the in-block rate from the
// distribution of set bits after each key, moved by the hypergeometric law
// of its k distinct bits.
func blockedRateBrute(m uint64, k uint, n uint64) float64 {
	const B = BlockBits
	lc := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	blocks := m / B
	dist := make([]float64, B+1)
	dist[0] = 1
	var sum float64
	for j := uint64(0); j <= n; j++ {
		if j > 0 {
			next := make([]float64, B+1)
			for x, d := range dist {
				for a := 0; a <= int(k) && x+a <= B; a++ {
					if d != 0 && int(k)-a <= x {
						next[x+a] += d * math.Exp(lc(B-x, a)+lc(x, int(k)-a)-lc(B, int(k)))
					}
				}
			}
			dist = next
		}
		var in float64
		for x := int(k); x <= B; x++ {
			in += dist[x] * math.Exp(lc(x, int(k))-lc(B, int(k)))
		}
		w := 1.0
		if blocks > 1 {
			q := 1 / float64(blocks)
			w = math.Exp(lc(int(n), int(j)) + float64(j)*math.Log(q) + float64(n-j)*math.Log1p(-q))
		} else if j != n {
			w = 0
		}
		sum += w * in
	}
	return sum
}

func TestBlockedRateMatchesBruteForce(t *testing.T) {
	for _, c := range []struct {
		blocks uint64
		k      uint
		n      uint64
	}{
		{1, 1, 1}, {1, 6, 10}, {1, 6, 60}, {1, 33, 10}, {1, 64, 3}, {2, 6, 40}, {3, 9, 100},
		{10, 6, 500}, {20, 9, 300}, {7, 12, 90}, {5, 3, 300}, {40, 4, 1000},
	} {
		m := c.blocks * BlockBits
		want := blockedRateBrute(m, c.k, c.n)
		got := BlockedFalsePositiveRate(m, c.k, c.n)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("BlockedFalsePositiveRate(%d, %d, %d) = %v, brute force %v", m, c.k, c.n, got, want)
		}
	}
}

// BenchmarkBlockedRateParallel: concurrent calls with known in-block rates
// (what decoders and NewScalable(..., Blocked()) do) no longer take turns on
// one mutex: compare -cpu 1 and -cpu 2.
func BenchmarkBlockedRateParallel(b *testing.B) {
	BlockedFalsePositiveRate(1024000, 7, 100000)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			BlockedFalsePositiveRate(1024000, 7, 100000)
		}
	})
}

// TestBlockedSizeGolden pins the sizes New(n, p, Blocked()) chooses, with the
// issue's targets: at most 9.9 bits per key at 1% and 15.5 at 0.1%.
func TestBlockedSizeGolden(t *testing.T) {
	tests := []struct {
		n uint64
		p float64
		m uint64
		k uint
	}{
		{1, 0.01, 512, 64},
		{10, 1e-5, 512, 33},
		{100, 0.01, 1024, 7},
		{1000, 0.01, 10240, 7},
		{1000, 0.001, 15872, 9},
		{1000000, 0.1, 4830208, 3},
		{1000000, 0.01, 9890304, 6},
		{1000000, 0.001, 15480832, 9},
		{1000000, 0.0001, 21915648, 12},
		{1000000, 1e-5, 29458432, 14},
		{10000000, 0.01, 98902528, 6},
		{10000000, 0.001, 154806784, 9},
	}
	for _, tt := range tests {
		m, k, err := BlockedSize(tt.n, tt.p)
		if err != nil || m != tt.m || k != tt.k {
			t.Errorf("BlockedSize(%d, %v) = %d, %d, %v; want %d, %d", tt.n, tt.p, m, k, err, tt.m, tt.k)
		}
	}
	for _, c := range []struct {
		p, bitsPerKey float64
	}{{0.01, 9.9}, {0.001, 15.5}} {
		for _, n := range []uint64{1e6, 1e7, 1e8} {
			if m, _, _ := BlockedSize(n, c.p); float64(m)/float64(n) > c.bitsPerKey {
				t.Errorf("BlockedSize(%d, %v): %.3f bits per key, target %v", n, c.p, float64(m)/float64(n), c.bitsPerKey)
			}
		}
	}
}

// TestBlockedSizeIsSmallest checks BlockedSize on random (n, p): the rate is
// met, and one block fewer does not meet it with any k.
func TestBlockedSizeIsSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	configs := 60
	if testing.Short() {
		configs = 15
	}
	for range configs {
		n := uint64(math.Pow(10, r.Float64()*7))
		p := math.Pow(10, -0.5-r.Float64()*7)
		m, k, err := BlockedSize(n, p)
		if err != nil {
			t.Fatalf("BlockedSize(%d, %g): %v", n, p, err)
		}
		if m%BlockBits != 0 || BlockedFalsePositiveRate(m, k, n) > p {
			t.Fatalf("BlockedSize(%d, %g) = (%d, %d): rate %v", n, p, m, k, BlockedFalsePositiveRate(m, k, n))
		}
		for j := uint(1); j <= MaxHashes && m > BlockBits; j++ {
			if r := BlockedFalsePositiveRate(m-BlockBits, j, n); r <= p {
				t.Fatalf("BlockedSize(%d, %g) = %d bits, but %d bits and k = %d reach %v", n, p, m, m-BlockBits, j, r)
			}
		}
		if k > 1 && BlockedFalsePositiveRate(m, k-1, n) < BlockedFalsePositiveRate(m, k, n) ||
			k < MaxHashes && BlockedFalsePositiveRate(m, k+1, n) < BlockedFalsePositiveRate(m, k, n) {
			t.Fatalf("BlockedSize(%d, %g): k = %d is not the best", n, p, k)
		}
	}
	if _, _, err := BlockedSize(0, 0.1); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("capacity 0: %v", err)
	}
	if _, _, err := BlockedSize(1e12, 1e-30); !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "MaxBits") {
		t.Errorf("beyond MaxBits: %v", err)
	}
}

// TestEstimateBlockedCount checks the estimate against the expected fill.
func TestEstimateBlockedCount(t *testing.T) {
	for _, c := range []struct {
		m uint64
		k uint
		n float64
	}{{512, 6, 30}, {1 << 20, 6, 100000}, {1 << 30, 9, 5e7}} {
		blocks := float64(c.m / BlockBits)
		fill := -math.Expm1(c.n * math.Log1p(-float64(c.k)/(BlockBits*blocks)))
		set := uint64(math.Round(fill * float64(c.m)))
		if got := EstimateBlockedCount(c.m, c.k, set); math.Abs(got/c.n-1) > 0.02 {
			t.Errorf("EstimateBlockedCount(%d, %d, %d) = %v, want about %v", c.m, c.k, set, got, c.n)
		}
	}
	if !math.IsInf(EstimateBlockedCount(512, 3, 512), 1) || EstimateBlockedCount(100, 3, 5) != 0 {
		t.Error("edge cases")
	}
}

// packageDoc returns the package's documentation as go doc sees it.
func packageDoc(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for name, f := range pkgs["bloom"].Files {
		files[name] = f
	}
	p, err := doc.NewFromFiles(fset, mapValues(files), "github.com/bloomfilters/bloom")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mapValues(m map[string]*ast.File) []*ast.File {
	var out []*ast.File
	for _, f := range m {
		out = append(out, f)
	}
	return out
}

// TestFormatIsDocumented is issue 13 item 6: the binary format was in
// comments that go doc does not show. The package doc must give both
// layouts: magic, version, fields, byte order and checksum.
func TestFormatIsDocumented(t *testing.T) {
	d := packageDoc(t).Doc
	for _, want := range []string{
		`magic "BLMF"`, `magic "BLMS"`, "version, 1", "little-endian", "CRC-32C (Castagnoli)",
		"seed (murmur3)", "m, bits", "k, hash functions", "count, at most the number of set bits",
		"N, the number of sub-filters", "tightening ratio r", "base64",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the package doc does not say %q", want)
		}
	}
}

// TestPublicDocsSpeakToUsers: the docs of exported names mention no test or
// benchmark of the package, no unexported camelCase function (such as
// anyHolds) and no measured speed-up; those belong in comments inside the
// code. AppendLocations' doc had all three.
func TestPublicDocsSpeakToUsers(t *testing.T) {
	p := packageDoc(t)
	internal := map[string]bool{}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`^[a-z]+[A-Z]`)
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil {
					continue
				}
				n := fn.Name.Name
				if strings.HasSuffix(name, "_test.go") && (strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Benchmark")) ||
					!fn.Name.IsExported() && camel.MatchString(n) {
					internal[n] = true
				}
			}
		}
	}
	measured := regexp.MustCompile(`\d+(\.\d+)?% (slower|faster)`)
	check := func(name, text string) {
		if m := measured.FindString(text); m != "" {
			t.Errorf("doc of %s gives a measurement: %q", name, m)
		}
		for _, w := range regexp.MustCompile(`\w+`).FindAllString(text, -1) {
			if internal[w] {
				t.Errorf("doc of %s mentions %s", name, w)
			}
		}
	}
	for _, f := range p.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range p.Types {
		check(typ.Name, typ.Doc)
		for _, f := range append(typ.Funcs, typ.Methods...) {
			check(typ.Name+"."+f.Name, f.Doc)
		}
	}
}

// TestReadConcurrent is issue 13 item 2: a decoded filter can be made
// Concurrent, and is then exactly-once under racing TestAndAdd.
func TestReadConcurrent(t *testing.T) {
	f := mustNew(t, 20_000, 1e-9, Seed(5))
	f.AddString("saved")
	var buf bytes.Buffer
	f.WriteTo(&buf)
	g, err := Read(&buf, Concurrent(), Seed(5))
	if err != nil {
		t.Fatal(err)
	}
	if g.conc == nil || !g.Equal(f) {
		t.Fatalf("Read(Concurrent): concurrent %v, equal %v", g.conc != nil, g.Equal(f))
	}
	if !g.TestString("saved") {
		t.Fatal("false negative")
	}
	g.Clear()
	exactlyOnce(t, g, 5000)

	s := mustNewScalable(t, 100, 1e-6, Linear(2), Tightening(0.5))
	for i := range 1000 {
		s.AddString(strings.Repeat("s", i))
	}
	s.WriteTo(&buf)
	sg, err := ReadScalable(&buf, Concurrent(), Linear(2), Tightening(0.5))
	if err != nil {
		t.Fatal(err)
	}
	if sg.conc == nil || !sg.Equal(s) {
		t.Fatalf("ReadScalable(Concurrent): concurrent %v, equal %v", sg.conc != nil, sg.Equal(s))
	}
	exactlyOnceScalable(t, sg)

	plain, err := Read(bytes.NewReader(mustMarshal(t, f)))
	if err != nil || plain.conc != nil || !plain.Equal(f) {
		t.Fatalf("Read without options: %v", err)
	}
}

// exactlyOnceScalable races TestAndAdd on new keys on a concurrent s.
func exactlyOnceScalable(t *testing.T, s *ScalableBloomFilter) {
	t.Helper()
	before := s.Count()
	const keys = 3000
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			if !s.TestAndAdd(keyOf(buf, 7, uint64(i))) {
				news[g][i]++
			}
		}
	})
	total := 0
	for i := range keys {
		n := timesNew(news, i)
		if n > 1 {
			t.Fatalf("key %d reported new %d times", i, n)
		}
		total += int(n)
	}
	if got := s.Count() - before; got != uint64(total) {
		t.Errorf("Count grew by %d, %d keys reported new", got, total)
	}
}

func mustMarshal(t testing.TB, f interface{ MarshalBinary() ([]byte, error) }) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadOptions: options that contradict the encoding are errors, those
// that agree are not, and invalid options are refused before reading.
func TestReadOptions(t *testing.T) {
	f := mustNew(t, 100, 0.01, Seed(3))
	s := mustNewScalable(t, 100, 0.01, Exponential(2), Seed(3))
	pb, sb := mustMarshal(t, f), mustMarshal(t, s)
	for _, tc := range []struct {
		name string
		read func(r io.Reader) error
		ok   bool
	}{
		{"Read Seed agrees", func(r io.Reader) error { _, err := Read(r, Seed(3)); return err }, true},
		{"Read Seed contradicts", func(r io.Reader) error { _, err := Read(r, Seed(4)); return err }, false},
		{"Read Linear", func(r io.Reader) error { _, err := Read(r, Linear(1)); return err }, false},
		{"Read Tightening", func(r io.Reader) error { _, err := Read(r, Tightening(0.9)); return err }, false},
		{"ReadAny plain Exponential", func(r io.Reader) error { _, err := ReadAny(r, Exponential(2)); return err }, false},
		{"ReadAny plain Seed contradicts", func(r io.Reader) error { _, err := ReadAny(r, Seed(4)); return err }, false},
	} {
		err := tc.read(bytes.NewReader(pb))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		opts []Option
		ok   bool
	}{
		{"agreeing", []Option{Seed(3), Exponential(2), Tightening(DefaultTightening), Concurrent()}, true},
		{"Seed", []Option{Seed(4)}, false},
		{"Exponential scale", []Option{Exponential(3)}, false},
		{"Linear", []Option{Linear(2)}, false},
		{"Tightening", []Option{Tightening(0.8)}, false},
	} {
		for name, read := range map[string]func(r io.Reader) error{
			"ReadScalable": func(r io.Reader) error { _, err := ReadScalable(r, tc.opts...); return err },
			"ReadAny":      func(r io.Reader) error { _, err := ReadAny(r, tc.opts...); return err },
		} {
			err := read(bytes.NewReader(sb))
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
				t.Errorf("%s %s: %v", name, tc.name, err)
			}
		}
	}
	// Invalid options: nothing is read.
	r := bytes.NewReader(pb)
	if _, err := Read(r, Option{}); !errors.Is(err, ErrInvalidParameter) || r.Len() != len(pb) {
		t.Errorf("Read with a zero Option: %v, read %d bytes", err, len(pb)-r.Len())
	}
	if _, err := ReadScalable(r, Linear(1), Exponential(2)); !errors.Is(err, ErrInvalidParameter) || r.Len() != len(pb) {
		t.Errorf("ReadScalable with two growth options: %v", err)
	}
	if _, err := Read(bytes.NewReader(sb)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Read of a scalable encoding: %v", err)
	}
	if _, err := ReadScalable(bytes.NewReader(pb)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadScalable of a plain encoding: %v", err)
	}
}

// TestReadAnyStream reads a stream of filters of both kinds until io.EOF:
// each is of its kind, equal to what was written, and nothing past the last
// is read.
func TestReadAnyStream(t *testing.T) {
	want := []Filter{mustNew(t, 10, 0.1), mustNewScalable(t, 5, 0.01), mustNew(t, 1000, 1e-6, Seed(9))}
	for i, f := range want {
		for j := range 20 * (i + 1) {
			f.AddString(strings.Repeat("a", j))
		}
	}
	var stream bytes.Buffer
	for _, f := range want {
		f.WriteTo(&stream)
	}
	var got []Filter
	for {
		f, err := ReadAny(&stream, Concurrent())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d filters, want %d", len(got), len(want))
	}
	for i := range want {
		switch w := want[i].(type) {
		case *BloomFilter:
			g, ok := got[i].(*BloomFilter)
			if !ok || !g.Equal(w) || g.conc == nil {
				t.Errorf("filter %d: %T, not equal or not concurrent", i, got[i])
			}
		case *ScalableBloomFilter:
			g, ok := got[i].(*ScalableBloomFilter)
			if !ok || !g.Equal(w) || g.conc == nil {
				t.Errorf("filter %d: %T, not equal or not concurrent", i, got[i])
			}
		}
	}
	stream.WriteString("tail")
	want[0].WriteTo(&stream)
	stream.WriteString("tail")
	if _, err := ReadAny(&stream); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad magic: %v", err)
	}
	if f, err := ReadAny(&stream); err != nil || !f.(*BloomFilter).Equal(want[0].(*BloomFilter)) || stream.String() != "tail" {
		t.Errorf("ReadAny read past the filter: %v, left %q", err, stream.String())
	}
}

// TestReadTruncated: every truncation of either encoding is
// io.ErrUnexpectedEOF from all three readers (io.EOF when empty), with a nil
// result, never a panic.
func TestReadTruncated(t *testing.T) {
	f := mustNew(t, 100, 0.01)
	f.AddString("x")
	s := mustNewScalable(t, 3, 0.01)
	for i := range 20 {
		s.AddString(strings.Repeat("y", i))
	}
	for _, enc := range [][]byte{mustMarshal(t, f), mustMarshal(t, s)} {
		scalable := string(enc[:4]) == format.ScalableMagic
		for n := range len(enc) {
			want := io.ErrUnexpectedEOF
			if n == 0 {
				want = io.EOF
			}
			a, err := ReadAny(bytes.NewReader(enc[:n]))
			if a != nil || err != want {
				t.Fatalf("ReadAny of %d bytes: %v, %v", n, a, err)
			}
			if scalable {
				g, err := ReadScalable(bytes.NewReader(enc[:n]))
				if g != nil || err != want {
					t.Fatalf("ReadScalable of %d bytes: %v", n, err)
				}
			} else {
				g, err := Read(bytes.NewReader(enc[:n]))
				if g != nil || err != want {
					t.Fatalf("Read of %d bytes: %v", n, err)
				}
			}
		}
	}
}

// TestReadAllocatesWhatArrives: a header that claims MaxBits bits followed
// by a little data costs about what arrives, as with ReadFrom.
func TestReadAllocatesWhatArrives(t *testing.T) {
	for version, hdr := range hostileHeaders() {
		t.Run(version, func(t *testing.T) { checkReadHostile(t, append(hdr, make([]byte, 1<<20)...)) })
	}
}

func checkReadHostile(t *testing.T, hostile []byte) {
	for name, read := range map[string]func(r io.Reader) error{
		"Read":    func(r io.Reader) error { _, err := Read(r, Concurrent()); return err },
		"ReadAny": func(r io.Reader) error { _, err := ReadAny(r, Concurrent()); return err },
	} {
		var err error
		got := allocated(func() { err = read(bytes.NewReader(hostile)) })
		if err != io.ErrUnexpectedEOF || got > 2<<20 {
			t.Errorf("%s: %v, allocated %d bytes for %d", name, err, got, len(hostile))
		}
	}
}

// state is a program's state holding filters, as issue 13 found it: it
// marshaled to {"Seen":{}} and the first Test after unmarshaling panicked.
type state struct {
	Seen  *BloomFilter
	Grown *ScalableBloomFilter
	Value BloomFilter
	Pages int
}

func newState(t *testing.T) state {
	seen := mustNew(t, 1000, 0.01)
	grown, err := NewScalable(10, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		seen.AddString(strings.Repeat("k", i))
		grown.AddString(strings.Repeat("k", i))
	}
	value := mustNew(t, 50, 0.001, Seed(7))
	value.AddString("v")
	return state{Seen: seen, Grown: grown, Value: *value, Pages: 3}
}

func TestJSONRoundTrip(t *testing.T) {
	in := newState(t)
	for name, v := range map[string]any{"pointer": &in, "value": in} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Contains(data, []byte("{}")) {
			t.Fatalf("%s: a filter marshaled to {}: %s", name, data[:min(len(data), 200)])
		}
		var out state
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.Seen == nil || !out.Seen.Equal(in.Seen) || out.Grown == nil || !out.Grown.Equal(in.Grown) ||
			!out.Value.Equal(&in.Value) || out.Pages != 3 {
			t.Fatalf("%s: round trip changed the state", name)
		}
		if !out.Seen.TestString("kkk") || !out.Grown.TestString("kkk") || !out.Value.TestString("v") {
			t.Errorf("%s: false negative after the round trip", name)
		}
	}

	// The field's string is the base64 of MarshalBinary.
	bin, _ := in.Seen.MarshalBinary()
	var fields map[string]any
	data, _ := json.Marshal(in)
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["Seen"] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("Seen is %.40v..., want the base64 of MarshalBinary", fields["Seen"])
	}

	// A zero filter fails loudly, like MarshalBinary.
	if _, err := json.Marshal(state{}); err == nil {
		t.Error("a state with a zero BloomFilter marshaled without error")
	}

	// Decoding into Concurrent filters keeps them concurrent.
	out := state{Seen: mustNew(t, 1, 0.5, Concurrent())}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Seen.conc == nil || !out.Seen.Equal(in.Seen) {
		t.Error("UnmarshalText into a Concurrent filter: not concurrent or not equal")
	}
}

func TestXMLRoundTrip(t *testing.T) {
	in := newState(t)
	data, err := xml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out state
	if err := xml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Seen.Equal(in.Seen) || !out.Grown.Equal(in.Grown) || !out.Value.Equal(&in.Value) {
		t.Error("XML round trip changed the state")
	}
}

// TestUnmarshalTextErrors: every truncation, a damaged byte, other kinds of
// encodings, line breaks and non-base64 text are errors that leave the
// receiver unchanged.
func TestUnmarshalTextErrors(t *testing.T) {
	in := newState(t)
	plain, _ := in.Seen.MarshalText()
	scalable, _ := in.Grown.MarshalText()
	for _, tc := range []struct {
		name   string
		text   []byte
		decode func(f *BloomFilter, s *ScalableBloomFilter, text []byte) error
	}{
		{"plain", plain, func(f *BloomFilter, _ *ScalableBloomFilter, text []byte) error { return f.UnmarshalText(text) }},
		{"scalable", scalable, func(_ *BloomFilter, s *ScalableBloomFilter, text []byte) error { return s.UnmarshalText(text) }},
	} {
		f, s := mustNew(t, 10, 0.1), mustNewScalable(t, 10, 0.1)
		f.AddString("before")
		s.AddString("before")
		f0, s0 := f.Clone(), s.Clone()
		check := func(what string, err, want error) {
			t.Helper()
			ok := errors.Is(err, want)
			if want == nil { // corrupt or short
				ok = errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF)
			}
			if !ok {
				t.Errorf("%s %s: %v, want %v", tc.name, what, err, want)
			}
			if !f.Equal(f0) || !s.Equal(s0) {
				t.Fatalf("%s %s: the receiver changed on error", tc.name, what)
			}
		}
		for n := range len(tc.text) {
			check("truncated", tc.decode(f, s, tc.text[:n]), io.ErrUnexpectedEOF)
		}
		for _, i := range []int{0, 10, 70, 100, len(tc.text) - 5} {
			bad := bytes.Clone(tc.text)
			bad[i] ^= 'A' ^ 'B'
			if bad[i] == tc.text[i] || bad[i] == '=' {
				continue
			}
			// A damaged size field may also make the text look short.
			check("damaged", tc.decode(f, s, bad), nil)
		}
		wrapped := append(bytes.Clone(tc.text[:76]), '\n')
		check("line break", tc.decode(f, s, append(wrapped, tc.text[76:]...)), ErrCorrupt)
		check("not base64", tc.decode(f, s, append([]byte("!"), tc.text[1:]...)), ErrCorrupt)
		check("trailing", tc.decode(f, s, append(bytes.Clone(tc.text), "AAAA"...)), ErrCorrupt)
		other := scalable
		if tc.name == "scalable" {
			other = plain
		}
		check("other kind", tc.decode(f, s, other), ErrCorrupt)
		if err := tc.decode(f, s, tc.text); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestUnmarshalTextHostileHeader: a short text whose header claims MaxBits
// bits is refused before anything the size of the claim is allocated.
func TestUnmarshalTextHostileHeader(t *testing.T) {
	for version, hdr := range hostileHeaders() {
		t.Run(version, func(t *testing.T) {
			checkTextHostile(t, append(hdr, make([]byte, 12)...))
		})
	}
}

func checkTextHostile(t *testing.T, data []byte) {
	text := []byte(base64.StdEncoding.EncodeToString(data))
	var g BloomFilter
	var err error
	if n := allocated(func() { err = g.UnmarshalText(text) }); n > 4096 {
		t.Errorf("allocated %d bytes for a %d-byte text", n, len(text))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("UnmarshalText = %v, want io.ErrUnexpectedEOF", err)
	}
}

func mustNewScalable(t testing.TB, n uint64, p float64, opts ...Option) *ScalableBloomFilter {
	t.Helper()
	s, err := NewScalable(n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzUnmarshalText: any text either decodes to a filter whose MarshalText
// gives it back, or is an error that leaves the receiver unchanged; never a
// panic.
func FuzzUnmarshalText(f *testing.F) {
	for _, n := range []uint64{1, 10, 1000} {
		g, _ := New(n, 0.01)
		g.AddString("a")
		text, _ := g.MarshalText()
		f.Add(text)
		f.Add(text[:len(text)/2])
		f.Add([]byte(base64.StdEncoding.EncodeToString(encodeV1(g))))
	}
	f.Add([]byte("QkxNRg=="))
	f.Fuzz(func(t *testing.T, text []byte) {
		g, _ := NewWithSize(10, 2)
		before := g.Clone()
		if err := g.UnmarshalText(text); err != nil {
			if !g.Equal(before) {
				t.Fatal("receiver changed on error")
			}
			return
		}
		data, _ := base64.StdEncoding.DecodeString(string(text))
		if again := base64.StdEncoding.EncodeToString(sameVersion(g, data)); again != string(text) {
			t.Fatal("decoded text does not encode back")
		}
	})
}

// FuzzScalableUnmarshalText is FuzzUnmarshalText for ScalableBloomFilter.
func FuzzScalableUnmarshalText(f *testing.F) {
	for _, n := range []int{1, 30, 300} {
		s, _ := NewScalable(10, 0.01)
		for i := range n {
			s.AddString(strings.Repeat("x", i))
		}
		text, _ := s.MarshalText()
		f.Add(text)
		f.Add(text[:len(text)-7])
		f.Add([]byte(base64.StdEncoding.EncodeToString(encodeScalableV1(s))))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		s, _ := NewScalable(2, 0.1)
		before := s.Clone()
		if err := s.UnmarshalText(text); err != nil {
			if !s.Equal(before) {
				t.Fatal("receiver changed on error")
			}
			return
		}
		data, _ := base64.StdEncoding.DecodeString(string(text))
		if again := base64.StdEncoding.EncodeToString(sameVersion(s, data)); again != string(text) {
			t.Fatal("decoded text does not encode back")
		}
	})
}

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
		n := timesNew(news, i)
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

// goldenBlockedEncoding is the version-2 encoding of goldenBlockedFilter,
// which decoders keep reading; MarshalBinary writes v3FromV1 of it.
const goldenBlockedEncoding = "424c4d4602000100070000000400000000020000000000005900000000000000d73dffeef02eb03f03000000000000000000000000000009000000002000000000000000000008000020000000000000000180000000000000008000000800002000000000000000000000000000040059dd8fe6"

// goldenBlockedScalableCRC is the CRC-32C of the version-2 encoding of a
// blocked scalable filter (NewScalable(10, 0.01, Blocked(), Seed(3))) with
// keys 0 to 99 of keyOf added, and goldenBlockedScalableCRCV3 that of its
// version-3 encoding, which MarshalBinary writes.
const (
	goldenBlockedScalableCRC   = 0x48674bc7
	goldenBlockedScalableCRCV3 = 0x9502b305
)

func TestGoldenBlockedEncoding(t *testing.T) {
	f := goldenBlockedFilter(t)
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := hex.DecodeString(goldenBlockedEncoding)
	if !bytes.Equal(enc, v3FromV1(v2)) {
		t.Errorf("encoding changed:\n got %x\nwant %x", enc, v3FromV1(v2))
	}
	if binary.LittleEndian.Uint16(enc[4:]) != 3 || binary.LittleEndian.Uint16(enc[6:]) != 1 {
		t.Error("not version 3 with layout 1")
	}
	if got := hex.EncodeToString(encodeV1(f)); got != goldenBlockedEncoding {
		t.Errorf("encodeV1 changed:\n got %s\nwant %s", got, goldenBlockedEncoding)
	}
	var g BloomFilter
	if err := g.UnmarshalBinary(v2); err != nil || !g.Equal(f) {
		t.Errorf("the version-2 golden bytes decode to another filter: %v", err)
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
	if binary.LittleEndian.Uint16(senc[4:]) != 3 || senc[13] != 1 {
		t.Error("scalable: not version 3 with layout 1")
	}
	if got := crc32Checksum(senc); got != goldenBlockedScalableCRCV3 {
		t.Errorf("scalable encoding changed: CRC %#x, want %#x (%d sub-filters)", got, goldenBlockedScalableCRCV3, s.NumFilters())
	}
	sv2 := encodeScalableV1(s)
	if got := crc32Checksum(sv2); got != goldenBlockedScalableCRC {
		t.Errorf("encodeScalableV1 changed: CRC %#x, want %#x", got, goldenBlockedScalableCRC)
	}
	if !bytes.Equal(senc, scalableV3FromV1(sv2)) {
		t.Error("scalable encoding is not the documented version 3 of its version 2")
	}
	var d2 ScalableBloomFilter
	if err := d2.UnmarshalBinary(sv2); err != nil || !d2.Equal(s) {
		t.Errorf("scalable version 2 decodes to another filter: %v", err)
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
	f := goldenBlockedFilter(t)
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
	for version, enc := range map[string][]byte{"v2": encodeV1(f), "v3": mustMarshal(t, f)} {
		for i := range len(enc) {
			if err := before.UnmarshalBinary(enc[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s: truncation to %d bytes: %v", version, i, err)
			}
			check(fmt.Sprintf("%s: truncation to %d bytes", version, i), enc[:i])
		}
		for i := range 8 * len(enc) {
			bad := bytes.Clone(enc)
			bad[i/8] ^= 1 << (i % 8)
			check(fmt.Sprintf("%s: bit %d flipped", version, i), bad)
		}
		check("trailing bytes", append(bytes.Clone(enc), 0))
	}
	damages := map[string]map[string]func(b []byte){
		"v2": {
			"layout 0":          func(b []byte) { b[6] = 0 },
			"layout 2":          func(b []byte) { b[6] = 2 },
			"version 3":         func(b []byte) { b[4] = 3 },
			"m not whole block": func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 448) },
			"m two blocks":      func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1024) },
			"version 1":         func(b []byte) { b[4], b[6] = 1, 0 }, // decodes, as a classic filter
		},
		"v3": {
			"layout 2":            func(b []byte) { b[6] = 2 },
			"version 2":           func(b []byte) { b[4] = 2 },
			"version 4":           func(b []byte) { b[4] = 4 },
			"m not whole block":   func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 448) },
			"m two blocks":        func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1024) },
			"section size 0":      func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 0) },
			"section size 96":     func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 96) },
			"section size 32":     func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 32) },
			"section size 2^31":   func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 1<<31) },
			"reserved byte":       func(b []byte) { b[59] = 1 },
			"layout 0":            func(b []byte) { b[6] = 0 },                                  // decodes, as a classic filter
			"section size 64":     func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 64) }, // decodes: 1 section
			"section size 2^30":   func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 1<<30) },
			"section table short": func(b []byte) { binary.LittleEndian.PutUint32(b[48:], 16) },
		},
	}
	decodes := map[string]bool{"v2/version 1": true, "v3/layout 0": true, "v3/section size 64": true, "v3/section size 2^30": true}
	for version, enc := range map[string][]byte{"v2": encodeV1(f), "v3": mustMarshal(t, f)} {
		for name, damage := range damages[version] {
			b := bytes.Clone(enc)
			damage(b)
			reseal(b)
			var g BloomFilter
			err := g.UnmarshalBinary(b)
			if decodes[version+"/"+name] {
				if err != nil || g.Blocked() != (name != "version 1" && name != "layout 0") {
					t.Errorf("%s: %s: %v", version, name, err)
				}
				continue
			}
			if err == nil || !errors.Is(err, ErrCorrupt) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: %s: UnmarshalBinary gave %v", version, name, err)
			}
			if _, err := g.ReadFrom(bytes.NewReader(b)); err == nil {
				t.Errorf("%s: %s: ReadFrom accepted it", version, name)
			}
		}
	}
}

// TestBlockedScalableDecodeRejectsMixedLayouts: a blocked scalable filter
// with a classic sub-filter, or a classic one claiming the blocked layout,
// is corrupt.
func TestBlockedScalableDecodeRejectsMixedLayouts(t *testing.T) {
	s := mustScalable(t, 100, 0.01, Blocked())
	for version, enc := range map[string][]byte{"v2": encodeScalableV1(s), "v3": mustMarshal(t, s)} {
		sub := format.ScalableHeaderSize // where the first sub-filter starts
		if version == "v3" {
			sub = subFilterAt(enc, 0)
		}
		for name, damage := range map[string]func(b []byte){
			"version 1": func(b []byte) { b[4], b[13] = 1, 0 },
			"layout 0":  func(b []byte) { b[13] = 0 },
			"layout 2":  func(b []byte) { b[13] = 2 },
			"classic sub": func(b []byte) {
				if version == "v2" {
					b[sub+4], b[sub+6] = 1, 0
					reseal(b[sub : len(b)-format.CRCSize])
				} else {
					b[sub+6] = 0
				}
			},
			"sub of another version": func(b []byte) { b[sub+4] ^= 1 },
			"reserved byte 14":       func(b []byte) { b[14] = 1 },
		} {
			checkMixed(t, version+": "+name, enc, damage)
		}
	}
	// A whole version-2 sub-filter in a version-3 filter, and the reverse.
	one := mustScalable(t, 100, 0.01, Blocked())
	v3 := mustMarshal(t, one)
	at := subFilterAt(v3, 0)
	checkMixed(t, "v3 with a v2 sub-filter", append(bytes.Clone(v3[:at]), encodeV1(one.filters[0])...), func([]byte) {})
	v2 := encodeScalableV1(one)
	v2 = append(v2[:format.ScalableHeaderSize], mustMarshal(t, one.filters[0])...)
	checkMixed(t, "v2 with a v3 sub-filter", append(v2, 0, 0, 0, 0), func([]byte) {})
}

// checkMixed checks that the scalable encoding enc, damaged and resealed,
// is refused.
func checkMixed(t *testing.T, name string, enc []byte, damage func([]byte)) {
	t.Helper()
	b := bytes.Clone(enc)
	damage(b)
	resealScalable(b)
	var d ScalableBloomFilter
	if err := d.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: UnmarshalBinary gave %v", name, err)
	}
	if _, err := d.ReadFrom(bytes.NewReader(b)); err == nil {
		t.Errorf("%s: ReadFrom accepted it", name)
	} else {
		t.Logf("%s: %v", name, err)
	}
}

// TestBlockedDecodeHostileHeaderDoesNotAllocate: a version-2 header claiming
// MaxBits bits, followed by a few bytes, fails without a large allocation.
func TestBlockedDecodeHostileHeaderDoesNotAllocate(t *testing.T) {
	enc, _ := goldenBlockedFilter(t).MarshalBinary()
	hdr := bytes.Clone(enc[:format.HeaderSize])
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
				opts := []Option{Classic()}
				if layout == "blocked" {
					opts = []Option{Blocked()}
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

// TestCrossLayoutRefused is issue 21, item 1: a Header not filled in by
// Header (code written before its layout fields existed) rebuilt a blocked
// filter's words as a classic filter, which then answered absent for 100 of
// the 100 keys added. FromWords now refuses a Header that does not state its
// layout, or whose Blocked contradicts its Layout; and every call that
// combines or compares filters refuses two layouts.
func TestCrossLayoutRefused(t *testing.T) {
	blocked := mustNewWithSize(t, 11264, 7, Blocked())
	classic := mustNewWithSize(t, 11264, 7)
	buf := make([]byte, 16)
	for i := range uint64(100) {
		blocked.Add(keyOf(buf, 0, i))
		classic.Add(keyOf(buf, 0, i))
	}
	if blocked.Layout() != LayoutBlocked || classic.Layout() != LayoutClassic {
		t.Fatalf("Layout: blocked %v, classic %v", blocked.Layout(), classic.Layout())
	}
	words := blocked.AppendWords(nil)
	bh := blocked.Header()
	if bh.Layout != LayoutBlocked || !bh.Blocked {
		t.Fatalf("Header of a blocked filter: %+v", bh)
	}
	// What code written before Layout (and Blocked) existed fills in.
	old := Header{Bits: bh.Bits, Hashes: bh.Hashes, Seed: bh.Seed, Capacity: bh.Capacity, ErrorRate: bh.ErrorRate, Count: bh.Count}
	g, err := FromWords(old, words)
	if err == nil {
		absent := 0
		for i := range uint64(100) {
			if !g.Test(keyOf(buf, 0, i)) {
				absent++
			}
		}
		t.Errorf("FromWords of a Header without a layout: nil error, and %d of 100 added keys test absent", absent)
	} else if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "Layout") {
		t.Errorf("FromWords of a Header without a layout: %v, want an ErrInvalidParameter naming Layout", err)
	}
	for _, h := range []Header{
		func() Header { h := bh; h.Blocked = false; return h }(),        // Layout blocked, Blocked false
		func() Header { h := bh; h.Layout = LayoutClassic; return h }(), // Layout classic, Blocked true
		func() Header { h := bh; h.Layout = 3; return h }(),
	} {
		if g, err := FromWords(h, words); g != nil || !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("FromWords(Layout %v, Blocked %v): %v, %v", h.Layout, h.Blocked, g, err)
		}
	}
	if g, err := FromWords(bh, words); err != nil || !g.Equal(blocked) {
		t.Errorf("FromWords(Header(), AppendWords): %v", err)
	}
	if g, err := FromWords(classic.Header(), classic.AppendWords(nil)); err != nil || !g.Equal(classic) {
		t.Errorf("FromWords of a classic filter: %v", err)
	}
	if _, err := FromWords(classic.Header(), classic.AppendWords(nil), Blocked()); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("FromWords of a classic Header with Blocked: %v", err)
	}
	for _, pair := range [][2]*BloomFilter{{blocked, classic}, {classic, blocked}} {
		a, b := pair[0], pair[1]
		if a.Equal(b) {
			t.Errorf("%v Equal %v", a.Layout(), b.Layout())
		}
		if u, err := a.Union(b); u != nil || !errors.Is(err, ErrIncompatible) {
			t.Errorf("%v Union %v: %v", a.Layout(), b.Layout(), err)
		}
		if u, err := a.Intersection(b); u != nil || !errors.Is(err, ErrIncompatible) {
			t.Errorf("%v Intersection %v: %v", a.Layout(), b.Layout(), err)
		}
		before := a.Clone()
		if err := a.Merge(b); !errors.Is(err, ErrIncompatible) || !a.Equal(before) {
			t.Errorf("%v Merge %v: %v", a.Layout(), b.Layout(), err)
		}
	}
	var zero BloomFilter
	if zero.Layout() != 0 || zero.Header().Layout != 0 {
		t.Errorf("zero BloomFilter: Layout %v", zero.Layout())
	}
	if s := mustScalable(t, 100, 0.01, Blocked()); s.Layout() != LayoutBlocked {
		t.Errorf("blocked ScalableBloomFilter: Layout %v", s.Layout())
	}
	if s := mustScalable(t, 100, 0.01, Classic()); s.Layout() != LayoutClassic {
		t.Errorf("classic ScalableBloomFilter: Layout %v", s.Layout())
	}
	if LayoutClassic.String() != "classic" || LayoutBlocked.String() != "blocked" || Layout(0).String() != "Layout(0)" {
		t.Errorf("Layout.String: %q %q %q", LayoutClassic, LayoutBlocked, Layout(0))
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

// ---- hashed keys ----

// TestHashedCallsAreEightByteKeys checks the promise of AddHash and TestHash:
// the hashed calls of h set and read exactly the bits the calls of the 8
// little-endian bytes of h do, for both types and layouts, plain and
// concurrent.
func TestHashedCallsAreEightByteKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 4))
	for _, blocked := range []bool{false, true} {
		for _, conc := range []bool{false, true} {
			opts := []Option{Seed(rng.Uint32()), Classic()}
			if blocked {
				opts[1] = Blocked()
			}
			if conc {
				opts = append(opts, Concurrent())
			}
			name := fmt.Sprintf("blocked=%v/concurrent=%v", blocked, conc)
			pairs := map[string][2]batchOps{
				"BloomFilter":         {mustNew(t, 5000, 0.01, opts...), mustNew(t, 5000, 0.01, opts...)},
				"ScalableBloomFilter": {mustScalable(t, 100, 0.01, opts...), mustScalable(t, 100, 0.01, opts...)},
			}
			for typ, p := range pairs {
				hashed, keyed := p[0], p[1]
				for i := range 5000 {
					h := rng.Uint64() >> (i % 64) // small numbers too
					key := binary.LittleEndian.AppendUint64(nil, h)
					if got, want := hashed.TestAndAddHash(h), keyed.TestAndAdd(key); got != want {
						t.Fatalf("%s/%s: TestAndAddHash(%#x) = %v, TestAndAdd of its bytes %v", typ, name, h, got, want)
					}
					if !hashed.TestHash(h) || !keyed.Test(key) {
						t.Fatalf("%s/%s: %#x absent after it was added", typ, name, h)
					}
					q := rng.Uint64()
					if got, want := hashed.TestHash(q), keyed.Test(binary.LittleEndian.AppendUint64(nil, q)); got != want {
						t.Fatalf("%s/%s: TestHash(%#x) = %v, Test of its bytes %v", typ, name, q, got, want)
					}
				}
				if !bytes.Equal(mustMarshal(t, hashed), mustMarshal(t, keyed)) {
					t.Fatalf("%s/%s: the filters of the hashes and of their bytes differ", typ, name)
				}
			}
		}
	}
}

// TestHashedFalsePositiveRate checks that keys given as weak 64-bit hashes,
// sequential integers and the FNV-1a of URLs, meet the false-positive rate
// of the layout's model at 1% and 0.1%, for BloomFilter (at capacity) and
// ScalableBloomFilter (grown to 6 sub-filters): unmixed, such hashes put keys
// on correlated positions. Each case expects 3,000 false positives, so the
// bound of 4.5 sigma above the model is 1.08x it, and a rate 1.2x the model
// would exceed that by more than 4.5 sigma of its own.
func TestHashedFalsePositiveRate(t *testing.T) {
	const expectFP = 3000
	inputs := map[string]func(i uint64) uint64{
		"sequential": func(i uint64) uint64 { return i },
		"fnv1a-urls": func(i uint64) uint64 {
			return fnv1a(fmt.Appendf(nil, "https://example.com/catalog/item-%d.html", i))
		},
	}
	for name, input := range inputs {
		for _, p := range []float64{0.01, 0.001} {
			for _, blocked := range []bool{false, true} {
				for _, scalable := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/p=%g/blocked=%v/scalable=%v", name, p, blocked, scalable), func(t *testing.T) {
						opts := []Option{Classic()}
						fpr := FalsePositiveRate
						if blocked {
							opts = []Option{Blocked()}
							fpr = BlockedFalsePositiveRate
						}
						const n = 100_000
						var f interface {
							AddHash(uint64)
							TestHash(uint64) bool
						}
						var model float64
						if scalable {
							s := mustScalable(t, n/40, p, opts...)
							for i := range uint64(n) {
								s.AddHash(input(i))
							}
							pass := 1.0
							for _, sub := range s.filters {
								pass *= 1 - fpr(sub.m, sub.k, sub.count)
							}
							model, f = 1-pass, s
							if len(s.filters) < 4 {
								t.Fatalf("grew to %d sub-filters only", len(s.filters))
							}
						} else {
							g := mustNew(t, n, p, opts...)
							for i := range uint64(n) {
								g.AddHash(input(i))
							}
							model, f = fpr(g.m, g.k, g.count), g
						}
						absent := uint64(expectFP / model)
						sigma := math.Sqrt(model / float64(absent))
						bound := model + 4.5*sigma
						if excess := 1.2 * model; excess-4.5*math.Sqrt(excess/float64(absent)) < bound {
							t.Fatalf("too few absent keys (%d) to see a 1.2x excess", absent)
						}
						fp := 0
						for i := range absent {
							if f.TestHash(input(n + i)) {
								fp++
							}
						}
						got := float64(fp) / float64(absent)
						t.Logf("measured %.5f (%d of %d), model %.5f: %.3fx", got, fp, absent, model, got/model)
						if got > bound {
							t.Errorf("measured %.5f, model %.5f: %.3fx, more than the bound %.3fx (4.5 sigma)", got, model, got/model, bound/model)
						}
					})
				}
			}
		}
	}
}

// BenchmarkHashed times the hashed calls against the calls on 16-byte keys,
// on one filter of each layout sized for 10^7 keys at p = 0.01, holding
// 5*10^6 keys both as keys and as hashes: Test against TestHash, TestMany against
// TestManyHashes (batches of 1,000), present and absent keys.
//
//	go test -run XXX -bench Hashed -count 5
func BenchmarkHashed(b *testing.B) {
	const n, keySet, batch = 10_000_000, 1 << 20, 1000
	present, absent := benchKeys(0, keySet), benchKeys(1, keySet)
	hashesOf := func(keys [][]byte) []uint64 {
		h := make([]uint64, len(keys))
		for i, k := range keys {
			h[i] = binary.LittleEndian.Uint64(k) ^ binary.LittleEndian.Uint64(k[8:])*0x9E3779B97F4A7C15
		}
		return h
	}
	presentH, absentH := hashesOf(present), hashesOf(absent)
	results := make([]bool, batch)
	for _, layout := range []string{"classic", "blocked"} {
		opts := []Option{Classic()}
		if layout == "blocked" {
			opts = []Option{Blocked()}
		}
		// One filter answers both, as the issue asks: n/2 keys added as
		// keys and, as hashes, the same n/2 (the present keys are among
		// them in both forms).
		f := mustNew(b, n, 0.01, opts...)
		keyed, hashed := f, f
		buf := make([]byte, 16)
		for i := range uint64(n / 2) {
			k := keyOf(buf, 0, i*0x9E3779B97F4A7C15)
			keyed.Add(k)
			hashed.AddHash(hashesOf([][]byte{k})[0])
		}
		for _, kind := range []string{"Present", "Absent"} {
			keys, hashes := present, presentH
			if kind == "Absent" {
				keys, hashes = absent, absentH
			}
			b.Run(layout+"/Test"+kind+"/Test", func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					sink = keyed.Test(keys[i&(keySet-1)])
				}
			})
			// Side by side on alternate chunks (benchPair): "speedup" is
			// Test's time over TestHash's. Each entry holds a key and,
			// after it, its hash, so both read their input alike.
			both := make([][]byte, len(keys))
			for i, k := range keys {
				both[i] = binary.LittleEndian.AppendUint64(slices.Clip(k), hashes[i])
			}
			b.Run(layout+"/Test"+kind+"/paired", func(b *testing.B) {
				benchPair(b, both, func(chunk [][]byte) {
					for _, k := range chunk {
						sink = keyed.Test(k[:16])
					}
				}, func(chunk [][]byte) {
					for _, k := range chunk {
						sink = hashed.TestHash(binary.LittleEndian.Uint64(k[16:]))
					}
				})
			})
			b.Run(layout+"/Test"+kind+"/TestHash", func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					sink = hashed.TestHash(hashes[i&(keySet-1)])
				}
			})
			b.Run(layout+"/TestMany"+kind+"/TestMany", func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					lo := i % (keySet / batch) * batch
					results = keyed.TestMany(keys[lo:lo+batch], results[:0])
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batch, "ns/key")
			})
			b.Run(layout+"/TestMany"+kind+"/TestManyHashes", func(b *testing.B) {
				b.ReportAllocs()
				for i := range b.N {
					lo := i % (keySet / batch) * batch
					results = hashed.TestManyHashes(hashes[lo:lo+batch], results[:0])
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batch, "ns/key")
			})
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
