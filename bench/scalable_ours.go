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
