package redisbloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/bloomfilters/bloom"
)

// windowExt is the size of an extension level of a window under Grow.
type windowExt struct {
	cap uint64 // keys
	m   uint64 // bits, a multiple of bloom.BlockBits
	k   uint
}

// windowProbe returns the parameters of bloom.NewWindow(window, errorRate,
// opts...), from bloom.WindowSize, and its errors. Under Grow, the
// extension levels stop at the first of more than MaxBits bits, which one
// Redis string cannot hold: past the last level, the window rotates early.
func windowProbe(window uint64, errorRate float64, opts []bloom.Option) (windowParams, error) {
	z, err := bloom.WindowSize(window, errorRate, opts...)
	if err != nil {
		return windowParams{}, err
	}
	p := windowParams{windowShape: windowShape{window: window, errorRate: errorRate, gens: z.Generations, genCap: z.GenerationCapacity,
		m: z.GenerationBits, k: z.Hashes, seed: z.Seed, period: z.Period}}
	switch z.Overflow {
	case bloom.Saturate:
		p.policy = policySaturate
	case bloom.Grow:
		p.policy = policyGrow
	}
	if p.period > 0 && p.policy == policySaturate {
		// bloom.SaturationLimit, as the window encoding keeps it (a
		// float32 in the header's bytes 56-59, 0 for the default):
		// WindowSizing does not report it, the encoding of a window of
		// one key with the same options does.
		tiny, err := bloom.NewWindow(1, errorRate, opts...)
		if err != nil {
			return windowParams{}, err
		}
		enc, err := tiny.MarshalBinary()
		if err != nil || len(enc) < winHeader {
			return windowParams{}, fmt.Errorf("redisbloom: window encoding: %v", err)
		}
		p.satLimit = float64(math.Float32frombits(binary.LittleEndian.Uint32(enc[56:])))
	}
	// bloom.OnEvent's callback is not visible here: refused rather than
	// ignored (OnEvent on the handle takes one).
	if _, err := bloom.WindowSize(window, errorRate, append(opts[:len(opts):len(opts)], bloom.OnEvent(func(bloom.WindowEvent) {}))...); err != nil {
		return windowParams{}, fmt.Errorf("%w: bloom.OnEvent does not apply to a Redis window (use WindowFilter.OnEvent): %v", bloom.ErrInvalidParameter, err)
	}
	for _, x := range z.Extensions {
		if x.Bits > MaxBits {
			break
		}
		p.exts = append(p.exts, windowExt{cap: x.Capacity, m: x.Bits, k: x.Hashes})
	}
	return p, nil
}

// windowOptions returns the options that make bloom.NewWindow build a
// window with the given seed, generations, period, policy and saturation
// limit (0 for the default) (the ones stored in a window's metadata).
func windowOptions(seed uint32, gens int, period time.Duration, policy byte, satLimit float64) []bloom.Option {
	opts := []bloom.Option{bloom.Seed(seed), bloom.Generations(gens)}
	if period > 0 {
		// Every(d) makes the period d/(r-1) rounded up: d = period*(r-1)
		// gives the period back.
		opts = append(opts, bloom.Every(period*time.Duration(gens-1)))
		switch policy {
		case policySaturate:
			opts = append(opts, bloom.OnOverflow(bloom.Saturate))
			if satLimit != 0 {
				opts = append(opts, bloom.SaturationLimit(satLimit))
			}
		case policyGrow:
			opts = append(opts, bloom.OnOverflow(bloom.Grow))
		}
	}
	return opts
}
