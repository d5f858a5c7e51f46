package bloom

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/bloomfilters/bloom/internal/format"
)

// ---- views ----

// The filters of testdata/v3, version-3 encodings kept as files so that a
// program can embed them: a blocked BloomFilter and a ScalableBloomFilter
// (grown to several sub-filters) of the keys "embed-0" to "embed-999" with
// seed 23. TestViewEmbed pins them to what MarshalBinary writes.
var (
	//go:embed testdata/v3/embed-blocked-n1000-p0.01.bin
	embeddedBytes []byte
	//go:embed testdata/v3/embed-blocked-n1000-p0.01.bin
	embeddedString string
	//go:embed testdata/v3/embed-scalable-n100-p0.01.bin
	embeddedScalable string
)

// viewed is what a View and a decoded filter answer alike.
type viewed interface {
	Test([]byte) bool
	TestString(string) bool
	TestHash(uint64) bool
	TestMany([][]byte, []bool) []bool
	TestManyStrings([]string, []bool) []bool
	TestManyHashes([]uint64, []bool) []bool
	Count() uint64
	Bits() uint64
	Capacity() uint64
	ErrorRate() float64
	Seed() uint32
	Layout() Layout
	FillRatio() float64
	EstimatedCount() uint64
	EstimatedErrorRate() float64
}

// checkViewAnswers fails t unless v answers every call as want, the filter
// decoded from the same bytes, for the keys and their hashes.
func checkViewAnswers(t *testing.T, name string, v *View, want viewed, keys [][]byte) {
	t.Helper()
	strs := make([]string, len(keys))
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		strs[i], hashes[i] = string(k), fnv1a(k)
	}
	got, exp := v.TestMany(keys, nil), want.TestMany(keys, nil)
	gotS, gotH := v.TestManyStrings(strs, nil), v.TestManyHashes(hashes, nil)
	expH := want.TestManyHashes(hashes, nil)
	for i, k := range keys {
		w, wh := want.Test(k), want.TestHash(hashes[i])
		if v.Test(k) != w || v.TestString(strs[i]) != w || got[i] != w || gotS[i] != w || exp[i] != w {
			t.Fatalf("%s: key %d (%q): View says %v/%v/%v/%v, the decoded filter %v", name, i, k, v.Test(k), v.TestString(strs[i]), got[i], gotS[i], w)
		}
		if v.TestHash(hashes[i]) != wh || gotH[i] != wh || expH[i] != wh {
			t.Fatalf("%s: hash %d: View says %v/%v, the decoded filter %v", name, i, v.TestHash(hashes[i]), gotH[i], wh)
		}
	}
	if v.Count() != want.Count() || v.Bits() != want.Bits() || v.Capacity() != want.Capacity() ||
		v.ErrorRate() != want.ErrorRate() || v.Seed() != want.Seed() || v.Layout() != want.Layout() {
		t.Fatalf("%s: the View's accessors differ from the decoded filter's", name)
	}
	if v.FillRatio() != want.FillRatio() || v.EstimatedCount() != want.EstimatedCount() ||
		math.Float64bits(v.EstimatedErrorRate()) != math.Float64bits(want.EstimatedErrorRate()) {
		t.Fatalf("%s: the View's fill %v, count %d, rate %v; the decoded filter's %v, %d, %v", name,
			v.FillRatio(), v.EstimatedCount(), v.EstimatedErrorRate(), want.FillRatio(), want.EstimatedCount(), want.EstimatedErrorRate())
	}
	if s, ok := want.(*ScalableBloomFilter); ok && (v.Saturated() != s.Saturated() || v.InitialCapacity() != s.InitialCapacity() ||
		v.NumFilters() != s.NumFilters() || v.Hashes() != s.filters[len(s.filters)-1].k) {
		t.Fatalf("%s: the View's growth accessors differ from the decoded filter's", name)
	}
	if f, ok := want.(*BloomFilter); ok && (v.Saturated() || v.InitialCapacity() != f.Capacity() || v.NumFilters() != 1 || v.Hashes() != f.Hashes()) {
		t.Fatalf("%s: the View's accessors of a BloomFilter's encoding differ from the decoded filter's", name)
	}
}

