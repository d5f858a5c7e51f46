package redisbloom

// This file holds what a ScalableFilter keeps in its metadata hash (written
// by NewScalable, parsed and checked by OpenScalable and every script call's
// reload) and the sizes of its sub-filters, computed from the parameters and
// cached (scalable.go has the filter and its calls).

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// metaFields returns the metadata fields that describe s, format first, as
// field, value, ... (metaCheck covers exactly these).
func (s *ScalableFilter) metaFields() []any {
	growth := "exponential"
	if s.growth == growthLinear {
		growth = "linear"
	}
	return []any{
		"format", scalableFormatName,
		"id", s.h.id,
		"seed", strconv.FormatUint(uint64(s.seed), 10),
		"growth", growth,
		"scale", strconv.FormatFloat(s.scale, 'g', -1, 64),
		"tightening", strconv.FormatFloat(s.tightening, 'g', -1, 64),
		"initial_capacity", strconv.FormatUint(s.initialCapacity, 10),
		"error_rate", strconv.FormatFloat(s.errorRate, 'g', -1, 64),
	}
}

// parseScalableMeta builds a handle from the metadata (field, value, ...),
// validating every field, the number of sub-filters against what the
// parameters can build (checkCount) included.
func parseScalableMeta(ctx context.Context, rdb redis.UniversalClient, name string, reply []any) (*ScalableFilter, error) {
	meta, err := lostMetaMap(name, reply, scalableFormatName)
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
	var growth bloom.Option
	scale, err := strconv.ParseFloat(meta["scale"], 64)
	if err != nil {
		return nil, bad("scale")
	}
	switch meta["growth"] {
	case "linear":
		growth = bloom.Linear(scale)
	case "exponential":
		growth = bloom.Exponential(scale)
	default:
		return nil, bad("growth")
	}
	tightening, err := strconv.ParseFloat(meta["tightening"], 64)
	if err != nil {
		return nil, bad("tightening")
	}
	initialCapacity, err := strconv.ParseUint(meta["initial_capacity"], 10, 64)
	if err != nil {
		return nil, bad("initial_capacity")
	}
	errorRate, err := strconv.ParseFloat(meta["error_rate"], 64)
	if err != nil {
		return nil, bad("error_rate")
	}
	n, err := strconv.ParseUint(meta["n"], 10, 64)
	if err != nil || n < 1 || n > maxSubFilters {
		return nil, bad("n")
	}
	epoch, err := parseUint(name, "epoch", cmp.Or(meta["epoch"], "0"))
	if err != nil {
		return nil, err
	}
	gen, err := parseUint(name, "gen", meta["gen"])
	if err != nil {
		return nil, err
	}
	if meta["id"] == "" {
		return nil, bad("id")
	}
	probe, err := scalableProbe(initialCapacity, errorRate, []bloom.Option{bloom.Seed(uint32(seed)), growth, bloom.Tightening(tightening)})
	if err != nil {
		return nil, fmt.Errorf("%w: %q: invalid parameters: %v", ErrCorrupt, name, err)
	}
	s, err := scalableFromProbe(rdb, name, meta["id"], probe, initialCapacity)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: invalid parameters: %v", ErrCorrupt, name, err)
	}
	if meta["check"] != s.check {
		return nil, fmt.Errorf("%w: %q: metadata does not match its check field (%q, computed %q): seed, growth, scale, tightening, initial capacity or error rate were changed",
			ErrCorrupt, name, meta["check"], s.check)
	}
	if err := s.checkCount(ctx, n); err != nil {
		return nil, err
	}
	s.h.seen.observe(gen)
	s.chain = newChainView(epoch, int(n))
	return s, nil
}

// lostMetaMap is metaMap for a scalable filter or a window, whose metadata
// can also mark it lost (ErrLost).
func lostMetaMap(name string, reply []any, want string) (map[string]string, error) {
	meta, err := metaMap(name, reply, want)
	if err != nil {
		return nil, err
	}
	if why, ok := meta["lost"]; ok {
		return nil, fmt.Errorf("%w: %q: %s", ErrLost, name, why)
	}
	return meta, nil
}

// sameParameters returns an error wrapping bloom.ErrIncompatible unless s
// and want have the same parameters.
func (s *ScalableFilter) sameParameters(want *ScalableFilter) error {
	mismatch := func(what string, got, wanted any) error {
		return fmt.Errorf("%w: scalable filter %q exists with %s %v, not %v", bloom.ErrIncompatible, s.h.name, what, got, wanted)
	}
	switch {
	case s.seed != want.seed:
		return mismatch("seed", s.seed, want.seed)
	case s.growth != want.growth:
		return mismatch("growth", s.growth, want.growth)
	case math.Float64bits(s.scale) != math.Float64bits(want.scale):
		return mismatch("scale", s.scale, want.scale)
	case math.Float64bits(s.tightening) != math.Float64bits(want.tightening):
		return mismatch("tightening", s.tightening, want.tightening)
	case s.initialCapacity != want.initialCapacity:
		return mismatch("initial capacity", s.initialCapacity, want.initialCapacity)
	case math.Float64bits(s.errorRate) != math.Float64bits(want.errorRate):
		return mismatch("error rate", s.errorRate, want.errorRate)
	}
	return nil
}

