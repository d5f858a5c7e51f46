package main

import (
	"os"
	"syscall"
)

const lockSupported = true

// errorSharingViolation is ERROR_SHARING_VIOLATION, which syscall does not
// name.
const errorSharingViolation syscall.Errno = 32

// openLocked opens or creates the file name for reading and writing, sharing
// it for reading only: while the handle is open, which is until the process
// ends, no other process can open it for writing, so the open handle is the
// lock. Others can still read the holder's process ID from it.
func openLocked(name string) (*os.File, error) {
	p, err := syscall.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ|syscall.GENERIC_WRITE, syscall.FILE_SHARE_READ,
		nil, syscall.OPEN_ALWAYS, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err == errorSharingViolation {
		return nil, errLockHeld
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}
