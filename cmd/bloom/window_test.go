package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// lineRange returns the lines prefix+i for i in [lo, hi), each ended.
func lineRange(prefix string, lo, hi int) string {
	var b strings.Builder
	for i := lo; i < hi; i++ {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

// TestDedupWindowCount checks -window N: a line repeated within the window
// is dropped, one repeated long after (more than r*ceil(N/(r-1)) new lines,
// at most 2N) is written again.
func TestDedupWindowCount(t *testing.T) {
	t.Parallel()
	in := lineRange("u", 0, 1000) + lineRange("u", 950, 1000) + lineRange("u", 0, 500)
	want := lineRange("u", 0, 1000) + lineRange("u", 0, 500)
	runBloom(t, in, "dedup", "-q", "-window", "100").want(t, 0, &want)
	runBloom(t, "", "dedup", "-window", "0").want(t, exitError, nil)
	runBloom(t, "", "dedup", "-window", "soon").want(t, exitError, nil)
}

// TestDedupWindowState checks -window DURATION with -state: the state is a
// window that later runs go on with, and it keeps the times of its
// generations, so lines age out between runs by the real clock.
func TestDedupWindowState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "week.bf")
	runBloom(t, "a\nb\n", "dedup", "-q", "-window", "7d", "-capacity", "1000", "-state", state).want(t, 0, ptr("a\nb\n"))
	runBloom(t, "a\nb\nc\n", "dedup", "-q", "-state", state).want(t, 0, ptr("c\n"))
	// info and query read a window state too.
	if r := runBloom(t, "", "info", state); r.code != 0 || !strings.Contains(r.stdout, "window filter") || !strings.Contains(r.stdout, "168h0m0s") {
		t.Errorf("info of a window state: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runBloom(t, "", "query", state, "a", "zz").want(t, exitAbsent, ptr("a\tpresent\nzz\tabsent\n"))
	// A scalable state refuses -window.
	scal := filepath.Join(dir, "all.bf")
	runBloom(t, "a\n", "dedup", "-q", "-state", scal).want(t, 0, nil)
	runBloom(t, "a\n", "dedup", "-q", "-window", "10", "-state", scal).want(t, exitError, nil)

	// A state whose line "old" was added 9 days ago (a window made with a
	// clock then; 8 generations of a day, so forgotten after at most 8
	// days): it is written again now.
	then := time.Now().Add(-9 * 24 * time.Hour)
	w, err := bloom.NewWindow(1000, 0.001, bloom.Every(7*24*time.Hour), bloom.Generations(8), bloom.Clock(func() time.Time { return then }))
	if err != nil {
		t.Fatal(err)
	}
	w.AddString("old")
	then = then.Add(7 * 24 * time.Hour) // two days ago
	w.AddString("recent")
	data, _ := w.MarshalBinary()
	aged := filepath.Join(dir, "aged.bf")
	writeFile(t, aged, string(data))
	runBloom(t, "old\nrecent\nnew\n", "dedup", "-q", "-state", aged).want(t, 0, ptr("old\nnew\n"))
}

// TestDedupWindowKilled kills a -window run with SIGKILL in the middle of
// its input: the state it started from is whole, and the next run goes on
// from it.
func TestDedupWindowKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "w.bf")
	runBloom(t, "before\n", "dedup", "-q", "-window", "1e5", "-state", state).want(t, 0, nil)
	old := readFile(t, state)
	cmd := exec.Command(bloomBin, "dedup", "-q", "-window", "1e5", "-state", state)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "during\n")
	if l, err := bufio.NewReader(out).ReadString('\n'); l != "during\n" || err != nil {
		t.Fatalf("first line %q, %v", l, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := readFile(t, state); string(got) != string(old) {
		t.Fatal("state changed by a run killed mid-window")
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
	runBloom(t, "before\nduring\n", "dedup", "-q", "-state", state).want(t, 0, ptr("during\n"))
}

// TestDedupWindowGrow checks -overflow grow: 20 times -capacity lines within
// the hour, each then repeated, in one run: every repeat is dropped (no line
// is written twice), where -overflow rotate forgets early and writes
// repeats again; few new lines are dropped (the error rate is kept); the
// state round-trips, keeps its policy, and refuses another -overflow.
func TestDedupWindowGrow(t *testing.T) {
	t.Parallel()
	const n = 2000
	in := lineRange("e", 0, n) + lineRange("e", 0, n)
	written := func(out string) (lines int, repeated bool) {
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			repeated = repeated || seen[l]
			seen[l] = true
		}
		return len(seen), repeated
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "hour.bf")
	r := runBloom(t, in, "dedup", "-q", "-window", "1h", "-capacity", "100", "-error-rate", "0.01", "-overflow", "grow", "-state", state)
	lines, repeated := written(r.stdout)
	if r.code != 0 || repeated || lines < n*97/100 {
		t.Fatalf("-overflow grow: status %d, %d distinct lines written of %d, a line repeated: %v\n%s", r.code, lines, n, repeated, r.stderr)
	}
	rot := runBloom(t, in, "dedup", "-q", "-window", "1h", "-capacity", "100", "-error-rate", "0.01", "-overflow", "rotate")
	if _, repeated := written(rot.stdout); rot.code != 0 || !repeated {
		t.Fatalf("-overflow rotate: status %d, no line repeated: the burst did not overflow", rot.code)
	}
	// The state holds a window under Grow with its extensions: a second
	// run writes none of the lines again, only a new one.
	w, err := bloom.ReadWindow(strings.NewReader(string(readFile(t, state))))
	if err != nil || w.Overflow() != bloom.Grow || w.Extensions() == 0 {
		t.Fatalf("state: %v, policy %v, %d extensions", err, w.Overflow(), w.Extensions())
	}
	runBloom(t, lineRange("e", 0, n)+"new\n", "dedup", "-q", "-state", state).want(t, 0, ptr("new\n"))
	if r := runBloom(t, "", "info", state); r.code != 0 || !strings.Contains(r.stdout, "grow (") {
		t.Errorf("info of a Grow window: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var js struct {
		WindowSeconds float64 `json:"window_seconds"`
		RetainedAfter string  `json:"retained_after"`
		Overflow      string  `json:"overflow"`
		Extensions    int     `json:"extensions"`
	}
	r = runBloom(t, "", "info", "-json", state)
	if err := json.Unmarshal([]byte(r.stdout), &js); r.code != 0 || err != nil ||
		js.WindowSeconds != 3600 || js.Overflow != "grow" || js.Extensions == 0 || js.RetainedAfter == "" {
		t.Errorf("info -json of a Grow window: status %d, %v, %+v\n%s", r.code, err, js, r.stdout)
	}
	runBloom(t, "x\n", "dedup", "-q", "-window", "1h", "-overflow", "saturate", "-state", state).want(t, exitError, nil)
	runBloom(t, "", "dedup", "-window", "1h", "-overflow", "more").want(t, exitError, nil)
	runBloom(t, "", "dedup", "-window", "100", "-overflow", "grow").want(t, exitError, nil)
	runBloom(t, "", "dedup", "-overflow", "grow").want(t, exitError, nil)
}

// TestDedupWindowSemantics runs the binary with -window, first-seen and
// with -refresh (last-seen): a line that comes back after every 10 new
// lines, in a window of 100 lines, is written again once it has left the
// window (first-seen: 1,000 new lines write it 8 to 10 times), and with
// -refresh only once. Before dedup was first-seen it was written once
// either way, against its -h text. A burst in a time window writes one
// warning line on stderr, with -q too; -refresh needs a window; a
// duration past bloom.MaxEvery is refused before anything is made (it
// used to save a state that later runs refused).
func TestDedupWindowSemantics(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "new-%d\n", i)
		if i%10 == 9 {
			in.WriteString("again\n")
		}
	}
	count := func(out, line string) int { return strings.Count("\n"+out, "\n"+line+"\n") }
	first := runBloom(t, in.String(), "dedup", "-q", "-window", "100")
	if n := count(first.stdout, "again"); first.code != 0 || n < 8 || n > 10 || count(first.stdout, "new-5") != 1 {
		t.Errorf("first-seen: status %d, the recurring line written %d times, want 8 to 10\n%s", first.code, n, first.stderr)
	}
	last := runBloom(t, in.String(), "dedup", "-q", "-window", "100", "-refresh")
	if n := count(last.stdout, "again"); last.code != 0 || n != 1 {
		t.Errorf("-refresh: status %d, the recurring line written %d times, want once\n%s", last.code, n, last.stderr)
	}
	// The same with a state, across runs.
	dir := t.TempDir()
	state := filepath.Join(dir, "w.bf")
	runBloom(t, "again\n", "dedup", "-q", "-window", "100", "-state", state).want(t, 0, ptr("again\n"))
	runBloom(t, lineRange("a", 0, 95)+"again\n", "dedup", "-q", "-refresh", "-state", state).want(t, 0, ptr(lineRange("a", 0, 95)))
	runBloom(t, lineRange("b", 0, 95)+"again\n", "dedup", "-q", "-state", state).want(t, 0, ptr(lineRange("b", 0, 95)))
	// Refreshed 95 lines ago: still there after 95 more; without the
	// refresh it would have been 190 lines back.
	runBloom(t, lineRange("c", 0, 10)+"again\n", "dedup", "-q", "-state", state).want(t, 0, ptr(lineRange("c", 0, 10)))

	// A burst: 20 times -capacity lines within the hour, one warning.
	for _, q := range []string{"-q", "-error-rate=0.01"} {
		r := runBloom(t, lineRange("e", 0, 2000), "dedup", q, "-window", "1h", "-capacity", "100")
		if r.code != 0 || strings.Count(r.stderr, "warning") != 1 || !strings.Contains(r.stderr, "forgets early") {
			t.Errorf("a burst (%s): status %d, stderr %q, want one warning", q, r.code, r.stderr)
		}
	}
	if r := runBloom(t, lineRange("e", 0, 5), "dedup", "-q", "-window", "1h", "-capacity", "100"); r.stderr != "" {
		t.Errorf("no burst: stderr %q", r.stderr)
	}

	runBloom(t, "x\n", "dedup", "-refresh").wantError(t, "-refresh needs a window")
	for _, d := range []string{"2562047h47m16.854775807s", "60000d", "320256h"} {
		r := runBloom(t, "x\n", "dedup", "-window", d, "-state", filepath.Join(dir, "huge.bf"))
		r.wantError(t, "at most")
		if fileExists(filepath.Join(dir, "huge.bf")) {
			t.Errorf("-window %s: a state was saved", d)
		}
	}
	runBloom(t, "x\n", "dedup", "-q", "-window", "320255h", "-state", filepath.Join(dir, "long.bf")).want(t, 0, ptr("x\n"))
	runBloom(t, "x\ny\n", "dedup", "-q", "-state", filepath.Join(dir, "long.bf")).want(t, 0, ptr("y\n"))
}
