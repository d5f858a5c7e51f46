package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bloomBin is the bloom binary that TestMain builds for the end-to-end tests.
var bloomBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv(peakRSSEnv); bin != "" {
		os.Exit(peakRSSHelper(bin)) // started again by peakRSS
	}
	dir, err := os.MkdirTemp("", "bloom-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bloomBin = filepath.Join(dir, "bloom")
	if runtime.GOOS == "windows" {
		bloomBin += ".exe"
	}
	args := []string{"build", "-o", bloomBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command(goTool(), append(args, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building bloom:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool returns the go command of the toolchain running the tests.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

type result struct {
	stdout, stderr string
	code           int
}

// runBloom runs the binary with args and stdin.
func runBloom(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bloomBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout.String(), stderr.String(), 0}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("bloom %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// want checks the exit code and, if wantOut is not nil, stdout.
func (r result) want(t *testing.T, code int, wantOut *string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if wantOut != nil && r.stdout != *wantOut {
		t.Errorf("stdout:\n%q\nwant\n%q", r.stdout, *wantOut)
	}
}

// wantError checks for exit status 2 and a one-line error on stderr that
// contains substr.
func (r result) wantError(t *testing.T, substr string) {
	t.Helper()
	if r.code != exitError {
		t.Errorf("exit status %d, want %d (stderr %q)", r.code, exitError, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr is not one line: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, substr) {
		t.Errorf("stderr %q does not contain %q", r.stderr, substr)
	}
}

func ptr(s string) *string { return &s }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
}

// noTempFiles fails if dir holds a leftover temporary file.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	r := runBloom(t, "")
	if r.code != exitError || !strings.Contains(r.stderr, "Usage: bloom COMMAND") {
		t.Errorf("no arguments: status %d, stderr %q; want 2 and the usage", r.code, r.stderr)
	}
	for _, h := range []string{"-h", "help", "--help"} {
		r := runBloom(t, "", h)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: bloom COMMAND") {
			t.Errorf("%s: status %d, stdout %q; want 0 and the usage", h, r.code, r.stdout)
		}
	}
	for _, c := range commands {
		t.Run(c.name+" -h", func(t *testing.T) {
			t.Parallel()
			r := runBloom(t, "", c.name, "-h")
			r.want(t, 0, nil)
			if !strings.HasPrefix(r.stdout, "Usage: bloom "+c.name) || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
		t.Run(c.name+" -no-such-flag", func(t *testing.T) {
			t.Parallel()
			runBloom(t, "", c.name, "-no-such-flag").wantError(t, "flag provided but not defined: -no-such-flag")
		})
	}
	runBloom(t, "", "frobnicate").wantError(t, `unknown command "frobnicate"`)
}

func TestDedup(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3<<20) // longer than any buffer
	for _, tc := range []struct {
		name, in, out string
	}{
		{"empty", "", ""},
		{"unique", "a\nb\nc\n", "a\nb\nc\n"},
		{"repeats", "a\nb\na\nc\nb\na\n", "a\nb\nc\n"},
		{"empty lines", "\n\na\n\n", "\na\n"},
		{"no final newline", "a\nb\nb", "a\nb\n"},
		{"final line new", "a\nb", "a\nb\n"},
		{"CRLF", "a\r\nb\r\na\r\n", "a\r\nb\r\n"},
		{"CRLF and LF are the same line", "a\r\na\nb\nb\r\n", "a\r\nb\n"},
		{"CR alone is part of the line", "a\rb\na\rb\na\n", "a\rb\na\n"},
		{"long lines", long + "\n" + long + "y\n" + long + "\n" + long + "y", long + "\n" + long + "y\n"},
		{"binary", "\x00\xff\n\x00\xff\n\x00\n", "\x00\xff\n\x00\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runBloom(t, tc.in, "dedup", "-q")
			r.want(t, 0, &tc.out)
			if r.stderr != "" {
				t.Errorf("stderr %q, want nothing (-q)", r.stderr)
			}
		})
	}
}

// TestDedupMany checks that no repeated line gets through and that almost
// no new line is dropped, across the growth of the filter.
func TestDedupMany(t *testing.T) {
	t.Parallel()
	var in, want strings.Builder
	const n = 50_000
	for i := range n {
		fmt.Fprintf(&in, "line %d\n", i)
		fmt.Fprintf(&want, "line %d\n", i)
		fmt.Fprintf(&in, "line %d\n", i/2) // a repeat
	}
	r := runBloom(t, in.String(), "dedup", "-capacity", "1000")
	r.want(t, 0, nil)
	got := strings.Split(r.stdout, "\n")
	seen := make(map[string]bool)
	for _, l := range got[:len(got)-1] {
		if seen[l] {
			t.Fatalf("line %q written twice", l)
		}
		seen[l] = true
	}
	// At the default error rate of 1e-6 the chance of dropping any of 50,000
	// lines is below 5%; of dropping two, negligible.
	if len(seen) < n-1 {
		t.Errorf("%d lines written, want %d", len(seen), n)
	}
}

func TestDedupState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "a\nb\na\n", "dedup", "-state", state).want(t, 0, ptr("a\nb\n"))
	runBloom(t, "b\nc\na\nd\n", "dedup", "-state", state).want(t, 0, ptr("c\nd\n"))
	// Flags only size a new state: a loaded one keeps its parameters.
	runBloom(t, "e\nd\n", "dedup", "-capacity", "5", "-state", state).want(t, 0, ptr("e\n"))
	noTempFiles(t, dir)

	r := runBloom(t, "", "info", state)
	r.want(t, 0, nil)
	for _, s := range []string{"scalable", "count:", "5 keys", "1e-06"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("info output lacks %q:\n%s", s, r.stdout)
		}
	}
	runBloom(t, "", "query", state, "a", "e", "z").want(t, exitAbsent, ptr("a\tpresent\ne\tpresent\nz\tabsent\n"))
}

