package redisbloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/bloomfilters/bloom"
)

// windowMaxAutoGens is the most generations bloom.NewWindow picks by itself.
const windowMaxAutoGens = 16

// windowProbeKeys bounds the window of the in-memory probe that NewWindow
// builds to learn what its options choose (see windowProbe): all r of its
// generations are allocated.
const windowProbeKeys = 1 << 16

// windowParamsFor returns the parameters of a window of window keys at
// errorRate with gens generations (0: the number bloom.NewWindow picks, the
// one in [2, 16] whose ring takes the fewest bits), sized as bloom.NewWindow
// sizes them (windowSize in the bloom package's sizing.go): r blocked
// generations (bloom.BlockedSize) of ceil(window/(r-1)) keys each at
// 1-(1-errorRate)^(1/r). windowProbe checks the agreement on every call.
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
		m, k, e := bloom.BlockedSize(genCap, -math.Expm1(math.Log1p(-errorRate)/float64(g)))
		if e != nil {
			err = e
			continue
		}
		if m > bloom.MaxBits/uint64(g) {
			err = fmt.Errorf("%w: a window of %d keys at errorRate %v needs more than MaxBits (%d) bits in %d generations",
				bloom.ErrInvalidParameter, window, errorRate, bloom.MaxBits, g)
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

// windowProbe returns the parameters of bloom.NewWindow(window, errorRate,
// opts...). It learns what the opaque options choose (seed, generations,
// period, overflow policy) from in-memory windows built with them, of at
// most windowProbeKeys keys, so that a large window costs no large
// allocation: one with the options as given, and, to tell whether they
// fix the generations, one with bloom.Generations added (which a second
// Generations makes fail). The sizes of the real window come from
// windowParamsFor, checked against the probe's. It returns
// bloom.NewWindow's errors.
func windowProbe(window uint64, errorRate float64, opts []bloom.Option) (windowParams, error) {
	small := min(window, windowProbeKeys)
	probe, err := bloom.NewWindow(small, errorRate, opts...)
	if err != nil {
		return windowParams{}, err
	}
	gens := probe.Generations()
	with := func(o bloom.Option) []bloom.Option { return append(opts[:len(opts):len(opts)], o) }
	if _, err := bloom.NewWindow(small, errorRate, with(bloom.Generations(2))...); err == nil {
		// The generations are bloom.NewWindow's choice, for the real
		// window: the probe is built again with that choice, so that
		// its period (Every's duration over r-1) is the real one.
		auto, err := windowParamsFor(window, errorRate, 0, 0, 0, 0)
		if err != nil {
			return windowParams{}, err
		}
		gens = auto.gens
		if probe, err = bloom.NewWindow(small, errorRate, with(bloom.Generations(gens))...); err != nil {
			return windowParams{}, err
		}
	}
	enc, err := probe.MarshalBinary()
	if err != nil {
		return windowParams{}, err
	}
	if string(enc[:4]) != winMagic || binary.LittleEndian.Uint16(enc[4:]) != winVersion || len(enc) < winHeader+8 {
		return windowParams{}, fmt.Errorf("redisbloom: internal error: bloom.WindowFilter's encoding is not the one this package writes")
	}
	policy := enc[6]
	if probe.Overflow() == bloom.Grow {
		return windowParams{}, errGrow("NewWindow")
	}
	period := time.Duration(binary.LittleEndian.Uint64(enc[winHeader:]))
	p, err := windowParamsFor(window, errorRate, gens, period, policy, probe.Seed())
	if err != nil {
		return windowParams{}, err
	}
	check, err := windowParamsFor(small, errorRate, gens, period, policy, probe.Seed())
	if err != nil || check.m*uint64(gens) != probe.Bits() || check.k != probe.Hashes() || check.genCap != probe.GenerationCapacity() ||
		gens != probe.Generations() || period*time.Duration(gens-1) != probe.Duration() {
		return windowParams{}, fmt.Errorf("redisbloom: internal error: the sizes of a window differ from bloom.NewWindow's")
	}
	return p, nil
}

// errGrow is the error of a window under bloom.Grow, which this package
// does not keep: its generations would need extensions, which the scripts
// do not make (the window on Redis rotates early or saturates).
func errGrow(call string) error {
	return fmt.Errorf("%w: redisbloom: %s: bloom.OnOverflow(bloom.Grow) is not supported on Redis; use bloom.RotateEarly or bloom.Saturate",
		bloom.ErrInvalidParameter, call)
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
		if policy == policySaturate {
			opts = append(opts, bloom.OnOverflow(bloom.Saturate))
		}
	}
	return opts
}
