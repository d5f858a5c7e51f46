package bloom

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// Header is everything a BloomFilter holds besides its bits: the fields of
// its binary header (see the package doc). Header returns a filter's, and
// FromWords builds a filter from one and the bits, so that other stores (the
// redisbloom module keeps the bits in Redis) can move a filter in and out
// without writing the binary format by hand.
type Header struct {
	Bits      uint64  // m, the size in bits, in [1, MaxBits]
	Hashes    uint    // k, the number of hash functions, in [1, MaxHashes]
	Seed      uint32  // the murmur3 seed
	Capacity  uint64  // the keys the filter was sized for, at least 1
	ErrorRate float64 // the target false-positive rate at Capacity, in (0, 1)
	Count     uint64  // what Count returns, at most the number of set bits
	Blocked   bool    // the blocked layout (see Blocked); Bits is then a multiple of BlockBits
}

// Header returns the filter's size, hash count, seed, capacity, error rate
// and count: a zero Header for a zero BloomFilter. Its Count is at most the
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
		Blocked: f.blocked,
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
// Seed is allowed only if it agrees with h.Seed. It returns an error wrapping
// ErrInvalidParameter, before it allocates, for a field of h out of the
// range Header gives, for len(words) other than ceil(h.Bits/64), for a bit
// set at h.Bits or above, for a Count above the number of set bits, and for
// an option that contradicts h or applies only to ScalableBloomFilter.
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
	if s.blocked && !h.Blocked {
		return nil, paramError("Blocked contradicts the classic layout of the header")
	}
	s.blocked = h.Blocked
	if err := checkSize(h.Bits, h.Hashes); err != nil {
		return nil, err
	}
	if h.Blocked && h.Bits%BlockBits != 0 {
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
	if r := h.Bits % 64; r != 0 && words[len(words)-1]>>r != 0 {
		return nil, paramError("bits set at %d bits or above", h.Bits)
	}
	var set uint64
	for _, w := range words {
		set += uint64(bits.OnesCount64(w))
	}
	if h.Count > set {
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

// Merge adds the keys of other to f, in place: afterwards Test on f reports
// true for every key added to either, and f is Equal to what f.Union(other)
// would have returned, its Count the EstimatedCount of the result. It returns
// an error wrapping ErrIncompatible, and leaves f unchanged, if their sizes,
// hash counts or seeds differ or either is nil or zero. O(m/64); it does not
// allocate.
//
// On a Concurrent f, Merge may run during Add, Test, TestAndAdd and the
// methods that only read f: it sets the bits with atomic ORs, so those keep
// their guarantees (of goroutines adding one new key, exactly one hears it is
// new, unless Merge brought the key in first, and then none does). Keys added
// during Merge make Count approximate, as they would Count after Union.
// other must not be modified during the call unless it is Concurrent.
// ScalableBloomFilter has no Merge: see its doc.
func (f *BloomFilter) Merge(other *BloomFilter) error {
	if err := f.compatible(other); err != nil {
		return err
	}
	if f.conc == nil {
		if other.conc == nil {
			for i, w := range other.words {
				f.words[i] |= w
			}
		} else {
			for i := range f.words {
				f.words[i] |= atomic.LoadUint64(&other.words[i])
			}
		}
		set := f.setBits()
		f.count = min(f.estimatedCountOf(set), set)
		return nil
	}
	for i := range f.words {
		w := other.word(i)
		// Skipping words that add nothing keeps the cache lines of f
		// shared with other cores where nothing changes.
		if w&^atomic.LoadUint64(&f.words[i]) != 0 {
			atomic.OrUint64(&f.words[i], w)
		}
	}
	set := f.setBits()
	want := min(f.estimatedCountOf(set), set)
	// Adds that count meanwhile go to their own stripes and stay counted:
	// the difference goes into one stripe, modulo 2^64 like the sum.
	f.conc.locks.stripes[0].count.Add(want - f.conc.load())
	return nil
}
