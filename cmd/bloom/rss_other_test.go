//go:build !linux

package main

import "testing"

// peakRSSEnv names the binary that peakRSS's helper measures; there is none
// here.
const peakRSSEnv = "BLOOM_TEST_PEAK_RSS_OF"

// peakRSS skips the test: the peak resident memory of a child is read only
// on Linux, where ru_maxrss is in kilobytes and counts mapped file pages.
func peakRSS(t *testing.T, args ...string) (uint64, result) {
	t.Skip("peak resident memory of a child measured on Linux only")
	return 0, result{}
}

func peakRSSHelper(bin string) int { return exitError }
