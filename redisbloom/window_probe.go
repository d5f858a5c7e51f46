package redisbloom

import (
	"time"

	"github.com/bloomfilters/bloom"
)

// windowMaxAutoGens is the most generations bloom.NewWindow picks by itself.
const windowMaxAutoGens = 16

// windowParamsFor returns the parameters of a window of window keys at
// errorRate with gens generations (0: the number bloom.NewWindow picks, the
// one in [2, 16] whose ring takes the fewest bits), as bloom.NewWindow
// sizes them: r blocked generations (bloom.BlockedSize) of
// ceil(window/(r-1)) keys each at errorRate/r.
func windowParamsFor(window uint64, errorRate float64, gens int, period time.Duration, policy byte, seed uint32) (windowParams, error) {
	lo, hi := gens, gens
	if gens == 0 {
		lo, hi = 2, windowMaxAutoGens
	}
	var best windowParams
	var err error
	for g := lo; g <= hi; g++ {
		genCap := window / uint64(g-1)
		if window%uint64(g-1) != 0 {
			genCap++
		}
		m, k, e := bloom.BlockedSize(genCap, errorRate/float64(g))
		if e != nil {
			err = e
			continue
		}
		if best.gens == 0 || uint64(g)*m < uint64(best.gens)*best.m {
			best = windowParams{window: window, errorRate: errorRate, gens: g, genCap: genCap, m: m, k: k, seed: seed, period: period, policy: policy}
		}
	}
	if best.gens == 0 {
		return best, err
	}
	return best, nil
}
