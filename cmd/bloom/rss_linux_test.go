package main

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// peakRSS runs the binary with args and returns its peak resident memory in
// bytes (ru_maxrss, which counts the pages of mapped files it touched as
// well as its heap) and its result.
func peakRSS(t *testing.T, args ...string) (uint64, result) {
	t.Helper()
	cmd := exec.Command(bloomBin, args...)
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
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	return uint64(ru.Maxrss) << 10, r // kilobytes on Linux
}
