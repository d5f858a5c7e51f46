// Package blocked is the blocked layout of a filter: all k bits of a key lie
// in one block of BlockBits (512) bits, one 64-byte cache line, so that an
// add or a test costs one cache miss per key instead of up to k.
//
// A key's block is the high half of its murmur3 hash h1 mapped onto the
// blocks with a multiply-shift; its k distinct positions within the block
// come from the low half h2: the candidates are the seven 9-bit fields of
// h2, then of splitmix64(h2 + t*golden) for t = 1, 2, ..., from the low bits
// up, and a candidate already taken is skipped (the format promise of
// bloom.AppendBlockedLocations, AppendPositions here).
//
// This file holds that math: blocks, candidates, the checks that the first
// candidates are distinct, and masks. key.go has the single-key add and
// test, plain and atomic (for Concurrent filters); batch.go the batch
// pipelines; chain.go the test of the sub-filters of a ScalableBloomFilter;
// rate.go the false-positive rate that the root package sizes filters by.
// For k = 8, 9 (p near 1e-3), internal/blockbits compares and sets the
// candidates in AVX-512 assembly where the CPU has it.
package blocked

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"
)

// BlockBits is the size of a block, in bits: one 64-byte cache line.
const BlockBits = 512

// golden is 2^64 divided by the golden ratio: the step between the words of
// candidates after the first.
const golden = 0x9E3779B97F4A7C15

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

// Block returns the 8 words of the block of b that the key whose hash has h1
// as its first half falls in.
func Block(w []uint64, m uint64, h1 uint64) *[8]uint64 {
	i := blockOf(h1, m/BlockBits)
	return (*[8]uint64)(w[i*8 : i*8+8])
}

// Mask returns the k distinct in-block positions of a key whose hash has h2
// as its second half, as a mask of the block's 8 words: candidates are the
// 9-bit fields of h2, then of splitmix(h2 + i*golden) for i = 1, 2, ...,
// seven per word from the low bits up, and a candidate already taken is
// skipped. AppendPositions documents the same sequence; Test and addFast
// write it out again, without a mask, and so does the assembly of
// internal/blockbits for k = 8, 9.
func Mask(h2 uint64, k uint) (m [8]uint64) {
	if w1, ok := firstDistinct(h2, k); ok {
		for p, n := h2, min(k, FieldsPerWord); n > 0; n-- {
			m[p>>6&7] |= 1 << (p & 63)
			p >>= 9
		}
		for p := w1; k > FieldsPerWord; k-- {
			m[p>>6&7] |= 1 << (p & 63)
			p >>= 9
		}
		return m
	}
	return repeatMask(h2, k)
}

// repeatMask is Mask for any key, and the way there for one whose first k
// candidates repeat (about k(k-1)/1024 of keys, 7% at k = 9): the first k
// candidates are positions of the key whatever they are, so their bits go
// into the mask without a check, and only the candidates after them are
// checked one by one, until k bits are set; after one repeat, the usual
// case, that is one candidate.
func repeatMask(h2 uint64, k uint) (m [8]uint64) {
	c := newCandidates(h2)
	for range k {
		p := c.next()
		m[p>>6] |= 1 << (p & 63)
	}
	var n uint
	for _, x := range m {
		n += uint(bits.OnesCount64(x))
	}
	for n < k {
		p := c.next()
		if i, bit := p>>6, uint64(1)<<(p&63); m[i]&bit == 0 {
			m[i] |= bit
			n++
		}
	}
	return m
}

// candidates walks the in-block candidates of a key (see Mask).
type candidates struct {
	w, state uint64 // the word being read, and its splitmix input
	left     int    // candidates left in w
}

func newCandidates(h2 uint64) candidates {
	return candidates{w: h2, state: h2, left: FieldsPerWord}
}

// next returns the next candidate, in [0, BlockBits).
func (c *candidates) next() uint64 {
	if c.left == 0 {
		c.state += golden
		c.w, c.left = splitmix(c.state), FieldsPerWord
	}
	p := c.w & (BlockBits - 1)
	c.w >>= 9
	c.left--
	return p
}

