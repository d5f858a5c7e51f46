// Package murmur computes MurmurHash3 x64_128 (Austin Appleby,
// https://github.com/aappleby/smhasher, MurmurHash3_x64_128) with a 32-bit
// seed: the same two 64-bit halves as
// github.com/spaolacci/murmur3.Sum128WithSeed on little-endian machines, in
// less time per key and without allocating.
package murmur

import (
	"encoding/binary"
	"math/bits"
)

const (
	c1 = 0x87c37b91114253d5
	c2 = 0x4cf5ad432745937f
)

// Sum128 returns the MurmurHash3 x64_128 hash of key with seed as its two
// 64-bit halves h1 and h2. It reads key's bytes as little-endian words on
// every machine, as the reference implementation does on x86.
func Sum128(key []byte, seed uint32) (h1, h2 uint64) {
	// Why not spaolacci/murmur3: its Sum128WithSeed builds a digest, calls
	// a method for the 16-byte blocks and another for the tail, and reads
	// the tail byte by byte behind a switch on its length, a jump whose
	// target changes with the key length. Here the body is one function,
	// and the tail is read with at most two word loads and shifts, with no
	// branch on its exact length. Mixing a zero tail word changes nothing
	// (k*c1, rotated, *c2 is zero), so both tail words are mixed
	// unconditionally. TestSum128MatchesReference and FuzzSum128 pin the
	// result to spaolacci's for every length up to 300 and random keys.
	h1, h2 = uint64(seed), uint64(seed)
	n := len(key)
	if n == 8 {
		// The hashed calls' 8 bytes (and 8-byte keys): the tail path below
		// with k2 = 0, without its branches; it made TestHash cost 1-3%
		// more than Test of a 16-byte key (BenchmarkHashed's paired rows).
		h1 ^= bits.RotateLeft64(binary.LittleEndian.Uint64(key)*c1, 31) * c2
		return Finish(h1, h2, 8)
	}
	i := 0
	for ; i <= n-16; i += 16 {
		b := (*[16]byte)(key[i:])
		k1 := binary.LittleEndian.Uint64(b[:8])
		k2 := binary.LittleEndian.Uint64(b[8:])
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	if r := n - i; r != 0 {
		var k1, k2 uint64
		switch {
		case n >= 16:
			// The tail is the last r bytes of the last 16 of key, read as
			// one 128-bit little-endian number hi:lo shifted right by
			// s = 128-8r. Go defines shifts by 64 or more to give 0, which
			// covers s >= 64.
			t := key[n-16:]
			lo, hi := binary.LittleEndian.Uint64(t), binary.LittleEndian.Uint64(t[8:16])
			s := uint(128 - 8*r)
			k1 = lo>>s | hi<<(64-s) | hi>>(s-64)
			k2 = hi >> s
		case n >= 8:
			k1 = binary.LittleEndian.Uint64(key)
			k2 = binary.LittleEndian.Uint64(key[n-8:]) >> (128 - 8*uint(n))
		case n >= 4:
			// Two overlapping 4-byte loads; the overlap ORs equal bytes.
			k1 = uint64(binary.LittleEndian.Uint32(key)) | uint64(binary.LittleEndian.Uint32(key[n-4:]))<<(8*uint(n-4))
		default:
			// 1 to 3 bytes: first, middle and last, which overlap as needed.
			k1 = uint64(key[0]) | uint64(key[n/2])<<(8*uint(n/2)) | uint64(key[n-1])<<(8*uint(n-1))
		}
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
	}

	return Finish(h1, h2, n)
}

// Finish is MurmurHash3's finalization of the state h1, h2 of a key of n
// bytes. It inlines (cost 79 of 80).
func Finish(h1, h2 uint64, n int) (uint64, uint64) {
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

// fmix64 is MurmurHash3's finalizer.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Blocks, Tail and Finish are Sum128 in three parts, for callers that
// write it out so that the hash is not a call (Blocks and Finish inline):
//
//	h1, h2 := murmur.Blocks(key, seed)
//	if len(key)%16 != 0 {
//		h1, h2 = murmur.Tail(h1, h2, key)
//	}
//	h1, h2 = murmur.Finish(h1, h2, len(key))
//
// gives Sum128(key, seed).

// Blocks returns the state after the 16-byte blocks of key.
func Blocks(key []byte, seed uint32) (h1, h2 uint64) {
	h1, h2 = uint64(seed), uint64(seed)
	for ; len(key) >= 16; key = key[16:] {
		b := (*[16]byte)(key)
		h1 ^= bits.RotateLeft64(binary.LittleEndian.Uint64(b[:8])*c1, 31) * c2
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(binary.LittleEndian.Uint64(b[8:])*c2, 33) * c1
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	return h1, h2
}

// Tail mixes the last len(key)%16 bytes of key into the state h1, h2
// that Blocks returned.
func Tail(h1, h2 uint64, key []byte) (uint64, uint64) {
	n := len(key)
	r := n % 16
	if r == 0 {
		return h1, h2
	}
	var k1, k2 uint64
	switch {
	case n == 8:
		// The hashed calls' 8 bytes (see Sum128).
		k1 = binary.LittleEndian.Uint64(key)
	case n >= 16:
		t := key[n-16:]
		lo, hi := binary.LittleEndian.Uint64(t), binary.LittleEndian.Uint64(t[8:16])
		s := uint(128 - 8*r)
		k1 = lo>>s | hi<<(64-s) | hi>>(s-64)
		k2 = hi >> s
	case n >= 8:
		k1 = binary.LittleEndian.Uint64(key)
		k2 = binary.LittleEndian.Uint64(key[n-8:]) >> (128 - 8*uint(n))
	case n >= 4:
		k1 = uint64(binary.LittleEndian.Uint32(key)) | uint64(binary.LittleEndian.Uint32(key[n-4:]))<<(8*uint(n-4))
	default:
		k1 = uint64(key[0]) | uint64(key[n/2])<<(8*uint(n/2)) | uint64(key[n-1])<<(8*uint(n-1))
	}
	h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
	h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
	return h1, h2
}
