package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadPID returns the process ID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(bloomBin, "-h")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestStaleTempsRemoved plants temporary files next to a dedup state and a
// build output, as runs killed while saving leave them, and checks that the
// next run, which holds the lock of the state or output, removes every one of
// its own naming, whatever process ID it names (a live one included: a zombie
// or a process of another container keeps its ID), and no other file.
func TestStaleTempsRemoved(t *testing.T) {
	t.Parallel()
	dead := deadPID(t)
	live := os.Getpid()
	hourAgo := time.Now().Add(-2 * time.Hour)
	for _, tc := range []struct {
		name string
		args func(path string) []string
	}{
		{"dedup", func(path string) []string { return []string{"dedup", "-state", path} }},
		{"build", func(path string) []string { return []string{"build", "-capacity", "10", "-o", path} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "seen.bf")
			runBloom(t, "a\n", tc.args(path)...).want(t, 0, nil)
			temp := func(rest string) string { return ".seen.bf.tmp-" + rest }
			files := []struct {
				name   string
				old    bool // modified two hours ago
				remove bool
			}{
				{temp(fmt.Sprintf("%d-123456789", dead)), false, true},
				{temp(fmt.Sprintf("%d-42", dead)), true, true},
				{temp(fmt.Sprintf("%d-987654321", live)), false, true}, // a live process, but not the lock holder
				{temp("123456789"), true, true},                        // an older version's name
				{temp("987654321"), false, true},                       // likewise, just written
				{temp(fmt.Sprintf("%d-12x", dead)), true, false},       // not our naming
				{temp(fmt.Sprintf("%d-", dead)), true, false},
				{temp("-1"), true, false},
				{fmt.Sprintf(".other.bf.tmp-%d-1", dead), true, false}, // another file's
				{fmt.Sprintf("seen.bf.tmp-%d-1", dead), true, false},
				{fmt.Sprintf(".seen.bf.tmp-%d-1.bak", dead), true, false},
			}
			for _, f := range files {
				p := filepath.Join(dir, f.name)
				writeFile(t, p, strings.Repeat("x", 1000))
				if f.old {
					if err := os.Chtimes(p, hourAgo, hourAgo); err != nil {
						t.Fatal(err)
					}
				}
			}
			runBloom(t, "b\n", tc.args(path)...).want(t, 0, nil)
			for _, f := range files {
				_, err := os.Stat(filepath.Join(dir, f.name))
				if f.remove && err == nil {
					t.Errorf("stale %s not removed", f.name)
				}
				if !f.remove && err != nil {
					t.Errorf("%s: %v; want it kept", f.name, err)
				}
			}
			runBloom(t, "", "query", path, "b").want(t, 0, nil)
		})
	}
}

// TestDedupKilledWhileSaving kills dedup with SIGKILL while it writes a
// large state, which leaves the temporary file behind, and checks that the
// old state is whole and that the next run removes the temporary file.
func TestDedupKilledWhileSaving(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-capacity", "4000000", "-state", state).want(t, 0, nil)
	old := readFile(t, state)
	if len(old) < 8<<20 {
		t.Fatalf("state is %d bytes; the test needs a large one", len(old))
	}
	// The save is a few milliseconds of writing: try until the kill lands
	// in it.
	var left string
	for try := 0; try < 20 && left == ""; try++ {
		cmd, stdin, _, _ := startDedup(t, state)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		stdin.Close() // end of input: it saves
	poll:
		for {
			select {
			case <-done:
				break poll // the save finished first
			default:
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !strings.Contains(e.Name(), ".tmp-") {
					continue
				}
				if fi, err := e.Info(); err == nil && fi.Size() > 0 {
					cmd.Process.Kill()
					<-done
					if _, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
						left = e.Name()
					}
					break poll
				}
			}
		}
		if left == "" {
			// A save that finished replaced the state: start again from it.
			old = readFile(t, state)
		}
	}
	if left == "" {
		t.Fatal("could not kill dedup while it was saving")
	}
	t.Logf("the kill left %s", left)
	if !bytes.Equal(readFile(t, state), old) {
		t.Fatal("state changed by a run killed while saving")
	}
	runBloom(t, "", "query", state, "old").want(t, 0, nil)
	runBloom(t, "old\nnew\n", "dedup", "-state", state).want(t, 0, ptr("new\n"))
	noTempFiles(t, dir)
}
