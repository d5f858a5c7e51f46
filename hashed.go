package bloom

import (
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/window"
)

// Hashed keys.
//
// AddHash, TestHash, TestAndAddHash and their batch forms take a key that
// the caller has already hashed to 64 bits (a request ID, a content hash, a
// hash kept from an earlier pass). The filter hashes that number again, as
// its 8 little-endian bytes with murmur3 and the filter's seed, so the hashed
// calls of a key h set and read exactly the bits that Add, Test and
// TestAndAdd of those 8 bytes do. The second hash spreads any input, even a
// weak hash such as FNV-1a or plain sequential integers, over the positions
// as well as murmur3 spreads keys, so the false-positive rate is the one
// the filter promises for keys, plus the collisions of the caller's hash:
// keys whose 64-bit hashes are equal are one key to the filter. For n added
// keys and a hash that is uniform over 64 bits, that adds about n/2^64 to the
// rate (5e-11 at n = 10^9). They cost less than the calls on keys of 9 bytes
// or more and never allocate.

// AddHash inserts the key whose 64-bit hash is h: it is Add of the 8
// little-endian bytes of h (see TestHash). It does not allocate.
func (f *BloomFilter) AddHash(h uint64) {
	addKey(f, layout.HashBytes(&h))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false. It is Test of the 8
// little-endian bytes of h: the filter mixes h with murmur3 and its seed,
// so a weak hash such as FNV-1a or sequential integers meets the
// false-positive rate; keys whose hashes collide are one key to the filter,
// which adds about n/2^64 to the rate for n keys and a uniform 64-bit hash.
// It does not allocate.
func (f *BloomFilter) TestHash(h uint64) bool {
	return testKey(f, layout.HashBytes(&h))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (f *BloomFilter) TestAndAddHash(h uint64) bool {
	return addKey(f, layout.HashBytes(&h))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes: it inserts every
// hash of hashes, in order, like calling AddHash on each.
//
//go:noinline
func (f *BloomFilter) AddManyHashes(hashes []uint64) { addMany(f, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
//
//go:noinline
func (f *BloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return testMany(f, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
//
//go:noinline
func (f *BloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	addMany(f, hashes, results)
	return results
}

// AddHash inserts the key whose 64-bit hash is h unless it tests present
// already: it is Add of the 8 little-endian bytes of h (see
// BloomFilter.TestHash for what a hashed key promises). It does not
// allocate unless it adds a sub-filter.
func (s *ScalableBloomFilter) AddHash(h uint64) {
	s.testAndAdd(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// TestHash reports whether the key whose 64-bit hash is h may be in the
// filter, with Test's meaning of true and false: it is Test of the 8
// little-endian bytes of h. The filter mixes h with murmur3 and its seed, so
// a weak hash such as FNV-1a or sequential integers meets the error rate;
// keys whose hashes collide are one key to the filter, which adds about
// n/2^64 to the rate for n keys and a uniform 64-bit hash.
func (s *ScalableBloomFilter) TestHash(h uint64) bool {
	return s.test(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h (see
// TestHash).
func (s *ScalableBloomFilter) TestAndAddHash(h uint64) bool {
	return s.testAndAdd(murmur.Sum128(layout.KeyBytes(&h), s.seed))
}

// AddManyHashes is AddMany for keys given as 64-bit hashes, growing the
// filter like the loop of AddHash.
//
//go:noinline
func (s *ScalableBloomFilter) AddManyHashes(hashes []uint64) { scalableAddMany(s, hashes, nil) }

// TestManyHashes is TestMany for keys given as 64-bit hashes: results[i] is
// TestHash(hashes[i]). It fills and returns results like TestMany.
//
//go:noinline
func (s *ScalableBloomFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return scalableTestMany(s, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes:
// results[i] is what TestAndAddHash would have returned for hashes[i] had
// they been added one by one.
//
//go:noinline
func (s *ScalableBloomFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	results = batchResults(results, len(hashes))
	scalableAddMany(s, hashes, results)
	return results
}

// AddHash is Add for the key whose 64-bit hash is h: Add of its 8
// little-endian bytes (see BloomFilter.TestHash).
func (w *WindowFilter) AddHash(h uint64) { windowAdd(w, layout.HashBytes(&h), window.AddAll) }

// TestHash is Test for the key whose 64-bit hash is h (see AddHash).
func (w *WindowFilter) TestHash(h uint64) bool { return windowTest(w, layout.HashBytes(&h)) }

// TestAndAddHash is TestAndAdd for the key whose 64-bit hash is h.
func (w *WindowFilter) TestAndAddHash(h uint64) bool {
	return windowAdd(w, layout.HashBytes(&h), window.AddNew)
}

// TestAndRefreshHash is TestAndRefresh for the key whose 64-bit hash is h.
func (w *WindowFilter) TestAndRefreshHash(h uint64) bool {
	return windowAdd(w, layout.HashBytes(&h), window.AddRefresh)
}

// AddManyHashes is AddMany for keys given as 64-bit hashes (see AddHash).
//
//go:noinline
func (w *WindowFilter) AddManyHashes(hashes []uint64) { windowAddMany(w, hashes, nil, window.AddAll) }

// TestManyHashes is TestMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestManyHashes(hashes []uint64, results []bool) []bool {
	return windowTestMany(w, hashes, results)
}

// TestAndAddManyHashes is TestAndAddMany for keys given as 64-bit hashes.
//
//go:noinline
func (w *WindowFilter) TestAndAddManyHashes(hashes []uint64, results []bool) []bool {
	return windowAddMany(w, hashes, batchResults(results, len(hashes)), window.AddNew)
}

// TestAndRefreshManyHashes is TestAndRefreshMany for keys given as 64-bit
// hashes.
//
//go:noinline
func (w *WindowFilter) TestAndRefreshManyHashes(hashes []uint64, results []bool) []bool {
	return windowAddMany(w, hashes, batchResults(results, len(hashes)), window.AddRefresh)
}
