package bloom

import (
	"encoding/base64"
	"math"
	"strconv"
	"testing"
)

// TestScalableEstimatedErrorRateTiny is issue 13's case: one sub-filter
// holding 183,291 keys, whose own rate is about 1.6e-22. 1 - prod(1 - p_i)
// rounded that to 0.
func TestScalableEstimatedErrorRateTiny(t *testing.T) {
	s, err := NewScalable(200_000, 1e-20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 183_291 {
		s.AddString(strconv.Itoa(i))
	}
	if s.NumFilters() != 1 {
		t.Fatalf("%d sub-filters, want 1", s.NumFilters())
	}
	plain := s.filters[0].EstimatedErrorRate()
	got := s.EstimatedErrorRate()
	t.Logf("sub-filter %.3g, scalable %.3g", plain, got)
	if !(plain > 0 && plain < 1e-16) {
		t.Fatalf("sub-filter rate %v: the test needs one below 1e-16", plain)
	}
	if math.Abs(got-plain) > 1e-12*plain {
		t.Errorf("EstimatedErrorRate = %v, want the sub-filter's %v", got, plain)
	}
}

// TestScalableEstimatedErrorRateSeveral checks -expm1(sum log1p(-p_i))
// against 1 - prod(1 - p_i) where the latter is exact enough, and at the
// ends: a full sub-filter gives 1.
func TestScalableEstimatedErrorRateSeveral(t *testing.T) {
	s, err := NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		s.AddString(strconv.Itoa(i))
	}
	miss := 1.0
	for _, f := range s.filters {
		miss *= 1 - f.EstimatedErrorRate()
	}
	if got, want := s.EstimatedErrorRate(), 1-miss; math.Abs(got-want) > 1e-12 {
		t.Errorf("EstimatedErrorRate = %v, want %v", got, want)
	}
	for i := range s.filters[0].words {
		s.filters[0].words[i] = math.MaxUint64
	}
	s.filters[0].words[len(s.filters[0].words)-1] >>= (64 - s.filters[0].m%64) % 64
	if got := s.EstimatedErrorRate(); got != 1 {
		t.Errorf("with a full sub-filter EstimatedErrorRate = %v, want 1", got)
	}
}

// TestScalableFillRatioEstimatedCount checks the definitions: FillRatio is
// the set bits over all bits, EstimatedCount the sum of the sub-filters'
// estimates, math.MaxUint64 if one of them has every bit set.
func TestScalableFillRatioEstimatedCount(t *testing.T) {
	for _, conc := range []bool{false, true} {
		var opts []Option
		if conc {
			opts = append(opts, Concurrent())
		}
		s, err := NewScalable(1000, 0.01, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if s.FillRatio() != 0 || s.EstimatedCount() != 0 {
			t.Errorf("empty: FillRatio %v, EstimatedCount %d", s.FillRatio(), s.EstimatedCount())
		}
		const n = 50_000
		for i := range n {
			s.AddString(strconv.Itoa(i))
		}
		filters, _ := s.subFilters()
		var set, all, est uint64
		for _, f := range filters {
			set += f.setBits()
			all += f.m
			est += f.EstimatedCount()
		}
		if got, want := s.FillRatio(), float64(set)/float64(all); got != want {
			t.Errorf("FillRatio = %v, want %v", got, want)
		}
		if got := s.EstimatedCount(); got != est || math.Abs(float64(got)-n) > 0.02*n {
			t.Errorf("EstimatedCount = %d, want %d (about %d)", got, est, n)
		}
	}
	var zero ScalableBloomFilter
	if zero.FillRatio() != 0 || zero.EstimatedCount() != 0 {
		t.Errorf("zero value: FillRatio %v, EstimatedCount %d", zero.FillRatio(), zero.EstimatedCount())
	}
	s, _ := NewScalable(10, 0.1)
	for i := range s.filters[0].words {
		s.filters[0].words[i] = math.MaxUint64
	}
	s.filters[0].words[len(s.filters[0].words)-1] >>= (64 - s.filters[0].m%64) % 64
	if got := s.EstimatedCount(); got != math.MaxUint64 {
		t.Errorf("every bit set: EstimatedCount = %d, want MaxUint64", got)
	}
}

// TestConcurrentLockTableScales is issue 13 item 5: Concurrent gave every
// filter 64 KiB of locks, a 256-byte filter 65,807 bytes in all.
func TestConcurrentLockTableScales(t *testing.T) {
	for _, tc := range []struct {
		bits    uint64
		stripes int
		bytes   uint64 // at most, in all
	}{
		{2048, minStripes, 2048/8 + 1024 + 512},
		{1 << 20, 1 << 20 / 64 / stripeWords, 1<<20/8 + 1<<20/64 + 1024},
		{1 << 26, maxStripes, 1<<26/8 + 64<<10 + 1024},
	} {
		var plainBytes uint64
		for _, conc := range []bool{false, true} {
			opts := []Option{}
			if conc {
				opts = append(opts, Concurrent())
			}
			var f *BloomFilter
			got := allocated(func() { f = mustNewWithSize(t, tc.bits, 7, opts...) })
			if !conc {
				plainBytes = got
				continue
			}
			t.Logf("%d bits: %d bytes plain, %d concurrent (%d locks)", tc.bits, plainBytes, got, len(f.conc.locks.stripes))
			if n := len(f.conc.locks.stripes); n != tc.stripes {
				t.Errorf("%d bits: %d locks, want %d", tc.bits, n, tc.stripes)
			}
			if got > tc.bytes {
				t.Errorf("%d bits: Concurrent filter takes %d bytes, want at most %d", tc.bits, got, tc.bytes)
			}
			if c := f.Clone(); len(c.conc.locks.stripes) != tc.stripes {
				t.Errorf("%d bits: clone has %d locks", tc.bits, len(c.conc.locks.stripes))
			}
		}
	}
}

func mustNewWithSize(t testing.TB, bits uint64, hashes uint, opts ...Option) *BloomFilter {
	t.Helper()
	f, err := NewWithSize(bits, hashes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDecodeIntoConcurrentSizesLocks: decoding into a Concurrent filter of
// another size gives the decoded filter the locks its own size calls for.
func TestDecodeIntoConcurrentSizesLocks(t *testing.T) {
	big := mustNewWithSize(t, 1<<26, 3)
	enc, _ := big.MarshalBinary()
	f := mustNewWithSize(t, 64, 3, Concurrent())
	if err := f.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if n := len(f.conc.locks.stripes); n != maxStripes {
		t.Errorf("decoded 2^26 bits into a small concurrent filter: %d locks, want %d", n, maxStripes)
	}
	small, _ := mustNewWithSize(t, 64, 3).MarshalBinary()
	if err := f.UnmarshalText([]byte(base64.StdEncoding.EncodeToString(small))); err != nil {
		t.Fatal(err)
	}
	if n := len(f.conc.locks.stripes); n != minStripes {
		t.Errorf("decoded 64 bits into a large concurrent filter: %d locks, want %d", n, minStripes)
	}
}
