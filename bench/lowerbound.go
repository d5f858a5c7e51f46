package main

import (
	"math/bits"
	"unsafe"

	"github.com/spaolacci/murmur3"

	"github.com/bloomfilters/bloom"
)

// lowerBound is the hand-written reference filter of issue 2: the same hash
// (murmur3.Sum128WithSeed with bloom.DefaultSeed), the same positions as
// bloom.AppendLocations documents, the same multiply-shift and the same Count
// bookkeeping as bloom.BloomFilter, on a plain []uint64 read and written
// through unsafe pointers without bounds checks and without any
// configurability. Nothing a general-purpose filter must do is left out, so
// it is the speed the library can at best reach.
type lowerBound struct {
	words []uint64
	m     uint64
	k     uint
	count uint64
}

const (
	golden = 0x9E3779B97F4A7C15
	mixer  = 0x94D049BB133111EB
)

func newLowerBound(m uint64, k uint) *lowerBound {
	return &lowerBound{words: make([]uint64, (m+63)/64), m: m, k: k}
}

func (f *lowerBound) Add(key []byte) {
	h1, h2 := murmur3.Sum128WithSeed(key, bloom.DefaultSeed)
	base := unsafe.Pointer(unsafe.SliceData(f.words))
	m := f.m
	var fresh uint64
	x, y, c := h1, h2, uint64(0)
	for range f.k {
		p, _ := bits.Mul64((x^x>>32)*mixer, m)
		w := (*uint64)(unsafe.Add(base, (p>>6)*8))
		mask := uint64(1) << (p & 63)
		fresh |= mask &^ *w
		*w |= mask
		c += golden
		x += y
		y += c
	}
	if fresh != 0 {
		f.count++
	}
}

func (f *lowerBound) Test(key []byte) bool {
	h1, h2 := murmur3.Sum128WithSeed(key, bloom.DefaultSeed)
	base := unsafe.Pointer(unsafe.SliceData(f.words))
	m := f.m
	x, y, c := h1, h2, uint64(0)
	for range f.k {
		p, _ := bits.Mul64((x^x>>32)*mixer, m)
		if *(*uint64)(unsafe.Add(base, (p>>6)*8))&(1<<(p&63)) == 0 {
			return false
		}
		c += golden
		x += y
		y += c
	}
	return true
}
