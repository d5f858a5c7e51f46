package redisbloom

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// shardedScalableFormatName is the format field of a
// ShardedScalableFilter's top metadata.
const shardedScalableFormatName = "redisbloom-sharded-scalable/1"

// ShardedScalableFilter is a scalable Bloom filter split into S shards, each
// a ScalableFilter of its own in its own Redis Cluster hash slot: for a set
// of unknown size that may outgrow one Redis string (512 MiB) or one Redis
// core. A key goes to one shard, chosen as ShardedFilter chooses it (a
// murmur3 hash of the key with the filter's seed plus 0x9E3779B9), and is
// tested and added there only; each shard starts with initialCapacity/S
// keys (rounded up) and grows on its own when it fills, with the growth and
// tightening of bloom.ScalableBloomFilter, so the filter's false-positive
// rate is at most ErrorRate however many keys it holds (an absent key is
// tested in one shard, whose rate is at most ErrorRate). Shards are named
// and placed as ShardedFilter's are (shard i is the ScalableFilter
// name/i/c, its keys in the i-th of S equal ranges of slots), and the top
// metadata {name}:sharded (a hash: format "redisbloom-sharded-scalable/1",
// shards, initial_capacity, error_rate, seed) records the parameters.
//
// Batch calls group the keys by shard and queue every shard's first script
// call on one pipeline, which a Cluster client splits by node: a batch that
// makes no shard grow, with up to 7,000 positions per shard, takes one round
// trip per node, the nodes concurrently, as ShardedFilter's batches do. Only
// the shards whose reply asks for more (see AddMany) make further calls,
// concurrently. The trade-offs of S are ShardedFilter's; a shard also grows
// in steps of its own size, so more shards mean more, smaller sub-filters at
// a given number of keys.
//
// It is safe for concurrent use. A zero ShardedScalableFilter is not
// usable: its methods return an error.
type ShardedScalableFilter struct {
	rdb             redis.UniversalClient
	name            string
	shards          []*ScalableFilter
	seed            uint32
	initialCapacity uint64
	errorRate       float64
}

var errZeroShardedScalable = fmt.Errorf("%w: a zero ShardedScalableFilter is not usable; make one with NewShardedScalable or OpenShardedScalable", ErrZeroValue)

