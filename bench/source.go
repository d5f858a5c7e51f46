package main

import (
	"github.com/bits-and-blooms/bitset"
	"github.com/spaolacci/murmur3"

	"github.com/bloomfilters/bloom"
)

// sourceFilter is the design this library replaces: k separate murmur3
// hashes of the key with seeds 0..k-1, position = hash mod m, on a bitset.
// It is sized like ours (bloom.OptimalBits and bloom.OptimalHashes).
type sourceFilter struct {
	set      *bitset.BitSet
	m        uint64
	k        uint32
	count    uint64
	capacity uint64
}

func newSourceFilter(capacity uint64, errorRate float64) *sourceFilter {
	m := bloom.OptimalBits(capacity, errorRate)
	k := bloom.OptimalHashes(m, capacity)
	return &sourceFilter{set: bitset.New(uint(m)), m: m, k: uint32(k), capacity: capacity}
}

func (f *sourceFilter) Add(key []byte) {
	for i := range f.k {
		f.set.Set(uint(murmur3.Sum64WithSeed(key, i) % f.m))
	}
	f.count++
}

func (f *sourceFilter) Test(key []byte) bool {
	for i := range f.k {
		if !f.set.Test(uint(murmur3.Sum64WithSeed(key, i) % f.m)) {
			return false
		}
	}
	return true
}

// sourceScalable is the source design's scalable filter: when the newest
// sub-filter holds its capacity, a new one of twice the capacity and the
// same error rate is appended. Keys go into the newest; a lookup asks every
// sub-filter. Because every sub-filter has the full error rate, the
// overall rate grows with the number of sub-filters.
type sourceScalable struct {
	filters   []*sourceFilter
	errorRate float64
}

func newSourceScalable(initial uint64, errorRate float64) *sourceScalable {
	return &sourceScalable{
		filters:   []*sourceFilter{newSourceFilter(initial, errorRate)},
		errorRate: errorRate,
	}
}

func (s *sourceScalable) Add(key []byte) {
	last := s.filters[len(s.filters)-1]
	if last.count >= last.capacity {
		last = newSourceFilter(2*last.capacity, s.errorRate)
		s.filters = append(s.filters, last)
	}
	last.Add(key)
}

func (s *sourceScalable) Test(key []byte) bool {
	for _, f := range s.filters {
		if f.Test(key) {
			return true
		}
	}
	return false
}

func (s *sourceScalable) bits() uint64 {
	var m uint64
	for _, f := range s.filters {
		m += f.m
	}
	return m
}
