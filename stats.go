package bloom

import (
	"math"
	"math/bits"
	"runtime/debug"
	"sync/atomic"

	"github.com/bloomfilters/bloom/internal/blocked"
)

// Stats is what a filter's bits say about it, all from one reading of them:
// the figures FillRatio, EstimatedCount and EstimatedErrorRate return, which
// each read every bit again and, on a Concurrent filter being written, may
// each see another moment.
type Stats struct {
	Bits    uint64 // the size, in bits
	SetBits uint64 // the bits that are set

	// FillRatio is SetBits/Bits, in [0, 1] (0 for an empty or zero filter).
	FillRatio float64

	// EstimatedCount is the number of distinct keys the filter most likely
	// holds, from its fill; math.MaxUint64 when a (sub-)filter's every bit
	// is set. Unlike Count it works after Union and Intersection.
	EstimatedCount uint64

	// EstimatedErrorRate is the probability that Test reports an absent key
	// as present at this fill, in [0, 1].
	EstimatedErrorRate float64
}

// Stats returns the filter's size, fill and estimates from one pass over its
// bits: O(m/64). On a Concurrent filter it may run while others write, and
// its figures agree with each other: they describe one reading of each word.
// A zero BloomFilter gives a zero Stats.
func (f *BloomFilter) Stats() Stats {
	if f.k == 0 {
		return Stats{}
	}
	st := Stats{Bits: f.m}
	if f.blocked {
		st.SetBits, st.EstimatedErrorRate = blocked.Stats(f.bits(), f.conc != nil)
	} else {
		var n int
		if f.conc != nil {
			for i := range f.words {
				n += bits.OnesCount64(atomic.LoadUint64(&f.words[i]))
			}
		} else {
			for _, w := range f.words {
				n += bits.OnesCount64(w)
			}
		}
		st.SetBits = uint64(n)
	}
	st.FillRatio = float64(st.SetBits) / float64(f.m)
	if !f.blocked {
		st.EstimatedErrorRate = math.Pow(st.FillRatio, float64(f.k))
	}
	st.EstimatedCount = f.estimatedCountOf(st.SetBits)
	return st
}

// Stats returns the size, fill and estimates of all the sub-filters together
// from one pass over their bits: Bits and SetBits are sums, EstimatedCount
// the sum of the sub-filters' estimates, and EstimatedErrorRate the
// probability that any sub-filter reports an absent key present. O(total
// bits/64). On a Concurrent filter it may run while others write; its
// figures describe one reading of each word of one list of sub-filters. A
// zero ScalableBloomFilter gives a zero Stats.
func (s *ScalableBloomFilter) Stats() Stats {
	filters, _ := s.subFilters()
	var st Stats
	var logMiss float64
	for _, f := range filters {
		fs := f.Stats()
		st.Bits += fs.Bits
		st.SetBits += fs.SetBits
		if fs.EstimatedCount > math.MaxUint64-st.EstimatedCount {
			st.EstimatedCount = math.MaxUint64
		} else {
			st.EstimatedCount += fs.EstimatedCount
		}
		// -expm1(sum log1p(-p_i)) is 1 - prod(1 - p_i) without rounding
		// 1 - p_i to 1 (see EstimatedErrorRate).
		logMiss += math.Log1p(-fs.EstimatedErrorRate)
	}
	if st.Bits == 0 {
		return Stats{}
	}
	st.FillRatio = float64(st.SetBits) / float64(st.Bits)
	st.EstimatedErrorRate = -math.Expm1(logMiss)
	return st
}

// Stats returns the size, fill and estimates of the filter the View holds,
// as the decoded filter's Stats would: O(m/64). It panics after Close.
func (v *View) Stats() Stats {
	v.check()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	if v.s != nil {
		return v.s.Stats()
	}
	return v.f.Stats()
}
