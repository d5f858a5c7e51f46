//go:build race

package redisbloom_test

// raceEnabled reports whether the tests run under the race detector, which
// makes the client several times slower: long tests then do less.
const raceEnabled = true