// FieldsPerWord is the number of 9-bit candidates a 64-bit word gives.
const FieldsPerWord = 7

// fieldLows has the lowest bit of each of the seven 9-bit fields of a word
// set, fieldHighs the highest.
const (
	fieldLows  = 0x0040201008040201
	fieldHighs = fieldLows << 8
	FieldBits  = 1<<63 - 1 // the bits of the seven fields
)

// zeroFields returns a value that is nonzero if and only if some field of x
// whose highest bit is in highs is zero: the zero-byte test of Hacker's
// Delight (6-1) with 9-bit fields. A borrow out of a zero field can flag the
// field above it too, but only when a field below is zero already.
func zeroFields(x, highs uint64) uint64 {
	return (x - fieldLows) &^ x & highs
}

// pairMasks[d-1][k], for k <= 7 and d = 1, 2, 3, has the highest bit of
// field i set when fields i and (i+d) mod 7 are both among the first k:
// the pairs that DistinctFields compares in its round d. Every pair of the
// seven fields is (i+d) mod 7 apart for one d in 1..3.
var pairMasks = func() (t [3][FieldsPerWord + 1]uint64) {
	for d := range t {
		for k := range t[d] {
			for i := range k {
				if (i+d+1)%FieldsPerWord < k {
					t[d][k] |= 1 << (9*i + 8)
				}
			}
		}
	}
	return t
}()

// DistinctFields reports whether the first k <= 7 fields of w are distinct;
// the bit of w above its fields, bit 63, must be clear. Round d compares
// every field i with field (i+d) mod 7, all at once: w xor w rotated by d
// fields has a zero field where the two are equal. It is small enough to be
// inlined (cost 80 of 80: masking bit 63 here would cross that).
func DistinctFields(w uint64, k uint) bool {
	k &= 7
	x1 := w ^ (w>>9 | w<<54)
	x2 := w ^ (w>>18 | w<<45)
	x3 := w ^ (w>>27 | w<<36)
	return (x1-fieldLows)&^x1&pairMasks[0][k]|(x2-fieldLows)&^x2&pairMasks[1][k]|(x3-fieldLows)&^x3&pairMasks[2][k] == 0
}

// distinct7 is DistinctFields(w, 7) with the masks folded into one: with
// all seven fields in play every round compares seven pairs.
func distinct7(w uint64) bool {
	x1 := w ^ (w>>9 | w<<54)
	x2 := w ^ (w>>18 | w<<45)
	x3 := w ^ (w>>27 | w<<36)
	return ((x1-fieldLows)&^x1|(x2-fieldLows)&^x2|(x3-fieldLows)&^x3)&fieldHighs == 0
}

// laterDistinct2 reports, for n1 = 1 or 2 (k = 8 or 9, p near 1e-3),
// whether the first n1 fields of w1 differ from each other and from the
// seven fields of h2, written out so that it inlines: h2 ^ c*fieldLows has
// a zero field where h2 has c. laterDistinct is the general case.
func laterDistinct2(h2, w1 uint64, n1 uint) bool {
	a0, a1 := w1&(BlockBits-1), w1>>9&(BlockBits-1)
	if n1 == 1 {
		a1 = a0
	}
	return zeroFields(h2^a0*fieldLows, fieldHighs)|zeroFields(h2^a1*fieldLows, fieldHighs) == 0 && (n1 == 1 || a0 != a1)
}

// laterDistinct reports, for n1 in [1, 7], whether the first n1 fields of
// w1 differ from each other and from the seven fields of h2.
func laterDistinct(h2, w1 uint64, n1 uint) bool {
	var zero uint64
	for j := range n1 {
		zero |= zeroFields(h2^(w1>>(9*j)&(BlockBits-1))*fieldLows, fieldHighs)
	}
	return zero == 0 && DistinctFields(w1&FieldBits, n1)
}

