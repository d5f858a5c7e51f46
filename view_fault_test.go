package bloom

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/mmap"
)

// ---- a View over a file that changes under it ----
//
// A read of a page of a file mapping past the end of the file raises
// SIGBUS, which kills a Go process unless faults were made panics. These
// tests truncate real files under live views. The cases that would crash
// the process if a fault escaped run in a child process (this test binary
// again, as TestViewFaultChild), so that a failure shows as the child's
// crash, with its output, and not as the end of the test binary.

const faultChildEnv = "BLOOM_VIEW_FAULT_CHILD" // the case a child runs

// faultKinds are the encodings the fault tests map: name -> the encoding's
// bytes and the keys added to it.
func faultKinds(t testing.TB) map[string][]byte {
	members, _ := viewKeys(20_000)
	kinds := map[string][]byte{}
	for name, lay := range map[string]Option{"blocked": Blocked(), "classic": Classic()} {
		f := mustNew(t, 100_000, 0.01, lay)
		f.AddMany(members)
		kinds[name] = mustMarshal(t, f)
	}
	s := mustScalable(t, 2000, 0.01)
	s.AddMany(members) // grown to several sub-filters
	kinds["scalable"] = mustMarshal(t, s)
	v1, err := os.ReadFile("testdata/v1/plain-n10000-p1e-4.bin")
	if err != nil {
		t.Fatal(err)
	}
	kinds["v1"] = v1
	return kinds
}

// faultCalls are the methods of View that read the bits, by name: each
// reads enough of a filter of faultKinds to reach past its first page.
var faultCalls = map[string]func(v *View, keys [][]byte){
	"Test": func(v *View, keys [][]byte) {
		for _, k := range keys {
			v.Test(k)
		}
	},
	"TestString": func(v *View, keys [][]byte) {
		for _, k := range keys {
			v.TestString(string(k))
		}
	},
	"TestHash": func(v *View, keys [][]byte) {
		for i := range keys {
			v.TestHash(uint64(i) * 0x9e3779b97f4a7c15)
		}
	},
	"TestMany": func(v *View, keys [][]byte) { v.TestMany(keys, nil) },
	"TestManyStrings": func(v *View, keys [][]byte) {
		strs := make([]string, len(keys))
		for i, k := range keys {
			strs[i] = string(k)
		}
		v.TestManyStrings(strs, nil)
	},
	"TestManyHashes": func(v *View, keys [][]byte) {
		hashes := make([]uint64, len(keys))
		for i := range hashes {
			hashes[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		v.TestManyHashes(hashes, nil)
	},
	"Stats":              func(v *View, _ [][]byte) { v.Stats() },
	"FillRatio":          func(v *View, _ [][]byte) { v.FillRatio() },
	"EstimatedCount":     func(v *View, _ [][]byte) { v.EstimatedCount() },
	"EstimatedErrorRate": func(v *View, _ [][]byte) { v.EstimatedErrorRate() },
}

// TestViewFaultCallsCoverMethods: every method of View is either in
// faultCalls, so TestViewTruncatedUnderView truncates a file under it, or
// known to read no bits (the header's fields, copied at open). A method
// added later fails here until it is put in one or the other.
func TestViewFaultCallsCoverMethods(t *testing.T) {
	noBits := map[string]bool{
		"Bits": true, "Capacity": true, "Close": true, "Copied": true, "Count": true, "ErrorRate": true,
		"Hashes": true, "InitialCapacity": true, "Layout": true, "NumFilters": true, "Saturated": true,
		"Scalable": true, "Seed": true, "Version": true,
	}
	typ := reflect.TypeOf(&View{})
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if _, ok := faultCalls[name]; !ok && !noBits[name] {
			t.Errorf("View.%s: neither in faultCalls nor known to read no bits", name)
		}
	}
}

// runFaultChild runs TestViewFaultChild in a new process for the case
// given, with the file at path, and returns its combined output, failing t
// if the child did not exit normally.
func runFaultChild(t *testing.T, path, kase string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestViewFaultChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), faultChildEnv+"="+kase, "BLOOM_VIEW_FAULT_FILE="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %q: %v\n%s", kase, err, out)
	}
	if !strings.Contains(string(out), "RECOVERED: ") {
		t.Fatalf("child %q reported no recovery:\n%s", kase, out)
	}
	return string(out)
}

