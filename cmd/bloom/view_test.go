package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/internal/format"
)

// encoder is what both filter types give the tests.
type encoder interface {
	MarshalBinary() ([]byte, error)
	Test(key []byte) bool
	FillRatio() float64
	EstimatedCount() uint64
	EstimatedErrorRate() float64
}

// legacy returns the encoding of version 1 (classic) or 2 (blocked) of the
// filter whose version-3 encoding is enc, as older releases wrote it, and
// checks that the library decodes it to the same filter.
func legacy(t *testing.T, enc []byte) []byte {
	t.Helper()
	sub := func(b []byte) []byte {
		h, words, err := format.DecodeV3(b)
		if err != nil {
			t.Fatal(err)
		}
		return format.Append(nil, h.Header, words, false)
	}
	var out []byte
	if string(enc[:4]) == magicPlain {
		out = sub(enc)
		var a, b bloom.BloomFilter
		if err := a.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if err := b.UnmarshalBinary(out); err != nil || !a.Equal(&b) {
			t.Fatalf("the legacy encoding decodes to another filter (%v)", err)
		}
		return out
	}
	h, subs, err := format.WalkV3Scalable(enc)
	if err != nil {
		t.Fatal(err)
	}
	out = format.AppendScalableHeader(nil, h.ScalableHeader)
	for _, s := range subs {
		out = append(out, sub(enc[s.Off:s.Off+s.H.Size()])...)
	}
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, format.Castagnoli))
	var a, b bloom.ScalableBloomFilter
	if err := a.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalBinary(out); err != nil || !a.Equal(&b) {
		t.Fatalf("the legacy encoding decodes to another filter (%v)", err)
	}
	return out
}

// testFilters returns filters of both types and layouts, empty, partly
// filled and over capacity (scalable ones grown to several sub-filters),
// with the keys added to each.
func testFilters(t *testing.T) map[string]encoder {
	t.Helper()
	out := make(map[string]encoder)
	for _, layout := range []struct {
		name string
		opt  bloom.Option
	}{{"classic", bloom.Classic()}, {"blocked", bloom.Blocked()}} {
		for _, n := range []int{0, 700, 5000, 40000} {
			f, err := bloom.New(1000, 0.01, layout.opt)
			if err != nil {
				t.Fatal(err)
			}
			s, err := bloom.NewScalable(100, 0.01, layout.opt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				f.AddString(fmt.Sprint("key ", i))
				s.AddString(fmt.Sprint("key ", i))
			}
			out[fmt.Sprintf("fixed-%s-n%d", layout.name, n)] = f
			out[fmt.Sprintf("scalable-%s-n%d", layout.name, n)] = s
		}
	}
	return out
}

