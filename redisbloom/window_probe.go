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
		m, k, e := bloom.BlockedSize(genCap, windowGenRate(errorRate, g, period > 0 && policy == policyGrow))
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

// windowGenRate returns the rate of one generation of a ring of r at
// errorRate, q = 1-(1-errorRate)^(1/r), or under Grow that of its base,
// q*(1-windowGrowShare), as the bloom package's windowGenRate (sizing.go).
func windowGenRate(errorRate float64, r int, grow bool) float64 {
	q := -math.Expm1(math.Log1p(-errorRate) / float64(r))
	if grow {
		q *= 1 - windowGrowShare
	}
	return q
}

// windowGrowShare is the share of a generation's rate that a window under
// Grow keeps for its extensions (the bloom package's windowGrowShare).
const windowGrowShare = 1.0 / 8

// windowMaxExts is the most extensions a generation has under Grow, as in
// the bloom package (internal/window.MaxExtensions).
const windowMaxExts = 16

// windowExt is the size of an extension level of a window under Grow.
type windowExt struct {
	cap uint64 // keys
	m   uint64 // bits, a multiple of bloom.BlockBits
	k   uint
}

// windowExtSizes returns the sizes of the extension levels j = 1, 2, ...
// of a time window of p under Grow, as the bloom package sizes them
// (windowExtSize in sizing.go): genCap*2^(j-1) keys, blocked, at
// q*windowGrowShare*2^-j. It stops at windowMaxExts, at the first level
// bloom.BlockedSize refuses (where the in-memory window stops growing
// too) and at the first of more than MaxBits bits, which one Redis
// string cannot hold: past the last level, the window rotates early. It
// returns nil for the other policies.
func windowExtSizes(p windowParams) []windowExt {
	if p.period == 0 || p.policy != policyGrow {
		return nil
	}
	var xs []windowExt
	share := windowGenRate(p.errorRate, p.gens, false) * windowGrowShare
	for j := 1; j <= windowMaxExts; j++ {
		if p.genCap > math.MaxUint64>>(j-1) {
			break
		}
		c := p.genCap << (j - 1)
		m, k, err := bloom.BlockedSize(c, math.Ldexp(share, -j))
		if err != nil || m > MaxBits {
			break
		}
		xs = append(xs, windowExt{cap: c, m: m, k: k})
	}
	return xs
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
	var autoPolicy byte
	var autoPeriod time.Duration
	if probe.Overflow() == bloom.Grow && probe.Duration() > 0 {
		// Only the policy matters to the choice (Grow sizes the bases
		// lower); any period marks a time window.
		autoPolicy, autoPeriod = policyGrow, 1
	}
	with := func(o bloom.Option) []bloom.Option { return append(opts[:len(opts):len(opts)], o) }
	if _, err := bloom.NewWindow(small, errorRate, with(bloom.Generations(2))...); err == nil {
		// The generations are bloom.NewWindow's choice, for the real
		// window: the probe is built again with that choice, so that
		// its period (Every's duration over r-1) is the real one.
		auto, err := windowParamsFor(window, errorRate, 0, autoPeriod, autoPolicy, 0)
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