// TestViewTruncatedUnderView truncates the file of a live View (to one
// page, as `> file` then a write of 4096 bytes would) and calls each method
// that reads the bits, with the goroutine's panic-on-fault setting off and
// on beforehand: the call panics with an error wrapping ErrFileChanged that
// names the file and its new size, recover catches it, the process lives,
// and the setting is what it was before the call. Before the fault guard,
// every child died: "fatal error: fault [signal SIGBUS ...]".
func TestViewTruncatedUnderView(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("Open reads the file into memory on " + runtime.GOOS + ": nothing can fault")
	}
	dir := t.TempDir()
	for kind, enc := range faultKinds(t) {
		for call := range faultCalls {
			for _, before := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/panicOnFault=%v", kind, call, before)
				t.Run(name, func(t *testing.T) {
					path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-"))
					if err := os.WriteFile(path, enc, 0o600); err != nil {
						t.Fatal(err)
					}
					out := runFaultChild(t, path, "call:"+name)
					for _, want := range []string{"ErrFileChanged", path, "truncated to 4096 bytes"} {
						if !strings.Contains(out, want) {
							t.Errorf("child output lacks %q:\n%s", want, out)
						}
					}
				})
			}
		}
	}
}

// TestViewSkipFaultGuard: with SkipFaultGuard, as its doc says, a read of
// a truncated file kills the process with SIGBUS (here the child's).
func TestViewSkipFaultGuard(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("Open reads the file into memory on " + runtime.GOOS + ": nothing can fault")
	}
	path := filepath.Join(t.TempDir(), "f.bloom")
	if err := os.WriteFile(path, faultKinds(t)["blocked"], 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestViewFaultChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), faultChildEnv+"=unguarded", "BLOOM_VIEW_FAULT_FILE="+path)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SIGBUS") {
		t.Fatalf("child with SkipFaultGuard: %v, want a death by SIGBUS:\n%s", err, out)
	}
}

// TestViewTruncatedDuringOpen truncates the file after Open mapped it and
// before the View checks it: Open returns an error wrapping ErrFileChanged
// ("open"). The checksums of a large version-3 file are checked on several
// goroutines, which start with faults fatal: a fault in one of them must
// reach the goroutine that checks, where Open recovers it ("verify", which
// calls the parallel check of a truncated mapping directly: through Open,
// the read of the last word faults first). Before the fix both children
// died of SIGBUS.
func TestViewTruncatedDuringOpen(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("Open reads the file into memory on " + runtime.GOOS + ": nothing can fault")
	}
	f := mustNew(t, 2_000_000, 0.01) // 2.4 MB: three checksum sections
	members, _ := viewKeys(1000)
	f.AddMany(members)
	enc := mustMarshal(t, f)
	for _, mode := range []string{"open", "verify"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.bloom")
			if err := os.WriteFile(path, enc, 0o600); err != nil {
				t.Fatal(err)
			}
			out := runFaultChild(t, path, "open:"+mode)
			if mode == "open" && !strings.Contains(out, "truncated to 4096 bytes") {
				t.Errorf("child output lacks the new size:\n%s", out)
			}
		})
	}
}

// TestViewFaultChild is the child process of the tests above; it does
// nothing unless BLOOM_VIEW_FAULT_CHILD names its case.
func TestViewFaultChild(t *testing.T) {
	kase := os.Getenv(faultChildEnv)
	if kase == "" {
		return
	}
	path := os.Getenv("BLOOM_VIEW_FAULT_FILE")
	_, keys := viewKeys(20_000)
	if mode, ok := strings.CutPrefix(kase, "open:"); ok {
		file, err := mmap.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := format.CheckV3(file.Data, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 4096); err != nil {
			t.Fatal(err)
		}
		if mode == "verify" {
			runtime.GOMAXPROCS(4)
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			r := func() (r any) {
				defer func() { r = recover() }()
				return format.VerifyV3(file.Data, h, 0)
			}()
			if err := faultError(r, file.Data, path); err == nil || !errors.Is(err, ErrFileChanged) {
				t.Fatalf("the parallel check of a truncated mapping gave %v, want a fault in the mapping", r)
			}
			fmt.Printf("RECOVERED: %v\n", r)
			return
		}
		v, err := newFileView(file, path, nil)
		if err == nil || !errors.Is(err, ErrFileChanged) {
			t.Fatalf("the check of a truncated mapping: %v, %v; want an error wrapping ErrFileChanged", v, err)
		}
		fmt.Printf("RECOVERED: %v\n", err)
		return
	}
	if kase == "unguarded" {
		v, err := Open(path, SkipFaultGuard())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 4096); err != nil {
			t.Fatal(err)
		}
		defer func() { fmt.Printf("RECOVERED: %v\n", recover()) }()
		faultCalls["Test"](v, keys)
		return
	}
	name := strings.TrimPrefix(kase, "call:")
	parts := strings.Split(name, "/")
	call := faultCalls[parts[1]]
	before, _ := strconv.ParseBool(strings.TrimPrefix(parts[2], "panicOnFault="))
	v, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	call(v, keys) // the whole file is there: no fault
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(before))
	r := func() (r any) {
		defer func() { r = recover() }()
		call(v, keys)
		return nil
	}()
	if after := debug.SetPanicOnFault(before); after != before {
		t.Errorf("panic-on-fault is %v after the call, %v before", after, before)
	}
	err, ok := r.(error)
	if !ok || !errors.Is(err, ErrFileChanged) {
		t.Fatalf("%s of a truncated file recovered %v (%T), want an error wrapping ErrFileChanged", name, r, r)
	}
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Errorf("the error does not wrap the runtime's fault: %v", err)
	}
	fmt.Printf("RECOVERED: ErrFileChanged: %v\n", err)
}

