package bloom

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/internal/classic"
)

// ---- sizing ----

func TestOptimalHashesMinimisesRate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + r.Uint64N(1e7)
		m := 1 + r.Uint64N(40*n)
		k := OptimalHashes(m, n)
		if k < 1 {
			t.Fatalf("OptimalHashes(%d, %d) = 0", m, n)
		}
		got := FalsePositiveRate(m, k, n)
		if k > 1 && FalsePositiveRate(m, k-1, n) < got {
			t.Errorf("OptimalHashes(%d, %d) = %d but k-1 gives a lower rate", m, n, k)
		}
		if FalsePositiveRate(m, k+1, n) < got {
			t.Errorf("OptimalHashes(%d, %d) = %d but k+1 gives a lower rate", m, n, k)
		}
	}
}

// TestSizeGolden pins the sizes New chooses; changing them changes what
// every program allocates, so it must be deliberate.
func TestSizeGolden(t *testing.T) {
	tests := []struct {
		n        uint64
		p        float64
		m        uint64
		k        uint
		textbook uint64
	}{
		// Few keys: the exact rate (FalsePositiveRate) needs more bits than
		// the closed form and fewer hash functions than (m/n) ln 2. Before
		// it, Size gave 34 bits and 24 hashes for (1, 1e-7), 9593 bits for
		// (1000, 0.01).
		{1, 1e-7, 38, 20, 34},
		{1, 1e-6, 33, 18, 29},
		{2, 1e-7, 72, 21, 68},
		{5, 1e-6, 149, 19, 144},
		{10, 1e-6, 293, 20, 288},
		{100, 1e-18, 8641, 60, 8627},
		{1, 1e-30, 166, 64, 144}, // MaxHashes
		{1000, 0.1, 4810, 3, 4793},
		{1000, 0.01, 9595, 7, 9586},
		{1000, 0.001, 14381, 10, 14378},
		{1000000, 0.01, 9592955, 7, 9585059},
		{1000000, 0.001, 14377640, 10, 14377588},
		{1000000, 0.0001, 19172955, 13, 19170117},
		{10000000, 0.01, 95929548, 7, 95850584},
	}
	for _, tt := range tests {
		if got := OptimalBits(tt.n, tt.p); got != tt.textbook {
			t.Errorf("OptimalBits(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.textbook)
		}
		m, k, err := Size(tt.n, tt.p)
		if err != nil || m != tt.m || k != tt.k {
			t.Errorf("Size(%d, %v) = %d, %d, %v; want %d, %d", tt.n, tt.p, m, k, err, tt.m, tt.k)
		}
		if r := FalsePositiveRate(m, k, tt.n); r > tt.p {
			t.Errorf("Size(%d, %v): rate %v exceeds the target", tt.n, tt.p, r)
		}
		if m > tt.textbook && FalsePositiveRate(m-1, min(OptimalHashes(m-1, tt.n), MaxHashes), tt.n) <= tt.p {
			t.Errorf("Size(%d, %v) = %d is not the smallest size meeting the target", tt.n, tt.p, m)
		}
	}
	// The case the issue names: the textbook size overshoots with k = 7.
	if r := FalsePositiveRate(9585059, 7, 1e6); r <= 0.01 {
		t.Errorf("textbook m no longer overshoots (%v); the golden table above needs a look", r)
	}
}

func TestSizeMeetsTargetEverywhere(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		n := 1 + r.Uint64N(1e8)
		p := math.Pow(10, -r.Float64()*12)
		if p >= 1 {
			continue
		}
		m, k, err := Size(n, p)
		if err != nil {
			continue // beyond MaxBits
		}
		if got := FalsePositiveRate(m, k, n); got > p {
			t.Fatalf("Size(%d, %v) = (%d, %d) gives %v", n, p, m, k, got)
		}
	}
}

func TestEstimateCount(t *testing.T) {
	if got := EstimateCount(100, 3, 100); !math.IsInf(got, 1) {
		t.Errorf("full filter: got %v, want +Inf", got)
	}
	if got := EstimateCount(1000, 5, 0); got != 0 {
		t.Errorf("empty filter: got %v, want 0", got)
	}
	// The expected fill for n keys is m(1 - e^(-kn/m)); the estimate inverts it.
	m, k, n := uint64(1e6), uint(7), 50000.0
	fill := float64(m) * -math.Expm1(-float64(k)*n/float64(m))
	if got := EstimateCount(m, k, uint64(math.Round(fill))); math.Abs(got-n) > 1 {
		t.Errorf("EstimateCount = %v, want about %v", got, n)
	}
}

