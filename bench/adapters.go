package main

import (
	bab "github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
	boom "github.com/tylertreat/BoomFilters"

	"github.com/bloomfilters/bloom"
)

// set is what the benchmark drives. Each adapter runs its own loops so that
// the calls inside them are direct calls on the concrete type, as in a
// user's program: one interface call per loop, not per key.
type set interface {
	// addRange adds keys from to to-1 of ks.
	addRange(ks *keySet, from, to int)
	// testRange tests keys from to to-1 of ks and returns how many are
	// reported present.
	testRange(ks *keySet, from, to int) int
}

// fixedImpl is a fixed-size filter (or the map) under comparison.
type fixedImpl struct {
	name  string
	short string // for benchmark names
	isMap bool   // does not depend on the error rate
	// costly implementations take seconds to build a filter of 10^7 keys;
	// above smallN keys they run in the first repetition only and at the
	// first error rate only, to keep the full run under ten minutes. None of
	// the targets involves them.
	costly bool
	build  func(n uint64, p float64) set
}

// Implementation names, used as row labels and to find the ratios.
const (
	nameOurs     = "bloomfilters/bloom, classic (ours)"
	nameLower    = "hand-written lower bound"
	nameBAB      = "bits-and-blooms/bloom/v3"
	nameBoom     = "tylertreat/BoomFilters"
	nameBlobloom = "greatroar/blobloom + xxhash"
	nameSource   = "source design (k murmur3 seeds, mod m)"
	nameMap      = "map[string]struct{}"
)

var fixedImpls = []fixedImpl{
	{name: nameOurs, short: "ours", build: func(n uint64, p float64) set {
		f, err := bloom.New(n, p, bloom.Classic())
		if err != nil {
			panic(err)
		}
		return (*ours)(f)
	}},
	{name: nameLower, short: "lowerbound", build: func(n uint64, p float64) set {
		f, err := bloom.New(n, p, bloom.Classic()) // the same (m, k) as ours
		if err != nil {
			panic(err)
		}
		return newLowerBound(f.Bits(), f.Hashes())
	}},
	{name: nameBAB, short: "bitsandblooms", build: func(n uint64, p float64) set {
		return (*babFilter)(bab.NewWithEstimates(uint(n), p))
	}},
	{name: nameBoom, short: "boomfilters", costly: true, build: func(n uint64, p float64) set {
		return (*boomFilter)(boom.NewBloomFilter(uint(n), p))
	}},
	{name: nameBlobloom, short: "blobloom", build: func(n uint64, p float64) set {
		return (*blobFilter)(blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: p}))
	}},
	{name: nameSource, short: "source", costly: true, build: func(n uint64, p float64) set {
		return newSourceFilter(n, p)
	}},
	{name: nameMap, short: "map", isMap: true, costly: true, build: func(n uint64, _ float64) set {
		return mapSet(make(map[string]struct{}))
	}},
}

type ours bloom.BloomFilter

func (f *ours) addRange(ks *keySet, from, to int) {
	b := (*bloom.BloomFilter)(f)
	for i := from; i < to; i++ {
		b.Add(ks.key(i))
	}
}

func (f *ours) testRange(ks *keySet, from, to int) (hits int) {
	b := (*bloom.BloomFilter)(f)
	for i := from; i < to; i++ {
		if b.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

func (f *lowerBound) addRange(ks *keySet, from, to int) {
	for i := from; i < to; i++ {
		f.Add(ks.key(i))
	}
}

func (f *lowerBound) testRange(ks *keySet, from, to int) (hits int) {
	for i := from; i < to; i++ {
		if f.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

type babFilter bab.BloomFilter

func (f *babFilter) addRange(ks *keySet, from, to int) {
	b := (*bab.BloomFilter)(f)
	for i := from; i < to; i++ {
		b.Add(ks.key(i))
	}
}

func (f *babFilter) testRange(ks *keySet, from, to int) (hits int) {
	b := (*bab.BloomFilter)(f)
	for i := from; i < to; i++ {
		if b.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

type boomFilter boom.BloomFilter

func (f *boomFilter) addRange(ks *keySet, from, to int) {
	b := (*boom.BloomFilter)(f)
	for i := from; i < to; i++ {
		b.Add(ks.key(i))
	}
}

func (f *boomFilter) testRange(ks *keySet, from, to int) (hits int) {
	b := (*boom.BloomFilter)(f)
	for i := from; i < to; i++ {
		if b.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

// blobFilter hashes keys with xxhash, as blobloom's README advises.
type blobFilter blobloom.Filter

func (f *blobFilter) addRange(ks *keySet, from, to int) {
	b := (*blobloom.Filter)(f)
	for i := from; i < to; i++ {
		b.Add(xxhash.Sum64(ks.key(i)))
	}
}

func (f *blobFilter) testRange(ks *keySet, from, to int) (hits int) {
	b := (*blobloom.Filter)(f)
	for i := from; i < to; i++ {
		if b.Has(xxhash.Sum64(ks.key(i))) {
			hits++
		}
	}
	return hits
}

func (f *sourceFilter) addRange(ks *keySet, from, to int) {
	for i := from; i < to; i++ {
		f.Add(ks.key(i))
	}
}

func (f *sourceFilter) testRange(ks *keySet, from, to int) (hits int) {
	for i := from; i < to; i++ {
		if f.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

// mapSet is the exact baseline: it stores a copy of every key.
type mapSet map[string]struct{}

func (s mapSet) addRange(ks *keySet, from, to int) {
	for i := from; i < to; i++ {
		s[string(ks.key(i))] = struct{}{}
	}
}

func (s mapSet) testRange(ks *keySet, from, to int) (hits int) {
	for i := from; i < to; i++ {
		if _, ok := s[string(ks.key(i))]; ok {
			hits++
		}
	}
	return hits
}