// TestViewTruncatedRecover is the in-process case: a server's goroutine
// recovers the panic of a truncated file, reads the error, and goes on; the
// View still answers the keys whose bits lie in the page the file kept,
// and after Close its methods panic as after any Close.
func TestViewTruncatedRecover(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("Open reads the file into memory on " + runtime.GOOS + ": nothing can fault")
	}
	enc := faultKinds(t)["blocked"]
	path := filepath.Join(t.TempDir(), "f.bloom")
	if err := os.WriteFile(path, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	members, _ := viewKeys(20_000)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var faults, answered int
	for _, k := range members {
		present, err := lookup(v, string(k))
		switch {
		case err != nil && errors.Is(err, ErrFileChanged):
			faults++
		case err != nil:
			t.Fatalf("unexpected error: %v", err)
		case !present:
			t.Fatalf("key %q: false negative from a page the file kept", k)
		default:
			answered++
		}
	}
	// One blocked filter of 100,000 keys at 1% is 1.2 MB: about 1 key in
	// 290 has its block in the first page (the header takes 64 bytes).
	if faults < len(members)*9/10 || answered == 0 {
		t.Errorf("%d faults and %d answers of %d keys, want most to fault and some answered", faults, answered, len(members))
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
}

// lookup is the snippet of docs/views.md (TestViewsDocSnippet), there with
// the package name: a server's query that recovers a changed file.
func lookup(v *View, key string) (present bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, ErrFileChanged) {
				err = e // reopen, or report
				return
			}
			panic(r)
		}
	}()
	return v.TestString(key), nil
}

