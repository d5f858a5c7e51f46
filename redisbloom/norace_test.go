//go:build !race

package redisbloom_test

const raceEnabled = false
