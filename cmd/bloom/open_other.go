//go:build !unix

package main

import "os"

// openNoWait opens path for reading. These systems have no FIFOs in the file
// system that an open waits on (a Windows pipe, \\.\pipe\NAME, fails at once
// when busy); the caller's check of the mode still refuses what is not a
// regular file.
func openNoWait(path string) (*os.File, error) {
	return os.Open(path)
}
