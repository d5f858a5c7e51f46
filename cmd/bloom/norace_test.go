//go:build !race

package main

// raceEnabled says to build the binary under test with -race too.
const raceEnabled = false
