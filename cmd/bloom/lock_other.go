//go:build !(aix || darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris || windows)

package main

import "os"

// lockSupported is false: syscall offers no file locks on this system, so
// runs on one state must not overlap.
const lockSupported = false

// openLocked opens or creates the file name, without a lock.
func openLocked(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
}