// TestViewsDocSnippet checks that the Go snippet of docs/views.md is lookup,
// which compiles and TestViewTruncatedRecover runs: line by line, trimmed,
// with "bloom." taken out.
func TestViewsDocSnippet(t *testing.T) {
	doc, err := os.ReadFile("docs/views.md")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(doc), "```go\n")
	if !ok {
		t.Fatal("docs/views.md has no Go snippet")
	}
	snippet, _, _ = strings.Cut(snippet, "```\n")
	src, err := os.ReadFile("view_fault_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, fn, _ := strings.Cut(string(src), "\nfunc lookup(")
	fn, _, _ = strings.Cut("func lookup("+fn, "\n}\n")
	want := strings.Split(fn+"\n}", "\n")
	got := strings.Split(strings.TrimSpace(strings.ReplaceAll(snippet, "bloom.", "")), "\n")
	if len(got) != len(want) {
		t.Fatalf("docs/views.md's snippet has %d lines, lookup %d:\n%s", len(got), len(want), snippet)
	}
	for i := range got {
		if strings.TrimSpace(got[i]) != strings.TrimSpace(want[i]) {
			t.Errorf("docs/views.md's snippet line %d %q, lookup's %q", i+1, got[i], want[i])
		}
	}
}

// TestViewFileReplaced pins the other two promises of Open: a file
// replaced by rename leaves the View answering from the file it opened,
// and a file rewritten in place at the same length changes its answers
// without an error (here, to "absent" for every key once zeroed).
func TestViewFileReplaced(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("Open reads the file into memory on " + runtime.GOOS)
	}
	enc := faultKinds(t)["blocked"]
	members, _ := viewKeys(20_000)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bloom")
	if err := os.WriteFile(path, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	empty := mustMarshal(t, mustNew(t, 10, 0.01))
	tmp := filepath.Join(dir, "new")
	if err := os.WriteFile(tmp, empty, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for _, k := range members {
		if !v.Test(k) {
			t.Fatalf("after a rename over the file, key %q is absent", k)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !v.Test(members[0]) {
		t.Fatal("after removing the file, a member is absent")
	}

	if err := os.WriteFile(path, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.WriteAt(make([]byte, len(enc)-format.V3HeaderSize), format.V3HeaderSize); err != nil || fd.Close() != nil {
		t.Fatal(err)
	}
	for _, k := range members {
		if w.Test(k) {
			t.Fatalf("rewritten in place with zero bits, the file still holds %q", k)
		}
	}
}

// TestViewOpenedDoesNotAllocate: the guard of a View over a mapped file
// costs no allocation.
func TestViewOpenedDoesNotAllocate(t *testing.T) {
	enc := faultKinds(t)["scalable"]
	path := filepath.Join(t.TempDir(), "f.bloom")
	if err := os.WriteFile(path, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	_, keys := viewKeys(100)
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
		"FillRatio":       func() { v.FillRatio() },
	} {
		if a := testing.AllocsPerRun(50, call); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// BenchmarkViewFault measures what the fault guard costs: the same mapping
// of a full filter (New(n, 0.01), the blocked layout, n keys), queried
// through a View from Open (guarded) and one from Open with SkipFaultGuard
// (not guarded), one key at a time (op=Test) and
// in batches of 1024 (op=TestMany), at keys half of them members. The two
// views take turns in rounds of 4096 keys within one benchmark, so that
// both see the same load of a shared machine; it reports each one's time
// per key and the median over rounds of the ratio guarded/unguarded, as
// the extra percent the guard costs (guard-%):
//
//	go test -run X -bench ViewFault -count 5
func BenchmarkViewFault(b *testing.B) {
	const queries = 1 << 16 // half members, half absent
	for _, n := range benchViewFaultSizes {
		f := mustNew(b, uint64(n), 0.01)
		chunk := make([][]byte, 0, 1<<16)
		for i := 0; i < n; i += cap(chunk) {
			chunk = chunk[:0]
			for j := i; j < min(n, i+cap(chunk)); j++ {
				chunk = append(chunk, keyOf(make([]byte, 16), 0, uint64(j)))
			}
			f.AddMany(chunk)
		}
		keys := make([][]byte, queries)
		for i := range keys {
			keys[i] = keyOf(make([]byte, 16), uint64(i%2), uint64(i/2)*7919%uint64(n))
		}
		path := filepath.Join(b.TempDir(), "f.bloom")
		if err := os.WriteFile(path, mustMarshal(b, f), 0o600); err != nil {
			b.Fatal(err)
		}
		guarded, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		plain, err := Open(path, SkipFaultGuard())
		if err != nil {
			b.Fatal(err)
		}
		if !guarded.guarded || plain.guarded {
			b.Fatal("the views are not what the benchmark compares")
		}
		for _, v := range []*View{guarded, plain} {
			v.FillRatio() // map every page, of both mappings, before timing
		}
		const round, batch = 4096, 1024
		results := make([]bool, batch)
		for _, op := range []string{"Test", "TestMany"} {
			// query answers the round of keys that starts at lo with v.
			query := func(v *View, lo int) (hits int) {
				ks := keys[lo : lo+round]
				if op == "TestMany" {
					for i := 0; i < round; i += batch {
						v.TestMany(ks[i:i+batch], results)
					}
					return 0
				}
				for _, k := range ks {
					if v.Test(k) {
						hits++
					}
				}
				return hits
			}
			b.Run(fmt.Sprintf("n=1e%d/op=%s", len(strconv.Itoa(n))-1, op), func(b *testing.B) {
				b.ReportAllocs()
				var on, off time.Duration
				var ratios []float64
				rounds := max(1, b.N/(2*round))
				for r := range rounds {
					lo := r * round % queries
					views := [2]*View{guarded, plain}
					if r%2 == 1 {
						views = [2]*View{plain, guarded} // each goes first half the time
					}
					var took [2]time.Duration
					for i, v := range views {
						t0 := time.Now()
						query(v, lo)
						took[i] = time.Since(t0)
					}
					if r%2 == 1 {
						took[0], took[1] = took[1], took[0]
					}
					on, off = on+took[0], off+took[1]
					ratios = append(ratios, float64(took[0])/float64(took[1]))
				}
				slices.Sort(ratios)
				keysEach := float64(rounds * round)
				b.ReportMetric(float64(on.Nanoseconds())/keysEach, "guarded-ns/key")
				b.ReportMetric(float64(off.Nanoseconds())/keysEach, "unguarded-ns/key")
				b.ReportMetric(100*(ratios[len(ratios)/2]-1), "guard-%")
			})
		}
		guarded.Close()
		plain.Close()
	}
}

var benchViewFaultSizes = []int{1e6, 1e7}
