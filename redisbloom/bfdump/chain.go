package bfdump

import (
	"math"
	"math/bits"
)

// This file holds the rules a decoded chain must follow: those of the
// chains RedisBloom writes (sb.c's SB_NewChain and SBChain_Add, bloom.c's
// bloom_init), and of the ones New and NewWithSize build, which RedisBloom
// grows the same way once loaded.

// checkChain returns an error wrapping bloom.ErrCorrupt if f, a chain as
// decodeHeader read it (each sub-filter's own fields already checked), is
// one that neither RedisBloom nor this package could have written:
//
//   - a scaling chain has a growth in [1, MaxExpansion] (EXPANSION 0 makes a
//     chain non-scaling), a non-scaling one a growth in [0, MaxExpansion]
//     and a single sub-filter;
//   - a sub-filter is added only when the newest is full: every sub-filter
//     but the newest holds exactly its capacity, and the newest at most its
//     capacity;
//   - the first sub-filter has the bits bloom_init gives its capacity and
//     bits per entry, or the bits per entry New and NewWithSize record for
//     its bits, capacity and hashes (recordedBPE);
//   - each later one has growth times the capacity of the one before and
//     half its error rate, and the geometry bloom_init gives those; or, in
//     a chain whose first sub-filter is New's, a geometry Size could give:
//     bits of the form 8 * odd that meet the rate with its hashes, and the
//     bits per entry New records.
//
// So a loaded filter grows as the original would. A change that keeps a
// chain valid is not caught: the growth of a chain of one sub-filter, the
// last bits of a rate or bits per entry, a capacity that leaves the bits
// unchanged. Size itself is not called: at rates of 1e-20 and below it
// takes seconds, which a header of many sub-filters would multiply.
func checkChain(f *Filter) error {
	n := len(f.links)
	scaling := f.options&optNoScaling == 0
	switch {
	case f.growth > MaxExpansion:
		return corrupt("growth %d, more than %d", f.growth, MaxExpansion)
	case scaling && f.growth == 0:
		return corrupt("a scaling filter with growth 0 (EXPANSION 0 makes a filter non-scaling)")
	case !scaling && n > 1:
		return corrupt("a non-scaling filter with %d sub-filters", n)
	}
	for i := range n - 1 {
		if l := &f.links[i]; l.size != l.entries {
			return corrupt("sub-filter %d holds %d keys, not its capacity %d, but a newer one exists (a chain grows only when its newest sub-filter is full)", i, l.size, l.entries)
		}
	}
	if l := &f.links[n-1]; l.size > l.entries {
		return corrupt("sub-filter %d holds %d keys, more than its capacity %d", n-1, l.size, l.entries)
	}
	first := &f.links[0]
	if !first.redisBloomGeometry() && first.bpe != recordedBPE(first.m, first.entries, first.k) {
		return corrupt("sub-filter 0: %d bits, %d hashes and bits per entry %v for %d keys at rate %v, neither RedisBloom's geometry nor New's",
			first.m, first.k, first.bpe, first.entries, first.err)
	}
	for i := 1; i < n; i++ {
		prev, l := &f.links[i-1], &f.links[i]
		hi, entries := bits.Mul64(prev.entries, uint64(f.growth))
		switch {
		case hi != 0 || l.entries != entries:
			return corrupt("sub-filter %d: capacity %d, want %d * %d (growth)", i, l.entries, prev.entries, f.growth)
		case math.Float64bits(l.err) != math.Float64bits(prev.err*tightening):
			return corrupt("sub-filter %d: error rate %v, want half of %v", i, l.err, prev.err)
		case l.redisBloomGeometry():
		case f.exact && l.sizeGeometry():
		default:
			return corrupt("sub-filter %d: %d bits, %d hashes and bits per entry %v for %d keys at rate %v, not the geometry growth gives",
				i, l.m, l.k, l.bpe, l.entries, l.err)
		}
	}
	return nil
}

// redisBloomGeometry reports whether l's bits per entry are those bloom_init
// computes for its rate (to a few ulps: the server's log is not always
// correctly rounded, see logRounded) and its bits those it computes for its
// capacity and those bits per entry. Its hashes follow from the bits per
// entry (decodeHeader checks that).
func (l *link) redisBloomGeometry() bool {
	d := int64(math.Float64bits(l.bpe)) - int64(math.Float64bits(calcBPE(l.err)))
	if d < -4 || d > 4 {
		return false
	}
	m, ok := bloomInitBits(l.entries, l.bpe)
	return ok && m == l.m
}

// sizeGeometry reports whether l has a geometry Size may give its capacity
// and rate (bits of the form 8 * odd that meet the rate with its hashes)
// and the bits per entry New records for it.
func (l *link) sizeGeometry() bool {
	return l.m%16 == 8 && l.bpe == recordedBPE(l.m, l.entries, l.k) &&
		FalsePositiveRate(l.m, uint(l.k), l.entries) <= l.err
}
