//go:build !linux

package main

import "time"

const clockName = "wall-clock time"

var epoch = time.Now()

// now returns the time elapsed since the program started.
func now() time.Duration { return time.Since(epoch) }
