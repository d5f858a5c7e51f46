package redisbloom

import (
	"encoding/binary"
)

// Hashed keys.
//
// AddHash, TestHash, TestAndAddHash and their batch forms, of Filter,
// ScalableFilter and WindowFilter, take a key that the caller has already
// hashed to 64 bits (a request ID, a content hash), as the hashed calls of
// bloom.BloomFilter, ScalableBloomFilter and WindowFilter do, and set and
// read the positions those do: the positions of the key of h's 8
// little-endian bytes, mixed with murmur3 and the filter's seed. So a filter
// filled through them exports to an in-memory filter that answers TestHash
// alike (Export), an in-memory filter filled through AddHash imports to one
// that answers TestHash alike (Import), and the hashed calls of a key h and
// the calls on h's 8 little-endian bytes are interchangeable. Each costs
// what the call on 8 bytes costs (one round trip; the positions are
// computed on the client), with the same errors and meaning of true and
// false.

// hashKey returns the key of the hash h: its 8 bytes in little-endian order,
// the bytes that bloom's hashed calls give murmur3.
func hashKey(h uint64) []byte {
	return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), h)
}

// hashKeys returns the keys of hashes, in one allocation for the bytes.
func hashKeys(hashes []uint64) [][]byte {
	buf := make([]byte, 8*len(hashes))
	keys := make([][]byte, len(hashes))
	for i, h := range hashes {
		key := buf[8*i : 8*i+8 : 8*i+8]
		binary.LittleEndian.PutUint64(key, h)
		keys[i] = key
	}
	return keys
}
