//go:build aix || (solaris && !illumos)

package main

import (
	"errors"
	"io"
	"os"
	"syscall"
)

const lockSupported = true

// openLocked opens or creates the file name and takes an exclusive fcntl(2)
// write lock on all of it without waiting. Such a lock belongs to the process
// and goes when it closes any descriptor of the file: dedup opens the lock
// file once.
func openLocked(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	for {
		err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return nil, errLockHeld
		}
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return f, nil
}