// TestSizeMeetsExactRate checks Size for few keys against the exact rate:
// it meets the target, and one bit fewer does not with any k <= MaxHashes.
func TestSizeMeetsExactRate(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 5, 10, 30, 100, 300} {
		for _, p := range []float64{0.5, 0.1, 1e-2, 1e-3, 1e-5, 1e-7, 1e-12, 1e-19, 1e-30} {
			m, k, err := Size(n, p)
			if err != nil {
				t.Fatalf("Size(%d, %g): %v", n, p, err)
			}
			if got := classic.ExactRate(m, k, n, nil); got > p*(1+1e-9) {
				t.Errorf("Size(%d, %g) = (%d, %d): exact rate %v", n, p, m, k, got)
			}
			if k > MaxHashes {
				t.Errorf("Size(%d, %g) uses %d hash functions", n, p, k)
			}
			if m > 1 {
				best := 1.0
				for j := uint(1); j <= MaxHashes; j++ {
					best = min(best, classic.ExactRate(m-1, j, n, nil))
				}
				if best <= p*(1-1e-9) {
					t.Errorf("Size(%d, %g) = %d bits, but %d bits reach %v", n, p, m, m-1, best)
				}
			}
		}
	}
}

// TestSizeTinyRates: below about 1e-19 Size keeps MaxHashes hash functions
// and adds bits, up to MaxBits; beyond that its error states the real floor.
func TestSizeTinyRates(t *testing.T) {
	for _, c := range []struct {
		n uint64
		p float64
	}{{30, 1e-21}, {1, 1e-30}, {100, 1e-18 * 0.1 * math.Pow(0.9, 30)}, {1000, 1e-40}, {1e6, 1e-25}, {1, 5e-324}} {
		m, k, err := Size(c.n, c.p)
		if err != nil || k != MaxHashes || FalsePositiveRate(m, k, c.n) > c.p {
			t.Errorf("Size(%d, %g) = (%d, %d, %v), want MaxHashes hash functions meeting the rate", c.n, c.p, m, k, err)
		}
		t.Logf("Size(%d, %g) = %d bits (%.1f per key), %d hashes", c.n, c.p, m, float64(m)/float64(c.n), k)
	}
	// 10^9 keys in MaxBits bits: 1100 bits per key, k = MaxHashes.
	const n = 1_000_000_000
	floor := FalsePositiveRate(MaxBits, MaxHashes, n)
	_, _, err := Size(n, floor/2)
	if !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), fmt.Sprintf("the lowest rate for %d keys is %.3g", n, floor)) ||
		!strings.Contains(err.Error(), "MaxBits") {
		t.Errorf("Size(%d, %g): %v; want the floor %.3g stated", n, floor/2, err, floor)
	}
	if m, k, err := Size(n, floor*1.01); err != nil || m > MaxBits || k != MaxHashes {
		t.Errorf("Size(%d, %g) just above the floor: (%d, %d, %v)", n, floor*1.01, m, k, err)
	}
	t.Logf("floor for %d keys: %v; error: %v", n, floor, err)
}

// ---- blocked layout ----

// blockedRateBrute is BlockedFalsePositiveRate computed another way: the
// binomial weights from log-gamma, and the in-block rate from the
// distribution of set bits after each key, moved by the hypergeometric law
// of its k distinct bits.
func blockedRateBrute(m uint64, k uint, n uint64) float64 {
	const B = BlockBits
	lc := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	blocks := m / B
	dist := make([]float64, B+1)
	dist[0] = 1
	var sum float64
	for j := uint64(0); j <= n; j++ {
		if j > 0 {
			next := make([]float64, B+1)
			for x, d := range dist {
				for a := 0; a <= int(k) && x+a <= B; a++ {
					if d != 0 && int(k)-a <= x {
						next[x+a] += d * math.Exp(lc(B-x, a)+lc(x, int(k)-a)-lc(B, int(k)))
					}
				}
			}
			dist = next
		}
		var in float64
		for x := int(k); x <= B; x++ {
			in += dist[x] * math.Exp(lc(x, int(k))-lc(B, int(k)))
		}
		w := 1.0
		if blocks > 1 {
			q := 1 / float64(blocks)
			w = math.Exp(lc(int(n), int(j)) + float64(j)*math.Log(q) + float64(n-j)*math.Log1p(-q))
		} else if j != n {
			w = 0
		}
		sum += w * in
	}
	return sum
}

func TestBlockedRateMatchesBruteForce(t *testing.T) {
	for _, c := range []struct {
		blocks uint64
		k      uint
		n      uint64
	}{
		{1, 1, 1}, {1, 6, 10}, {1, 6, 60}, {1, 33, 10}, {1, 64, 3}, {2, 6, 40}, {3, 9, 100},
		{10, 6, 500}, {20, 9, 300}, {7, 12, 90}, {5, 3, 300}, {40, 4, 1000},
	} {
		m := c.blocks * BlockBits
		want := blockedRateBrute(m, c.k, c.n)
		got := BlockedFalsePositiveRate(m, c.k, c.n)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("BlockedFalsePositiveRate(%d, %d, %d) = %v, brute force %v", m, c.k, c.n, got, want)
		}
	}
}

