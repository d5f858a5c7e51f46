//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// processGone reports whether no process has the ID pid: signal 0 to it
// finds none. A process of another user counts as present.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}
