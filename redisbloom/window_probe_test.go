package redisbloom

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// TestWindowProbeMatchesBloom: the parameters NewWindow takes from
// bloom.WindowSize (windowProbe) are those of the in-memory window
// bloom.NewWindow builds with the same arguments, small and large, with
// the generations chosen or given, count and time windows, every policy;
// and the parameters read back from the metadata's fields (windowOptions)
// build them again.
func TestWindowProbeMatchesBloom(t *testing.T) {
	windows := []uint64{1, 2, 1000, 1 << 16, 1<<16 + 1, 300_000, 1 << 20}
	rates := []float64{0.5, 0.1, 0.01, 0.001, 1e-5}
	optSets := [][]bloom.Option{
		nil,
		{bloom.Seed(42)},
		{bloom.Generations(2)},
		{bloom.Generations(13), bloom.Concurrent()},
		{bloom.Every(24 * time.Hour)},
		{bloom.Every(time.Second + 1), bloom.OnOverflow(bloom.Saturate), bloom.Generations(9)},
		{bloom.Every(7 * time.Millisecond), bloom.Clock(time.Now)},
		{bloom.Every(time.Hour), bloom.OnOverflow(bloom.Grow)},
		{bloom.Every(time.Minute), bloom.OnOverflow(bloom.Grow), bloom.Generations(4)},
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
					again, err := windowProbe(window, rate, windowOptions(p.seed, p.gens, p.period, p.policy, p.satLimit))
					if err != nil || again.windowShape != p.windowShape || !slices.Equal(again.exts, p.exts) {
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

// TestWindowExtSizesMatchBloom: the sizes of the 16 extension levels that
// NewWindow passes to the scripts are those bloom.WindowFilter gives its
// extensions: an in-memory window of one key per generation, fed 2^16 keys
// in one period, holds 16 extensions (read from its encoding's table),
// whose capacity, bits and hashes must be windowProbe's (its exts).
func TestWindowExtSizesMatchBloom(t *testing.T) {
	const maxLevels = 16 // a generation's extensions in bloom.WindowFilter (see bloom.Grow)
	for _, rate := range []float64{0.5, 0.01, 1e-4} {
		t.Run(fmt.Sprintf("p=%v", rate), func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			opts := []bloom.Option{bloom.Generations(3), bloom.Every(2 * time.Hour), bloom.OnOverflow(bloom.Grow)}
			mem, err := bloom.NewWindow(2, rate, append(opts, bloom.Clock(func() time.Time { return now }))...)
			if err != nil {
				t.Fatal(err)
			}
			p, err := windowProbe(2, rate, opts)
			if err != nil {
				t.Fatal(err)
			}
			xs := p.exts
			if p.genCap != 1 || len(xs) != maxLevels {
				t.Fatalf("%d keys a generation, %d extension levels", p.genCap, len(xs))
			}
			for i := range 1 << 16 {
				mem.AddString(strconv.Itoa(i))
			}
			if mem.Extensions() != maxLevels {
				t.Fatalf("%d extensions in memory", mem.Extensions())
			}
			enc, err := mem.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			r := p.gens
			rec := winHeader + 16 + 24*r
			for j, x := range xs {
				c, m, k := binary.LittleEndian.Uint64(enc[rec:]), binary.LittleEndian.Uint64(enc[rec+8:]), binary.LittleEndian.Uint32(enc[rec+16:])
				if c != x.cap || m != x.m || uint(k) != x.k {
					t.Fatalf("extension %d: %d keys, %d bits, %d hashes in memory; %+v here", j+1, c, m, k, x)
				}
				rec += 32
			}
			// One key more rotates early, as the scripts do past the last level.
			rot := mem.Rotations()
			mem.AddString("one more")
			if mem.Rotations() != rot+1 || mem.Extensions() != maxLevels {
				t.Fatalf("past 16 extensions: %d rotations (from %d), %d extensions", mem.Rotations(), rot, mem.Extensions())
			}
		})
	}
}
