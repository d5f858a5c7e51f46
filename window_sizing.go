package bloom

import (
	"math"
	"time"
)

// Window sizing.

// windowMaxAutoGens is the most generations NewWindow picks by itself.
const windowMaxAutoGens = 16

// windowSize returns the generations r of a window of keys keys at
// errorRate and the bits and hashes of each: r blocked generations
// (BlockedSize) of ceil(keys/(r-1)) keys each at q = 1-(1-errorRate)^(1/r),
// so that their union's rate, 1-(1-q)^r, is errorRate. That product is
// exact: a key's positions are the same in every generation, and the
// generations hold independent keys, so given the positions the r events
// "all set in generation g" are independent, each of probability q.
// Given r = 0 it picks the r in [2, 16] whose ring takes the fewest bits:
// 7 at 1%, 16.99 bits per window key. It returns an error wrapping
// ErrInvalidParameter where BlockedSize does, and for a ring of more than
// MaxBits bits.
func windowSize(keys uint64, errorRate float64, r int, grow bool) (int, uint64, uint, error) {
	lo, hi := r, r
	if r == 0 {
		lo, hi = 2, windowMaxAutoGens
	}
	best, bestM, bestK := 0, uint64(0), uint(0)
	var err error
	for g := lo; g <= hi; g++ {
		genCap := keys / uint64(g-1) // rounded up: internal/window's GenCapFor
		if keys%uint64(g-1) != 0 {
			genCap++
		}
		m, k, e := BlockedSize(genCap, windowGenRate(errorRate, g, grow))
		if e != nil {
			err = e
			continue
		}
		if m > MaxBits/uint64(g) {
			err = paramError("a window of %d keys at errorRate %v needs more than MaxBits (%d) bits in %d generations", keys, errorRate, MaxBits, g)
			continue
		}
		if best == 0 || uint64(g)*m < uint64(best)*bestM {
			best, bestM, bestK = g, m, k
		}
	}
	if best == 0 {
		return 0, 0, 0, err
	}
	return best, bestM, bestK, nil
}

// windowGenRate returns the rate of one generation of a ring of r at
// errorRate, q = 1-(1-errorRate)^(1/r), or under Grow the rate of its base
// sub-filter, q*(1-windowGrowShare): the extensions take the rest of q.
func windowGenRate(errorRate float64, r int, grow bool) float64 {
	q := -math.Expm1(math.Log1p(-errorRate) / float64(r))
	if grow {
		q *= 1 - windowGrowShare
	}
	return q
}

// windowGrowShare is eps, the share of a generation's rate q that a window
// under Grow keeps for the extensions of the generation: its base is sized at
// q*(1-eps), and its extension j (j >= 1) at q*eps*2^-j, so that the rates
// of a generation's sub-filters sum to less than q whatever the number of
// extensions, and the union bound keeps the generation at or below q.
const windowGrowShare = 1.0 / 8

// windowExtSize returns the size of extension j (1 <= j <= 16) of a
// generation of genCap keys of a window of r generations at errorRate under
// Grow: genCap*2^(j-1) keys at q*eps*2^-j (see windowGrowShare), blocked
// (BlockedSize). Doubling the capacity makes the j-th extension hold as many
// keys as the base and the j-1 before it together, so a burst of b times a
// generation's share takes about log2(b)+1 extensions, each one more line to
// read for a test. It returns an error wrapping ErrInvalidParameter where
// BlockedSize does.
func windowExtSize(genCap uint64, errorRate float64, r, j int) (capacity, m uint64, k uint, err error) {
	if j < 1 || j > 16 || genCap > math.MaxUint64>>(j-1) {
		return 0, 0, 0, paramError("no extension %d of a generation of %d keys", j, genCap)
	}
	capacity = genCap << (j - 1)
	m, k, err = BlockedSize(capacity, math.Ldexp(windowGenRate(errorRate, r, false)*windowGrowShare, -j))
	return capacity, m, k, err
}

// WindowSizing is what NewWindow builds for a window: the ring's sizes, and
// under Grow the sizes of the extensions a burst adds. WindowSize returns
// it without allocating the window.
type WindowSizing struct {
	// Generations is r, the blocked filters of the ring.
	Generations int
	// GenerationCapacity is the keys of one generation, window/(r-1)
	// rounded up.
	GenerationCapacity uint64
	// GenerationBits is the bits of one generation, a multiple of
	// BlockBits: the ring takes Generations*GenerationBits bits (Bits).
	GenerationBits uint64
	// Hashes is k, the bit positions a key sets in a generation.
	Hashes uint
	// Seed is the murmur3 seed.
	Seed uint32
	// Period is the time of one generation of a time window, Every's d
	// over r-1 rounded up to a nanosecond, and 0 for a count window.
	Period time.Duration
	// Overflow is the overflow policy of a time window, and RotateEarly
	// for a count window.
	Overflow Overflow
	// Extensions are, under Grow, the sizes of a generation's extensions
	// in the order a burst adds them (see Grow): at most 16, fewer where
	// the next would be larger than BlockedSize allows. A generation that
	// has them all (or a window whose memory would pass MaxBits) rotates
	// early. Nil under the other policies.
	Extensions []WindowExtension
}

// WindowExtension is the size of one extension of a generation of a window
// under Grow: a blocked filter of Capacity keys in Bits bits (a multiple of
// BlockBits) with Hashes positions per key.
type WindowExtension struct {
	Capacity uint64
	Bits     uint64
	Hashes   uint
}

// Bits returns the bits of the ring, Generations*GenerationBits: the size
// of the window without extensions, and what it always takes under
// RotateEarly and Saturate.
func (z WindowSizing) Bits() uint64 { return uint64(z.Generations) * z.GenerationBits }

// WindowSize returns the sizes NewWindow(window, errorRate, opts...) gives
// the window it builds, and the errors it returns, without allocating the
// window: for knowing the memory of a window before building it (Bits, and
// what a burst adds under Grow), or for building the same window elsewhere.
// It takes O(log m) rate evaluations for each generation count it tries
// (all of 2..16 unless Generations fixes it) and, under Grow, for each of
// the 16 extension levels: 0.5 to 20 ms measured on a loaded 2-core
// machine, as NewWindow's own sizing. It is safe for concurrent use.
func WindowSize(window uint64, errorRate float64, opts ...Option) (WindowSizing, error) {
	_, c, err := planWindow(window, errorRate, opts)
	if err != nil {
		return WindowSizing{}, err
	}
	z := WindowSizing{
		Generations: c.Gens, GenerationCapacity: c.GenCap, GenerationBits: c.M, Hashes: c.K,
		Seed: c.Seed, Period: time.Duration(c.Period), Overflow: Overflow(c.Policy),
	}
	if c.Period > 0 && z.Overflow == Grow {
		z.Extensions = windowExtensions(c)
	}
	return z, nil
}
