// Package classic is the classic layout of a filter: the k positions of a
// key are spread over all m bits. This package holds the positions (the
// format promise of bloom.AppendLocations), the single-key add and test of
// a plain filter and their atomic forms for a Concurrent one, the batch
// pipelines (batch.go), the side-by-side test of the sub-filters of a
// ScalableBloomFilter (chain.go) and the false-positive rate that the root
// package sizes filters by (rate.go).
//
// Positions: with (h1, h2) the 128-bit murmur3 hash of a key and all
// arithmetic mod 2^64, position i is Locate(x_i, m), with x_0 = h1,
// x_{i+1} = x_i + y_i, y_0 = h2 and y_{i+1} = y_i + (i+1)*golden (enhanced
// double hashing). Every loop over positions in this package writes that
// recurrence out by hand, on purpose: a shared helper measured about 8%
// slower on Test of present keys. The root tests TestGoldenLocations,
// TestNoFalseNegatives and TestScalableSideBySideProbing keep the copies in
// step.
package classic

import (
	"math/bits"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/layout"

	// The compiler inlines sync.Mutex.Lock and Unlock into AddLocked only
	// if this package imports sync itself (go build -gcflags=-m).
	_ "sync"
)

// golden is 2^64 divided by the golden ratio. Scaling the enhanced double
// hashing correction by it makes the correction reach the high bits that the
// multiply-shift reads.
const golden = 0x9E3779B97F4A7C15

// mixer is the multiplier of the xorshift-multiply in Locate (the second
// multiplier of the SplitMix64 finalizer).
const mixer = 0x94D049BB133111EB

// Locate maps the hash value x of one position onto [0, m): an
// xorshift-multiply, then a multiply-shift.
//
// The mix matters for small filters. Double hashing makes the positions of a
// key an affine function of (h1, h2); under a bare multiply-shift two keys
// whose h1 and h2 are close get the same k positions, with a probability of
// the order of 1/m^2 per pair of keys. At m = 336 bits, k = 23, n = 10 that
// alone made the false-positive rate 10x its 1e-7 target. The xorshift is not
// affine, so after it positions of different keys no longer move together.
func Locate(x, m uint64) uint64 {
	p, _ := bits.Mul64(Mix(x), m)
	return p
}

// Mix is the xorshift-multiply of Locate, for callers that reuse it for
// several m.
func Mix(x uint64) uint64 {
	return (x ^ x>>32) * mixer
}

// AppendPositions appends to dst the k positions in [0, m) of the key hashed
// to (h1, h2), in order, and returns the extended slice.
func AppendPositions(dst []uint64, h1, h2 uint64, m uint64, k uint) []uint64 {
	x, y, c := h1, h2, uint64(0)
	for range k {
		p := Locate(x, m)
		dst = append(dst, p)
		c += golden
		x += y
		y += c
	}
	return dst
}

// Add sets the positions of the key hashed to (h1, h2) in b, which is not
// Concurrent, and reports whether all of them were already set; the caller
// counts the key when they were not.
//
// The compiler (Go 1.26) spills the loaded word of the loop to the stack and
// reloads it, and spills y, for lack of registers around the MULQ of Locate;
// writing the update as old := w[i]; w[i] = old | mask did not change that.
// The reloads hit the store buffer and are off the path of the cache misses.
func Add(w []uint64, m uint64, k uint, h1, h2 uint64) (present bool) {
	var fresh uint64
	x, y, c := h1, h2, uint64(0)
	for range k {
		p := Locate(x, m)
		i, mask := p>>6, uint64(1)<<(p&63)
		fresh |= mask &^ w[i]
		w[i] |= mask
		c += golden
		x += y
		y += c
	}
	return fresh == 0
}

// Test reports whether every position of the key hashed to (h1, h2) is set
// in b, which is not Concurrent. It is not inlined into its callers (go build
// -gcflags=-m: cost 91, budget 80), and inlining it would save one call in a
// path that pays a murmur3 pass and, on large filters, cache misses.
func Test(w []uint64, m uint64, k uint, h1, h2 uint64) bool {
	x, y, c := h1, h2, uint64(0)
	for range k {
		p := Locate(x, m)
		if w[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		c += golden
		x += y
		y += c
	}
	return true
}

// TestAtomic is Test with atomic loads, for Concurrent filters.
func TestAtomic(w []uint64, m uint64, k uint, h1, h2 uint64) bool {
	x, y, c := h1, h2, uint64(0)
	for range k {
		p := Locate(x, m)
		if atomic.LoadUint64(&w[p>>6])&(1<<(p&63)) == 0 {
			return false
		}
		c += golden
		x += y
		y += c
	}
	return true
}

// Unset returns a mask of the positions of the key hashed to (h1, h2) whose
// bits are clear in b, loaded atomically: bit i for the i-th position. Unlike
// TestAtomic it loads every position, so that the cache misses overlap, and
// Set then finds the words in the cache: an atomic OR waits for its memory
// before anything after it runs.
func Unset(w []uint64, m uint64, k uint, h1, h2 uint64) (unset uint64) {
	x, y, c := h1, h2, uint64(0)
	for i := range k {
		p := Locate(x, m)
		unset |= (atomic.LoadUint64(&w[p>>6])>>(p&63)&1 ^ 1) << i
		c += golden
		x += y
		y += c
	}
	return unset
}

// Set sets with atomic ORs the positions of the key hashed to (h1, h2) that
// unset marks, as Unset returns it, and reports whether it set a bit that
// was clear. The other positions were set and stay set. It skips the OR, and
// so taking the cache line from other cores, for bits that have been set
// since.
func Set(w []uint64, m uint64, k uint, h1, h2, unset uint64) (fresh bool) {
	var flipped uint64
	x, y, c := h1, h2, uint64(0)
	for i := 0; unset>>i != 0; i++ {
		if unset>>i&1 != 0 {
			p := Locate(x, m)
			word, mask := &w[p>>6], uint64(1)<<(p&63)
			if atomic.LoadUint64(word)&mask == 0 {
				flipped |= mask &^ atomic.OrUint64(word, mask)
			}
		}
		c += golden
		x += y
		y += c
	}
	return flipped != 0
}

// AddLocked is Add for a Concurrent filter with the locks l. A key that
// tests present needs no lock. Otherwise the lock of the key serializes it
// with callers adding the same key, so exactly one of them sets a clear bit
// and counts it, in its stripe.
func AddLocked(w []uint64, m uint64, k uint, h1, h2 uint64, l *layout.Locks) (present bool) {
	unset := Unset(w, m, k, h1, h2)
	if unset == 0 {
		return true
	}
	st := l.Of(h2)
	st.Mu.Lock()
	fresh := Set(w, m, k, h1, h2, unset)
	if fresh {
		st.Count.Add(1)
	}
	st.Mu.Unlock()
	return !fresh
}