// size returns the size of sub-filter j, computed as bloom.ScalableBloomFilter
// computes it (subCapacity, subErrorRate, Size in scalable.go; the probe in
// scalableFromProbe and the Export tests check the agreement), with Redis's
// limit of MaxBits bits per sub-filter on top of bloom.MaxBits in all and
// the format's maxSubFilters. The calls that take a number of sub-filters
// from Redis compute the sizes up to it first (checkCount), honouring their
// context; size then looks them up.
func (s *ScalableFilter) size(j int) subSize {
	z, _ := s.sizeCtx(context.Background(), j)
	return z
}

// sizeCtx is size, computing the sizes not yet known one after the other,
// each from the one before in O(1) steps (the bits used so far are carried
// along; bloom.Size does the rest), and giving up with ctx's error when ctx
// ends. The lock is held for lookups and appends only, so a call that
// computes holds up no other call past its own context.
func (s *ScalableFilter) sizeCtx(ctx context.Context, j int) (subSize, error) {
	c := s.sizes
	for {
		c.mu.Lock()
		have := len(c.sizes)
		if j < have {
			z := c.sizes[j]
			c.mu.Unlock()
			return z, nil
		}
		var prev subSize
		if have > 0 {
			prev = c.sizes[have-1]
		}
		c.mu.Unlock()
		if have > 0 && !prev.ok {
			return subSize{}, nil // none after the first that cannot be built
		}
		if err := ctx.Err(); err != nil {
			return subSize{}, fmt.Errorf("redisbloom: filter %q: sizing sub-filter %d: %w", s.h.name, have, err)
		}
		z := s.computeSize(have, prev.used)
		c.mu.Lock()
		if len(c.sizes) == have {
			c.sizes = append(c.sizes, z)
		}
		c.mu.Unlock()
	}
}

// computeSize returns the size of sub-filter i, used the bits of the
// sub-filters before it.
func (s *ScalableFilter) computeSize(i int, used uint64) subSize {
	if i >= maxSubFilters {
		return subSize{}
	}
	c := float64(s.initialCapacity)
	switch {
	case i == 0:
	case s.growth == growthLinear:
		c *= s.scale * float64(i)
	default:
		c *= math.Pow(s.scale, float64(i))
	}
	c = math.Round(c)
	if c >= float64(bloom.MaxBits) {
		return subSize{}
	}
	capacity := max(uint64(c), 1)
	rate := s.errorRate * (1 - s.tightening) * math.Pow(s.tightening, float64(i))
	m, k, err := bloom.Size(capacity, rate)
	if err != nil || m > MaxBits || used+m > bloom.MaxBits {
		return subSize{}
	}
	return subSize{capacity: capacity, rate: rate, m: m, k: k, ok: true, used: used + m}
}

// maxSubFilters is the most sub-filters a scalable filter has: the most the
// bloom package's scalable format holds (N in [1, 65536]), where
// bloom.ScalableBloomFilter stops growing too. scalableCheckLua spells it
// out as well.
const maxSubFilters = 1 << 16

// checkCount returns an error wrapping ErrCorrupt unless a filter with s's
// parameters can have n sub-filters: n in [1, maxSubFilters], and sub-filter
// n-1 within the bit limits, which growth never passes. Metadata edited or
// damaged to hold any other n is refused before anything is sized for it.
// It computes the sizes of sub-filters 0..n-1 (see sizeCtx) and returns
// ctx's error if ctx ends first.
func (s *ScalableFilter) checkCount(ctx context.Context, n uint64) error {
	if n < 1 || n > maxSubFilters {
		return fmt.Errorf("%w: %q: %d sub-filters, not in [1, %d]", ErrCorrupt, s.h.name, n, maxSubFilters)
	}
	z, err := s.sizeCtx(ctx, int(n)-1)
	if err != nil {
		return err
	}
	if !z.ok {
		return fmt.Errorf("%w: %q: %d sub-filters, more than the filter's parameters can build (sub-filter %d would pass the bit limits)",
			ErrCorrupt, s.h.name, n, n-1)
	}
	return nil
}

// subSize is the size of one sub-filter; ok is false if it cannot be built
// (the filter saturates there). used is the bits of this sub-filter and
// all before it.
type subSize struct {
	capacity uint64
	rate     float64
	m        uint64
	k        uint
	ok       bool
	used     uint64
}

// sizeCache holds the sizes of sub-filters 0, 1, ... computed so far, up to
// and including the first that cannot be built.
type sizeCache struct {
	mu    sync.Mutex
	sizes []subSize
}

// chainView is what a handle has seen of the chain of sub-filters: the
// import epoch (metadata field epoch, which every Import increments) and
// the number of sub-filters at that epoch. n only grows within an epoch:
// the scripts refuse a filter that has fewer sub-filters than the handle
// saw at the same epoch (ErrCorrupt), as they refuse one whose write
// generation went back (ErrLost), since keys added to the sub-filters
// that vanished would be reported absent. Only an Import, which increments
// the epoch, takes n down.
type chainView struct {
	p atomic.Pointer[chain]
}

// chain is one state of a chainView.
type chain struct {
	epoch uint64
	n     int
}

func newChainView(epoch uint64, n int) *chainView {
	v := new(chainView)
	v.p.Store(&chain{epoch: epoch, n: n})
	return v
}

// load returns the chain as last seen.
func (v *chainView) load() chain { return *v.p.Load() }

// see records that the filter had n sub-filters at import epoch epoch,
// unless the view has seen a later epoch, or more sub-filters at that one.
func (v *chainView) see(epoch uint64, n int) {
	for {
		cur := v.p.Load()
		if epoch < cur.epoch || (epoch == cur.epoch && n <= cur.n) {
			return
		}
		if v.p.CompareAndSwap(cur, &chain{epoch: epoch, n: n}) {
			return
		}
	}
}