// TestDedupBadInput checks that bad flags and bad state files are refused
// with one line and status 2, before any input is read or any file written.
func TestDedupBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "a\nb\n", "dedup", "-state", state).want(t, 0, nil)
	good := readFile(t, state)
	plain := filepath.Join(dir, "plain.bf")
	runBloom(t, "a\n", "build", "-capacity", "10", "-o", plain).want(t, 0, nil)
	garbage := filepath.Join(dir, "garbage")
	writeFile(t, garbage, "this is not a filter\n")
	truncated := filepath.Join(dir, "truncated.bf")
	writeFile(t, truncated, string(good[:len(good)/2]))
	flipped := filepath.Join(dir, "flipped.bf")
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 1
	writeFile(t, flipped, string(bad))
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "")
	notDir := filepath.Join(garbage, "seen.bf") // parent is a file

	for _, tc := range []struct {
		name  string
		args  []string
		error string
	}{
		{"capacity 0", []string{"-capacity", "0", "-state", state}, "-capacity must be at least 1"},
		{"capacity negative", []string{"-capacity", "-5"}, "invalid value"},
		{"capacity not a number", []string{"-capacity", "lots"}, "invalid value"},
		{"capacity huge", []string{"-capacity", "1000000000000000"}, "-capacity 1000000000000000 at -error-rate 1e-06: invalid parameter"},
		{"error rate 0", []string{"-error-rate", "0", "-state", state}, "-error-rate must be in (0, 1)"},
		{"error rate 1", []string{"-error-rate", "1"}, "-error-rate must be in (0, 1)"},
		{"error rate NaN", []string{"-error-rate", "NaN"}, "-error-rate must be in (0, 1)"},
		{"unknown flag", []string{"-state", state, "-x"}, "not defined: -x"},
		{"missing input file", []string{"-state", state, "extra"}, "extra: no such file"},
		{"input is a directory", []string{"-state", state, dir}, dir + ": is a directory"},
		{"garbage state", []string{"-state", garbage}, "not a filter file"},
		{"truncated state", []string{"-state", truncated}, "truncated"},
		{"corrupt state", []string{"-state", flipped}, "corrupt"},
		{"empty state", []string{"-state", empty}, "empty file"},
		{"plain filter as state", []string{"-state", plain}, "not a dedup state"},
		{"state is a directory", []string{"-state", dir}, "is a directory"},
		{"state under a file", []string{"-state", notDir}, "not a directory"},
		{"state in a missing directory", []string{"-state", filepath.Join(dir, "missing", "seen.bf")}, "cannot write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string][]byte{}
			for _, f := range []string{state, garbage, truncated, flipped, plain} {
				before[f] = readFile(t, f)
			}
			r := runBloom(t, "c\nd\n", append([]string{"dedup"}, tc.args...)...)
			r.wantError(t, tc.error)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			for f, b := range before {
				if !bytes.Equal(readFile(t, f), b) {
					t.Errorf("%s changed", f)
				}
			}
			noTempFiles(t, dir)
		})
	}
}