// TestFillMatchesLibrary checks that the fill info computes from a file
// where it lies is the library's for the filter decoded from it, number for
// number, in every format version, and that query answers as it does.
func TestFillMatchesLibrary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := make(map[string][]byte)
	for name, f := range testFilters(t) {
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		files[name+"-v3"] = enc
		files[name+"-legacy"] = legacy(t, enc)
	}
	for _, name := range []string{"v1/scalable-saturated.bin", "v1/scalable-n1-p1e-18-saturated.bin", "v1/plain-n10000-p1e-4.bin"} {
		files[name] = readFile(t, filepath.Join("..", "..", "testdata", name))
	}
	for name, enc := range files {
		path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-"))
		if err := os.WriteFile(path, enc, 0o644); err != nil {
			t.Fatal(err)
		}
		var want encoder
		var saturated bool
		if string(enc[:4]) == magicPlain {
			f := new(bloom.BloomFilter)
			if err := f.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			want = f
		} else {
			s := new(bloom.ScalableBloomFilter)
			if err := s.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			want, saturated = s, s.Saturated()
		}
		for _, skip := range []bool{false, true} {
			f, err := openFilter(path, skip)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got, w := f.FillRatio(), want.FillRatio(); got != w {
				t.Errorf("%s: fill ratio %v, library %v", name, got, w)
			}
			if got, w := f.EstimatedCount(), want.EstimatedCount(); got != w {
				t.Errorf("%s: estimated count %v, library %v", name, got, w)
			}
			if got, w := f.EstimatedErrorRate(), want.EstimatedErrorRate(); got != w && !(math.IsNaN(got) && math.IsNaN(w)) {
				t.Errorf("%s: estimated error rate %v, library %v", name, got, w)
			}
			if f.Saturated() != saturated {
				t.Errorf("%s: saturated %v, library %v", name, f.Saturated(), saturated)
			}
			if s, ok := want.(*bloom.ScalableBloomFilter); ok && f.InitialCapacity() != s.InitialCapacity() {
				t.Errorf("%s: initial capacity %d, library %d", name, f.InitialCapacity(), s.InitialCapacity())
			}
			wantVersion := 3
			if !strings.HasSuffix(name, "-v3") {
				wantVersion = 1
				if f.Layout() == bloom.LayoutBlocked {
					wantVersion = 2
				}
			}
			if f.Version() != wantVersion {
				t.Errorf("%s: version %d, want %d", name, f.Version(), wantVersion)
			}
			if wantVersion == 3 && f.Copied() {
				t.Errorf("%s: a mapped version-3 file was copied", name)
			}
			for i := range 2000 {
				key := []byte(fmt.Sprint("key ", i*7))
				if f.Test(key) != want.Test(key) {
					t.Fatalf("%s: Test(%q) = %v, library %v", name, key, f.Test(key), want.Test(key))
				}
			}
			f.Close()
		}
	}
}

// infoJSON runs info -json with args and returns the object it prints.
func infoJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := runBloom(t, "", append([]string{"info", "-json"}, args...)...)
	r.want(t, 0, nil)
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("info -json %v: %v\n%s", args, err, r.stdout)
	}
	return got
}

// TestQueryInfoEveryVersion runs query and info on files of both types and
// layouts in every format version and checks the answers against the
// decoded filter's and the version and copy that info reports.
func TestQueryInfoEveryVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := []string{"key 1", "key 2", "key 699", "key 700", "nope", "key 4999"}
	for name, f := range testFilters(t) {
		if !strings.HasSuffix(name, "-n700") {
			continue
		}
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		code := 0
		for _, k := range keys {
			answer := "present"
			if !f.Test([]byte(k)) {
				answer, code = "absent", exitAbsent
			}
			fmt.Fprintf(&want, "%s\t%s\n", k, answer)
		}
		for version, data := range map[int][]byte{3: enc, 1: legacy(t, enc)} {
			if version == 1 && strings.Contains(name, "blocked") {
				version = 2
			}
			path := filepath.Join(dir, fmt.Sprintf("%s-v%d.bf", name, version))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			runBloom(t, "", append([]string{"query", path}, keys...)...).want(t, code, ptr(want.String()))
			runBloom(t, strings.Join(keys, "\n"), "query", "-skip-check", path).want(t, code, ptr(want.String()))

			v, err := bloom.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			copied := v.Copied()
			v.Close()
			got := infoJSON(t, path)
			if got["format_version"] != float64(version) || got["copied"] != copied || got["checksums_checked"] != true {
				t.Errorf("%s: info says format_version %v, copied %v, checksums_checked %v; want %d, %v, true",
					path, got["format_version"], got["copied"], got["checksums_checked"], version, copied)
			}
			if got := infoJSON(t, "-skip-check", path); got["checksums_checked"] != false {
				t.Errorf("%s: info -skip-check says checksums_checked %v", path, got["checksums_checked"])
			}
			r := runBloom(t, "", "info", path)
			if !strings.Contains(r.stdout, fmt.Sprintf("format:                version %d", version)) {
				t.Errorf("%s: info prints no format version %d:\n%s", path, version, r.stdout)
			}
		}
	}
}

