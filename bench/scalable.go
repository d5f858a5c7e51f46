package main

import (
	"fmt"
	"reflect"

	boom "github.com/tylertreat/BoomFilters"
)

// growable is a scalable filter under comparison.
type growable interface {
	// addRange adds keys from to to-1 of ks. It returns an error, and adds
	// nothing more, if the filter fails (panics) on the way.
	addRange(ks *keySet, from, to int) error
	testAll(ks *keySet, n int) int
	bits() uint64
	subFilters() int
}

// scalableImpl is a scalable filter under comparison.
type scalableImpl struct {
	name string
	// build returns an empty filter growing from initial keys at target
	// error rate p.
	build func(initial uint64, p float64) growable
	// slow implementations test every sub-filter with a separate hash pass
	// and have thousands of them: they are measured on fewer keys.
	slow bool
	// maxTimed caps the number of keys added in timed runs (0: no cap).
	maxTimed int
}

const (
	nameOursScalable   = "bloomfilters/bloom ScalableBloomFilter (ours)"
	nameOursScalable4  = "ours with Exponential(4)"
	nameSourceScalable = "source design (x2 growth, same p in every sub-filter)"
	nameBoomScalable   = "BoomFilters ScalableBloomFilter (hint 1000, r 0.8)"
	nameBoomDefault    = "BoomFilters NewDefaultScalableBloomFilter (hint 10000, r 0.8)"

	nameSingleReference = "reference: one BloomFilter (ours) sized for the final count"
)

// scalableImpls is filled in by init functions, ours first.
var scalableImpls []scalableImpl

func init() {
	scalableImpls = append(scalableImpls,
		scalableImpl{name: nameSourceScalable, build: func(initial uint64, p float64) growable {
			return newSourceScalable(initial, p)
		}},
		scalableImpl{name: nameBoomScalable, slow: true, maxTimed: 1_000_000,
			build: func(initial uint64, p float64) growable {
				return &boomScalable{f: boom.NewScalableBloomFilter(uint(initial), p, 0.8)}
			}},
		scalableImpl{name: nameBoomDefault, slow: true, maxTimed: 1_000_000,
			build: func(_ uint64, p float64) growable {
				return &boomScalable{f: boom.NewDefaultScalableBloomFilter(p)}
			}},
	)
}

func (s *sourceScalable) addRange(ks *keySet, from, to int) error {
	for i := from; i < to; i++ {
		s.Add(ks.key(i))
	}
	return nil
}

func (s *sourceScalable) testAll(ks *keySet, n int) (hits int) {
	for i := range n {
		if s.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

func (s *sourceScalable) subFilters() int { return len(s.filters) }

// boomScalable adapts BoomFilters' ScalableBloomFilter. Its sub-filters all
// have the initial capacity (they do not grow) and error rates p*r^i, which
// underflow to 0 after about 3,300 sub-filters; the next one then panics in
// makeslice. addRange turns that panic into an error.
type boomScalable struct {
	f      *boom.ScalableBloomFilter
	failed error
}

func (s *boomScalable) addRange(ks *keySet, from, to int) (err error) {
	if s.failed != nil {
		return s.failed
	}
	i := from
	defer func() {
		if r := recover(); r != nil {
			s.failed = fmt.Errorf("panic after %d keys: %v", i, r)
			err = s.failed
		}
	}()
	for ; i < to; i++ {
		s.f.Add(ks.key(i))
	}
	return nil
}

func (s *boomScalable) testAll(ks *keySet, n int) (hits int) {
	for i := range n {
		if s.f.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

// bits returns the total size of the sub-filters (BoomFilters' Capacity is
// the sum of their m).
func (s *boomScalable) bits() uint64 { return uint64(s.f.Capacity()) }

// subFilters reads the length of the unexported filters slice: BoomFilters
// has no accessor for it.
func (s *boomScalable) subFilters() int {
	return reflect.ValueOf(s.f).Elem().FieldByName("filters").Len()
}
