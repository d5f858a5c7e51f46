//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStateNotRegular gives dedup a FIFO and a device as its state: each is
// refused at once with one line, instead of blocking in open(2) while holding
// the state's lock (a FIFO did, until killed).
func TestStateNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("fifo", link); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{fifo, link, "/dev/null"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bloomBin, "dedup", "-q", "-state", state)
		cmd.Stdin = strings.NewReader("a\n")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		blocked := ctx.Err() != nil
		cancel()
		if blocked {
			t.Fatalf("dedup -state %s still running after %v: it blocked", state, time.Since(start))
		}
		r := result{"", stderr.String(), 0}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		r.wantError(t, "not a regular file")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}

// TestDedupDanglingSymlinkSharesLock runs dedup on a state that does not
// exist yet and, meanwhile, on a symbolic link to it: the second run must be
// refused (it took ALIAS.lock and ran alongside, then replaced the link by a
// file of its own, losing its keys from STATE). Afterwards a run through the
// link adds to STATE and leaves the link a link.
func TestDedupDanglingSymlinkSharesLock(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skip("no file locks on this system")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	alias := filepath.Join(dir, "alias.bf")
	if err := os.Symlink("seen.bf", alias); err != nil {
		t.Fatal(err)
	}
	cmd, stdin, stdout, _ := startDedup(t, state) // holds the lock, state not saved yet
	r := runBloom(t, "through-alias\n", "dedup", "-q", "-state", alias)
	r.wantError(t, "in use by another bloom run")
	io.WriteString(stdin, "second\n")
	stdin.Close()
	io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}

	runBloom(t, "through-alias\n", "dedup", "-q", "-state", alias).want(t, 0, nil)
	if fi, err := os.Lstat(alias); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symbolic link (%v)", alias, err)
	}
	out := "first\tpresent\nsecond\tpresent\nthrough-alias\tpresent\n"
	runBloom(t, "", "query", state, "first", "second", "through-alias").want(t, 0, &out)
}

// TestBuildLocksOutput runs build -o on a file whose lock a dedup run holds:
// build is refused at once rather than writing alongside it.
func TestBuildLocksOutput(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skip("no file locks on this system")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.bf")
	cmd, stdin, _, _ := startDedup(t, out)
	r := runBloom(t, "a\n", "build", "-q", "-capacity", "10", "-o", out)
	r.wantError(t, "in use by another bloom run")
	stdin.Close()
	cmd.Wait()
	runBloom(t, "a\n", "build", "-q", "-capacity", "10", "-o", out).want(t, 0, nil)
}

// TestStdinAndFileAgree feeds the same bytes to dedup through stdin and as a
// FILE argument: the output must be the same. A last line "abc\r" without
// "\n" printed 2 lines through stdin and 1 through a file.
func TestStdinAndFileAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, in := range []string{
		"abc\nabc\r", "abc\r\nabc\r", "abc\r", "a\r\r", "x\r\nx\r\r", "a\nb", "\r", "q\r\nq",
	} {
		file := filepath.Join(dir, "in"+string(rune('0'+i)))
		writeFile(t, file, in)
		viaStdin := runBloom(t, in, "dedup", "-q")
		viaFile := runBloom(t, "", "dedup", "-q", file)
		viaStdin.want(t, 0, nil)
		viaFile.want(t, 0, &viaStdin.stdout)
	}
}
