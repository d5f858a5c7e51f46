package bloom

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/spaolacci/murmur3"
)

// Blocked makes New, NewWithSize and NewScalable build filters of the blocked
// layout: all k bits of a key lie in one block of BlockBits (512) bits, one
// 64-byte cache line, so that Add and Test cost one cache miss per key
// instead of up to k. The price is memory: keys spread unevenly over the
// blocks, so a blocked filter needs more bits for the same error rate (9.89
// bits per key instead of 9.59 at 1%, 15.48 instead of 14.38 at 0.1%, 21.92
// instead of 19.17 at 0.01%), and it always has at least one block. New
// sizes it by BlockedSize, from the blocked false-positive rate
// (BlockedFalsePositiveRate), so that the error rate at capacity is still at
// most the one asked for. Choose it for filters larger than the CPU caches
// and error rates down to about 1e-4. The default layout is the classic one.
//
// A key's block is the high half of its murmur3 hash h1 mapped onto the
// blocks with a multiply-shift; its k distinct positions within the block
// come from the low half h2 (see AppendBlockedLocations). The words of a
// blocked filter are aligned to 64 bytes in memory, so that each block is
// one cache line.
//
// Blocked filters are combined and compared only with blocked filters. They
// encode in format version 2, which is version 1 (see BloomFilter and
// ScalableBloomFilter) with the layout recorded:
//
//   - BloomFilter: version 2 at offset 4, and at offset 6, where version 1
//     has its flags, the layout, 1 for blocked (512-bit blocks); m is then a
//     multiple of 512. Every other field is as in version 1, and the bits
//     are the words of the blocks in order (block b is words 8b to 8b+7).
//   - ScalableBloomFilter: version 2 at offset 4 and the layout, 1, at
//     offset 13; every sub-filter is a blocked BloomFilter in version 2.
//
// Classic filters keep encoding as version 1, byte for byte; decoders reject
// version 2 with any layout other than 1, so every filter has one encoding.
func Blocked() Option {
	return Option{func(s *settings) error {
		s.blocked = true
		return nil
	}}
}

// blockedVersion is the format version of blocked filters, and layoutBlocked
// the layout field that version 2 requires.
const (
	blockedVersion = 2
	layoutBlocked  = 1
)

// cacheLine is the alignment of the words of a blocked filter, in bytes.
const cacheLine = 64

// alignedWords returns n zero words whose first one starts a cache line.
// Large allocations are page-aligned anyway; small ones get up to 7 words of
// slack in front.
func alignedWords(n uint64) []uint64 {
	w := make([]uint64, n+cacheLine/8-1)
	off := (cacheLine - uintptr(unsafe.Pointer(&w[0]))%cacheLine) % cacheLine / 8
	return w[off : off+uintptr(n) : off+uintptr(n)]
}

// isAligned reports whether w starts a cache line.
func isAligned(w []uint64) bool {
	return len(w) == 0 || uintptr(unsafe.Pointer(&w[0]))%cacheLine == 0
}

// newSet returns an empty bit set of m bits, cache-line aligned if blocked.
func newSet(m uint64, blocked bool) *bitset.BitSet {
	if !blocked {
		return bitset.New(uint(m))
	}
	return bitset.FromWithLength(uint(m), alignedWords((m+63)/64))
}

// cloneSet returns a copy of set, of m bits, cache-line aligned if blocked.
func cloneSet(set *bitset.BitSet, m uint64, blocked bool) *bitset.BitSet {
	if !blocked {
		return set.Clone()
	}
	c := newSet(m, true)
	copy(c.Words(), set.Words())
	return c
}

// splitmix is the SplitMix64 finalizer (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014).
func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// blockOf returns the block, in [0, blocks), of a key whose hash has h1 as
// its first half.
func blockOf(h1, blocks uint64) uint64 {
	b, _ := bits.Mul64(h1, blocks)
	return b
}

// blockMask returns the k distinct in-block positions of a key whose hash
// has h2 as its second half, as a mask of the block's 8 words: candidates
// are the 9-bit fields of h2, then of splitmix(h2 + i*golden) for i = 1, 2,
// ..., seven per word from the low bits up, and a candidate already taken is
// skipped. AppendBlockedLocations documents the same sequence; testBlocked
// writes it out again, to stop at the first clear bit.
func blockMask(h2 uint64, k uint) (m [8]uint64) {
	w, seed, left := h2, h2, 7
	for n := uint(0); n < k; {
		if left == 0 {
			seed += golden
			w, left = splitmix(seed), 7
		}
		p := w
		w >>= 9
		left--
		i, bit := p>>6&7, uint64(1)<<(p&63)
		if m[i]&bit == 0 {
			m[i] |= bit
			n++
		}
	}
	return m
}