// TestBuildWritesV3 checks that build writes format version 3, which opens
// as a View without a copy.
func TestBuildWritesV3(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "words.bf")
	runBloom(t, "cat\ndog\n", "build", "-q", "-capacity", "1000", "-o", path).want(t, 0, nil)
	data := readFile(t, path)
	if len(data) < 6 || string(data[:4]) != magicPlain || binary.LittleEndian.Uint16(data[4:]) != 3 {
		t.Fatalf("build wrote % x..., not a version-3 BloomFilter", data[:min(6, len(data))])
	}
	v, err := bloom.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.Version() != 3 || v.Copied() || v.Scalable() || !v.TestString("cat") || !v.TestString("dog") {
		t.Errorf("the view of build's file: version %d, copied %v, scalable %v, cat %v, dog %v",
			v.Version(), v.Copied(), v.Scalable(), v.TestString("cat"), v.TestString("dog"))
	}
}

// TestDamagedFileRefused flips one bit of the bits of filter files and
// truncates them, and checks that query and info refuse them with an error
// that says why, unless -skip-check skips the checksums (a truncated file
// is refused even then).
func TestDamagedFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixed, err := bloom.New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	scalable, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		fixed.AddString(fmt.Sprint("key ", i))
		scalable.AddString(fmt.Sprint("key ", i))
	}
	for _, f := range []struct {
		name string
		enc  interface{ MarshalBinary() ([]byte, error) }
	}{{"fixed", fixed}, {"scalable", scalable}} {
		enc, err := f.enc.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		for version, good := range map[string][]byte{"v3": enc, "legacy": legacy(t, enc)} {
			e, err := format.Locate(good, true)
			if err != nil {
				t.Fatal(err)
			}
			last := e.Filters[len(e.Filters)-1]
			flipped := append([]byte(nil), good...)
			flipped[last.Words+3] ^= 0x10 // a bit well below m
			name := f.name + "-" + version
			bad := map[string][]byte{
				"flipped":     flipped,
				"short":       good[:len(good)-1],
				"half":        good[:len(good)/2],
				"header only": good[:70],
			}
			for damage, data := range bad {
				path := filepath.Join(dir, name+"-"+strings.ReplaceAll(damage, " ", "-")+".bf")
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				want := "truncated"
				if damage == "flipped" {
					want = "checksum mismatch"
				}
				for _, args := range [][]string{{"query", path, "key 1"}, {"info", path}, {"info", "-json", path}} {
					r := runBloom(t, "", args...)
					r.wantError(t, want)
					if !strings.Contains(r.stderr, path) || r.stdout != "" {
						t.Errorf("%s %s: stderr %q does not name the file, or stdout %q", name, damage, r.stderr, r.stdout)
					}
				}
				skip := runBloom(t, "", "query", "-skip-check", path, "key 1")
				if damage == "flipped" {
					// The check skipped, it answers, right or wrong.
					if skip.code != 0 && skip.code != exitAbsent || skip.stderr != "" {
						t.Errorf("%s %s: query -skip-check: exit %d, stderr %q", name, damage, skip.code, skip.stderr)
					}
					runBloom(t, "", "info", "-skip-check", path).want(t, 0, nil)
				} else {
					skip.wantError(t, want)
					runBloom(t, "", "info", "-skip-check", path).wantError(t, want)
				}
			}
		}
	}
}