// viewKeys returns n members (tag 0) and n absent keys (tag 1) for the
// filters of the view tests.
func viewKeys(n int) (members, all [][]byte) {
	for i := range n {
		members = append(members, keyOf(make([]byte, 16), 0, uint64(i)))
	}
	all = slices.Clone(members)
	for i := range n {
		all = append(all, keyOf(make([]byte, 16), 1, uint64(i)))
	}
	return members, all
}

// misaligned returns a copy of data that starts off bytes past a multiple
// of 8 (a cache line when off is 0).
func misaligned(data []byte, off int) []byte {
	buf := make([]uint64, (len(data)+off+7)/8+8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 8*len(buf))
	start := int((64 - uintptr(unsafe.Pointer(&b[0]))%64) % 64)
	return append(b[start+off:start+off], data...)
}

// TestViewMatchesDecoded is the property of a View: on random filters of
// both types and layouts, from a few bits to 10^6, plain and Concurrent,
// grown scalable filters, in every format version and at every alignment of
// the encoding, as a []byte and a string, with and without the body check,
// a View answers every key and hash exactly as the filter decoded from the
// same bytes, and copies the bits exactly when they are misaligned.
func TestViewMatchesDecoded(t *testing.T) {
	inRounds(t, true) // the batch pipelines on small filters too
	rng := rand.New(rand.NewPCG(23, 3))
	configs := 40
	if testing.Short() {
		configs = 12
	}
	for c := range configs {
		opts := []Option{Seed(rng.Uint32()), Classic()}
		if rng.IntN(2) == 0 {
			opts[1] = Blocked()
		}
		if rng.IntN(4) == 0 {
			opts = append(opts, Concurrent())
		}
		n := 1 + rng.IntN(3000)
		members, keys := viewKeys(n)
		var f interface {
			MarshalBinary() ([]byte, error)
			AddMany([][]byte)
		}
		var legacy []byte
		scalable := c%2 == 1
		if scalable {
			s := mustScalable(t, uint64(1+rng.IntN(200)), math.Exp(-1-rng.Float64()*8), opts...)
			s.AddMany(members)
			f, legacy = s, encodeScalableV1(s)
		} else {
			p := math.Exp(-1 - rng.Float64()*12)
			g := mustNew(t, uint64(n+rng.IntN(3*n)), p, opts...)
			g.AddMany(members)
			f, legacy = g, encodeV1(g)
		}
		for _, enc := range [][]byte{mustMarshal(t, f), legacy} {
			var want viewed
			if scalable {
				var d ScalableBloomFilter
				if err := d.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				want = &d
			} else {
				var d BloomFilter
				if err := d.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				want = &d
			}
			for _, off := range []int{0, 8, 1 + rng.IntN(7)} {
				data := misaligned(enc, off)
				for _, skip := range []bool{false, true} {
					var opts []ViewOption
					if skip {
						opts = append(opts, SkipBodyCheck())
					}
					name := fmt.Sprintf("config %d/v%d/offset %d/skip %v", c, enc[4], off, skip)
					v, err := NewView(data, opts...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					checkViewAnswers(t, name, v, want, keys)
					if v.Scalable() != scalable || v.Version() != int(enc[4]) {
						t.Fatalf("%s: Scalable %v, Version %d", name, v.Scalable(), v.Version())
					}
					// Version 3 and the first filter of 1 and 2 lie on
					// multiples of 8 at offsets 0 and 8; later
					// sub-filters of 1 and 2 may not.
					if wantCopy := off%8 != 0 || !littleEndian; v.Copied() != wantCopy && (enc[4] == 3 || !scalable) {
						t.Fatalf("%s: Copied = %v", name, v.Copied())
					}
					if off == 0 && !v.Copied() && enc[4] == 3 {
						checkAliases(t, name, v, data)
					}
					vs, err := NewViewString(string(data), opts...)
					if err != nil {
						t.Fatalf("%s: NewViewString: %v", name, err)
					}
					checkViewAnswers(t, name+"/string", vs, want, keys[:min(len(keys), 200)])
				}
			}
		}
	}
}

// checkAliases fails t unless the View's bits are data's bytes, on a cache
// line where data starts on one.
func checkAliases(t *testing.T, name string, v *View, data []byte) {
	t.Helper()
	filters := []*BloomFilter{v.f}
	if v.s != nil {
		filters = v.s.filters
	}
	lo, hi := uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[len(data)-1]))
	for i, f := range filters {
		p := uintptr(unsafe.Pointer(&f.words[0]))
		if p < lo || p > hi {
			t.Fatalf("%s: the bits of filter %d are not the encoding's bytes", name, i)
		}
		if lo%64 == 0 && p%64 != 0 {
			t.Fatalf("%s: the bits of filter %d are not on a cache line", name, i)
		}
	}
}