// TestBlockedSizeGolden pins the sizes New(n, p, Blocked()) chooses, with the
// issue's targets: at most 9.9 bits per key at 1% and 15.5 at 0.1%.
func TestBlockedSizeGolden(t *testing.T) {
	tests := []struct {
		n uint64
		p float64
		m uint64
		k uint
	}{
		{1, 0.01, 512, 64},
		{10, 1e-5, 512, 33},
		{100, 0.01, 1024, 7},
		{1000, 0.01, 10240, 7},
		{1000, 0.001, 15872, 9},
		{1000000, 0.1, 4830208, 3},
		{1000000, 0.01, 9890304, 6},
		{1000000, 0.001, 15480832, 9},
		{1000000, 0.0001, 21915648, 12},
		{1000000, 1e-5, 29458432, 14},
		{10000000, 0.01, 98902528, 6},
		{10000000, 0.001, 154806784, 9},
	}
	for _, tt := range tests {
		m, k, err := BlockedSize(tt.n, tt.p)
		if err != nil || m != tt.m || k != tt.k {
			t.Errorf("BlockedSize(%d, %v) = %d, %d, %v; want %d, %d", tt.n, tt.p, m, k, err, tt.m, tt.k)
		}
	}
	for _, c := range []struct {
		p, bitsPerKey float64
	}{{0.01, 9.9}, {0.001, 15.5}} {
		for _, n := range []uint64{1e6, 1e7, 1e8} {
			if m, _, _ := BlockedSize(n, c.p); float64(m)/float64(n) > c.bitsPerKey {
				t.Errorf("BlockedSize(%d, %v): %.3f bits per key, target %v", n, c.p, float64(m)/float64(n), c.bitsPerKey)
			}
		}
	}
}

// TestBlockedSizeIsSmallest checks BlockedSize on random (n, p): the rate is
// met, and one block fewer does not meet it with any k.
func TestBlockedSizeIsSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	configs := 60
	if testing.Short() {
		configs = 15
	}
	for range configs {
		n := uint64(math.Pow(10, r.Float64()*7))
		p := math.Pow(10, -0.5-r.Float64()*7)
		m, k, err := BlockedSize(n, p)
		if err != nil {
			t.Fatalf("BlockedSize(%d, %g): %v", n, p, err)
		}
		if m%BlockBits != 0 || BlockedFalsePositiveRate(m, k, n) > p {
			t.Fatalf("BlockedSize(%d, %g) = (%d, %d): rate %v", n, p, m, k, BlockedFalsePositiveRate(m, k, n))
		}
		for j := uint(1); j <= MaxHashes && m > BlockBits; j++ {
			if r := BlockedFalsePositiveRate(m-BlockBits, j, n); r <= p {
				t.Fatalf("BlockedSize(%d, %g) = %d bits, but %d bits and k = %d reach %v", n, p, m, m-BlockBits, j, r)
			}
		}
		if k > 1 && BlockedFalsePositiveRate(m, k-1, n) < BlockedFalsePositiveRate(m, k, n) ||
			k < MaxHashes && BlockedFalsePositiveRate(m, k+1, n) < BlockedFalsePositiveRate(m, k, n) {
			t.Fatalf("BlockedSize(%d, %g): k = %d is not the best", n, p, k)
		}
	}
	if _, _, err := BlockedSize(0, 0.1); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("capacity 0: %v", err)
	}
	if _, _, err := BlockedSize(1e12, 1e-30); !errors.Is(err, ErrInvalidParameter) || !strings.Contains(err.Error(), "MaxBits") {
		t.Errorf("beyond MaxBits: %v", err)
	}
}

// TestEstimateBlockedCount checks the estimate against the expected fill.
func TestEstimateBlockedCount(t *testing.T) {
	for _, c := range []struct {
		m uint64
		k uint
		n float64
	}{{512, 6, 30}, {1 << 20, 6, 100000}, {1 << 30, 9, 5e7}} {
		blocks := float64(c.m / BlockBits)
		fill := -math.Expm1(c.n * math.Log1p(-float64(c.k)/(BlockBits*blocks)))
		set := uint64(math.Round(fill * float64(c.m)))
		if got := EstimateBlockedCount(c.m, c.k, set); math.Abs(got/c.n-1) > 0.02 {
			t.Errorf("EstimateBlockedCount(%d, %d, %d) = %v, want about %v", c.m, c.k, set, got, c.n)
		}
	}
	if !math.IsInf(EstimateBlockedCount(512, 3, 512), 1) || EstimateBlockedCount(100, 3, 5) != 0 {
		t.Error("edge cases")
	}
}
