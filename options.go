package bloom

import (
	"errors"
	"fmt"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/bloomfilters/bloom/internal/format"
)

// The copies of these limits in internal/format and internal/blocked: the
// build fails (constant overflow) if they differ.
const (
	_ = uint64(MaxBits-format.MaxBits) + uint64(format.MaxBits-MaxBits)
	_ = uint(MaxHashes-format.MaxHashes) + uint(format.MaxHashes-MaxHashes)
	_ = uint(BlockBits-blocked.BlockBits) + uint(blocked.BlockBits-BlockBits) +
		uint(BlockBits-format.BlockBits) + uint(format.BlockBits-BlockBits)
)

// Sentinel errors, to be matched with errors.Is.
var (
	// ErrInvalidParameter is wrapped by every error a constructor or option
	// returns for a parameter out of its allowed range.
	ErrInvalidParameter = errors.New("bloom: invalid parameter")

	// ErrIncompatible is returned when combining filters whose sizes, hash
	// counts, seeds or layouts differ.
	ErrIncompatible = errors.New("bloom: incompatible filters")

	// ErrCorrupt is wrapped by every error a decoder returns for input that is
	// not a valid encoding: bad magic, unknown version, inconsistent header,
	// wrong length or checksum mismatch.
	ErrCorrupt = format.ErrCorrupt
)

func paramError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParameter, fmt.Sprintf(format, args...))
}

// Option configures a filter at construction. Options are created by Seed,
// Concurrent and Blocked and, for ScalableBloomFilter only, by Linear,
// Exponential and Tightening. Each may be given at most once: an option
// given twice, even with the same value, is an error wrapping
// ErrInvalidParameter that names it (and so are Linear and Exponential
// together).
type Option struct {
	apply func(*settings) error
}

// settings collects what the options chose.
type settings struct {
	seed       uint32
	seedSet    bool    // Seed was given
	growth     growth  // growthNone unless Linear or Exponential was given
	scale      float64 // growth scale factor
	tightening float64 // 0 unless Tightening was given
	concurrent bool    // Concurrent was given
	blocked    bool    // Blocked was given
	classic    bool    // Classic was given

	win windowSettings // Every, Clock, OnOverflow, Generations (scalable.go)
}

func newSettings(opts []Option) (settings, error) {
	s := settings{seed: DefaultSeed}
	for _, o := range opts {
		if o.apply == nil {
			return s, paramError("zero Option value")
		}
		if err := o.apply(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Seed sets the murmur3 seed (default DefaultSeed). Filters can only be
// combined and compared when their seeds match.
//
// With a public seed anyone can compute which keys collide in a filter and
// craft keys that make it answer "present" for chosen absent keys, or fill it
// quickly. A secret random seed (for example from crypto/rand), kept with the
// filter, defends against such adversaries.
func Seed(seed uint32) Option {
	return Option{func(s *settings) error {
		if s.seedSet {
			return paramError("Seed may be given only once")
		}
		s.seed, s.seedSet = seed, true
		return nil
	}}
}

// Concurrent makes a BloomFilter or ScalableBloomFilter safe for Add, Test and
// TestAndAdd (and their String forms) from any number of goroutines at once,
// without a global lock. A concurrent BloomFilter carries a table of locks
// of about 1/8 of its size, at least 1 KiB (16 locks) and at most 64 KiB
// (1024 locks, from 512 KiB filters up); a concurrent ScalableBloomFilter,
// which grows, 64 KiB. A filter made without the option pays one
// predictable branch per call.
//
// Test takes no lock: it reads the bits with atomic loads. Add and TestAndAdd
// first test the key the same way, so a key that is already present costs no
// lock and no write. Otherwise they take one of the mutexes, chosen by the
// key's hash, and set the bits with atomic ORs. Goroutines adding different
// keys rarely share a mutex; goroutines adding the same key take turns, so
// TestAndAdd reports a new key absent to exactly one of them and Count is
// exact.
//
// The mutexes are what makes that exact: the old values that the atomic ORs
// return cannot decide it alone. If goroutine A sets a key's first bit and B,
// finding it set, sets the key's second bit before A gets to it, each has set
// a bit that was clear, and nothing in the bits says which came first.
//
// The type docs of BloomFilter and ScalableBloomFilter say which other methods
// are safe during concurrent writes. A filter keeps its mode when cloned,
// combined or decoded into: decoding into a filter made with Concurrent gives
// a concurrent filter, decoding into a zero value a plain one. Read,
// ReadScalable, ReadAny and FromWords take the option too. The mode is not
// part of the binary format or of Equal.
func Concurrent() Option {
	return Option{func(s *settings) error {
		if s.concurrent {
			return paramError("Concurrent may be given only once")
		}
		s.concurrent = true
		return nil
	}}
}