// firstDistinct reports whether the first k candidates of the in-block
// sequence (see Mask) are distinct, so that they are the key's positions,
// for k <= 2*FieldsPerWord, and returns the second word of candidates,
// w1 = splitmix(h2 + golden), when k needs it: the key's positions are then
// the first min(k, 7) fields of h2 and the first k-7 of w1. It returns false
// for larger k, and otherwise with a probability of about k(k-1)/1024, when
// the callers take the general loop. Callers check k <= 7 with
// DistinctFields first, which inlines.
func firstDistinct(h2 uint64, k uint) (w1 uint64, ok bool) {
	if k <= FieldsPerWord {
		return 0, DistinctFields(h2&FieldBits, k)
	}
	if k > 2*FieldsPerWord || !distinct7(h2&FieldBits) {
		return 0, false
	}
	w1 = splitmix(h2 + golden)
	if n1 := k - FieldsPerWord; n1 <= 2 {
		return w1, laterDistinct2(h2, w1, n1)
	}
	return w1, laterDistinct(h2, w1, k-FieldsPerWord)
}

// AppendPositions appends to dst the k positions in [0, m) of the key hashed
// to (h1, h2) in a filter of m bits, a positive multiple of BlockBits, in
// their order, and returns the extended slice. They are distinct and lie in
// one block.
func AppendPositions(dst []uint64, h1, h2 uint64, m uint64, k uint) []uint64 {
	base := blockOf(h1, m/BlockBits) * BlockBits
	c := newCandidates(h2)
	var seen [8]uint64
	for n := uint(0); n < k; {
		p := c.next()
		if bit := uint64(1) << (p & 63); seen[p>>6]&bit == 0 {
			seen[p>>6] |= bit
			dst = append(dst, base+p)
			n++
		}
	}
	return dst
}

// holdsMask reports whether blk has every bit of m set.
func holdsMask(blk, m *[8]uint64) bool {
	return m[0]&^blk[0]|m[1]&^blk[1]|m[2]&^blk[2]|m[3]&^blk[3]|
		m[4]&^blk[4]|m[5]&^blk[5]|m[6]&^blk[6]|m[7]&^blk[7] == 0
}

// holdsMaskAtomic is holdsMask with atomic loads of blk, for the blocks of
// concurrent filters.
func holdsMaskAtomic(blk, m *[8]uint64) bool {
	var miss uint64
	for i := range blk {
		miss |= m[i] &^ atomic.LoadUint64(&blk[i])
	}
	return miss == 0
}

// ErrorRate returns the false-positive rate of b as its bits stand, loaded
// atomically if conc: the mean over its blocks of C(x, k)/C(512, k), x the
// block's set bits. O(m/64).
func ErrorRate(b layout.Bits, conc bool) float64 {
	var pow [BlockBits + 1]float64
	for x := range pow {
		pow[x] = 1
		for i := range int(b.K) {
			pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
		}
	}
	var sum float64
	for i := 0; i < len(b.Words); i += 8 {
		x := 0
		for j := i; j < i+8; j++ {
			if conc {
				x += bits.OnesCount64(atomic.LoadUint64(&b.Words[j]))
			} else {
				x += bits.OnesCount64(b.Words[j])
			}
		}
		sum += pow[x]
	}
	return sum / float64(len(b.Words)/8)
}

// Stats counts the set bits of b and computes its false-positive rate as
// ErrorRate does, in one pass that reads each word once (atomically if
// conc), so that both describe the same reading of the words.
func Stats(b layout.Bits, conc bool) (set uint64, rate float64) {
	var pow [BlockBits + 1]float64
	for x := range pow {
		pow[x] = 1
		for i := range int(b.K) {
			pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
		}
	}
	var sum float64
	for i := 0; i+8 <= len(b.Words); i += 8 {
		x := 0
		for j := i; j < i+8; j++ {
			if conc {
				x += bits.OnesCount64(atomic.LoadUint64(&b.Words[j]))
			} else {
				x += bits.OnesCount64(b.Words[j])
			}
		}
		set += uint64(x)
		sum += pow[x]
	}
	if len(b.Words) < 8 {
		return 0, 0
	}
	return set, sum / float64(len(b.Words)/8)
}
