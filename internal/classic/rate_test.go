package classic

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bloomfilters/bloom/internal/layout"
)

// setBitsRecurrence is the textbook recurrence for E[(X/m)^k]: the
// distribution of the number X of set bits after each of the kn positions,
// in O(knm). It checks ExactRate where knm is small.
func setBitsRecurrence(m uint64, k uint, n uint64) float64 {
	p := make([]float64, m+1)
	p[0] = 1
	for range n * uint64(k) {
		for j := m; j >= 1; j-- {
			p[j] = p[j]*float64(j)/float64(m) + p[j-1]*float64(m-j+1)/float64(m)
		}
		p[0] = 0
	}
	var rate float64
	for j := uint64(1); j <= m; j++ {
		rate += p[j] * math.Pow(float64(j)/float64(m), float64(k))
	}
	return rate
}

func TestExactRateMatchesRecurrence(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(m uint64, k uint, n uint64) {
		t.Helper()
		want := setBitsRecurrence(m, k, n)
		if got := ExactRate(m, k, n, nil); math.Abs(got-want) > 1e-12*want {
			t.Errorf("ExactRate(%d, %d, %d) = %v, recurrence gives %v", m, k, n, got, want)
		}
	}
	// The configurations of the issue, edges (m <= k, an overfull filter),
	// and random small ones.
	for _, c := range [][3]uint64{
		{34, 24, 1}, {29, 20, 1}, {68, 24, 2}, {144, 20, 5}, {1, 1, 1}, {1, 5, 3}, {2, 3, 1},
		{3, 64, 2}, {10, 3, 100}, {100, 7, 10}, {1000, 64, 11}, {5000, 23, 150},
	} {
		check(c[0], uint(c[1]), c[2])
	}
	for range 200 {
		m := 1 + r.Uint64N(400)
		k := 1 + uint(r.Uint64N(uint64(layout.MaxHashes)))
		n := 1 + r.Uint64N(max(1, 3*m/uint64(k)))
		check(m, k, n)
	}
}

// TestClosedFormGap checks where Rate may use the closed form:
// closedFormGap estimates its relative error well, and where it is used
// (gap <= closedFormTolerance) it is within 2e-4 of the exact rate.
func TestClosedFormGap(t *testing.T) {
	for _, k := range []uint{1, 2, 3, 5, 7, 10, 14, 20, 23, 30, 40, 50, 64, 100, 256} {
		for _, m := range []uint64{1, 2, 3, 10, 30, 100, 300, 1000, 3000, 1e4, 3e4, 1e5, 3e5, 1e6, 1e7, 1e8} {
			for _, lambda := range []float64{0.01, 0.1, 0.3, 0.5, 0.69, 1, 1.5, 2, 3, 5, 8} {
				n := uint64(math.Round(lambda * float64(m) / float64(k)))
				if n == 0 {
					continue
				}
				exact, closed := ExactRate(m, k, n, nil), ClosedFormRate(m, k, n)
				if closed > exact*(1+1e-12) {
					t.Errorf("m=%d k=%d n=%d: closed form %v above the exact rate %v", m, k, n, closed, exact)
				}
				gap, est := exact/closed-1, closedFormGap(m, k, n)
				if est < 1e-2 && gap > 1.015*est+1e-12 {
					t.Errorf("m=%d k=%d n=%d: closed form off by %.3e, estimated %.3e", m, k, n, gap, est)
				}
				if got := Rate(m, k, n, nil); math.Abs(got/exact-1) > 2e-4 {
					t.Errorf("Rate(%d, %d, %d) = %v, exact %v", m, k, n, got, exact)
				}
			}
		}
	}
}
