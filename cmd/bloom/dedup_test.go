package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/bloomfilters/bloom"
)

// benchLines returns n 60-byte lines (59 characters and a newline), half of
// them repeats of earlier ones, like a crawler's URL stream.
func benchLines(n int) []byte {
	var b bytes.Buffer
	b.Grow(60 * n)
	for i := range n {
		k := uint64(i)
		if i%2 == 1 {
			k = uint64(i) * 0x9E3779B97F4A7C15 % uint64(i) // an earlier line
		}
		fmt.Fprintf(&b, "https://example.com/page/%016x%018d\n", k*0x9E3779B97F4A7C15, k)
	}
	return b.Bytes()
}

// BenchmarkDedup measures the dedup pipeline on 60-byte lines with the
// default parameters and filter: reading, hashing, the filter and buffered
// output. bench-dedup.sh runs the whole command on a file against awk. The filter is
// made anew for every pass over the same 2^21 lines, so its size does not
// depend on b.N. Besides lines/s by the wall clock it reports lines per
// second of process CPU time, which is steadier on a shared machine.
func BenchmarkDedup(b *testing.B) {
	const lines = 1 << 21
	input := benchLines(lines)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	var stop atomic.Bool
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f, err := dedupFilter("", dedupCapacity, dedupErrorRate, false, windowSpec{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := cpuTime()
		if _, err := dedup(bytes.NewReader(input), io.Discard, f, &stop, nil); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// nearlySaturatedState writes to path a dedup state whose next new line
// saturates it: three sub-filters of 1, 2 and 4 keys, all full, at error
// rates 1e-6 * (1 - r) * r^i with r = 1e-150, the last near 1e-306 (a few
// MB). The next sub-filter's rate, near 1e-456, is below the smallest
// float64, so the library cannot size it. It is made with the library
// because no flag of dedup saturates a filter within a test's memory since
// growth no longer stops at MaxHashes, and the library refuses growth that
// cannot build three sub-filters within MaxBits.
func nearlySaturatedState(t *testing.T, path string) {
	t.Helper()
	f, err := bloom.NewScalable(1, 1e-6, bloom.Exponential(2), bloom.Tightening(1e-150))
	if err != nil {
		t.Fatalf("the library refuses the growth this test saturates with: %v", err)
	}
	for i := 0; f.NumFilters() < 3 || f.Count() < f.Capacity(); i++ {
		f.Add(fmt.Appendf(nil, "old %d", i))
	}
	if f.NumFilters() != 3 || f.Saturated() {
		t.Fatalf("%d sub-filters, saturated %v; want 3, not saturated", f.NumFilters(), f.Saturated())
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestDedupSaturates runs dedup on a state that saturates at its first new
// line: dedup writes that line, stops reading, saves the state and fails
// with one line saying why and what to do. A later run on the saturated
// state fails at once, and query and info say that it is saturated.
func TestDedupSaturates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	nearlySaturatedState(t, state)

	r := runBloom(t, "old 6\nnew 0\nnew 1\nnew 2\n", "dedup", "-state", state)
	r.wantError(t, "saturated")
	for _, s := range []string{"error rate 1e-06", "stopped reading stdin after 2 lines", "saved in " + state, "-error-rate", "-capacity"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr %q lacks %q", r.stderr, s)
		}
	}
	if r.stdout != "new 0\n" {
		t.Errorf("stdout %q, want the line that saturated the filter and no other", r.stdout)
	}
	runBloom(t, "", "query", state, "old 6", "new 0").want(t, 0, nil) // saved

	saved := readFile(t, state)
	r = runBloom(t, "new 1\n", "dedup", "-state", state)
	r.wantError(t, state+": the filter is saturated")
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	if !bytes.Equal(readFile(t, state), saved) {
		t.Error("a refused run changed the state")
	}

	r = runBloom(t, "", "query", state, "new 0")
	r.want(t, 0, ptr("new 0\tpresent\n"))
	if !strings.Contains(r.stderr, "warning: "+state+" is saturated") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("query on a saturated filter: stderr %q, want a one-line warning", r.stderr)
	}
	r = runBloom(t, "", "info", state)
	r.want(t, 0, nil)
	if !strings.Contains(r.stdout, "saturated") {
		t.Errorf("info does not say the filter is saturated:\n%s", r.stdout)
	}
	noTempFiles(t, dir)
}

// TestDedupKeepsRateOrFails runs dedup at an error rate so low that the
// filter may saturate (on main as of issue 11 it stopped growing at
// MaxHashes after 11,333 lines and then dropped a third of the new lines
// with exit status 0). Whatever the library can do, dedup must either
// write every distinct line and succeed, or stop at saturation and fail
// with every line it read written and, with -state, saved.
func TestDedupKeepsRateOrFails(t *testing.T) {
	t.Parallel()
	const n = 50_000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	for _, withState := range []bool{false, true} {
		t.Run(fmt.Sprintf("state=%v", withState), func(t *testing.T) {
			t.Parallel()
			args := []string{"dedup", "-capacity", "100", "-error-rate", "1e-18"}
			state := filepath.Join(t.TempDir(), "seen.bf")
			if withState {
				args = append(args, "-state", state)
			}
			r := runBloom(t, in.String(), args...)
			if r.code == 0 {
				if r.stdout != in.String() {
					t.Fatalf("exit status 0 with %d of %d lines written", strings.Count(r.stdout, "\n"), n)
				}
				return
			}
			r.wantError(t, "the filter is saturated")
			if !strings.HasPrefix(in.String(), r.stdout) || !strings.HasSuffix(r.stdout, "\n") {
				t.Fatalf("saturated after %d lines, but they are not the first lines of the input", strings.Count(r.stdout, "\n"))
			}
			t.Logf("%d lines, then: %s", strings.Count(r.stdout, "\n"), r.stderr)
			if withState {
				runBloom(t, r.stdout, "query", state).want(t, 0, nil)
			}
		})
	}
}

// BenchmarkDedupLarge is BenchmarkDedup on 10^7 lines, 5*10^6 of them
// distinct: a filter grown from 2^20 to 5*10^6 keys, of about 20 MiB, larger
// than the caches. One pass takes seconds: run it with -benchtime 1x.
func BenchmarkDedupLarge(b *testing.B) {
	const lines = 10_000_000
	input := benchLines(lines)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	var stop atomic.Bool
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f, err := dedupFilter("", dedupCapacity, dedupErrorRate, false, windowSpec{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := cpuTime()
		n, err := dedup(bytes.NewReader(input), io.Discard, f, &stop, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n.read != lines {
			b.Fatalf("read %d lines, want %d", n.read, lines)
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// TestDedupBatches checks dedup against a map on more lines than a batch,
// with repeats within and across batches (a line and its repeat in one Read
// too), read whole, one byte at a time (when every batch holds at most one
// line) and in reads of a few lines, on a scalable filter that grows many
// times within the input (so that batches are cut where it grows) and on a
// window larger than the input.
func TestDedupBatches(t *testing.T) {
	const lines = 3 * batchBytes / 8
	var in, want bytes.Buffer
	seen := make(map[string]bool)
	for i := range lines {
		line := fmt.Sprintf("l%d\n", i*7919%(lines/2))
		if i%10 == 3 {
			line = fmt.Sprintf("l%d\n", (i-1)*7919%(lines/2)) // the line before
		}
		in.WriteString(line)
		if !seen[line] {
			seen[line] = true
			want.WriteString(line)
		}
	}
	for _, read := range []string{"whole", "one byte", "half a batch"} {
		for _, kind := range []string{"scalable", "window"} {
			var f dedupSet
			var err error
			if kind == "scalable" {
				f, err = bloom.NewScalable(100, 1e-9)
			} else {
				f, err = bloom.NewWindow(10*lines, 1e-9)
			}
			if err != nil {
				t.Fatal(err)
			}
			var r io.Reader = bytes.NewReader(in.Bytes())
			switch read {
			case "one byte":
				r = iotest.OneByteReader(r)
			case "half a batch":
				r = iotest.HalfReader(r)
			}
			var out bytes.Buffer
			var stop atomic.Bool
			n, err := dedup(r, &out, f, &stop, nil)
			if err != nil || n.read != lines || n.written != uint64(len(seen)) || !bytes.Equal(out.Bytes(), want.Bytes()) {
				t.Errorf("%s, %s: %+v, %v; output equal: %v", read, kind, n, err, bytes.Equal(out.Bytes(), want.Bytes()))
			}
			if s, ok := f.(*bloom.ScalableBloomFilter); ok && s.NumFilters() < 5 {
				t.Errorf("%s: the filter grew to %d sub-filters, want at least 5", read, s.NumFilters())
			}
		}
	}
}

// TestDedupClassic checks -classic: a new state in the classic layout, as
// info reports it, with the same output as the default blocked one; a state
// made without it is blocked; -classic with -window is refused.
func TestDedupClassic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := "a\nb\na\nc\nb\n"
	for _, tc := range []struct {
		args   []string
		layout string
	}{{nil, "blocked"}, {[]string{"-classic"}, "classic"}} {
		state := filepath.Join(dir, tc.layout+".bf")
		runBloom(t, in, append(append([]string{"dedup", "-q"}, tc.args...), "-state", state)...).want(t, 0, ptr("a\nb\nc\n"))
		r := runBloom(t, "", "info", "-json", state)
		r.want(t, 0, nil)
		if !strings.Contains(r.stdout, `"layout": "`+tc.layout+`"`) {
			t.Errorf("dedup %v: info says\n%s\nwant layout %s", tc.args, r.stdout, tc.layout)
		}
	}
	runBloom(t, in, "dedup", "-classic", "-window", "10").wantError(t, "-classic does not apply to -window")
}