// TestDedupFailedSave makes the save fail and checks that the old state is
// intact and no temporary file is left. The save fails on the file size
// limit (ulimit -f), which binds root too: the state grows past it.
func TestDedupFailedSave(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("uses sh and RLIMIT_FSIZE")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "a\n", "dedup", "-capacity", "100", "-state", state).want(t, 0, nil)
	old := readFile(t, state)
	if len(old) > 16<<10 {
		t.Fatalf("state is %d bytes; the test needs a small one", len(old))
	}
	var in strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&in, "key %d\n", i)
	}
	// 64 blocks: 32 KiB for dash (512-byte blocks), 64 KiB for bash.
	cmd := exec.Command("sh", "-c", `ulimit -f 64 && exec "$0" "$@"`, bloomBin, "dedup", "-state", state)
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitError {
		t.Fatalf("dedup with a failing save: %v, want exit status 2 (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "saving state") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("stderr %q, want one line about saving state", stderr.String())
	}
	if !bytes.Equal(readFile(t, state), old) {
		t.Error("state file changed by a failed save")
	}
	noTempFiles(t, dir)
	runBloom(t, "", "query", state, "a").want(t, 0, ptr("a\tpresent\n"))
}

// startDedup starts dedup -state with pipes for stdin, stdout and stderr and
// returns after it has written its first line, when its signal handler is in
// place.
func startDedup(t *testing.T, state string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout, stderr *bufio.Reader) {
	t.Helper()
	cmd = exec.Command(bloomBin, "dedup", "-state", state)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	stdout, stderr = bufio.NewReader(out), bufio.NewReader(errOut)
	if _, err := io.WriteString(stdin, "first\n"); err != nil {
		t.Fatal(err)
	}
	if l, err := stdout.ReadString('\n'); l != "first\n" || err != nil {
		t.Fatalf("first line %q, %v", l, err)
	}
	return cmd, stdin, stdout, stderr
}

// TestDedupKilled kills dedup mid-stream and checks that the old state is
// untouched and still loads.
func TestDedupKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-state", state).want(t, 0, nil)
	old := readFile(t, state)

	cmd, stdin, _, _ := startDedup(t, state)
	for i := range 10_000 {
		fmt.Fprintf(stdin, "line %d\n", i)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !bytes.Equal(readFile(t, state), old) {
		t.Error("state file changed by a killed run")
	}
	runBloom(t, "", "query", state, "old", "first").want(t, exitAbsent, ptr("old\tpresent\nfirst\tabsent\n"))
	noTempFiles(t, dir)
}

// interruptDedup starts dedup -state on state, with its stdin an idle pipe
// after the line "first", sends it SIGINT, and after gap, if gap > 0, a
// second one. It returns dedup's stdout after "first" and its stderr once it
// has exited, within 10 seconds, and its exit status.
func interruptDedup(t *testing.T, state string, gap time.Duration) (stdout, stderr string, code int) {
	t.Helper()
	cmd, stdin, out, errOut := startDedup(t, state)
	defer stdin.Close() // stdin stays open, and idle, until the end
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if gap > 0 {
		time.Sleep(gap)
		cmd.Process.Signal(syscall.SIGINT)
	}
	exited := make(chan error, 1)
	var rest, msgs []byte
	go func() {
		rest, _ = io.ReadAll(out)
		msgs, _ = io.ReadAll(errOut)
		exited <- cmd.Wait()
	}()
	var err error
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("dedup still running 10 s after SIGINT while its input was idle")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("interrupted dedup: %v", err)
	}
	return string(rest), string(msgs), ee.ExitCode()
}

// TestDedupInterrupted interrupts dedup while it waits for input that does
// not come: it stops at once (it used to wait for the next line), saves what
// it has read, says so and exits with status 130.
func TestDedupInterrupted(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-state", state).want(t, 0, nil)

	rest, msgs, code := interruptDedup(t, state, 0)
	if code != exitInterrupted {
		t.Errorf("exit status %d, want %d (stderr %q)", code, exitInterrupted, msgs)
	}
	if rest != "" {
		t.Errorf("output after the interrupt %q, want nothing", rest)
	}
	for _, s := range []string{"interrupted", "1 line read, 1 written", "state saved in " + state} {
		if !strings.Contains(msgs, s) {
			t.Errorf("stderr %q lacks %q", msgs, s)
		}
	}
	runBloom(t, "", "query", state, "old", "first").want(t, 0, nil)
	noTempFiles(t, dir)
}