// TestViewEveryWrittenEncoding opens as a View every encoding the library
// writes, and wrote: MarshalBinary, AppendBinary after other bytes, WriteTo,
// the binary form under MarshalText, of plain, Concurrent, saturated and
// grown filters of both layouts; the version-1 files of testdata and the
// golden version-1 and 2 bytes.
func TestViewEveryWrittenEncoding(t *testing.T) {
	var encodings = map[string][]byte{}
	add := func(name string, f interface {
		MarshalBinary() ([]byte, error)
		AppendBinary([]byte) ([]byte, error)
		WriteTo(io.Writer) (int64, error)
		MarshalText() ([]byte, error)
	}) {
		encodings[name+"/MarshalBinary"] = mustMarshal(t, f)
		b, _ := f.AppendBinary([]byte("prefix"))
		encodings[name+"/AppendBinary"] = b[len("prefix"):]
		var w bytes.Buffer
		f.WriteTo(&w)
		encodings[name+"/WriteTo"] = w.Bytes()
		text, _ := f.MarshalText()
		bin, _ := base64.StdEncoding.DecodeString(string(text))
		encodings[name+"/MarshalText"] = bin
	}
	buf := make([]byte, 16)
	for _, blocked := range []bool{false, true} {
		for _, conc := range []bool{false, true} {
			opts := []Option{Classic()}
			if blocked {
				opts[0] = Blocked()
			}
			if conc {
				opts = append(opts, Concurrent())
			}
			name := fmt.Sprintf("blocked=%v/concurrent=%v", blocked, conc)
			f := mustNew(t, 5000, 0.001, opts...)
			s := mustScalable(t, 50, 0.01, opts...)
			for i := range uint64(3000) {
				f.Add(keyOf(buf, 0, i))
				s.Add(keyOf(buf, 0, i))
			}
			add("BloomFilter/"+name, f)
			add("ScalableBloomFilter/"+name, s)
			encodings["BloomFilter/"+name+"/v1"] = encodeV1(f)
			encodings["ScalableBloomFilter/"+name+"/v1"] = encodeScalableV1(s)
		}
	}
	// A saturated filter, as version 3.
	var sat ScalableBloomFilter
	legacy, _ := os.ReadFile("testdata/v1/scalable-saturated.bin")
	if err := sat.UnmarshalBinary(legacy); err != nil || !sat.Saturated() {
		t.Fatalf("saturated: %v", err)
	}
	add("saturated", &sat)
	files, _ := filepath.Glob("testdata/*/*.bin")
	for _, path := range files {
		data, _ := os.ReadFile(path)
		if filepath.Base(filepath.Dir(path)) == "window" {
			// A WindowFilter's encoding has no View: NewView says so.
			if _, err := NewView(data); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ReadWindow") {
				t.Errorf("%s: NewView: %v, want an error pointing at ReadWindow", path, err)
			}
			continue
		}
		encodings[path] = data
	}
	encodings["golden v1"], _ = hex.DecodeString(goldenEncoding)
	encodings["golden v2"], _ = hex.DecodeString(goldenBlockedEncoding)
	if len(files) < 15 {
		t.Fatalf("only %d files in testdata", len(files))
	}
	for name, enc := range encodings {
		v, err := NewView(enc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		d, err := ReadAny(bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("%s: ReadAny: %v", name, err)
		}
		_, keys := viewKeys(300)
		checkViewAnswers(t, name, v, d.(viewed), keys)
	}
}

