package redisbloom

import (
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
		p.satLimit = defaultSaturationLimit(errorRate)
	case bloom.Grow:
		p.policy = policyGrow
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
// window with the given seed, generations, period and policy (the ones
// stored in a window's metadata).
func windowOptions(seed uint32, gens int, period time.Duration, policy byte) []bloom.Option {
	opts := []bloom.Option{bloom.Seed(seed), bloom.Generations(gens)}
	if period > 0 {
		// Every(d) makes the period d/(r-1) rounded up: d = period*(r-1)
		// gives the period back.
		opts = append(opts, bloom.Every(period*time.Duration(gens-1)))
		switch policy {
		case policySaturate:
			opts = append(opts, bloom.OnOverflow(bloom.Saturate))
		case policyGrow:
			opts = append(opts, bloom.OnOverflow(bloom.Grow))
		}
	}
	return opts
}
