//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	// A socket stands for a device: a test that writes beside /dev/null
	// and, as root, can replace it, must not run on a broken build.
	sock := listenUnix(t, filepath.Join(dir, "sock"))
	for _, state := range []string{fifo, link, sock} {
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
// exist yet and, meanwhile, on a symbolic link to it, in both orders: the
// second run must be refused (it took ALIAS.lock or STATE.lock and ran
// alongside, and a run through the link then replaced the link by a file of
// its own, its keys missing from STATE). Afterwards a run through the link
// adds to STATE and leaves the link a link.
func TestDedupDanglingSymlinkSharesLock(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skip("no file locks on this system")
	}
	for _, aliasFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("alias-first=%v", aliasFirst), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			state := filepath.Join(dir, "seen.bf")
			alias := filepath.Join(dir, "alias.bf")
			if err := os.Symlink("seen.bf", alias); err != nil {
				t.Fatal(err)
			}
			first, second := state, alias
			if aliasFirst {
				first, second = alias, state
			}
			cmd, stdin, stdout, _ := startDedup(t, first) // holds the lock, state not saved yet
			r := runBloom(t, "refused\n", "dedup", "-q", "-state", second)
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
			out := "first\tpresent\nsecond\tpresent\nthrough-alias\tpresent\nrefused\tabsent\n"
			runBloom(t, "", "query", state, "first", "second", "through-alias", "refused").want(t, 1, &out)
		})
	}
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

// listenUnix makes a Unix socket at path, open until the test ends, and
// returns path.
func listenUnix(t *testing.T, path string) string {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return path
}

// TestBuildOutputNotRegular gives build -o a FIFO, a socket (standing for a
// device) and links to them: each is refused at once with one line and left
// as it is. The save renamed its file over them: as root, build -o /dev/null
// replaced the device /dev/null with a filter file.
func TestBuildOutputNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := listenUnix(t, filepath.Join(dir, "sock"))
	var outs []string
	for _, target := range []string{"fifo", "sock"} {
		link := filepath.Join(dir, "link-"+target)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, link)
	}
	outs = append(outs, fifo, sock)
	for _, out := range outs {
		r := runBloom(t, "a\n", "build", "-q", "-capacity", "10", "-o", out)
		r.wantError(t, "not a regular file")
	}
	for path, mode := range map[string]os.FileMode{fifo: os.ModeNamedPipe, sock: os.ModeSocket} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != mode {
			t.Errorf("%s was replaced: %v, %v", path, fi.Mode(), err)
		}
	}
	noTempFiles(t, dir)
}

