package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// peakRSSEnv names the binary that the test binary, started again with it
// set, runs and measures (see peakRSS).
const peakRSSEnv = "BLOOM_TEST_PEAK_RSS_OF"

// peakRSS runs the binary with args and returns its peak resident memory in
// bytes (ru_maxrss, which counts the pages of mapped files it touched as
// well as its heap) and its result.
//
// It runs it from a helper, the test binary started again, because a child
// that a process starts reports at least that process's own peak: Go starts
// children with vfork, and Linux counts the peak of the memory a child
// shared with its parent until exec in the child's ru_maxrss (/bin/true run
// from a process that had touched 100 MiB reported 105,256 KB). The test
// process holds tens of MiB; the helper a few.
func peakRSS(t *testing.T, args ...string) (uint64, result) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), peakRSSEnv+"="+bloomBin)
	rssR, rssW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rssR.Close()
	cmd.ExtraFiles = []*os.File{rssW}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Start()
	rssW.Close()
	if err != nil {
		t.Fatal(err)
	}
	report, _ := io.ReadAll(rssR)
	err = cmd.Wait()
	r := result{stdout.String(), stderr.String(), 0}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("bloom %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	kb, err := strconv.ParseUint(string(report), 10, 64)
	if err != nil {
		t.Fatalf("bloom %s: no peak resident memory from the helper (%q, stderr %q)", strings.Join(args, " "), report, r.stderr)
	}
	return kb << 10, r // kilobytes on Linux
}

// peakRSSHelper is the helper of peakRSS, run by TestMain when the test
// binary is started with peakRSSEnv set: it runs the binary that names with
// its own arguments, stdin, stdout and stderr, writes the binary's ru_maxrss
// in KB to file descriptor 3, and returns the binary's exit status.
func peakRSSHelper(bin string) int {
	cmd := exec.Command(bin, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		fmt.Fprintln(os.Stderr, err)
		return exitError
	}
	report := os.NewFile(3, "peak RSS")
	fmt.Fprint(report, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	report.Close()
	return cmd.ProcessState.ExitCode()
}
