package redisbloom

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// metaFields returns the metadata fields that describe w, format first, as
// field, value, ... (metaCheck covers exactly these).
func (w *WindowFilter) metaFields() []any {
	policy := "rotate-early"
	switch w.p.policy {
	case policySaturate:
		policy = "saturate"
	case policyGrow:
		policy = "grow"
	}
	fields := []any{
		"format", windowFormatName,
		"id", w.h.id,
		"seed", strconv.FormatUint(uint64(w.p.seed), 10),
		"window", strconv.FormatUint(w.p.window, 10),
		"error_rate", strconv.FormatFloat(w.p.errorRate, 'g', -1, 64),
		"generations", strconv.Itoa(w.p.gens),
		"gen_capacity", strconv.FormatUint(w.p.genCap, 10),
		"bits", strconv.FormatUint(w.p.m, 10),
		"hashes", strconv.FormatUint(uint64(w.p.k), 10),
		"period", strconv.FormatInt(int64(w.p.period), 10),
		"period_us", strconv.FormatInt(w.p.periodMicros(), 10),
		"policy", policy,
	}
	if w.p.satLimit != 0 {
		// Only a limit given (bloom.SaturationLimit): the check of a
		// window created without one, or before limits existed, stays
		// the same.
		fields = append(fields, "saturation_limit", strconv.FormatFloat(w.p.satLimit, 'g', -1, 32))
	}
	return fields
}

// checkWindowParams returns an error wrapping bloom.ErrInvalidParameter
// for parameters a Redis window cannot keep: a generation of more than
// MaxBits bits (one Redis string), or a period too long for the scripts'
// arithmetic (2^50 microseconds for the whole ring, some 35 years).
func checkWindowParams(p windowParams) error {
	switch {
	case p.m > MaxBits:
		return fmt.Errorf("%w: a window of %d keys at error rate %v needs generations of %d bits, more than MaxBits (%d), the most one Redis string holds",
			bloom.ErrInvalidParameter, p.window, p.errorRate, p.m, MaxBits)
	case p.periodMicros() > maxWindowPeriodMicros/int64(p.gens):
		return fmt.Errorf("%w: period %v: %d generations would span more than 2^50 microseconds", bloom.ErrInvalidParameter, p.period, p.gens)
	}
	return nil
}

