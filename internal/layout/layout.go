// Package layout is what the two layouts of a filter, internal/classic and
// internal/blocked, have in common: the bits they probe (Bits), the keys of a
// batch call and their hashes (Key, Hash, HashRound), the locks of a
// Concurrent filter (Locks), and the work meter of the sizing a decoder does
// (Meter, meter.go).
//
// A layout package holds everything that depends on where a key's bits lie:
// its positions, its single-key add and test (plain and with atomics, for
// Concurrent filters), and its batch pipeline. The root package holds the
// public types and dispatches to the layout a filter records; a new layout
// is a new package beside the two.
package layout

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/murmur"
)

// Bits is the bit array of one filter as the layouts probe it: M bits in
// Words (len(Words) == ceil(M/64), the bits at M and above always 0) and K
// positions per key. A Bits is passed by value; it shares Words with the
// filter it describes.
type Bits struct {
	Words []uint64
	M     uint64
	K     uint
}

// Key is what the single-key code and the batch calls take keys as: bytes,
// strings, or 64-bit hashes (the hashed calls, such as AddHash).
type Key interface{ []byte | string | uint64 }

// KeyBytes returns the bytes of *k that murmur3 hashes, without copying:
// those of a string or a slice, or for a hash (K uint64) its 8 bytes, which
// it puts in little-endian order in *k (a no-op on little-endian machines),
// so that the bits of a hash are the same on every machine.
func KeyBytes[K Key](k *K) []byte {
	// A uint64 is the only key type of 8 bytes (a string has 16, a slice
	// 24). The compiler makes one copy of a generic function per shape of
	// K and knows the size in each (go build -gcflags=-m shows the test as
	// uintptr(24) == uintptr(8)), so it costs nothing at run time.
	if unsafe.Sizeof(*k) == 8 {
		return HashBytes((*uint64)(unsafe.Pointer(k)))
	}
	// A string and a slice both start with the pointer to their bytes and
	// their length; murmur3 only reads the bytes.
	b := (*struct {
		p *byte
		n int
	})(unsafe.Pointer(k))
	return unsafe.Slice(b.p, b.n)
}

// Hash is the 128-bit murmur3 hash of a key.
type Hash struct{ H1, H2 uint64 }

// HashRound hashes keys into h, which is at least as long, with seed.
func HashRound[K Key](h []Hash, keys []K, seed uint32) {
	h = h[:len(keys)]
	for i, k := range keys {
		b := KeyBytes(&k)
		if unsafe.Sizeof(k) == 8 || len(b) != 16 {
			// A hash (see KeyBytes), Sum128's path for 8 bytes, or a key
			// of another length: one call, as before.
			h[i].H1, h[i].H2 = murmur.Sum128(b, seed)
			continue
		}
		// A key of 16 bytes: murmur.Sum128 written out from its parts, as
		// the single-key calls do, without a call.
		h1, h2 := murmur.Blocks(b, seed)
		h[i].H1, h[i].H2 = murmur.Finish(h1, h2, 16)
	}
}

// The number of stripes in a Locks is a power of two between MinStripes and
// MaxStripes, about one per StripeWords words of the filter: the locks take
// about 1/8 of the filter's memory, at least 1 KiB and at most 64 KiB (from
// 512 KiB filters up). A lock is held while a new key sets its k bits, so
// two writers only wait for each other when they add keys of the same stripe
// at the same moment: 16 stripes keep that rare for the few writers a small
// filter sees, and large filters, whose writes miss the caches and hold a
// lock longer, get the 1024 that every filter had before.
const (
	MinStripes  = 16
	MaxStripes  = 1024
	StripeWords = 64
)

// Locks is the striped locks of a Concurrent filter, each with the count of
// the keys added under it.
type Locks struct {
	stripes []Stripe // len is a power of two
	shift   uint     // 64 - log2(len(stripes))
}

