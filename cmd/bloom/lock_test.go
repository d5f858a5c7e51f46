package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDedupLockHeld runs a second dedup on a state that a first one is
// using: the second fails at once with one line naming the state, writes
// nothing and leaves the state alone; once the first has finished, the state
// holds its lines and the next run goes ahead.
func TestDedupLockHeld(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skip("no file locks on this system")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-state", state).want(t, 0, nil)
	old := readFile(t, state)

	cmd, stdin, stdout, _ := startDedup(t, state) // holds the lock while it waits for input
	paths := []string{state}
	if link := filepath.Join(dir, "link.bf"); os.Symlink("seen.bf", link) == nil {
		paths = append(paths, link) // another name, the same lock
	}
	for _, path := range paths {
		start := time.Now()
		r := runBloom(t, "a\nb\n", "dedup", "-state", path)
		r.wantError(t, "in use by another bloom run")
		if !strings.Contains(r.stderr, state) {
			t.Errorf("stderr %q does not name %s", r.stderr, state)
		}
		if r.stdout != "" {
			t.Errorf("stdout %q, want nothing", r.stdout)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the refused run took %v: it waited for the lock", d)
		}
	}
	if !bytes.Equal(readFile(t, state), old) {
		t.Error("state changed by a refused run")
	}

	io.WriteString(stdin, "second\nold\n")
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if string(rest) != "second\n" {
		t.Errorf("first run wrote %q after its first line, want %q", rest, "second\n")
	}
	runBloom(t, "a\nfirst\nsecond\nold\n", "dedup", "-state", state).want(t, 0, ptr("a\n"))
	noTempFiles(t, dir)
}

// TestDedupConcurrentRuns starts several dedup runs on one state at once,
// each with lines of its own, and checks that no run that succeeds loses
// its lines: each either fails because the state is in use, or has all its
// lines in the state afterwards. Without a lock every run loads the same
// old state and the last to save wins.
func TestDedupConcurrentRuns(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skip("no file locks on this system")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-state", state).want(t, 0, nil)

	const runs, lines = 4, 3000
	type run struct {
		cmd            *exec.Cmd
		in             string
		stdin          io.WriteCloser
		stdout, stderr bytes.Buffer
	}
	rs := make([]*run, runs)
	for i := range rs {
		r := &run{cmd: exec.Command(bloomBin, "dedup", "-state", state)}
		var in strings.Builder
		for j := range lines {
			fmt.Fprintf(&in, "run %d line %d\n", i, j)
		}
		r.in = in.String()
		var err error
		if r.stdin, err = r.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.cmd.Process.Kill() })
		rs[i] = r
	}
	// Let every run load the state before any reads its input.
	time.Sleep(300 * time.Millisecond)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.WriteString(r.stdin, r.in) // fails if the run has given up
			r.stdin.Close()
		}()
	}
	wg.Wait()
	succeeded := 0
	for i, r := range rs {
		err := r.cmd.Wait()
		if err == nil {
			succeeded++
			if r.stdout.String() != r.in {
				t.Errorf("run %d: wrote %d bytes, want all %d of its input", i, r.stdout.Len(), len(r.in))
			}
			q := runBloom(t, r.in, "query", state)
			if q.code != 0 {
				t.Errorf("run %d succeeded but %d of its %d lines are absent from the state",
					i, strings.Count(q.stdout, "\tabsent\n"), lines)
			}
			continue
		}
		if !strings.Contains(r.stderr.String(), "in use by another bloom run") || strings.Count(r.stderr.String(), "\n") != 1 {
			t.Errorf("run %d: %v, stderr %q; want success or one line saying the state is in use", i, err, r.stderr.String())
		}
		if r.stdout.Len() != 0 {
			t.Errorf("run %d failed but wrote %d bytes", i, r.stdout.Len())
		}
	}
	if succeeded == 0 {
		t.Error("no run succeeded")
	}
	runBloom(t, "", "query", state, "old").want(t, 0, nil)
	noTempFiles(t, dir)
}
