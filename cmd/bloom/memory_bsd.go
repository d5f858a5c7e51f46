//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// memoryLimit returns the physical memory in bytes, as sysctl(8) reports it.
func memoryLimit() (bytes uint64, source string, ok bool) {
	name := "hw.physmem"
	switch runtime.GOOS {
	case "darwin":
		name = "hw.memsize"
	case "netbsd":
		name = "hw.physmem64"
	}
	out, err := exec.Command("sysctl", "-n", name).Output()
	if err != nil {
		return 0, "", false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	return n, "physical memory", err == nil && n > 0
}