// NewShardedScalable returns the sharded scalable filter called name in rdb,
// creating it if it does not exist: shards ScalableFilters, each made like
// NewScalable(initialCapacity/shards rounded up, errorRate, opts...), with
// its options (Linear or Exponential, Tightening, Seed) and defaults. Every
// process that shares it can call NewShardedScalable with the same
// arguments. It returns an error wrapping bloom.ErrInvalidParameter for
// invalid arguments (shards outside [1, MaxShards], those NewScalable
// refuses, bloom.Blocked included), one wrapping bloom.ErrIncompatible if it exists with other
// parameters, ErrFormat if name is a ShardedFilter, and NewScalable's errors
// for a shard.
func NewShardedScalable(ctx context.Context, rdb redis.UniversalClient, name string, shards int, initialCapacity uint64, errorRate float64, opts ...bloom.Option) (*ShardedScalableFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("%w: shards must be in [1, %d], got %d", bloom.ErrInvalidParameter, MaxShards, shards)
	}
	if initialCapacity == 0 {
		return nil, fmt.Errorf("%w: initial capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	per := (initialCapacity + uint64(shards) - 1) / uint64(shards)
	probe, err := scalableProbe(per, errorRate, opts)
	if err != nil {
		return nil, err
	}
	// Sizes of a shard within Redis's limits, checked before anything is
	// written.
	if _, err := scalableFromProbe(rdb, name, "probe", probe, per); err != nil {
		return nil, err
	}
	fields := []any{
		"format", shardedScalableFormatName,
		"shards", strconv.Itoa(shards),
		"initial_capacity", strconv.FormatUint(initialCapacity, 10),
		"error_rate", strconv.FormatFloat(errorRate, 'g', -1, 64),
		"seed", strconv.FormatUint(uint64(probe.Seed()), 10),
	}
	if err := createShardedMeta(ctx, rdb, name, fields); err != nil {
		return nil, err
	}
	fs, err := openEach(ctx, name, shards, func(ctx context.Context, shard string) (*ScalableFilter, error) {
		return NewScalable(ctx, rdb, shard, per, errorRate, opts...)
	})
	if err != nil {
		return nil, err
	}
	return &ShardedScalableFilter{rdb: rdb, name: name, shards: fs, seed: probe.Seed(), initialCapacity: initialCapacity, errorRate: errorRate}, nil
}

// OpenShardedScalable returns the existing sharded scalable filter called
// name in rdb. It returns ErrNotFound if it does not exist (or one of its
// shards does not), ErrFormat for keys of another kind (a ShardedFilter
// included), OpenScalable's errors for a shard, and ErrCorrupt if a shard's
// seed, initial capacity or error rate is not the one the top metadata
// gives it (see OpenSharded).
func OpenShardedScalable(ctx context.Context, rdb redis.UniversalClient, name string) (*ShardedScalableFilter, error) {
	meta, shards, err := readShardedMeta(ctx, rdb, name, shardedScalableFormatName)
	if err != nil {
		return nil, err
	}
	initialCapacity, err1 := strconv.ParseUint(meta["initial_capacity"], 10, 64)
	errorRate, err2 := strconv.ParseFloat(meta["error_rate"], 64)
	seed, err3 := strconv.ParseUint(meta["seed"], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || initialCapacity == 0 {
		return nil, fmt.Errorf("%w: sharded filter %q: invalid metadata %v", ErrCorrupt, name, meta)
	}
	fs, err := openEach(ctx, name, shards, func(ctx context.Context, shard string) (*ScalableFilter, error) {
		return OpenScalable(ctx, rdb, shard)
	})
	if err != nil {
		return nil, err
	}
	per := (initialCapacity + uint64(shards) - 1) / uint64(shards)
	for _, f := range fs {
		if err := checkShard(name, f.Name(), uint32(seed), f.Seed(), per, f.InitialCapacity(), errorRate, f.ErrorRate()); err != nil {
			return nil, err
		}
	}
	return &ShardedScalableFilter{rdb: rdb, name: name, shards: fs, seed: uint32(seed), initialCapacity: initialCapacity, errorRate: errorRate}, nil
}

// Shard returns the index of the shard that holds key, in [0, len(Shards())),
// or -1 for a zero ShardedScalableFilter, which has no shards.
func (s *ShardedScalableFilter) Shard(key []byte) int { return shardOf(key, len(s.shards), s.seed) }

// Shards returns the filters of the shards, in order.
func (s *ShardedScalableFilter) Shards() []*ScalableFilter {
	return append([]*ScalableFilter(nil), s.shards...)
}

// Name returns the name the filter was created with.
func (s *ShardedScalableFilter) Name() string { return s.name }

// InitialCapacity returns the initial capacity of all shards together, in
// keys, as given to NewShardedScalable.
func (s *ShardedScalableFilter) InitialCapacity() uint64 { return s.initialCapacity }

// ErrorRate returns the target false-positive rate, which the filter keeps
// however far it grows.
func (s *ShardedScalableFilter) ErrorRate() float64 { return s.errorRate }

// Seed returns the murmur3 seed of every shard.
func (s *ShardedScalableFilter) Seed() uint32 { return s.seed }

// Add inserts key into its shard (see ScalableFilter.Add).
func (s *ShardedScalableFilter) Add(ctx context.Context, key []byte) error {
	if s.rdb == nil {
		return errZeroShardedScalable
	}
	return s.shards[s.Shard(key)].Add(ctx, key)
}

// Test reports whether key may be in the filter: false means definitely
// never added, true probably added (see ScalableFilter.Test).
func (s *ShardedScalableFilter) Test(ctx context.Context, key []byte) (bool, error) {
	if s.rdb == nil {
		return false, errZeroShardedScalable
	}
	return s.shards[s.Shard(key)].Test(ctx, key)
}

// TestAndAdd inserts key and reports whether it was probably present before
// (see ScalableFilter.TestAndAdd).
func (s *ShardedScalableFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	if s.rdb == nil {
		return false, errZeroShardedScalable
	}
	return s.shards[s.Shard(key)].TestAndAdd(ctx, key)
}

// AddMany inserts every key of keys (see ScalableFilter.AddMany). The keys
// are grouped by shard and the first script call of every shard is queued
// on one pipeline, which a Cluster client splits by node and sends to the
// nodes concurrently: a batch takes one round trip per node when no shard
// needs a second call. A shard makes more calls, its own, the shards
// concurrently, when its group has more than one script call's positions
// (7,000: 700 keys at 1% while a shard has one sub-filter, fewer as
// sub-filters add hashes, about half as many when the newest may fill
// during the call, which then carries the next one's positions too), when
// it grows past the next sub-filter during the call, or when another
// client grew it since the handle's last call. Keys of one shard are added in their order; each
// script call is atomic, not the batch as a whole.
func (s *ShardedScalableFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := s.many(ctx, keys, true)
	return err
}

// TestMany reports whether each key of keys may be in the filter (see
// ScalableFilter.TestMany), in one round trip per node for up to 7,000
// positions per shard (see AddMany).
func (s *ShardedScalableFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.many(ctx, keys, false)
}

// TestAndAddMany inserts every key of keys and reports for each whether it
// was probably present before, as TestAndAdd one by one would (see
// ScalableFilter.TestAndAddMany), in one round trip per node when no shard
// needs a second call (see AddMany).
func (s *ShardedScalableFilter) TestAndAddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.many(ctx, keys, true)
}

// many groups keys by shard, queues every group's first script call on one
// pipeline, and puts the answers back in the order of keys. The first call
// of a shard is the one its ScalableFilter.run would make (prepare chooses
// it from the handle's state, finish takes its reply), so the answers, the
// sub-filters and their growth are those of calling the shards one by one;
// a shard whose call did not answer all its keys (a batch of more than one
// call, growth, a sub-filter the handle had not seen, NOSCRIPT, a lagging
// replica) goes on with run's loop, in a goroutine of its own.
//
// The writes of a handle made by WithWait are not queued: their WAIT needs
// the connection of the write. Each such shard makes its calls in a
// goroutine of its own, one round trip per call.
func (s *ShardedScalableFilter) many(ctx context.Context, keys [][]byte, add bool) ([]bool, error) {
	if s.rdb == nil {
		return nil, errZeroShardedScalable
	}
	groups, index := groupByShard(keys, len(s.shards), s.seed)
	answers := make([][]byte, len(s.shards))
	errs := make([]error, len(s.shards))
	calls := make([]*scalableCall, len(s.shards))
	cmds := make([]*redis.Cmd, len(s.shards))
	pipe := s.rdb.Pipeline()
	for j, group := range groups {
		f := s.shards[j]
		if len(group) == 0 || (add && f.h.wait != nil) {
			continue
		}
		if calls[j], errs[j] = f.prepare(ctx, add, group); errs[j] == nil {
			cmds[j] = f.enqueue(ctx, pipe, calls[j])
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // errors are checked per command
	}
	var wg sync.WaitGroup
	for j, group := range groups {
		f := s.shards[j]
		switch {
		case len(group) == 0 || errs[j] != nil:
			continue
		case cmds[j] == nil:
			wg.Go(func() { answers[j], errs[j] = f.run(ctx, add, group) })
			continue
		case cmds[j].Err() == nil:
			// The common case, answered here without a goroutine.
			reply, err := f.callReply(ctx, cmds[j], nil)
			out, done, err := f.finish(ctx, calls[j], reply, err, make([]byte, 0, len(group)))
			if err != nil || done == len(group) {
				answers[j], errs[j] = out, err
				continue
			}
			wg.Go(func() { answers[j], errs[j] = f.resume(ctx, add, group[done:], out) })
		default:
			wg.Go(func() {
				reply, err := f.queuedReply(ctx, calls[j], cmds[j])
				out, done, err := f.finish(ctx, calls[j], reply, err, make([]byte, 0, len(group)))
				if err != nil {
					errs[j] = err
					return
				}
				answers[j], errs[j] = f.resume(ctx, add, group[done:], out)
			})
		}
	}
	wg.Wait()
	return gather(answers, errs, index, len(keys))
}

// WithWait returns a handle on the same sharded scalable filter whose
// writes (Add, TestAndAdd, AddMany, TestAndAddMany, Import) return only
// after at least replicas replicas of each shard's master acknowledged
// them, with Redis's WAIT, or an error wrapping ErrNotReplicated after
// timeout: each shard of the handle is that shard's
// ScalableFilter.WithWait(replicas, timeout), which says what it promises
// and what it costs. A batch write then makes each shard's calls on the
// connection of its master, each followed by WAIT, the shards concurrently:
// one round trip per script call of each shard, not one per node. Reads are
// unchanged. It returns ScalableFilter.WithWait's errors
// (bloom.ErrInvalidParameter for replicas < 1, a timeout under a
// millisecond or a client other than a *redis.Client or
// *redis.ClusterClient).
func (s *ShardedScalableFilter) WithWait(replicas int, timeout time.Duration) (*ShardedScalableFilter, error) {
	if s.rdb == nil {
		return nil, errZeroShardedScalable
	}
	shards, err := withWaitAll(s.shards, replicas, timeout)
	if err != nil {
		return nil, err
	}
	g := *s
	g.shards = shards
	return &g, nil
}

// Count returns the keys added, summed over the shards (see
// ScalableFilter.Count).
func (s *ShardedScalableFilter) Count(ctx context.Context) (uint64, error) {
	if s.rdb == nil {
		return 0, errZeroShardedScalable
	}
	return countShards(ctx, s.shards)
}

// NumFilters returns the number of sub-filters of all shards together, as
// of each shard's last call.
func (s *ShardedScalableFilter) NumFilters() int {
	n := 0
	for _, f := range s.shards {
		n += f.NumFilters()
	}
	return n
}

// Export returns an in-memory copy of every shard, in order (see
// ScalableFilter.Export): shard i answers for the keys for which Shard
// returns i. Each shard is read consistently, in one round trip, but not
// all shards at one instant.
func (s *ShardedScalableFilter) Export(ctx context.Context) ([]*bloom.ScalableBloomFilter, error) {
	if s.rdb == nil {
		return nil, errZeroShardedScalable
	}
	return exportShards(ctx, s.shards)
}

// Import replaces every shard with the corresponding filter of src (see
// ScalableFilter.Import), shard by shard: each is atomic, the whole is not.
// src must have one filter per shard, each of the classic layout and with
// the shard's parameters, or Import returns an error wrapping
// bloom.ErrIncompatible (and then changes nothing if the numbers, a
// layout, seed, initial capacity or error rate differ).
func (s *ShardedScalableFilter) Import(ctx context.Context, src []*bloom.ScalableBloomFilter) error {
	if s.rdb == nil {
		return errZeroShardedScalable
	}
	return importShards(ctx, s.name, s.shards, src)
}

// Delete removes every shard and the top metadata. Afterwards every handle
// on it gets ErrNotFound.
func (s *ShardedScalableFilter) Delete(ctx context.Context) error {
	if s.rdb == nil {
		return errZeroShardedScalable
	}
	return deleteShards(ctx, s.rdb, s.name, s.shards)
}