// AppendBlockedLocations appends to dst the hashes bit positions, each in
// [0, bits), that a blocked filter (see Blocked) of bits bits, hashes hash
// functions and seed seed sets for key, and returns the extended slice. They
// are exactly the positions Add sets and Test reads, and they are part of the
// format promise (version 2): they never change within a format version.
// They are distinct and lie in one block. bits must be a positive multiple of
// BlockBits and hashes in [1, MaxHashes]; otherwise dst is returned
// unchanged.
//
// With (h1, h2) the 128-bit murmur3 hash of key with seed and all arithmetic
// mod 2^64, the block is b = (h1 * (bits/512)) >> 64, and position i is
// 512*b + q_i, where q_0, q_1, ... are the candidates in [0, 512) with
// those equal to an earlier one left out: the 9-bit fields (x >> 9j) & 511,
// j = 0..6, of x = h2, then of x = splitmix64(h2 + t*0x9E3779B97F4A7C15) for
// t = 1, 2, ..., with splitmix64(z) the SplitMix64 finalizer
// z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
// z *= 0x94D049BB133111EB; z ^= z >> 31.
func AppendBlockedLocations(dst []uint64, key []byte, bits uint64, hashes uint, seed uint32) []uint64 {
	if bits < BlockBits || bits%BlockBits != 0 || hashes == 0 || hashes > MaxHashes {
		return dst
	}
	h1, h2 := murmur3.Sum128WithSeed(key, seed)
	base := blockOf(h1, bits/BlockBits) * BlockBits
	w, state, left := h2, h2, 7
	var seen [8]uint64
	for n := uint(0); n < hashes; {
		if left == 0 {
			state += golden
			w, left = splitmix(state), 7
		}
		p := w & (BlockBits - 1)
		w >>= 9
		left--
		if bit := uint64(1) << (p & 63); seen[p>>6]&bit == 0 {
			seen[p>>6] |= bit
			dst = append(dst, base+p)
			n++
		}
	}
	return dst
}

// block returns the 8 words of block b of f.
func (f *BloomFilter) block(b uint64) *[8]uint64 {
	return (*[8]uint64)(f.words[b*8 : b*8+8])
}

// addBlocked is add for a blocked filter that is not concurrent.
func (f *BloomFilter) addBlocked(h1, h2 uint64) (present bool) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	fresh := m[0]&^blk[0] | m[1]&^blk[1] | m[2]&^blk[2] | m[3]&^blk[3] |
		m[4]&^blk[4] | m[5]&^blk[5] | m[6]&^blk[6] | m[7]&^blk[7]
	if fresh == 0 {
		return true
	}
	blk[0] |= m[0]
	blk[1] |= m[1]
	blk[2] |= m[2]
	blk[3] |= m[3]
	blk[4] |= m[4]
	blk[5] |= m[5]
	blk[6] |= m[6]
	blk[7] |= m[7]
	f.count++
	return false
}

// testBlocked is test for a blocked filter that is not concurrent. It tests
// the positions of blockMask one by one and stops at the first clear bit,
// which for an absent key is usually the first or second: a candidate
// repeated is skipped as blockMask skips it, so that k distinct positions
// are tested.
func (f *BloomFilter) testBlocked(h1, h2 uint64) bool {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	// The first two candidates are positions of every key with k >= 2 (the
	// second may repeat the first, and is then set if the first is), and
	// rule out most absent keys: test them first, without a branch between
	// them, before the loop sets up. The loop tests them again, from the
	// cache.
	p0, p1 := h2, h2>>9
	if f.k == 1 {
		p1 = p0
	}
	if blk[p0>>6&7]>>(p0&63)&(blk[p1>>6&7]>>(p1&63))&1 == 0 {
		return false
	}
	var seen [8]uint64
	w, seed, left := h2, h2, 7
	for n := uint(0); n < f.k; {
		if left == 0 {
			seed += golden
			w, left = splitmix(seed), 7
		}
		p := w
		w >>= 9
		left--
		i, bit := p>>6&7, uint64(1)<<(p&63)
		if blk[i]&bit == 0 {
			return false
		}
		if seen[i]&bit == 0 {
			seen[i] |= bit
			n++
		}
	}
	return true
}

// testBlockedConcurrent is testBlocked with atomic loads.
func (f *BloomFilter) testBlockedConcurrent(h1, h2 uint64) bool {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	var miss uint64
	for i := range blk {
		miss |= m[i] &^ atomic.LoadUint64(&blk[i])
	}
	return miss == 0
}