// TestViewRefusesDamage: a View refuses, at NewView and Open, every flipped
// bit of a header or a table and a truncation; with the body check, every
// flipped bit of the bits (one per section of a filter of several); with
// SkipBodyCheck it answers from such bits, as its doc warns.
func TestViewRefusesDamage(t *testing.T) {
	f := mustNew(t, 300_000, 0.01, Blocked()) // 2.9 Mbit: 3 sections
	s := mustScalable(t, 20, 0.1)
	_, keys := viewKeys(2000)
	f.AddMany(keys[:2000])
	s.AddMany(keys[:200])
	dir := t.TempDir()
	for name, enc := range map[string][]byte{"BloomFilter": mustMarshal(t, f), "ScalableBloomFilter": mustMarshal(t, s)} {
		refused := func(what string, data []byte, opts ...ViewOption) error {
			t.Helper()
			_, err := NewView(data, opts...)
			if err == nil || !errors.Is(err, ErrCorrupt) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s: %s: NewView gave %v", name, what, err)
			}
			return err
		}
		// Every bit of the headers and the table before the first bits.
		headers := format.V3HeaderSize
		if name == "ScalableBloomFilter" {
			headers += subFilterAt(enc, 0)
		}
		for i := range 8 * headers {
			bad := bytes.Clone(enc)
			bad[i/8] ^= 1 << (i % 8)
			refused(fmt.Sprintf("bit %d flipped", i), bad, SkipBodyCheck())
		}
		// Every truncation near either end.
		for n := range len(enc) {
			if n > 200 && n < len(enc)-200 {
				continue
			}
			if _, err := NewView(enc[:n], SkipBodyCheck()); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s: truncated to %d bytes: %v", name, n, err)
			}
		}
		// A flipped bit in each section of the bits.
		e, _ := format.Locate(enc, true)
		for fi, l := range e.Filters {
			bytes := 8 * l.Header.Words()
			for lo := uint64(0); lo < bytes; lo += format.V3SectionSize {
				bad := slices.Clone(enc)
				bit := lo*8 + rand.Uint64N(min(format.V3SectionSize*8, l.M-lo*8)) // below m
				bad[l.Words+bit/8] ^= 1 << (bit % 8)
				err := refused(fmt.Sprintf("filter %d, bit %d flipped", fi, bit), bad)
				if !strings.Contains(err.Error(), "checksum mismatch") {
					t.Fatalf("%s: %v", name, err)
				}
				if v, err := NewView(bad, SkipBodyCheck()); err != nil {
					t.Fatalf("%s: SkipBodyCheck refused a flipped bit of the bits: %v", name, err)
				} else {
					v.Test(keys[0])
				}
				// The same from a file.
				path := filepath.Join(dir, name)
				os.WriteFile(path, bad, 0o600)
				if v, err := Open(path); err == nil || !errors.Is(err, ErrCorrupt) {
					if v != nil {
						v.Close()
					}
					t.Fatalf("%s: Open of a flipped bit: %v", name, err)
				}
				os.WriteFile(path, enc[:len(enc)-1], 0o600)
				if _, err := Open(path, SkipBodyCheck()); !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("%s: Open of a truncated file: %v", name, err)
				}
			}
		}
	}
}

