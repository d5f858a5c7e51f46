//go:build unix

package main

import (
	"os"
	"syscall"
)

// openNoWait opens path for reading without waiting: O_NONBLOCK makes the
// open of a FIFO with no writer return at once (the caller then refuses it by
// its mode). A regular file reads as without it.
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
