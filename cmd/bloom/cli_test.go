package main

// End-to-end tests of the command line's edges (issue 13): each runs the
// binary as a user would.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBuildToStdout checks that build -o - writes the filter to stdout, not
// to a file named "-".
func TestBuildToStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bloomBin, "build", "-capacity", "10", "-o", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("a\nb\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build -o -: %v", err)
	}
	if fileExists(filepath.Join(dir, "-")) {
		t.Error(`build -o - created a file named "-"`)
	}
	f := filepath.Join(dir, "f.bf")
	writeFile(t, f, string(out))
	runBloom(t, "", "query", f, "a", "b", "c").want(t, exitAbsent, ptr("a\tpresent\nb\tpresent\nc\tabsent\n"))

	// Not to a terminal, in-process as if stdout were one.
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader("a\n"), stdout: &stdout, stderr: &stderr, stdoutTerminal: true}
	if code := run(e, []string{"build", "-capacity", "10", "-o", "-"}); code != exitError || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "would write a binary filter to the terminal") {
		t.Errorf("build -o - to a terminal: status %d, %d bytes written, stderr %q", code, stdout.Len(), stderr.String())
	}
}

// TestQueryDashDash checks that a "--" after FILE is not a key.
func TestQueryDashDash(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "f.bf")
	runBloom(t, "-x\n", "build", "-capacity", "10", "-o", f).want(t, 0, nil)
	runBloom(t, "", "query", f, "--", "-x").want(t, 0, ptr("-x\tpresent\n"))
	runBloom(t, "", "query", f, "--", "--").want(t, exitAbsent, ptr("--\tabsent\n"))
	runBloom(t, "", "query", "--", f, "-x").want(t, 0, ptr("-x\tpresent\n"))
}

// TestDedupFiles checks that dedup reads its file arguments one after
// another, "-" being stdin, and that a file's last line ends with the file.
func TestDedupFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeFile(t, a, "1\n2\n1")   // no final newline
	writeFile(t, b, "3\r\n2\n4") // nor here
	r := runBloom(t, "5\n1\n", "dedup", "-q", a, "-", b, a)
	r.want(t, 0, ptr("1\n2\n5\n3\r\n4\n"))

	// A missing file fails before any line is read.
	state := filepath.Join(dir, "seen.bf")
	r = runBloom(t, "x\n", "dedup", "-state", state, a, filepath.Join(dir, "nope"))
	r.wantError(t, "no such file")
	if r.stdout != "" || fileExists(state) {
		t.Errorf("stdout %q, state made: %v; want neither", r.stdout, fileExists(state))
	}
}

// TestBuildIntoDirectory checks that build -o DIR fails before it reads
// its input: stdin here is a pipe that stays open.
func TestBuildIntoDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bloomBin, "build", "-capacity", "10", "-o", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatal("build -o DIR still reading its input after 10 s")
	}
	r := result{"", stderr.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	}
	r.wantError(t, "is a directory")
}

// TestTooLarge checks that a filter larger than the machine's memory is
// refused with one line before it is allocated, not with the runtime's
// out-of-memory crash: build's filter, and dedup's first sub-filter. Both
// are about 100 GiB, below MaxBits.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	have, _, ok := memoryLimit()
	for _, tc := range []struct {
		args []string
		need uint64 // bytes
		want string
	}{
		{[]string{"build", "-capacity", "110000000000", "-o", filepath.Join(t.TempDir(), "f.bf")}, 123 << 30,
			"-capacity 110000000000 at -error-rate 0.01 needs a filter of 127 GiB"},
		{[]string{"dedup", "-capacity", "25000000000"}, 98 << 30,
			"-capacity 25000000000 at -error-rate 1e-06 needs a filter of 97.6 GiB"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			if !ok || have >= tc.need {
				t.Skipf("memory %d bytes (known: %v): the filter fits", have, ok)
			}
			cmd := exec.Command(bloomBin, tc.args...)
			if runtime.GOOS == "linux" && !raceEnabled {
				// Should the check fail, the allocation fails at once too.
				cmd = exec.Command("sh", append([]string{"-c", `ulimit -v 16000000 && exec "$0" "$@"`, bloomBin}, tc.args...)...)
			}
			cmd.Stdin = strings.NewReader("a\n")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			r := result{"", stderr.String(), 0}
			if ee, ok := err.(*exec.ExitError); ok {
				r.code = ee.ExitCode()
			}
			r.wantError(t, tc.want)
			if !strings.Contains(r.stderr, "memory of") {
				t.Errorf("stderr %q does not say how much memory there is", r.stderr)
			}
		})
	}
}