// Stripe is a lock and the keys counted under it, alone on a cache line: a
// writer writes no memory that writers of other keys write, but for the bits.
type Stripe struct {
	Count atomic.Uint64
	Mu    sync.Mutex
	_     [64 - 8 - unsafe.Sizeof(sync.Mutex{})]byte
}

// NewLocks returns the locks for a filter of the given number of 64-bit
// words; a ScalableBloomFilter, which grows, passes MaxStripes * StripeWords.
func NewLocks(words int) *Locks {
	return newLocks(StripesFor(words))
}

func newLocks(n int) *Locks {
	return &Locks{stripes: make([]Stripe, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
}

// StripesFor returns the number of stripes for a filter of the given number
// of words.
func StripesFor(words int) int {
	n := MinStripes
	for n < MaxStripes && n*StripeWords < words {
		n *= 2
	}
	return n
}

// Fresh returns new locks, with counts of 0, as many as l has.
func (l *Locks) Fresh() *Locks { return newLocks(len(l.stripes)) }

// Len returns the number of stripes.
func (l *Locks) Len() int { return len(l.stripes) }

// Of returns the stripe of a key whose hash has h2 as its second half.
func (l *Locks) Of(h2 uint64) *Stripe { return &l.stripes[h2>>l.shift] }

// Count returns the sum of the stripes' counts.
func (l *Locks) Count() uint64 {
	var n uint64
	for i := range l.stripes {
		n += l.stripes[i].Count.Load()
	}
	return n
}

// SetCount makes the counts sum to n; nothing else may run.
func (l *Locks) SetCount(n uint64) {
	for i := range l.stripes {
		l.stripes[i].Count.Store(0)
	}
	l.stripes[0].Count.Store(n)
}

// AddCount adds d to the sum of the counts, modulo 2^64 like the sum, while
// writers may count keys in their own stripes.
func (l *Locks) AddCount(d uint64) { l.stripes[0].Count.Add(d) }

// Conc is the state of a Concurrent filter, which replaces a plain filter's
// count.
type Conc struct {
	// Locks serializes writers of the same key and keeps the count, in
	// parts. It is nil in the sub-filters of a ScalableBloomFilter, which
	// lock for themselves and keep the count in Count.
	Locks *Locks
	Count atomic.Uint64

	// Reserved is, in a sub-filter of a ScalableBloomFilter, Count plus the
	// keys that have taken a slot and not yet set their bits: see
	// ScalableBloomFilter.reserve.
	Reserved atomic.Uint64
}

// Load returns the count.
func (c *Conc) Load() uint64 {
	if c.Locks == nil {
		return c.Count.Load()
	}
	return c.Locks.Count()
}

// Store sets the count; nothing else may run.
func (c *Conc) Store(n uint64) {
	if c.Locks == nil {
		c.Count.Store(n)
		c.Reserved.Store(n)
		return
	}
	c.Locks.SetCount(n)
}

// NewLocks returns the locks for a copy of a filter with state c: new ones,
// or nil for a sub-filter of a ScalableBloomFilter.
func (c *Conc) NewLocks() *Locks {
	if c.Locks == nil {
		return nil
	}
	return c.Locks.Fresh()
}

// NewSet returns an empty bit set of m bits for a filter's bits, cache-line
// aligned if aligned (the blocked layout). Every filter's words come from
// here or from the decoders, through internal/hugepage: at 10^8 keys huge
// pages made random loads ~1.5x faster (TLB misses on top of cache misses
// otherwise).
func NewSet(m uint64, aligned bool) *bitset.BitSet {
	if !aligned {
		return bitset.FromWithLength(uint(m), hugepage.Words((m+63)/64))
	}
	return bitset.FromWithLength(uint(m), hugepage.AlignedWords((m+63)/64))
}

// CloneSet returns a copy of set, of m bits, made by NewSet.
func CloneSet(set *bitset.BitSet, m uint64, aligned bool) *bitset.BitSet {
	c := NewSet(m, aligned)
	copy(c.Words(), set.Words())
	return c
}
