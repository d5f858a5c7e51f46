package bfdump

import "encoding/binary"

// murmurM and murmurR are MurmurHash64A's multiplier and shift. The
// multiplier is also the seed RedisBloom hashes every key with first.
const (
	murmurM = 0xc6a4a7935bd1e995
	murmurR = 47
)

// MurmurHash64A returns Austin Appleby's 64-bit MurmurHash2 (the variant
// named MurmurHash64A, for 64-bit platforms) of key with seed, as
// RedisBloom's deps/murmur2/MurmurHash2.c computes it on a little-endian
// machine: 8-byte blocks are read as little-endian integers whatever the
// machine running this code. It does not allocate.
func MurmurHash64A(key []byte, seed uint64) uint64 {
	h := seed ^ uint64(len(key))*murmurM
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= murmurM
		k ^= k >> murmurR
		k *= murmurM
		h ^= k
		h *= murmurM
		key = key[8:]
	}
	if len(key) > 0 {
		// The C switch falls through from case len&7 down to case 1: byte i
		// goes to bits 8i..8i+7, then one multiplication.
		var t uint64
		for i := len(key) - 1; i >= 0; i-- {
			t = t<<8 | uint64(key[i])
		}
		h ^= t
		h *= murmurM
	}
	h ^= h >> murmurR
	h *= murmurM
	h ^= h >> murmurR
	return h
}

// hash returns RedisBloom's pair (a, b) for key (bloom_calc_hash64): the
// positions of key in a sub-filter of m bits are (a + i*b) mod 2^64 mod m
// for i = 0 .. hashes-1.
func hash(key []byte) (a, b uint64) {
	a = MurmurHash64A(key, murmurM)
	return a, MurmurHash64A(key, a)
}