// TestDedupInterruptedTwice sends dedup two interrupts in a row: the second
// does not abandon the save (it used to quit without saving, so that the
// next run wrote "first" again).
func TestDedupInterruptedTwice(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-state", state).want(t, 0, nil)

	_, msgs, code := interruptDedup(t, state, 100*time.Millisecond)
	if code != exitInterrupted {
		t.Errorf("exit status %d, want %d (stderr %q)", code, exitInterrupted, msgs)
	}
	runBloom(t, "", "query", state, "old", "first").want(t, 0, nil)
	runBloom(t, "first\nsecond\n", "dedup", "-state", state).want(t, 0, ptr("second\n"))
	noTempFiles(t, dir)
}

func TestBuildQueryInfo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "words.txt")
	writeFile(t, input, "cat\ndog\r\nfox")
	out := filepath.Join(dir, "words.bf")
	r := runBloom(t, "", "build", "-q", "-capacity", "1000", "-error-rate", "0.001", "-o", out, input)
	r.want(t, 0, ptr(""))
	if r.stderr != "" {
		t.Errorf("stderr %q, want nothing (-q)", r.stderr)
	}
	noTempFiles(t, dir)

	runBloom(t, "", "query", out, "cat", "dog", "fox").want(t, 0, ptr("cat\tpresent\ndog\tpresent\nfox\tpresent\n"))
	runBloom(t, "", "query", out, "cat", "cow").want(t, exitAbsent, ptr("cat\tpresent\ncow\tabsent\n"))
	runBloom(t, "fox\r\nemu\n", "query", out).want(t, exitAbsent, ptr("fox\tpresent\nemu\tabsent\n"))
	runBloom(t, "dog", "query", out).want(t, 0, ptr("dog\tpresent\n"))
	runBloom(t, "", "query", out).want(t, 0, ptr(""))

	r = runBloom(t, "", "info", out)
	r.want(t, 0, nil)
	for _, s := range []string{"fixed-size", "hashes:", "10", "capacity:", "1,000 keys", "0.001", "count:", "3 keys",
		"estimated count:", "fill ratio:", "estimated error rate:"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("info output lacks %q:\n%s", s, r.stdout)
		}
	}

	// From stdin, replacing the file.
	runBloom(t, "emu\n", "build", "-capacity", "10", "-o", out).want(t, 0, nil)
	runBloom(t, "", "query", out, "emu", "cat").want(t, exitAbsent, ptr("emu\tpresent\ncat\tabsent\n"))

	// Over capacity: a warning, and the filter anyway.
	r = runBloom(t, "a\nb\nc\nd\n", "build", "-capacity", "2", "-o", filepath.Join(dir, "small.bf"))
	r.want(t, 0, nil)
	if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "-capacity 2") {
		t.Errorf("no over-capacity warning: %q", r.stderr)
	}
}

func TestBuildQueryInfoBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "f.bf")
	runBloom(t, "a\n", "build", "-capacity", "10", "-o", out).want(t, 0, nil)
	old := readFile(t, out)
	garbage := filepath.Join(dir, "garbage")
	writeFile(t, garbage, "BLMF but not really a filter"+strings.Repeat(".", 100))
	short := filepath.Join(dir, "short")
	writeFile(t, short, "BLMF but short")
	trailing := filepath.Join(dir, "trailing.bf")
	writeFile(t, trailing, string(old)+"x")

	for _, tc := range []struct {
		name  string
		args  []string
		error string
	}{
		{"build without -o", []string{"build", "-capacity", "10"}, "-o FILE is required"},
		{"build without -capacity", []string{"build", "-o", out}, "-capacity must be at least 1"},
		{"build capacity huge", []string{"build", "-capacity", "1000000000000000", "-error-rate", "1e-9", "-o", out}, "-capacity 1000000000000000 at -error-rate 1e-09: invalid parameter"},
		{"build error rate", []string{"build", "-capacity", "10", "-error-rate", "1.5", "-o", out}, "-error-rate must be in (0, 1)"},
		{"build missing input", []string{"build", "-capacity", "10", "-o", out, filepath.Join(dir, "nope")}, "no such file"},
		{"build two inputs", []string{"build", "-capacity", "10", "-o", out, "a", "b"}, `unexpected argument "b"`},
		{"build into a missing directory", []string{"build", "-capacity", "10", "-o", filepath.Join(dir, "no", "f.bf")}, "cannot write"},
		{"query without file", []string{"query"}, "missing argument"},
		{"query missing file", []string{"query", filepath.Join(dir, "nope"), "a"}, "no such file"},
		{"query garbage", []string{"query", garbage, "a"}, "corrupt"},
		{"query trailing data", []string{"query", trailing, "a"}, "unexpected data after the filter"},
		{"info without file", []string{"info"}, "missing argument"},
		{"info two files", []string{"info", out, out}, "unexpected argument"},
		{"info garbage", []string{"info", garbage}, "corrupt"},
		{"info short", []string{"info", short}, "truncated"},
		{"faceoff argument", []string{"faceoff", "x"}, `unexpected argument "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBloom(t, "b\n", tc.args...)
			r.wantError(t, tc.error)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if !bytes.Equal(readFile(t, out), old) {
				t.Errorf("%s changed", out)
			}
			noTempFiles(t, dir)
		})
	}
}

func TestFaceoff(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := faceoff(&out, []int{1000, 10_000}, 100_000); err != nil {
		t.Fatal(err)
	}
	if err := walkthrough(&out); err != nil {
		t.Fatal(err)
	}
	checkFaceoff(t, out.String(), "10,000")
	if testing.Short() || raceEnabled {
		return // the full run takes seconds, and far longer under the race detector
	}
	r := runBloom(t, "", "faceoff")
	r.want(t, 0, nil)
	checkFaceoff(t, r.stdout, "1,000,000")
}

func checkFaceoff(t *testing.T, out, largest string) {
	t.Helper()
	for _, s := range []string{largest, "map/filter", "measured", "theoretical",
		`add "cat"`, `add "dog"`, `add "fox"`, "probably present (it was added)",
		"definitely absent", "false positive"} {
		if !strings.Contains(out, s) {
			t.Errorf("faceoff output lacks %q:\n%s", s, out)
		}
	}
}

// pause is a reader that sleeps and then reports the end of its input.
type pause time.Duration

func (p pause) Read([]byte) (int, error) {
	time.Sleep(time.Duration(p))
	return 0, io.EOF
}

// TestProgress runs dedup and build in-process as if stderr were a
// terminal: the status line is drawn while they read, and replaced by the
// summary at the end.
func TestProgress(t *testing.T) {
	t.Parallel()
	var first, rest strings.Builder
	for i := range 100_000 {
		in := &rest
		if i < 10_000 {
			in = &first
		}
		fmt.Fprintf(in, "%d\n", i%70_000)
	}
	for _, args := range [][]string{
		{"dedup"},
		{"build", "-capacity", "100000", "-o", filepath.Join(t.TempDir(), "f.bf")},
	} {
		var stdout, stderr bytes.Buffer
		// A pause early on, so that the status line is due at 65,536 lines.
		in := io.MultiReader(strings.NewReader(first.String()), pause(300*time.Millisecond), strings.NewReader(rest.String()))
		e := &env{stdin: in, stdout: &stdout, stderr: &stderr, progress: true}
		if code := run(e, args); code != 0 {
			t.Fatalf("%s: exit status %d, stderr %q", args[0], code, stderr.String())
		}
		out := stderr.String()
		// The status line is drawn at the end of the batch that passes
		// 65,536 lines, before the last.
		status := regexp.MustCompile(`\r([0-9,]+) lines read`).FindStringSubmatch(out)
		if status == nil {
			t.Errorf("%s: no status line in %q", args[0], out)
		} else if n, _ := strconv.Atoi(strings.ReplaceAll(status[1], ",", "")); n < 65_536 || n >= 100_000 {
			t.Errorf("%s: status line at %d lines, want one between 65,536 and 100,000: %q", args[0], n, out)
		}
		want := "\r\x1b[Kbloom " + args[0] + ": 100,000 lines read"
		if args[0] == "dedup" {
			want += ", 70,000 written"
		}
		if i := strings.LastIndex(out, want); i < 0 || strings.Count(out[i:], "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: stderr %q does not end with one summary line %q...", args[0], out, want)
		}
	}
}

// TestStateSymlink checks that saving through a symbolic link replaces the
// file it points to and keeps the link.
func TestStateSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "real.bf")
	link := filepath.Join(dir, "link.bf")
	runBloom(t, "a\n", "dedup", "-state", target).want(t, 0, nil)
	if err := os.Symlink("real.bf", link); err != nil {
		t.Skip(err)
	}
	runBloom(t, "a\nb\n", "dedup", "-state", link).want(t, 0, ptr("b\n"))
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v, %v", fi, err)
	}
	runBloom(t, "", "query", target, "a", "b").want(t, 0, nil)
}
