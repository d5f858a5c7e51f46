package bloom

import (
	"slices"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/format"
)

// Header is everything a BloomFilter holds besides its bits: the fields of
// its binary header (see the package doc). Header returns a filter's, and
// FromWords builds a filter from one and the bits, so that other stores (the
// redisbloom module keeps the bits in Redis) can move a filter in and out
// without writing the binary format by hand.
//
// The layout must be stated: FromWords refuses a Header whose Layout is 0,
// such as one built field by field by code written before Layout existed,
// rather than read a blocked filter's words as a classic filter's (which
// would answer "absent" for keys that were added).
type Header struct {
	Bits      uint64  // m, the size in bits, in [1, MaxBits]
	Hashes    uint    // k, the number of hash functions, in [1, MaxHashes]
	Seed      uint32  // the murmur3 seed
	Capacity  uint64  // the keys the filter was sized for, at least 1
	ErrorRate float64 // the target false-positive rate at Capacity, in (0, 1)
	Count     uint64  // what Count returns, at most the number of set bits
	Layout    Layout  // LayoutClassic or LayoutBlocked (Bits is then a multiple of BlockBits); never 0

	// Blocked reports whether Layout is LayoutBlocked.
	//
	// Deprecated: Blocked mirrors Layout, which states the layout
	// explicitly; FromWords refuses a Header where the two disagree.
	Blocked bool
}

// Header returns the filter's size, hash count, seed, capacity, error rate,
// count and layout: a zero Header for a zero BloomFilter. Its Count is at most the
// number of set bits, even while other goroutines add to a Concurrent
// filter, and stays so for words that AppendWords returns after it: bits are
// only ever set. O(m/64) for a concurrent filter, which counts the bits.
func (f *BloomFilter) Header() Header {
	if f.k == 0 {
		return Header{}
	}
	return Header{
		Bits: f.m, Hashes: f.k, Seed: f.seed,
		Capacity: f.capacity, ErrorRate: f.errorRate, Count: f.sharedCount(),
		Layout: layoutOf(f.blocked), Blocked: f.blocked,
	}
}

// AppendWords appends a copy of the filter's bits to dst as ceil(Bits()/64)
// 64-bit words and returns the extended slice: bit i of the filter is bit
// i%64 of word i/64, and the bits at Bits() and above are 0. It appends
// nothing for a zero BloomFilter. On a Concurrent filter it may run during
// writes, like Clone. O(m/64); it allocates only if dst lacks room.
func (f *BloomFilter) AppendWords(dst []uint64) []uint64 {
	if f.conc == nil {
		return append(dst, f.words...)
	}
	dst = slices.Grow(dst, len(f.words))
	for i := range f.words {
		dst = append(dst, atomic.LoadUint64(&f.words[i]))
	}
	return dst
}

// FromWords returns a filter with the fields of h and the bits of words,
// laid out as AppendWords returns them: FromWords(f.Header(),
// f.AppendWords(nil)) is Equal to f. It copies words. Options: Concurrent;
// Seed is allowed only if it agrees with h.Seed, Blocked only if h.Layout is
// LayoutBlocked. It returns an error wrapping ErrInvalidParameter, before it
// allocates, for a field of h out of the range Header gives (including a
// Layout of 0, which states no layout, and a Blocked that contradicts
// Layout), for len(words) other than ceil(h.Bits/64), for a bit set at
// h.Bits or above, for a Count above the number of set bits, and for an
// option that contradicts h or applies only to ScalableBloomFilter.
func FromWords(h Header, words []uint64, opts ...Option) (*BloomFilter, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if err := s.plainOnly(); err != nil {
		return nil, err
	}
	if s.seedSet && s.seed != h.Seed {
		return nil, paramError("Seed(%#x) contradicts the seed %#x of the header", s.seed, h.Seed)
	}
	s.seed = h.Seed
	switch {
	case h.Layout == 0:
		return nil, paramError("Header.Layout must be stated (LayoutClassic or LayoutBlocked), got 0: a Header built before Layout existed must set it")
	case h.Layout != LayoutClassic && h.Layout != LayoutBlocked:
		return nil, paramError("Header.Layout must be LayoutClassic or LayoutBlocked, got %v", h.Layout)
	case h.Blocked != (h.Layout == LayoutBlocked):
		return nil, paramError("Header.Blocked %v contradicts Header.Layout %v", h.Blocked, h.Layout)
	case s.blocked && h.Layout != LayoutBlocked:
		return nil, paramError("Blocked contradicts the classic layout of the header")
	case s.classic && h.Layout != LayoutClassic:
		return nil, paramError("Classic contradicts the blocked layout of the header")
	}
	s.blocked = h.Layout == LayoutBlocked
	if err := checkSize(h.Bits, h.Hashes); err != nil {
		return nil, err
	}
	if s.blocked && h.Bits%BlockBits != 0 {
		return nil, paramError("Bits must be a multiple of %d with Blocked, got %d", BlockBits, h.Bits)
	}
	switch {
	case h.Capacity == 0:
		return nil, paramError("Capacity must be at least 1, got 0")
	case !(h.ErrorRate > 0 && h.ErrorRate < 1):
		return nil, paramError("ErrorRate must be in (0, 1), got %v", h.ErrorRate)
	case uint64(len(words)) != (h.Bits+63)/64:
		return nil, paramError("%d bits need %d words, got %d", h.Bits, (h.Bits+63)/64, len(words))
	}
	if format.Padding(h.Bits, words) {
		return nil, paramError("bits set at %d bits or above", h.Bits)
	}
	if set := format.SetBits(words); h.Count > set {
		return nil, paramError("Count %d exceeds the %d set bits", h.Count, set)
	}
	f, err := newFilter(h.Bits, h.Hashes, h.Capacity, h.ErrorRate, s)
	if err != nil {
		return nil, err
	}
	copy(f.words, words)
	f.setCount(h.Count)
	return f, nil
}