// TestCapacityNotation checks that -capacity takes 1e3 for 1000 and refuses
// what is not a whole number.
func TestCapacityNotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.bf"), filepath.Join(dir, "b.bf")
	runBloom(t, "x\n", "build", "-capacity", "1e3", "-o", a).want(t, 0, nil)
	runBloom(t, "x\n", "build", "-capacity", "1000", "-o", b).want(t, 0, nil)
	if !bytes.Equal(readFile(t, a), readFile(t, b)) {
		t.Error("-capacity 1e3 and -capacity 1000 build different filters")
	}
	runBloom(t, "", "build", "-capacity", "1.5", "-o", a).wantError(t, `invalid value "1.5" for flag -capacity`)
	runBloom(t, "", "dedup", "-capacity", "1e-3").wantError(t, `invalid value "1e-3" for flag -capacity`)
}

// lines returns n distinct lines.
func lines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key %d\n", i)
	}
	return b.String()
}

// numberBefore returns the number, with thousands separators, that ends
// just before suffix in s.
func numberBefore(t *testing.T, s, suffix string) uint64 {
	t.Helper()
	i := strings.Index(s, suffix)
	if i < 0 {
		t.Fatalf("%q lacks %q", s, suffix)
	}
	j := strings.LastIndexByte(s[:i], ' ') + 1
	n, err := strconv.ParseUint(strings.ReplaceAll(s[j:i], ",", ""), 10, 64)
	if err != nil {
		t.Fatalf("%q: no number before %q: %v", s, suffix, err)
	}
	return n
}

// TestOverCapacity checks what build and info say of filters over their
// capacity: the number of distinct keys estimated from the fill, not Count,
// which stalls once most keys find their bits set; and for a filter with
// every bit set, no number that pretends to be an estimate.
func TestOverCapacity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	over := filepath.Join(dir, "over.bf")
	r := runBloom(t, lines(5000), "build", "-capacity", "1000", "-o", over)
	r.want(t, 0, nil)
	if n := numberBefore(t, r.stderr, " distinct keys exceed -capacity 1,000"); n < 4500 || n > 5500 {
		t.Errorf("warning says %d distinct keys for 5,000: %q", n, r.stderr)
	}
	r = runBloom(t, "", "info", over)
	if n := numberBefore(t, r.stdout, " keys\nfill ratio"); n < 4500 || n > 5500 {
		t.Errorf("info estimates %d keys for 5,000:\n%s", n, r.stdout)
	}

	full := filepath.Join(dir, "full.bf")
	r = runBloom(t, lines(170_421), "build", "-capacity", "1000", "-o", full)
	r.want(t, 0, nil)
	if !strings.Contains(r.stderr, "warning: every bit is set") {
		t.Errorf("build of a filter with every bit set: stderr %q", r.stderr)
	}
	r = runBloom(t, "", "info", full)
	r.want(t, 0, nil)
	if strings.Contains(r.stdout, "18,446,744,073,709,551,615") || !strings.Contains(r.stdout, "estimated count:       unknown: every bit is set") {
		t.Errorf("info of a filter with every bit set:\n%s", r.stdout)
	}
}