// TestLoadStateFIFO loads a dedup state that is a FIFO, as if it had been put
// in place after runDedup checked the name: loading fails at once rather than
// waiting in open(2) for a writer while the run holds the lock.
func TestLoadStateFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := dedupFilter(fifo, 1000, 0.01, false, windowSpec{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("dedupFilter(FIFO): %v, want an error saying it is not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		// Give the blocked open its writer, so that it returns.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("dedupFilter(FIFO) still waiting after 10 s")
	}
}

// TestSaveNotOverSpecialFile saves to a name that became a FIFO or a
// symbolic link after the caller resolved and checked it: writeFileAtomic
// refuses, leaves the name as it is and removes its temporary file, rather
// than renaming over it.
func TestSaveNotOverSpecialFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("elsewhere", link); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{fifo: os.ModeNamedPipe, link: os.ModeSymlink} {
		err := writeFileAtomic(path, func(w io.Writer) error {
			_, err := io.WriteString(w, "filter")
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("writeFileAtomic(%s): %v, want an error saying it is not a regular file", path, err)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != mode {
			t.Errorf("%s was replaced: %v, %v", path, fi.Mode(), err)
		}
	}
	noTempFiles(t, dir)
}

// procState returns the state letter of process pid from /proc ('Z' for a
// zombie), or 0 if it cannot be read.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// "PID (COMMAND) S ...": the command may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// TestTempOfZombieRemoved kills dedup with SIGKILL while it saves and leaves
// the killed process unreaped, a zombie, as where the init process does not
// reap: its process ID still answers signal 0, and the runs that judged
// temporaries by process IDs kept its temporary file forever. The next run
// holds the lock, so the temporary is stale: it must go, the old state be
// whole and the new line saved.
func TestTempOfZombieRemoved(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc to tell that the killed run is a zombie")
	}
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bf")
	runBloom(t, "old\n", "dedup", "-q", "-capacity", "4000000", "-state", state).want(t, 0, nil)
	var left string
	var zombie *exec.Cmd
	for try := 0; try < 20 && left == ""; try++ {
		cmd, stdin, _, _ := startDedup(t, state)
		pid := cmd.Process.Pid
		stdin.Close() // end of input: it saves
		killed := false
		for procState(pid) != 'Z' { // until it exits, by itself or killed
			if killed {
				time.Sleep(time.Millisecond)
				continue
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if fi, err := e.Info(); err == nil && strings.Contains(e.Name(), ".tmp-") && fi.Size() > 0 {
					cmd.Process.Kill()
					killed, left = true, e.Name()
					break
				}
			}
		}
		if !killed || !fileExists(filepath.Join(dir, left)) {
			left = "" // the save finished first
			cmd.Wait()
			continue
		}
		zombie = cmd
	}
	if left == "" {
		t.Fatal("could not kill dedup while it was saving")
	}
	if err := syscall.Kill(zombie.Process.Pid, 0); err != nil {
		t.Fatalf("signal 0 to the zombie: %v; the test needs an ID that looks alive", err)
	}
	old := readFile(t, state)
	runBloom(t, "old\nnew\n", "dedup", "-q", "-state", state).want(t, 0, ptr("new\n"))
	if fileExists(filepath.Join(dir, left)) {
		t.Errorf("the temporary %s of the killed run, a zombie, was kept", left)
	}
	if procState(zombie.Process.Pid) != 'Z' {
		t.Error("the killed run was reaped during the test: it proves nothing")
	}
	zombie.Wait()
	noTempFiles(t, dir)
	if bytes.Equal(readFile(t, state), old) {
		t.Error("the state was not saved")
	}
	runBloom(t, "", "query", state, "old", "new").want(t, 0, nil)
}

// TestStdinAndFileAgreeRandom feeds random inputs of "a", "\r" and "\n" to
// dedup and build through stdin and as a FILE argument, in-process: the
// output of dedup and the filter build writes must be the same byte for
// byte.
func TestStdinAndFileAgreeRandom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(21, 11))
	runIn := func(stdin string, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr}
		if code := run(e, args); code != 0 {
			t.Fatalf("bloom %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String()
	}
	file := filepath.Join(dir, "in")
	const inputs = 300
	var dedups, builds int // inputs on which the two ways disagree
	var example string
	for range inputs {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = "a\r\n"[rng.IntN(3)]
		}
		in := string(b)
		writeFile(t, file, in)
		if viaStdin, viaFile := runIn(in, "dedup", "-q", "-capacity", "100"), runIn("", "dedup", "-q", "-capacity", "100", file); viaStdin != viaFile {
			dedups++
			example = fmt.Sprintf("dedup of %q: stdin gives %q, FILE %q", in, viaStdin, viaFile)
		}
		if len(in)%4 != 0 {
			continue // build saves with fsync: a quarter of the inputs will do
		}
		a, b2 := filepath.Join(dir, "a.bf"), filepath.Join(dir, "b.bf")
		runIn(in, "build", "-q", "-capacity", "10", "-o", a)
		runIn("", "build", "-q", "-capacity", "10", "-o", b2, file)
		if !bytes.Equal(readFile(t, a), readFile(t, b2)) {
			builds++
			example = fmt.Sprintf("build of %q: the filters from stdin and from FILE differ", in)
		}
	}
	if dedups+builds > 0 {
		t.Errorf("stdin and FILE disagree on %d of %d inputs for dedup, %d for build; last: %s", dedups, inputs, builds, example)
	}
}
