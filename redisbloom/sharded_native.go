package redisbloom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// shardedNativeFormat is the format field of a ShardedNativeFilter's top
// metadata.
const shardedNativeFormat = "redisbloom-sharded-native/1"

// ShardedNativeFilter is a ShardedFilter whose shards are NativeFilters:
// S RedisBloom keys in S hash slots, for a server (or Cluster) with the BF.*
// commands. A key goes to one shard, chosen as a ShardedFilter chooses it
// (murmur3 of the key with the seed 0x9E3779B9), and shard i is the
// NativeFilter named name/i/c, in the i-th of S equal ranges of the Cluster's
// slots; each shard is reserved for capacity/S keys (rounded up) at the
// filter's error rate, with its options. Batch calls group the keys by shard
// and send each group as its shard's NativeFilter does, the shards
// concurrently: one round trip per shard (per 10,000 of its keys).
//
// The top metadata {name}:sharded (a hash: format
// "redisbloom-sharded-native/1", shards, capacity, error_rate, expansion)
// records the parameters. It keeps the promises of NativeFilter per shard,
// and is safe for concurrent use. A zero ShardedNativeFilter is not usable:
// its methods return an error.
type ShardedNativeFilter struct {
	rdb       redis.UniversalClient
	name      string
	shards    []*NativeFilter
	capacity  uint64
	errorRate float64
}

var errZeroShardedNative = fmt.Errorf("%w: a zero ShardedNativeFilter is not usable; make one with NewShardedNative or OpenShardedNative", ErrZeroValue)