// unsetBlocked is unsetConcurrent for a blocked filter: bit i of the result
// is set if word i of the key's block lacks some of the key's bits.
func (f *BloomFilter) unsetBlocked(h1, h2 uint64) (unset uint64) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	for i := range blk {
		if m[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			unset |= 1 << i
		}
	}
	return unset
}

// setBlocked is setConcurrent for a blocked filter, with unset from
// unsetBlocked.
func (f *BloomFilter) setBlocked(h1, h2, unset uint64) (fresh bool) {
	blk := f.block(blockOf(h1, f.m/BlockBits))
	m := blockMask(h2, f.k)
	var flipped uint64
	for i := range blk {
		if unset>>i&1 != 0 && m[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			flipped |= m[i] &^ atomic.OrUint64(&blk[i], m[i])
		}
	}
	return flipped != 0
}

// blockedErrorRate returns the false-positive rate of the blocked filter f
// as its bits stand: the mean over its blocks of C(x, k)/C(512, k), x the
// block's set bits. O(m/64).
func (f *BloomFilter) blockedErrorRate() float64 {
	var pow [BlockBits + 1]float64
	for x := range pow {
		pow[x] = 1
		for i := range int(f.k) {
			pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
		}
	}
	var sum float64
	for b := 0; b < len(f.words); b += 8 {
		x := 0
		for i := range 8 {
			x += bits.OnesCount64(f.word(b + i))
		}
		sum += pow[x]
	}
	return sum / float64(len(f.words)/8)
}

// estimatedCountOf returns the estimated count of f if set of its bits are
// set, by its layout's formula.
func (f *BloomFilter) estimatedCountOf(set uint64) uint64 {
	if !f.blocked {
		return estimatedCount(f.m, f.k, set)
	}
	e := EstimateBlockedCount(f.m, f.k, set)
	if e >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Round(e))
}

// Blocked reports whether the filter has the blocked layout (see Blocked).
func (f *BloomFilter) Blocked() bool { return f.blocked }

// Blocked reports whether the filter's sub-filters have the blocked layout
// (see Blocked).
func (s *ScalableBloomFilter) Blocked() bool { return s.blocked }

// anyHoldsBlocked is anyHolds for blocked sub-filters: it reads the first
// word of the key's block in every sub-filter before it tests any, so that
// their cache misses overlap, then tests the sub-filters newest first. The
// in-block positions of a key are the same sequence in every sub-filter, so
// the mask of a smaller k is a prefix of it; it is rebuilt per distinct k.
func anyHoldsBlocked(filters []*BloomFilter, h1, h2 uint64) bool {
	var touch uint64
	for _, f := range filters {
		touch |= atomic.LoadUint64(&f.words[blockOf(h1, f.m/BlockBits)*8])
	}
	var m [8]uint64
	k := uint(0)
	for j := len(filters) - 1; j >= 0; j-- {
		f := filters[j]
		if f.k != k {
			m, k = blockMask(h2, f.k), f.k
		}
		blk := f.block(blockOf(h1, f.m/BlockBits))
		var miss uint64
		for i := range blk {
			miss |= m[i] &^ atomic.LoadUint64(&blk[i])
		}
		if miss == 0 {
			return true
		}
	}
	// The loads of the first loop only warm the caches; their result is
	// used so that they stay.
	return touch == 1 && len(filters) == 0
}

// blockedFullRate is fullRate for a blocked sub-filter: its false-positive
// rate when its count reaches capacity, a little above, never below. After t
// random keys the rate is r(t) = BlockedFalsePositiveRate(m, k, t) (keys
// that test present set no bit, so the bits are those of t keys), and the
// count is c(t) = integral of (1 - r) from 0 to t. It sums c in 64 steps of
// capacity/64 keys with r at the end of each step, which underestimates c as
// r grows, so the t found for c = capacity (interpolated within its step) is
// at or above the true one. It is 1 if c stops short of capacity.
func blockedFullRate(capacity, m uint64, k uint) float64 {
	const steps = 64
	n := float64(capacity)
	dt := n / steps
	var c, t float64
	for {
		r := BlockedFalsePositiveRate(m, k, uint64(math.Ceil(t+dt)))
		if r > 1-1e-6 || t > float64(MaxBits) {
			return 1
		}
		if c+(1-r)*dt >= n {
			t += (n - c) / (1 - r)
			return BlockedFalsePositiveRate(m, k, uint64(math.Ceil(t)))
		}
		c += (1 - r) * dt
		t += dt
	}
}