// TestSummary checks that dedup and build print one summary line on stderr
// when it is not a terminal, and nothing with -q.
func TestSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state, out := filepath.Join(dir, "seen.bf"), filepath.Join(dir, "f.bf")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"dedup", "-state", state}, []string{"bloom dedup: 3 lines read, 2 written; the filter holds about 2 distinct lines in ", " MiB; state saved in " + state + "\n"}},
		{[]string{"build", "-capacity", "1000", "-o", out}, []string{"bloom build: 3 lines read; the filter holds about 2 distinct keys in 1.25 KiB, written to " + out + "\n"}},
	} {
		r := runBloom(t, "a\nb\na\n", tc.args...)
		r.want(t, 0, nil)
		for _, s := range tc.want {
			if !strings.Contains(r.stderr, s) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%s: stderr %q, want one line with %q", tc.args[0], r.stderr, s)
			}
		}
		r = runBloom(t, "a\nb\na\n", append([]string{tc.args[0], "-q"}, tc.args[1:]...)...)
		r.want(t, 0, nil)
		if r.stderr != "" {
			t.Errorf("%s -q: stderr %q, want nothing", tc.args[0], r.stderr)
		}
	}
}

// TestVersion checks bloom version and bloom -version.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "-version", "--version"} {
		r := runBloom(t, "", arg)
		r.want(t, 0, nil)
		if !strings.HasPrefix(r.stdout, "bloom ") || !strings.Contains(r.stdout, "github.com/bloomfilters/bloom") ||
			!strings.Contains(r.stdout, runtime.Version()) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%s: %q", arg, r.stdout)
		}
	}
}

// TestInfoJSON checks info -json on both kinds of filter.
func TestInfoJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain, scalable := filepath.Join(dir, "plain.bf"), filepath.Join(dir, "seen.bf")
	runBloom(t, "a\nb\nc\n", "build", "-capacity", "1000", "-error-rate", "0.001", "-o", plain).want(t, 0, nil)
	runBloom(t, "a\nb\nc\n", "dedup", "-q", "-state", scalable).want(t, 0, nil)
	fields := []string{"file", "file_bytes", "kind", "bits", "bytes", "hashes", "seed", "capacity", "initial_capacity",
		"error_rate", "count", "estimated_count", "fill_ratio", "estimated_error_rate", "sub_filters", "saturated"}
	for _, tc := range []struct {
		file string
		want map[string]any // float64 for numbers, nil for null
	}{
		{plain, map[string]any{"kind": "fixed", "hashes": 10.0, "capacity": 1000.0, "error_rate": 0.001, "count": 3.0,
			"estimated_count": 3.0, "sub_filters": nil, "initial_capacity": nil, "saturated": false, "seed": float64(0x5bd1e995)}},
		{scalable, map[string]any{"kind": "scalable", "hashes": nil, "initial_capacity": float64(dedupCapacity),
			"error_rate": 1e-6, "count": 3.0, "estimated_count": 3.0, "sub_filters": 1.0, "saturated": false}},
	} {
		r := runBloom(t, "", "info", "-json", tc.file)
		r.want(t, 0, nil)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("info -json %s: %v\n%s", tc.file, err, r.stdout)
		}
		for _, f := range fields {
			if _, ok := got[f]; !ok {
				t.Errorf("%s: no field %q", tc.file, f)
			}
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s is %v, want %v", tc.file, k, got[k], v)
			}
		}
		st, err := os.Stat(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if got["file"] != tc.file || got["file_bytes"] != float64(st.Size()) || got["bytes"].(float64)*8 < got["bits"].(float64) {
			t.Errorf("%s: file %v, file_bytes %v, bits %v, bytes %v", tc.file, got["file"], got["file_bytes"], got["bits"], got["bytes"])
		}
	}
}

// TestUsageLineHasEveryFlag checks that the usage line of each command's -h
// names every flag the command takes (dedup's left out -window and
// -overflow).
func TestUsageLineHasEveryFlag(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		r := runBloom(t, "", c.name, "-h")
		r.want(t, 0, nil)
		usage, _, _ := strings.Cut(r.stdout, "\n")
		if !strings.HasPrefix(usage, "Usage: bloom "+c.name) {
			t.Fatalf("%s -h starts %q", c.name, usage)
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			name, ok := strings.CutPrefix(line, "  -")
			if !ok {
				continue
			}
			name, _, _ = strings.Cut(name, " ")
			name, _, _ = strings.Cut(name, "\t")
			if !strings.Contains(usage, "-"+name+" ") && !strings.Contains(usage, "-"+name+"]") {
				t.Errorf("%s: the usage line %q leaves out -%s", c.name, usage, name)
			}
		}
	}
}
