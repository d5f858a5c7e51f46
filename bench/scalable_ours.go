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
		{name: nameOursScalable, build: ours(bloom.Classic())},
		{name: nameOursScalable4, build: ours(bloom.Classic(), bloom.Exponential(4))},
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
// reference the scalable filters are timed against. It is the fixed-size
// adapter ours, as a growable.
type oursSingle struct{ *ours }

func newOursSingle(final int, p float64) oursSingle {
	f, err := bloom.New(uint64(final), p, bloom.Classic())
	if err != nil {
		panic(err)
	}
	return oursSingle{(*ours)(f)}
}

func (s oursSingle) addRange(ks *keySet, from, to int) error {
	s.ours.addRange(ks, from, to)
	return nil
}

func (s oursSingle) testAll(ks *keySet, n int) int { return s.testRange(ks, 0, n) }

func (s oursSingle) bits() uint64 { return (*bloom.BloomFilter)(s.ours).Bits() }

func (s oursSingle) subFilters() int { return 1 }
