package redisbloom

import (
	"fmt"

	"github.com/bloomfilters/bloom"
)

// Every filter of this package but WindowFilter (whose generations have the
// blocked layout of bloom.WindowFilter, the only one it has, at the
// positions of bloom.AppendBlockedLocations) has the classic layout of the
// bloom package:
// a key's bits are spread over the whole bitmap, at the positions of
// bloom.AppendLocations, and sized by bloom.Size. The blocked layout
// (bloom.Blocked) is not built here (README.md, "Designs measured and not
// built"): the constructors refuse the option with ErrInvalidParameter
// rather than build a filter of another layout than the one asked for, and
// Import refuses a blocked filter with ErrIncompatible rather than read its
// bits as classic ones, which would answer most of its keys absent.
//
// The constructors learn the seed, growth and tightening that the opaque
// bloom.Option values choose from an in-memory filter built with them, a
// probe; only fixedProbe and scalableProbe build one. A probe must have the
// classic layout, so that neither a bloom.Blocked among the options nor a
// default layout of the bloom package other than classic changes what is
// built here: fixedProbe builds with bloom.NewWithSize, classic unless
// bloom.Blocked is given, and scalableProbe adds bloom.Classic where the
// bloom package's default would choose the blocked layout.

// errBlockedOption is the error of a constructor given bloom.Blocked.
func errBlockedOption() error {
	return fmt.Errorf("%w: the option bloom.Blocked is not supported: Redis filters have the classic layout only (a key's bits spread over the whole bitmap, at bloom.AppendLocations's positions)",
		bloom.ErrInvalidParameter)
}

// fixedProbe validates opts for a fixed filter (New, NewSharded) and
// returns a classic filter of one block built with them, whose Seed is the
// one they choose. It returns bloom.NewWithSize's error for invalid options
// and errBlockedOption for bloom.Blocked.
func fixedProbe(opts []bloom.Option) (*bloom.BloomFilter, error) {
	// BlockBits bits, not 1: with bloom.Blocked a filter of one bit fails
	// with an error about its size, which would not name the option.
	probe, err := bloom.NewWithSize(bloom.BlockBits, 1, opts...)
	if err != nil {
		return nil, err
	}
	if probe.Layout() == bloom.LayoutBlocked {
		return nil, errBlockedOption()
	}
	return probe, nil
}

// scalableProbe validates initialCapacity, errorRate and opts for a
// scalable filter and returns an empty classic bloom.ScalableBloomFilter
// built with them, at most scalableProbeCapacity keys large (its first
// sub-filter is allocated; the checks that depend on the capacity are done
// on the real one, see scalableFromProbe). It returns bloom.NewScalable's
// error for invalid arguments and errBlockedOption for bloom.Blocked.
func scalableProbe(initialCapacity uint64, errorRate float64, opts []bloom.Option) (*bloom.ScalableBloomFilter, error) {
	capacity := min(initialCapacity, scalableProbeCapacity)
	probe, err := bloom.NewScalable(capacity, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	if probe.Layout() == bloom.LayoutBlocked {
		// The bloom package's default layout, or bloom.Blocked: with
		// bloom.Classic added, the first builds, the second contradicts it.
		probe, err = bloom.NewScalable(capacity, errorRate, append(opts[:len(opts):len(opts)], bloom.Classic())...)
		if err != nil {
			return nil, errBlockedOption()
		}
	}
	return probe, nil
}

// errBlockedSource is Import's error for a source of the blocked layout;
// what names it.
func errBlockedSource(what string) error {
	return fmt.Errorf("%w: %s has the blocked layout (bloom.Blocked), and a Redis filter the classic one: its bits would be read at other positions",
		bloom.ErrIncompatible, what)
}
