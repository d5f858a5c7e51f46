package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// faultMessage is what query and info say when the file they read changes
// under them.
const faultMessage = "the file changed while bloom read it"

// TestQueryFileTruncated truncates a filter file to 4 KiB while bloom query
// has it open and mapped, between its first answer and the next keys: the
// next reads of the mapping fault (SIGBUS), which crashed the process with
// "fatal error: fault" and a stack trace. Now query fails with one line and
// status 2.
func TestQueryFileTruncated(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no mapped files")
	}
	path := filepath.Join(t.TempDir(), "f.bf")
	runBloom(t, "first\n", "build", "-q", "-capacity", "1e6", "-o", path).want(t, 0, nil)

	cmd := exec.Command(bloomBin, "query", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	answers := bufio.NewReader(stdout)
	first := make(chan string, 1)
	go func() {
		l, _ := answers.ReadString('\n')
		first <- l
	}()
	fmt.Fprintln(stdin, "first")
	select {
	case l := <-first:
		if l != "first\tpresent\n" {
			t.Fatalf("first answer %q", l)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no answer to the first key within 10 s")
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for i := range 10_000 {
			fmt.Fprintf(w, "key %d\n", i)
		}
		w.Flush()
		stdin.Close()
	}()
	go func() {
		for {
			if _, err := answers.ReadString('\n'); err != nil {
				break
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("query still running 20 s after its input ended")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitError {
		t.Fatalf("query of a file truncated under it: %v, want exit status %d (stderr %q)", err, exitError, stderr.String())
	}
	msg := stderr.String()
	if !strings.HasPrefix(msg, "bloom query: "+path+": "+faultMessage) || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying that %s changed", msg, path)
	}
}

// TestInfoFileTruncated truncates a filter file under the view info has
// opened, before info reads its bits (in-process: a separate process
// reads them at once after opening): the reads fault, and info's
// describeGuarded returns an error instead of crashing the process.
func TestInfoFileTruncated(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no mapped files")
	}
	for _, kind := range []string{"fixed", "scalable"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.bf")
			if kind == "fixed" {
				runBloom(t, "a\n", "build", "-q", "-capacity", "1e6", "-o", path).want(t, 0, nil)
			} else {
				runBloom(t, "a\n", "dedup", "-q", "-state", path).want(t, 0, nil)
			}
			f, err := openFilter(path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Copied() {
				t.Skip("the view copied the bits")
			}
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
			_, err = describeGuarded(path, f)
			if err == nil || !strings.Contains(err.Error(), path+": "+faultMessage) {
				t.Errorf("info of a file truncated under it: %v, want an error saying that %s changed", err, path)
			}
		})
	}
}

// TestCorruptFileNamedOnce checks that an error about a damaged filter file
// names the file once: query and info named it twice ("f.bf: f.bf: corrupt
// ..."), for every kind of file and damage.
func TestCorruptFileNamedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	for _, kind := range []struct {
		name string
		args []string
	}{
		{"fixed", []string{"build", "-q", "-capacity", "1000", "-o"}},
		{"scalable", []string{"dedup", "-q", "-state"}},
		{"window", []string{"dedup", "-q", "-window", "1000", "-state"}},
	} {
		path := filepath.Join(dir, kind.name+".bf")
		runBloom(t, "a\nb\n", append(kind.args, path)...).want(t, 0, nil)
		files[kind.name] = path
	}
	for kind, path := range files {
		good := readFile(t, path)
		damages := map[string][]byte{
			"a flipped bit": append([]byte(nil), good...),
			"truncated":     good[:len(good)-5],
			"trailing data": append(append([]byte(nil), good...), "xyz"...),
		}
		damages["a flipped bit"][len(good)-9] ^= 1
		for damage, data := range damages {
			bad := filepath.Join(dir, fmt.Sprintf("%s-%d.bf", kind, len(data)))
			if err := os.WriteFile(bad, data, 0o666); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"query", bad, "a"}, {"info", bad}, {"dedup", "-q", "-state", bad}} {
				r := runBloom(t, "a\n", args...)
				if r.code != exitError || strings.Count(r.stderr, bad) != 1 || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("%s, %s: bloom %s: status %d, stderr %q; want status %d and one line naming %s once",
						kind, damage, args[0], r.code, r.stderr, exitError, bad)
				}
			}
		}
	}
}