// TestViewOpen opens a file as a View, answers from it, closes it.
func TestViewOpen(t *testing.T) {
	f := mustNew(t, 100_000, 0.01)
	members, keys := viewKeys(5000)
	f.AddMany(members)
	path := filepath.Join(t.TempDir(), "f.bloom")
	fd, _ := os.Create(path)
	if _, err := f.WriteTo(fd); err != nil || fd.Close() != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]ViewOption{nil, {SkipBodyCheck()}} {
		v, err := Open(path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		checkViewAnswers(t, "Open", v, f, keys)
		if v.Copied() {
			t.Error("a file's bits were copied")
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

// TestViewEmbed views the filters of testdata/v3 as go:embed gives them, a
// []byte and strings, which must be what MarshalBinary writes for them.
func TestViewEmbed(t *testing.T) {
	f := mustNew(t, 1000, 0.01, Blocked(), Seed(23))
	s := mustScalable(t, 100, 0.01, Seed(23))
	var keys [][]byte
	for i := range 2000 {
		key := []byte(fmt.Sprintf("embed-%d", i))
		if i < 1000 {
			f.Add(key)
			s.Add(key)
		}
		keys = append(keys, key)
	}
	if !bytes.Equal(embeddedBytes, mustMarshal(t, f)) || embeddedString != string(embeddedBytes) || embeddedScalable != string(mustMarshal(t, s)) {
		t.Fatal("the files of testdata/v3 are not what MarshalBinary writes")
	}
	for name, v := range map[string]func() (*View, error){
		"[]byte":          func() (*View, error) { return NewView(embeddedBytes) },
		"string":          func() (*View, error) { return NewViewString(embeddedString) },
		"scalable string": func() (*View, error) { return NewViewString(embeddedScalable) },
	} {
		view, err := v()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want viewed = f
		if view.Scalable() {
			want = s
		}
		checkViewAnswers(t, name, view, want, keys)
		for i := range 1000 {
			if !view.TestString(fmt.Sprintf("embed-%d", i)) {
				t.Fatalf("%s: false negative", name)
			}
		}
		t.Logf("%s: copied %v", name, view.Copied())
	}
}

// TestViewConcurrentReaders runs Test, TestHash and TestMany from many
// goroutines at once on one View of each type (run it with -race).
func TestViewConcurrentReaders(t *testing.T) {
	members, keys := viewKeys(3000)
	f := mustNew(t, 3000, 0.01)
	s := mustScalable(t, 100, 0.01)
	f.AddMany(members)
	s.AddMany(members)
	for _, enc := range [][]byte{mustMarshal(t, f), mustMarshal(t, s)} {
		v, err := NewView(enc)
		if err != nil {
			t.Fatal(err)
		}
		want := v.TestMany(keys, nil)
		runWorkers(8, func(g int) {
			var results []bool
			for i := range 3 {
				results = v.TestMany(keys, results[:0])
				for j, k := range keys {
					if (i+j+g)%3 == 0 && (v.Test(k) != want[j] || results[j] != want[j]) {
						t.Errorf("goroutine %d: key %d answered differently", g, j)
						return
					}
				}
				v.TestHash(uint64(g))
			}
		})
	}
}

// TestViewCloseThenUsePanics: every call after Close panics with a message
// that names the View and Close, Close included.
func TestViewCloseThenUsePanics(t *testing.T) {
	f := mustNew(t, 100, 0.01)
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, mustMarshal(t, f), 0o600)
	for _, open := range []func() (*View, error){
		func() (*View, error) { return NewView(mustMarshal(t, f)) },
		func() (*View, error) { return Open(path) },
	} {
		v, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		for name, call := range map[string]func(){
			"Test":            func() { v.Test(nil) },
			"TestString":      func() { v.TestString("") },
			"TestHash":        func() { v.TestHash(1) },
			"TestMany":        func() { v.TestMany([][]byte{nil}, nil) },
			"TestManyStrings": func() { v.TestManyStrings(nil, nil) },
			"TestManyHashes":  func() { v.TestManyHashes(nil, nil) },
			"Close":           func() { v.Close() },
			"Bits":            func() { v.Bits() },
			"FillRatio":       func() { v.FillRatio() },
			"Saturated":       func() { v.Saturated() },
		} {
			func() {
				defer func() {
					if r := recover(); fmt.Sprint(r) != errClosedView {
						t.Errorf("%s after Close: panic %v, want %q", name, r, errClosedView)
					}
				}()
				call()
			}()
		}
	}
}

func TestViewDoesNotAllocate(t *testing.T) {
	members, keys := viewKeys(100)
	for _, lay := range []Option{Classic(), Blocked()} {
		f := mustNew(t, 1000, 0.01, lay)
		s := mustScalable(t, 30, 0.01, lay)
		f.AddMany(members)
		s.AddMany(members)
		for _, enc := range [][]byte{mustMarshal(t, f), mustMarshal(t, s)} {
			v, err := NewView(enc)
			if err != nil {
				t.Fatal(err)
			}
			strs := []string{"a", "bb"}
			hashes := []uint64{1, 2, 3}
			results := make([]bool, 0, len(keys))
			for name, call := range map[string]func(){
				"Test":            func() { v.Test(keys[0]) },
				"TestString":      func() { v.TestString("key") },
				"TestHash":        func() { v.TestHash(7) },
				"TestMany":        func() { results = v.TestMany(keys, results[:0]) },
				"TestManyStrings": func() { results = v.TestManyStrings(strs, results[:0]) },
				"TestManyHashes":  func() { results = v.TestManyHashes(hashes, results[:0]) },
			} {
				if a := testing.AllocsPerRun(50, call); a != 0 {
					t.Errorf("%s allocates %v times per call", name, a)
				}
			}
		}
	}
}
