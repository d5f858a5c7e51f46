package bloom

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// TestStatsEqualsTheEstimates: Stats gives exactly what FillRatio,
// EstimatedCount and EstimatedErrorRate give, for every kind of filter and
// layout, empty, partly filled and overfilled.
func TestStatsEqualsTheEstimates(t *testing.T) {
	same := func(t *testing.T, st Stats, bits uint64, fill float64, count uint64, rate float64) {
		t.Helper()
		if st.Bits != bits || st.FillRatio != fill || st.EstimatedCount != count ||
			math.Abs(st.EstimatedErrorRate-rate) > 1e-12*rate {
			t.Errorf("Stats %+v, want bits %d fill %v count %d rate %v", st, bits, fill, count, rate)
		}
		if bits > 0 && st.FillRatio != float64(st.SetBits)/float64(st.Bits) {
			t.Errorf("FillRatio %v != SetBits/Bits %d/%d", st.FillRatio, st.SetBits, st.Bits)
		}
	}
	var buf [16]byte
	for _, layout := range []Option{Classic(), Blocked()} {
		for _, n := range []int{0, 500, 5000, 50000} {
			f := mustNew(t, 5000, 0.01, layout)
			s, err := NewScalable(500, 0.01, layout)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				f.Add(keyOf(buf[:], uint64(i), 0))
				s.Add(keyOf(buf[:], uint64(i), 0))
			}
			name := fmt.Sprintf("%s/n=%d", f.Layout(), n)
			t.Run(name, func(t *testing.T) {
				same(t, f.Stats(), f.Bits(), f.FillRatio(), f.EstimatedCount(), f.EstimatedErrorRate())
				same(t, s.Stats(), s.Bits(), s.FillRatio(), s.EstimatedCount(), s.EstimatedErrorRate())
				for _, enc := range []interface{ MarshalBinary() ([]byte, error) }{f, s} {
					data, err := enc.MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					v, err := NewView(data)
					if err != nil {
						t.Fatal(err)
					}
					same(t, v.Stats(), v.Bits(), v.FillRatio(), v.EstimatedCount(), v.EstimatedErrorRate())
				}
			})
		}
	}
	for _, n := range []int{0, 300, 3000} {
		w := mustWindow(t, 1000, 0.01)
		for i := range n {
			w.Add(keyOf(buf[:], uint64(i), 0))
		}
		same(t, w.Stats(), w.Bits(), w.FillRatio(), w.EstimatedCount(), w.EstimatedErrorRate())
	}
	var zf BloomFilter
	var zs ScalableBloomFilter
	if zf.Stats() != (Stats{}) || zs.Stats() != (Stats{}) {
		t.Errorf("zero filters' Stats: %+v %+v, want zero", zf.Stats(), zs.Stats())
	}
}

// TestStatsOneReading: on a Concurrent filter being written, the figures of
// one Stats call agree with each other (they come from one reading of the
// bits), and the set bits never go down from one call to the next.
func TestStatsOneReading(t *testing.T) {
	for _, layout := range []Option{Classic(), Blocked()} {
		f := mustNew(t, 200000, 0.01, layout, Concurrent())
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf [16]byte
				for i := w; ; i += 2 {
					select {
					case <-stop:
						return
					default:
					}
					f.Add(keyOf(buf[:], uint64(i), 0))
				}
			}()
		}
		var last uint64
		for range 200 {
			st := f.Stats()
			if st.SetBits < last {
				t.Fatalf("set bits went down: %d after %d", st.SetBits, last)
			}
			last = st.SetBits
			if want := f.estimatedCountOf(st.SetBits); st.EstimatedCount != want {
				t.Fatalf("EstimatedCount %d, but %d set bits give %d", st.EstimatedCount, st.SetBits, want)
			}
			if st.FillRatio != float64(st.SetBits)/float64(st.Bits) {
				t.Fatalf("FillRatio %v, SetBits/Bits %v", st.FillRatio, float64(st.SetBits)/float64(st.Bits))
			}
		}
		close(stop)
		wg.Wait()
		st := f.Stats()
		same := st.EstimatedCount == f.EstimatedCount() && st.FillRatio == f.FillRatio() &&
			math.Abs(st.EstimatedErrorRate-f.EstimatedErrorRate()) <= 1e-12*st.EstimatedErrorRate
		if !same {
			t.Errorf("after the writers stopped, Stats %+v differs from the estimates", st)
		}
	}
}
