package redisbloom

import (
	"context"
	"errors"
	"testing"

	"github.com/bloomfilters/bloom"
)

// scalableHandle returns a handle with the sizes of NewScalable(initial, p,
// opts...), without a server.
func scalableHandle(t *testing.T, initial uint64, p float64, opts ...bloom.Option) *ScalableFilter {
	t.Helper()
	probe, err := scalableProbe(initial, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scalableFromProbe(nil, "sizes", "id", probe, initial)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSubFilterSizes checks the incremental sizes (each from the one
// before) against bloom.Size over their capacities and rates and the bits
// used against the sum of the sizes before, up to the first sub-filter that
// cannot be built; that none is built past the format's
// 65,536; and that checkCount refuses counts past either limit having
// sized no further than the first sub-filter that cannot be built.
func TestSubFilterSizes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		desc    string
		initial uint64
		p       float64
		opts    []bloom.Option
	}{
		{"defaults", 1000, 0.01, nil},
		{"linear/tightening=0.5", 1000, 0.01, []bloom.Option{bloom.Linear(2), bloom.Tightening(0.5)}},
		{"exponential=4/1e-6", 10, 1e-6, []bloom.Option{bloom.Exponential(4)}},
		{"linear=1", 100_000, 0.001, []bloom.Option{bloom.Linear(1)}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			s := scalableHandle(t, c.initial, c.p, c.opts...)
			var used uint64
			last := -1
			for j := 0; j < maxSubFilters; j++ {
				z := s.size(j)
				if !z.ok {
					last = j
					break
				}
				m, k, err := bloom.Size(z.capacity, z.rate)
				if err != nil || m != z.m || k != z.k {
					t.Fatalf("sub-filter %d: %d bits, %d hashes; bloom.Size(%d, %v) = %d, %d, %v", j, z.m, z.k, z.capacity, z.rate, m, k, err)
				}
				used += z.m
				if z.used != used {
					t.Fatalf("sub-filter %d: %d bits used, want %d", j, z.used, used)
				}
			}
			if last < 3 {
				t.Fatalf("first sub-filter that cannot be built: %d", last)
			}
			t.Logf("%d sub-filters, %d bits", last, used)
			if err := s.checkCount(ctx, uint64(last)); err != nil {
				t.Errorf("checkCount(%d): %v", last, err)
			}
			for _, n := range []uint64{0, uint64(last) + 1, maxSubFilters, maxSubFilters + 1, 1 << 40} {
				if err := s.checkCount(ctx, n); !errors.Is(err, ErrCorrupt) {
					t.Errorf("checkCount(%d): %v, want ErrCorrupt", n, err)
				}
			}
			if got := len(s.sizes.sizes); got != last+1 {
				t.Errorf("%d sizes cached, want %d (up to the first that cannot be built)", got, last+1)
			}
		})
	}
	t.Run("format cap", func(t *testing.T) {
		// Sub-filters of one key: all 65,536 fit the bit limits, and the
		// format ends the chain.
		s := scalableHandle(t, 1, 0.01, bloom.Linear(1e-9), bloom.Tightening(0.999))
		if z := s.computeSize(maxSubFilters-1, 1<<20); !z.ok || z.capacity != 1 {
			t.Errorf("sub-filter %d: %+v, want one key", maxSubFilters-1, z)
		}
		if z := s.computeSize(maxSubFilters, 1<<20); z.ok {
			t.Errorf("sub-filter %d can be built: %+v", maxSubFilters, z)
		}
	})
	t.Run("context", func(t *testing.T) {
		s := scalableHandle(t, 1, 0.01, bloom.Linear(1e-9), bloom.Tightening(0.999))
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.checkCount(done, 1000); !errors.Is(err, context.Canceled) {
			t.Errorf("checkCount with a cancelled context: %v", err)
		}
		if got := len(s.sizes.sizes); got > 3 {
			t.Errorf("%d sizes computed under a cancelled context", got)
		}
	})
}
