package redisbloom

import (
	"context"
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

// AddHash is Add for the key whose 64-bit hash is h (see TestHash).
func (f *Filter) AddHash(ctx context.Context, h uint64) error {
	return f.Add(ctx, hashKey(h))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false and its errors. It reads the
// positions bloom.BloomFilter.TestHash(h) reads, those of Test of h's 8
// little-endian bytes; keys whose hashes collide are one key to the filter.
func (f *Filter) TestHash(ctx context.Context, h uint64) (bool, error) {
	return f.Test(ctx, hashKey(h))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash): atomic, as TestAndAdd.
func (f *Filter) TestAndAddHash(ctx context.Context, h uint64) (bool, error) {
	return f.TestAndAdd(ctx, hashKey(h))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes (see TestHash).
func (f *Filter) AddManyHashes(ctx context.Context, hashes []uint64) error {
	return f.AddMany(ctx, hashKeys(hashes))
}

// TestManyHashes is TestMany for keys given as 64-bit hashes: present[i] is
// TestHash(hashes[i]).
func (f *Filter) TestManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return f.TestMany(ctx, hashKeys(hashes))
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// present[i] is what TestAndAddHash(hashes[i]) would have returned had the
// hashes been added one by one.
func (f *Filter) TestAndAddManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return f.TestAndAddMany(ctx, hashKeys(hashes))
}

// AddHash is Add for the key whose 64-bit hash is h (see TestHash): it
// grows the filter as Add does.
func (s *ScalableFilter) AddHash(ctx context.Context, h uint64) error {
	return s.Add(ctx, hashKey(h))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false and its errors. It reads the
// positions bloom.ScalableBloomFilter.TestHash(h) reads, those of Test of
// h's 8 little-endian bytes; keys whose hashes collide are one key to the
// filter.
func (s *ScalableFilter) TestHash(ctx context.Context, h uint64) (bool, error) {
	return s.Test(ctx, hashKey(h))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash): atomic, as TestAndAdd.
func (s *ScalableFilter) TestAndAddHash(ctx context.Context, h uint64) (bool, error) {
	return s.TestAndAdd(ctx, hashKey(h))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes (see TestHash).
func (s *ScalableFilter) AddManyHashes(ctx context.Context, hashes []uint64) error {
	return s.AddMany(ctx, hashKeys(hashes))
}

// TestManyHashes is TestMany for keys given as 64-bit hashes: present[i] is
// TestHash(hashes[i]).
func (s *ScalableFilter) TestManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return s.TestMany(ctx, hashKeys(hashes))
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// present[i] is what TestAndAddHash(hashes[i]) would have returned had the
// hashes been added one by one.
func (s *ScalableFilter) TestAndAddManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return s.TestAndAddMany(ctx, hashKeys(hashes))
}

// AddHash is Add for the key whose 64-bit hash is h (see TestHash): it
// rotates the window as Add does.
func (w *WindowFilter) AddHash(ctx context.Context, h uint64) error {
	return w.Add(ctx, hashKey(h))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// window, with Test's meaning of true and false and its errors. It reads the
// positions bloom.WindowFilter.TestHash(h) reads, those of Test of h's 8
// little-endian bytes; keys whose hashes collide are one key to the window.
func (w *WindowFilter) TestHash(ctx context.Context, h uint64) (bool, error) {
	return w.Test(ctx, hashKey(h))
}

// TestAndAddHash is TestAndAdd (first-seen) for the key whose 64-bit hash
// is h (see TestHash): atomic, as TestAndAdd.
func (w *WindowFilter) TestAndAddHash(ctx context.Context, h uint64) (bool, error) {
	return w.TestAndAdd(ctx, hashKey(h))
}

// TestAndRefreshHash is TestAndRefresh (last-seen) for the key whose 64-bit
// hash is h (see TestHash): atomic, as TestAndRefresh.
func (w *WindowFilter) TestAndRefreshHash(ctx context.Context, h uint64) (bool, error) {
	return w.TestAndRefresh(ctx, hashKey(h))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes (see TestHash).
func (w *WindowFilter) AddManyHashes(ctx context.Context, hashes []uint64) error {
	return w.AddMany(ctx, hashKeys(hashes))
}

// TestManyHashes is TestMany for keys given as 64-bit hashes: present[i] is
// TestHash(hashes[i]).
func (w *WindowFilter) TestManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return w.TestMany(ctx, hashKeys(hashes))
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// present[i] is what TestAndAddHash(hashes[i]) would have returned had the
// hashes been added one by one.
func (w *WindowFilter) TestAndAddManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return w.TestAndAddMany(ctx, hashKeys(hashes))
}

// TestAndRefreshManyHashes is TestAndRefreshMany for keys given as 64-bit
// hashes: present[i] is what TestAndRefreshHash(hashes[i]) would have
// returned had the hashes been refreshed one by one.
func (w *WindowFilter) TestAndRefreshManyHashes(ctx context.Context, hashes []uint64) (present []bool, err error) {
	return w.TestAndRefreshMany(ctx, hashKeys(hashes))
}
