//go:build !unix && !windows

package main

// processGone reports false: this system cannot tell, so temporary files
// that name a process are kept.
func processGone(pid int) bool { return false }
