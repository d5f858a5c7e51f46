package redisbloom

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// TestWindowProbeMatchesBloom: the parameters NewWindow derives from small
// probes (windowProbe) are those of the in-memory window bloom.NewWindow
// builds with the same arguments, for windows past the probes' size, with
// the generations chosen or given, count and time windows, both policies;
// and the parameters read back from the metadata's fields (windowOptions)
// build them again.
func TestWindowProbeMatchesBloom(t *testing.T) {
	windows := []uint64{1, 2, 1000, windowProbeKeys, windowProbeKeys + 1, 300_000, 1 << 20}
	rates := []float64{0.5, 0.1, 0.01, 0.001, 1e-5}
	optSets := [][]bloom.Option{
		nil,
		{bloom.Seed(42)},
		{bloom.Generations(2)},
		{bloom.Generations(13), bloom.Concurrent()},
		{bloom.Every(24 * time.Hour)},
		{bloom.Every(time.Second + 1), bloom.OnOverflow(bloom.Saturate), bloom.Generations(9)},
		{bloom.Every(7 * time.Millisecond), bloom.Clock(time.Now)},
	}
	for _, window := range windows {
		for _, rate := range rates {
			for i, opts := range optSets {
				t.Run(fmt.Sprintf("window=%d/p=%v/opts=%d", window, rate, i), func(t *testing.T) {
					mem, err := bloom.NewWindow(window, rate, opts...)
					if err != nil {
						t.Fatal(err)
					}
					p, err := windowProbe(window, rate, opts)
					if err != nil {
						t.Fatal(err)
					}
					if p.gens != mem.Generations() || p.genCap != mem.GenerationCapacity() || p.k != mem.Hashes() ||
						p.m*uint64(p.gens) != mem.Bits() || p.seed != mem.Seed() || p.window != mem.Window() ||
						p.errorRate != mem.ErrorRate() || p.period*time.Duration(p.gens-1) != mem.Duration() {
						t.Fatalf("probe %+v; bloom.NewWindow: %d generations of %d keys, %d bits in all, %d hashes, seed %d, duration %v",
							p, mem.Generations(), mem.GenerationCapacity(), mem.Bits(), mem.Hashes(), mem.Seed(), mem.Duration())
					}
					again, err := windowProbe(window, rate, windowOptions(p.seed, p.gens, p.period, p.policy))
					if err != nil || again != p {
						t.Fatalf("from the stored fields: %+v, %v; want %+v", again, err, p)
					}
				})
			}
		}
	}
	if _, err := windowProbe(100, 0.01, []bloom.Option{bloom.OnOverflow(bloom.Saturate)}); err == nil {
		t.Error("OnOverflow without Every accepted")
	}
	if _, err := windowProbe(100, 0.01, []bloom.Option{bloom.Classic()}); err == nil {
		t.Error("Classic accepted")
	}
}
