package main

import "github.com/bloomfilters/bloom"

func init() {
	ours := func(opts ...bloom.Option) func(initial uint64, p float64) growable {
		return func(initial uint64, p float64) growable {
			f, err := bloom.NewScalable(initial, p, opts...)
			if err != nil {
				panic(err)
			}
			return (*oursScalable)(f)
		}
	}
	scalableImpls = append([]scalableImpl{
		{name: nameOursScalable, build: ours()},
		{name: nameOursScalable4, build: ours(bloom.Exponential(4))},
	}, scalableImpls...)
}

type oursScalable bloom.ScalableBloomFilter

func (s *oursScalable) addRange(ks *keySet, from, to int) error {
	f := (*bloom.ScalableBloomFilter)(s)
	for i := from; i < to; i++ {
		f.Add(ks.key(i))
	}
	return nil
}

func (s *oursScalable) testAll(ks *keySet, n int) (hits int) {
	f := (*bloom.ScalableBloomFilter)(s)
	for i := range n {
		if f.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

func (s *oursScalable) bits() uint64 { return (*bloom.ScalableBloomFilter)(s).Bits() }

func (s *oursScalable) subFilters() int { return (*bloom.ScalableBloomFilter)(s).NumFilters() }

// oursSingle is one BloomFilter sized for the final count of a growth run: the
// reference the scalable filters are timed against.
type oursSingle struct{ f *bloom.BloomFilter }

func newOursSingle(final int, p float64) *oursSingle {
	f, err := bloom.New(uint64(final), p)
	if err != nil {
		panic(err)
	}
	return &oursSingle{f}
}

func (s *oursSingle) addRange(ks *keySet, from, to int) error {
	for i := from; i < to; i++ {
		s.f.Add(ks.key(i))
	}
	return nil
}

func (s *oursSingle) testAll(ks *keySet, n int) (hits int) {
	for i := range n {
		if s.f.Test(ks.key(i)) {
			hits++
		}
	}
	return hits
}

func (s *oursSingle) bits() uint64 { return s.f.Bits() }

func (s *oursSingle) subFilters() int { return 1 }
