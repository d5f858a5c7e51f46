// Package bfdump builds, reads and writes RedisBloom's Bloom filters
// (the BF.* commands of Redis 8 and of the RedisBloom module) in Go.
package bfdump