// parseWindowMeta builds a handle from the metadata (field, value, ...),
// validating every field: the parameters must be those bloom.NewWindow
// builds from the window, error rate, generations, period, policy and seed
// stored (so the sizes are recomputed, not trusted), and match the check.
func parseWindowMeta(rdb redis.UniversalClient, name string, reply []any) (*WindowFilter, error) {
	meta, err := lostMetaMap(name, reply, windowFormatName)
	if err != nil {
		return nil, err
	}
	bad := func(field string) error {
		return fmt.Errorf("%w: %q: invalid %s %q", ErrCorrupt, name, field, meta[field])
	}
	seed, err := strconv.ParseUint(meta["seed"], 10, 32)
	if err != nil {
		return nil, bad("seed")
	}
	window, err := strconv.ParseUint(meta["window"], 10, 64)
	if err != nil {
		return nil, bad("window")
	}
	errorRate, err := strconv.ParseFloat(meta["error_rate"], 64)
	if err != nil {
		return nil, bad("error_rate")
	}
	gens, err := strconv.Atoi(meta["generations"])
	if err != nil || gens < 2 || gens > maxWindowGens {
		return nil, bad("generations")
	}
	period, err := strconv.ParseInt(meta["period"], 10, 64)
	if err != nil || period < 0 {
		return nil, bad("period")
	}
	var policy byte
	switch meta["policy"] {
	case "rotate-early":
	case "saturate":
		policy = policySaturate
	case "grow":
		policy = policyGrow
	default:
		return nil, bad("policy")
	}
	if meta["id"] == "" {
		return nil, bad("id")
	}
	epoch, err := parseUint(name, "epoch", meta["epoch"])
	if err != nil {
		return nil, err
	}
	gen, err := parseUint(name, "gen", meta["gen"])
	if err != nil {
		return nil, err
	}
	rotations, err := parseUint(name, "rotations", meta["rotations"])
	if err != nil {
		return nil, err
	}
	var satLimit float64
	if text, ok := meta["saturation_limit"]; ok {
		l, err := strconv.ParseFloat(text, 32)
		if err != nil || !(l > 0 && l < 1) || policy != policySaturate || period == 0 {
			return nil, bad("saturation_limit")
		}
		satLimit = l
	}
	p, err := windowProbe(window, errorRate, windowOptions(uint32(seed), gens, time.Duration(period), policy, satLimit))
	if err == nil && p.satLimit != satLimit {
		err = fmt.Errorf("saturation limit %v, where the metadata has %v", p.satLimit, satLimit)
	}
	if err == nil && (p.gens != gens || p.period != time.Duration(period)) {
		err = fmt.Errorf("%d generations of %v, where the metadata has %d of %v", p.gens, p.period, gens, time.Duration(period))
	}

	if err == nil {
		err = checkWindowParams(p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q: invalid parameters: %v", ErrCorrupt, name, err)
	}
	w := newWindowHandle(rdb, name, meta["id"], p)
	if meta["check"] != w.check {
		return nil, fmt.Errorf("%w: %q: metadata does not match its check field (%q, computed %q): its parameters were changed",
			ErrCorrupt, name, meta["check"], w.check)
	}
	w.h.seen.observe(gen)
	w.view = newChainView(epoch, int(min(rotations, math.MaxInt)))
	return w, nil
}

// sameParameters returns an error wrapping bloom.ErrIncompatible unless w
// and want have the same parameters.
func (w *WindowFilter) sameParameters(want *WindowFilter) error {
	if w.p.windowShape != want.p.windowShape {
		return fmt.Errorf("%w: window filter %q exists with window %d, error rate %v, %d generations, period %v, policy %d, seed %d; not %d, %v, %d, %v, %d, %d",
			bloom.ErrIncompatible, w.h.name, w.p.window, w.p.errorRate, w.p.gens, w.p.period, w.p.policy, w.p.seed,
			want.p.window, want.p.errorRate, want.p.gens, want.p.period, want.p.policy, want.p.seed)
	}
	return nil
}

// maxWindowGens is the most generations a window has, as in the bloom
// package (its format's limit); Destroy deletes the slots of so many.
const maxWindowGens = 64

// maxWindowPeriodMicros bounds a time window's period times its
// generations, in microseconds (about 35 years), so that the scripts' times,
// Lua numbers (doubles), stay exact integers well past the present.
const maxWindowPeriodMicros = 1 << 50

// Overflow policies as the bloom package's window format numbers them.
const (
	policyRotateEarly = 0
	policySaturate    = 1
	policyGrow        = 2
)

// windowParams is what determines a window's sizes and behaviour.
type windowParams struct {
	windowShape
	exts []windowExt // under Grow, the extension levels a Redis string holds (from the shape)
}

// windowShape is the part of windowParams that the metadata stores: the
// rest derives from it.
type windowShape struct {
	window    uint64  // keys the window promises to keep
	errorRate float64 // the target rate, at every moment
	gens      int     // r, the generations in the ring
	genCap    uint64  // keys per generation, ceil(window/(r-1))
	m         uint64  // bits per generation, a multiple of bloom.BlockBits
	k         uint    // hashes
	seed      uint32
	period    time.Duration // how long a generation lasts; 0 for a count window
	policy    byte          // a time window's overflow policy
	// satLimit is bloom.SaturationLimit's rate as the window encoding
	// keeps it (a float32's value), 0 for the default.
	satLimit float64
}

// periodMicros is the period on the server's clock, which keeps
// microseconds (TIME): the period rounded up to a whole microsecond.
func (p *windowParams) periodMicros() int64 { return (int64(p.period) + 999) / 1000 }

// onCount reports whether the newest generation rotates when it holds
// genCap keys: in a count window, and in a time window that rotates early.
func (p *windowParams) onCount() bool { return p.period == 0 || p.policy == policyRotateEarly }

// defaultSaturationLimit is bloom.SaturationLimit's default for a window
// at errorRate: ten times it, at most 0.5, and at least errorRate.
func defaultSaturationLimit(errorRate float64) float64 {
	return max(min(10*errorRate, 0.5), errorRate)
}

// saturationCap returns, under Saturate, the keys past which the newest
// generation rotates early, as bloom.WindowFilter computes them: the most
// keys n for which r generations of n keys each have a rate
// (bloom.BlockedFalsePositiveRate) of at most the saturation limit, and at
// least GenerationCapacity; 0 for the other policies. O(log m) rate
// computations.
func (p *windowParams) saturationCap() uint64 {
	if p.period == 0 || p.policy != policySaturate {
		return 0
	}
	limit := p.satLimit
	if limit == 0 {
		limit = defaultSaturationLimit(p.errorRate)
	}
	q := -math.Expm1(math.Log1p(-limit) / float64(p.gens))
	lo, hi := p.genCap, p.m // rate(hi keys) is about 1
	if bloom.BlockedFalsePositiveRate(p.m, p.k, lo) > q {
		return lo
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if bloom.BlockedFalsePositiveRate(p.m, p.k, mid) <= q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