// TestFlippedBitIsAFalseNegative shows what -skip-check risks, and that
// without it the damage is caught: a cleared bit of a key makes query say
// "absent" for a key that was added.
func TestFlippedBitIsAFalseNegative(t *testing.T) {
	t.Parallel()
	f, err := bloom.New(1000, 0.01, bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("added")
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loc := bloom.AppendLocations(nil, []byte("added"), f.Bits(), f.Hashes(), f.Seed())
	enc[format.V3HeaderSize+loc[0]/8] &^= 1 << (loc[0] % 8)
	path := filepath.Join(t.TempDir(), "f.bf")
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	runBloom(t, "", "query", path, "added").wantError(t, "checksum mismatch")
	runBloom(t, "", "query", "-skip-check", path, "added").want(t, exitAbsent, ptr("added\tabsent\n"))
}

// bigSparseFilter writes a version-3 blocked filter file of about size
// bytes with no key in it, cheaply: a sparse file of zeros with a header
// and a table of section checksums.
func bigSparseFilter(t *testing.T, path string, size uint64) {
	t.Helper()
	m := size * 8 / format.BlockBits * format.BlockBits
	h := format.V3Header{Header: format.Header{Seed: bloom.DefaultSeed, K: 7, M: m, Capacity: m / 10, ErrorRate: 0.01, Blocked: true},
		SectionSize: format.V3SectionSize}
	header := format.AppendV3(nil, h, nil, false)
	zeros := crc32.Checksum(make([]byte, format.V3SectionSize), format.Castagnoli)
	var table []byte
	for i := range h.Sections() {
		crc := zeros
		if last := 8 * h.Words() % format.V3SectionSize; i == h.Sections()-1 && last != 0 {
			crc = crc32.Checksum(make([]byte, last), format.Castagnoli)
		}
		table = binary.LittleEndian.AppendUint32(table, crc)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(h.Size())); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(header, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(table, int64(h.Size())-int64(len(table))); err != nil {
		t.Fatal(err)
	}
}

// TestQueryLargeFileReadsLittle checks, on a 256 MiB filter file, that
// query -skip-check reads only the pages it needs: the peak resident memory
// of the process, which counts the file's pages it touched, stays a small
// fraction of the file, while query without it (which checks every
// checksum) and info (which counts every bit) touch all of it. A load into
// the heap, as query did before views, peaked at twice the file's size.
//
// A key touches one page, but a fault maps the pages around it that are in
// the page cache: about 64 KiB a key on a file not yet read, and up to a
// whole large folio (2 MiB) once a sequential read has cached the file in
// large folios (32 keys mapped 50 MiB here after a read of the whole file). So a few keys, against a
// file many times the size they could map, before and after the file is
// cached.
func TestQueryLargeFileReadsLittle(t *testing.T) {
	t.Parallel()
	const size = 256 << 20
	path := filepath.Join(t.TempDir(), "big.bf")
	bigSparseFilter(t, path, size)
	args := []string{"query", "-skip-check", path}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 8
	for range n {
		args = append(args, fmt.Sprint(rng.Uint64()))
	}
	query := func(when string) {
		peak, r := peakRSS(t, args...)
		r.want(t, exitAbsent, nil)
		t.Logf("query -skip-check of %d keys, %s: peak RSS %.1f MiB of a %d MiB file", n, when, float64(peak)/(1<<20), size>>20)
		if peak > size/4 {
			t.Errorf("query -skip-check of %d keys, %s, peaked at %.1f MiB resident: it read the %d MiB file", n, when, float64(peak)/(1<<20), size>>20)
		}
	}
	query("file not read")
	if testing.Short() {
		return
	}
	// The measure sees the pages of the file that a process reads.
	for _, cmd := range [][]string{{"query", path, "1"}, {"info", "-skip-check", path}} {
		peak, r := peakRSS(t, cmd...)
		r.want(t, map[string]int{"query": exitAbsent, "info": 0}[cmd[0]], nil)
		t.Logf("%s: peak RSS %.1f MiB", strings.Join(cmd[:len(cmd)-1], " "), float64(peak)/(1<<20))
		if peak < size/2 {
			t.Errorf("%s peaked at %.1f MiB resident, reading every page of a %d MiB file", cmd, float64(peak)/(1<<20), size>>20)
		}
	}
	query("file cached")
}