// NewShardedNative returns the sharded native filter called name in rdb,
// creating it if it does not exist: shards NativeFilters, each made by
// NewNative(capacity/shards rounded up, errorRate, opts...). Every process
// that shares it can call NewShardedNative with the same arguments. It
// returns an error wrapping bloom.ErrInvalidParameter for invalid arguments
// (shards outside [1, MaxShards]), one wrapping bloom.ErrIncompatible if it
// exists with other parameters, and NewNative's errors for a shard.
func NewShardedNative(ctx context.Context, rdb redis.UniversalClient, name string, shards int, capacity uint64, errorRate float64, opts ...bfdump.Option) (*ShardedNativeFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("%w: shards must be in [1, %d], got %d", bloom.ErrInvalidParameter, MaxShards, shards)
	}
	if capacity == 0 {
		return nil, fmt.Errorf("%w: capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	per := (capacity + uint64(shards) - 1) / uint64(shards)
	if per > bfdump.MaxReserveCapacity || !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("%w: redisbloom: a shard's capacity must be in [1, %d] and errorRate in (0, 1), got %d and %v",
			bloom.ErrInvalidParameter, bfdump.MaxReserveCapacity, per, errorRate)
	}
	probe, err := bfdump.Reserve(1, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	var expansion uint32
	if !probe.NonScaling() {
		expansion = probe.Expansion()
	}
	fields := []any{
		"format", shardedNativeFormat,
		"shards", strconv.Itoa(shards),
		"capacity", strconv.FormatUint(capacity, 10),
		"error_rate", strconv.FormatFloat(errorRate, 'g', -1, 64),
		"expansion", strconv.FormatUint(uint64(expansion), 10),
	}
	if err := createShardedMeta(ctx, rdb, name, fields); err != nil {
		return nil, err
	}
	fs, err := openEach(ctx, name, shards, func(ctx context.Context, shard string) (*NativeFilter, error) {
		return NewNative(ctx, rdb, shard, per, errorRate, opts...)
	})
	if err != nil {
		return nil, err
	}
	return &ShardedNativeFilter{rdb: rdb, name: name, shards: fs, capacity: capacity, errorRate: errorRate}, nil
}

// OpenShardedNative returns the existing sharded native filter called name
// in rdb. It returns ErrNotFound if it does not exist (or one of its shards
// does not), ErrFormat for keys of another kind, OpenNative's errors for a
// shard, and ErrCorrupt if a shard's capacity, error rate or expansion is
// not the one the top metadata gives it.
func OpenShardedNative(ctx context.Context, rdb redis.UniversalClient, name string) (*ShardedNativeFilter, error) {
	meta, shards, err := readShardedMeta(ctx, rdb, name, shardedNativeFormat)
	if err != nil {
		return nil, err
	}
	capacity, err1 := strconv.ParseUint(meta["capacity"], 10, 64)
	errorRate, err2 := strconv.ParseFloat(meta["error_rate"], 64)
	expansion, err3 := strconv.ParseUint(meta["expansion"], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || capacity == 0 {
		return nil, fmt.Errorf("%w: sharded filter %q: invalid metadata %v", ErrCorrupt, name, meta)
	}
	fs, err := openEach(ctx, name, shards, func(ctx context.Context, shard string) (*NativeFilter, error) {
		return OpenNative(ctx, rdb, shard)
	})
	if err != nil {
		return nil, err
	}
	per := (capacity + uint64(shards) - 1) / uint64(shards)
	for _, f := range fs {
		if f.capacity != per || f.errorRate != errorRate || uint64(f.expansion) != expansion {
			return nil, fmt.Errorf("%w: sharded filter %q: shard %q has capacity %d, error rate %v and expansion %d; the top metadata gives it %d, %v and %d",
				ErrCorrupt, name, f.name, f.capacity, f.errorRate, f.expansion, per, errorRate, expansion)
		}
	}
	return &ShardedNativeFilter{rdb: rdb, name: name, shards: fs, capacity: capacity, errorRate: errorRate}, nil
}

// WithWait returns a handle on the same sharded filter whose shards are
// each shard's NativeFilter.WithWait(replicas, timeout) handle: a write
// returns once replicas replicas of each shard's master have it, or fails
// with an error wrapping ErrNotReplicated. It returns NativeFilter.WithWait's
// errors.
func (s *ShardedNativeFilter) WithWait(replicas int, timeout time.Duration) (*ShardedNativeFilter, error) {
	if s.rdb == nil {
		return nil, errZeroShardedNative
	}
	shards, err := withWaitAll(s.shards, replicas, timeout)
	if err != nil {
		return nil, err
	}
	g := *s
	g.shards = shards
	return &g, nil
}

// Name returns the name the filter was created with.
func (s *ShardedNativeFilter) Name() string { return s.name }

// Capacity returns the keys the filter was created for, over all shards.
func (s *ShardedNativeFilter) Capacity() uint64 { return s.capacity }

// ErrorRate returns the error rate of every shard.
func (s *ShardedNativeFilter) ErrorRate() float64 { return s.errorRate }

// Shards returns the shards, in order.
func (s *ShardedNativeFilter) Shards() []*NativeFilter {
	return append([]*NativeFilter(nil), s.shards...)
}

// Shard returns the index of the shard that holds key, in [0, len(Shards())),
// or -1 for a zero ShardedNativeFilter, which has no shards.
func (s *ShardedNativeFilter) Shard(key []byte) int { return shardOf(key, len(s.shards), 0) }

// shardedMany groups keys by shard and runs each group through its shard's
// many, the shards concurrently, and returns the answers in keys' order.
func shardedMany[K []byte | string](ctx context.Context, s *ShardedNativeFilter, add bool, keys []K) ([]bool, error) {
	if s.rdb == nil {
		return nil, errZeroShardedNative
	}
	S := len(s.shards)
	groups, index := groupByShard(keys, S, 0)
	answers := make([][]bool, S)
	errs := make([]error, S)
	var wg sync.WaitGroup
	for j, group := range groups {
		if len(group) == 0 {
			continue
		}
		wg.Go(func() { answers[j], errs[j] = many(ctx, s.shards[j], add, group) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]bool, len(keys))
	for j, r := range answers {
		for x, i := range index[j] {
			out[i] = r[x]
		}
	}
	return out, nil
}

// Add inserts key in its shard (see NativeFilter.Add).
func (s *ShardedNativeFilter) Add(ctx context.Context, key []byte) error {
	_, err := shardedMany(ctx, s, true, [][]byte{key})
	return err
}

// AddString is Add for a string key.
func (s *ShardedNativeFilter) AddString(ctx context.Context, key string) error {
	_, err := shardedMany(ctx, s, true, []string{key})
	return err
}

// Test reports whether key may be in the filter (see NativeFilter.Test).
func (s *ShardedNativeFilter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := shardedMany(ctx, s, false, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestString is Test for a string key.
func (s *ShardedNativeFilter) TestString(ctx context.Context, key string) (bool, error) {
	r, err := shardedMany(ctx, s, false, []string{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestAndAdd inserts key and reports whether it was probably present
// before, atomically (see NativeFilter.TestAndAdd).
func (s *ShardedNativeFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	r, err := shardedMany(ctx, s, true, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestAndAddString is TestAndAdd for a string key.
func (s *ShardedNativeFilter) TestAndAddString(ctx context.Context, key string) (bool, error) {
	r, err := shardedMany(ctx, s, true, []string{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddMany inserts every key of keys (see NativeFilter.AddMany), each
// shard's keys in order, the shards concurrently.
func (s *ShardedNativeFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := shardedMany(ctx, s, true, keys)
	return err
}

// AddManyStrings is AddMany for string keys.
func (s *ShardedNativeFilter) AddManyStrings(ctx context.Context, keys []string) error {
	_, err := shardedMany(ctx, s, true, keys)
	return err
}

// TestMany reports whether each key of keys may be in the filter (see
// NativeFilter.TestMany).
func (s *ShardedNativeFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return shardedMany(ctx, s, false, keys)
}

// TestManyStrings is TestMany for string keys.
func (s *ShardedNativeFilter) TestManyStrings(ctx context.Context, keys []string) ([]bool, error) {
	return shardedMany(ctx, s, false, keys)
}

// TestAndAddMany inserts every key of keys and reports for each whether it
// was probably present before, as if added one by one (see
// NativeFilter.TestAndAddMany): each shard's keys go in order to that
// shard, so a key repeated within keys is reported present from its second
// occurrence on.
func (s *ShardedNativeFilter) TestAndAddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return shardedMany(ctx, s, true, keys)
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
func (s *ShardedNativeFilter) TestAndAddManyStrings(ctx context.Context, keys []string) ([]bool, error) {
	return shardedMany(ctx, s, true, keys)
}

// Count returns the keys added, summed over the shards (see
// NativeFilter.Count).
func (s *ShardedNativeFilter) Count(ctx context.Context) (uint64, error) {
	if s.rdb == nil {
		return 0, errZeroShardedNative
	}
	return countShards(ctx, s.shards)
}

// Export returns an in-memory copy of every shard, in order (see
// NativeFilter.Export).
func (s *ShardedNativeFilter) Export(ctx context.Context) ([]*bfdump.Filter, error) {
	if s.rdb == nil {
		return nil, errZeroShardedNative
	}
	return exportShards(ctx, s.shards)
}

// Import replaces every shard by the corresponding filter of src (see
// NativeFilter.Import), shard by shard: not atomic as a whole. src must
// have one filter per shard with its parameters, or Import returns an
// error wrapping bloom.ErrIncompatible and changes nothing.
func (s *ShardedNativeFilter) Import(ctx context.Context, src []*bfdump.Filter) error {
	if s.rdb == nil {
		return errZeroShardedNative
	}
	return importShards(ctx, s.name, s.shards, src)
}

// Delete removes every shard and the top metadata.
func (s *ShardedNativeFilter) Delete(ctx context.Context) error {
	if s.rdb == nil {
		return errZeroShardedNative
	}
	return deleteShards(ctx, s.rdb, s.name, s.shards)
}
