//go:build !linux

package main

import "testing"

// peakRSS skips the test: the peak resident memory of a child is read only
// on Linux, where ru_maxrss is in kilobytes and counts mapped file pages.
func peakRSS(t *testing.T, args ...string) (uint64, result) {
	t.Skip("peak resident memory of a child measured on Linux only")
	return 0, result{}
}
