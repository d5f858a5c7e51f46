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

// shardedFormatName is the format field of a ShardedFilter's top metadata.
const shardedFormatName = "redisbloom-sharded/1"

// ShardedFilter is a Bloom filter split into S shards, each a Filter of its
// own in its own Redis Cluster hash slot, so that it can exceed the 512 MiB
// of one Redis string and its load spreads over the masters of a Cluster.
// A key goes to one shard, chosen by a murmur3 hash of the key with a seed
// of its own (the filter's seed plus 0x9E3779B9), and is tested and added
// there only: each shard is sized for capacity/S keys at the filter's error
// rate, so the filter's false-positive rate is the shards' (an absent key is
// tested in one shard) and it needs about as many bits as one unsharded
// filter. Batch calls group the keys by shard and send every group in one
// pipeline, which a Cluster client splits by node: one round trip per
// node, the nodes concurrently (the writes of a handle made by WithWait:
// one per shard, the shards concurrently).
//
// Shard i is the Filter named name/i/c, for the first c from 0 up whose
// hash tag puts it in the i-th of S equal ranges of the 16384 Cluster slots,
// so that a Cluster whose masters hold equal ranges of slots (what
// redis-cli --cluster create does) serves S/N shards on each of its N
// masters when N divides S. The top metadata {name}:sharded (a hash:
// format "redisbloom-sharded/1", shards, capacity, error_rate, seed)
// records the parameters.
//
// Trade-offs of S: more shards spread better over more masters and allow a
// larger filter (S times MaxBits bits); but a batch of B keys becomes S
// script calls of about B/S keys, and the per-call cost (the script's
// checks, about 20 us of server time each) is paid S times, while the round
// trips stay one per node, so small batches gain nothing from sharding. A multiple of the number of
// masters, with batches of at least some hundreds of keys per shard, is the
// sweet spot. Resharding (changing S) needs Export and Import into a new
// filter; Redis Cluster's own slot migration moves shards between masters
// without the filter noticing (a call during a migration gets an error,
// never a false "absent", and go-redis follows the redirections).
//
// Delete removes every shard and the top metadata; Destroy, which takes one
// filter's name, does not know about shards (a broken shard is destroyed by
// its own name, Shards()[i].Name(), and recreated by NewSharded).
//
// It is safe for concurrent use. A zero ShardedFilter is not usable: its
// methods return an error.
type ShardedFilter struct {
	rdb       redis.UniversalClient
	name      string
	shards    []*Filter
	seed      uint32
	capacity  uint64
	errorRate float64
}

// NewSharded returns the sharded filter called name in rdb, creating it if it
// does not exist: shards Filters, each sized like New(capacity/shards
// rounded up, errorRate, opts...), of the classic layout. Every process
// that shares it can call NewSharded with the same arguments. It returns an
// error wrapping bloom.ErrInvalidParameter for invalid arguments (shards
// outside [1, MaxShards], bloom.Blocked, or a shard larger than MaxBits),
// one wrapping
// bloom.ErrIncompatible if it exists with other parameters, and New's errors
// for a shard.
func NewSharded(ctx context.Context, rdb redis.UniversalClient, name string, shards int, capacity uint64, errorRate float64, opts ...bloom.Option) (*ShardedFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("%w: shards must be in [1, %d], got %d", bloom.ErrInvalidParameter, MaxShards, shards)
	}
	if capacity == 0 {
		return nil, fmt.Errorf("%w: capacity must be at least 1, got 0", bloom.ErrInvalidParameter)
	}
	probe, err := fixedProbe(opts)
	if err != nil {
		return nil, err
	}
	per := (capacity + uint64(shards) - 1) / uint64(shards)
	if _, _, err := bloom.Size(per, errorRate); err != nil {
		return nil, err
	}
	fields := []any{
		"format", shardedFormatName,
		"shards", strconv.Itoa(shards),
		"capacity", strconv.FormatUint(capacity, 10),
		"error_rate", strconv.FormatFloat(errorRate, 'g', -1, 64),
		"seed", strconv.FormatUint(uint64(probe.Seed()), 10),
	}
	if err := createShardedMeta(ctx, rdb, name, fields); err != nil {
		return nil, err
	}
	return openShards(ctx, rdb, name, shards, capacity, errorRate, probe.Seed(), func(ctx context.Context, shard string) (*Filter, error) {
		return New(ctx, rdb, shard, per, errorRate, bloom.Seed(probe.Seed()))
	})
}

// OpenSharded returns the existing sharded filter called name in rdb. It
// returns ErrNotFound if it does not exist (or one of its shards does not),
// ErrFormat for keys of another kind, Open's errors for a shard, and
// ErrCorrupt if a shard's seed, capacity or error rate is not the one the
// top metadata gives it (the top metadata was changed: keys would be routed
// to shards that do not hold them).
func OpenSharded(ctx context.Context, rdb redis.UniversalClient, name string) (*ShardedFilter, error) {
	meta, shards, err := readShardedMeta(ctx, rdb, name, shardedFormatName)
	if err != nil {
		return nil, err
	}
	capacity, err1 := strconv.ParseUint(meta["capacity"], 10, 64)
	errorRate, err2 := strconv.ParseFloat(meta["error_rate"], 64)
	seed, err3 := strconv.ParseUint(meta["seed"], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || capacity == 0 {
		return nil, fmt.Errorf("%w: sharded filter %q: invalid metadata %v", ErrCorrupt, name, meta)
	}
	s, err := openShards(ctx, rdb, name, shards, capacity, errorRate, uint32(seed), func(ctx context.Context, shard string) (*Filter, error) {
		return Open(ctx, rdb, shard)
	})
	if err != nil {
		return nil, err
	}
	per := (capacity + uint64(shards) - 1) / uint64(shards)
	for _, f := range s.shards {
		if err := checkShard(name, f.Name(), uint32(seed), f.Seed(), per, f.Capacity(), errorRate, f.ErrorRate()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Shard returns the index of the shard that holds key, in [0, len(Shards())),
// or -1 for a zero ShardedFilter, which has no shards.
func (s *ShardedFilter) Shard(key []byte) int { return shardOf(key, len(s.shards), s.seed) }

// Shards returns the filters of the shards, in order. Each is a Filter of its
// own: its Export, for one, returns that shard's bits.
func (s *ShardedFilter) Shards() []*Filter { return append([]*Filter(nil), s.shards...) }

// Name returns the name the filter was created with.
func (s *ShardedFilter) Name() string { return s.name }

// Capacity returns the number of keys the filter was sized for, in all.
func (s *ShardedFilter) Capacity() uint64 { return s.capacity }

// ErrorRate returns the target false-positive rate at Capacity keys.
func (s *ShardedFilter) ErrorRate() float64 { return s.errorRate }

// Bits returns the size of all shards together, in bits.
func (s *ShardedFilter) Bits() uint64 {
	var m uint64
	for _, f := range s.shards {
		m += f.Bits()
	}
	return m
}

// Add inserts key into its shard (see Filter.Add).
func (s *ShardedFilter) Add(ctx context.Context, key []byte) error {
	if s.rdb == nil {
		return errZeroSharded
	}
	return s.shards[s.Shard(key)].Add(ctx, key)
}

// Test reports whether key may be in the filter (see Filter.Test).
func (s *ShardedFilter) Test(ctx context.Context, key []byte) (bool, error) {
	if s.rdb == nil {
		return false, errZeroSharded
	}
	return s.shards[s.Shard(key)].Test(ctx, key)
}

// TestAndAdd inserts key and reports whether it was probably present before
// (see Filter.TestAndAdd).
func (s *ShardedFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	if s.rdb == nil {
		return false, errZeroSharded
	}
	return s.shards[s.Shard(key)].TestAndAdd(ctx, key)
}

// AddMany inserts every key of keys (see Filter.AddMany). The keys are
// grouped by shard and every group is queued on one pipeline, which a
// Cluster client splits by node and sends to the nodes concurrently: a
// batch takes one round trip per node (per 524,288 positions, about 75,000
// keys at 1%, in all), whatever the number of shards. Keys of one shard
// are added in their order; each script call (7,000 positions) is atomic,
// not the batch as a whole.
func (s *ShardedFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := s.many(ctx, keys, true)
	return err
}

// TestMany reports whether each key of keys may be in the filter (see
// Filter.TestMany), in one round trip per node (see AddMany).
func (s *ShardedFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.many(ctx, keys, false)
}

// TestAndAddMany inserts every key of keys and reports for each whether it
// was probably present before, as TestAndAdd one by one would (see
// Filter.TestAndAddMany), in one round trip per node (see AddMany).
func (s *ShardedFilter) TestAndAddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.many(ctx, keys, true)
}

// AddPipelined queues Add(key) on pipe (see Filter.AddPipelined).
func (s *ShardedFilter) AddPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	if s.rdb == nil {
		return &Pending{&queued{err: errZeroSharded}}
	}
	return s.shards[s.Shard(key)].AddPipelined(ctx, pipe, key)
}

// TestPipelined queues Test(key) on pipe (see Filter.TestPipelined).
func (s *ShardedFilter) TestPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	if s.rdb == nil {
		return &Pending{&queued{err: errZeroSharded}}
	}
	return s.shards[s.Shard(key)].TestPipelined(ctx, pipe, key)
}

// TestAndAddPipelined queues TestAndAdd(key) on pipe (see
// Filter.TestAndAddPipelined).
func (s *ShardedFilter) TestAndAddPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	if s.rdb == nil {
		return &Pending{&queued{err: errZeroSharded}}
	}
	return s.shards[s.Shard(key)].TestAndAddPipelined(ctx, pipe, key)
}

// many groups keys by shard, queues every group's script calls (the add
// script if write, else the test script) on one pipeline, runs it and puts
// the answers back in the order of keys. A batch of more positions than
// one round trip takes (maxPositionsPerRoundTrip) is sent in rounds.
//
// One pipeline for all shards is what makes it one round trip per node: a
// ClusterClient maps a pipeline's commands to the nodes that serve their
// slots and sends each node's commands on one connection, the nodes
// concurrently (and follows MOVED and ASK redirections per command); a
// Client sends it on one connection. A goroutine per shard, as before,
// cost one round trip per shard.
func (s *ShardedFilter) many(ctx context.Context, keys [][]byte, write bool) ([]bool, error) {
	if s.rdb == nil {
		return nil, errZeroSharded
	}
	out := make([]bool, 0, len(keys))
	perTrip := max(1, maxPositionsPerRoundTrip/int(s.shards[0].Hashes()))
	for lo := 0; lo < len(keys); lo += perTrip {
		r, err := s.round(ctx, keys[lo:min(lo+perTrip, len(keys))], write)
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}

// round is many for at most one round trip's keys.
func (s *ShardedFilter) round(ctx context.Context, keys [][]byte, write bool) ([]bool, error) {
	groups, index := groupByShard(keys, len(s.shards), s.seed)
	if write && s.shards[0].wait != nil {
		return s.writeEach(ctx, groups, index, len(keys))
	}
	pipe := s.rdb.Pipeline()
	queued := make([]*queued, len(s.shards))
	for j, group := range groups {
		if len(group) == 0 {
			continue
		}
		f := s.shards[j]
		if write {
			queued[j] = f.enqueue(ctx, pipe, addScript, false, group)
		} else {
			queued[j] = f.enqueue(ctx, pipe, f.testScript(), true, group)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are checked per command
	answers := make([][]byte, len(s.shards))
	for j, q := range queued {
		if q == nil {
			continue
		}
		r, err := q.result(ctx)
		if err != nil {
			return nil, err
		}
		answers[j] = r
	}
	return gather(answers, nil, index, len(keys))
}

// writeEach is round for the writes of a handle made by WithWait: each
// shard's Filter makes its own calls, with their WAIT on the connection of
// its master, the shards concurrently.
func (s *ShardedFilter) writeEach(ctx context.Context, groups [][][]byte, index [][]int, n int) ([]bool, error) {
	answers := make([][]byte, len(s.shards))
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for j, group := range groups {
		if len(group) == 0 {
			continue
		}
		wg.Go(func() { answers[j], errs[j] = s.shards[j].run(ctx, addScript, false, group) })
	}
	wg.Wait()
	return gather(answers, errs, index, n)
}

// WithWait returns a handle on the same sharded filter whose writes (Add,
// TestAndAdd, AddMany, TestAndAddMany, Import) return only after at least
// replicas replicas of each shard's master acknowledged them, with Redis's
// WAIT, or an error wrapping ErrNotReplicated after timeout: each shard of
// the handle is that shard's Filter.WithWait(replicas, timeout), and
// Filter.WithWait says what it promises and what it costs. A batch write
// then makes each shard's calls on the connection of its master, followed
// by WAIT, the shards concurrently: one round trip per shard (per 524,288
// positions of it), not one per node, and the pipelined writes
// (AddPipelined, TestAndAddPipelined) queue nothing and report an error
// wrapping errors.ErrUnsupported. Reads are unchanged. It returns
// Filter.WithWait's errors (bloom.ErrInvalidParameter for replicas < 1, a
// timeout under a millisecond or a client other than a *redis.Client or
// *redis.ClusterClient).
func (s *ShardedFilter) WithWait(replicas int, timeout time.Duration) (*ShardedFilter, error) {
	if s.rdb == nil {
		return nil, errZeroSharded
	}
	shards, err := withWaitAll(s.shards, replicas, timeout)
	if err != nil {
		return nil, err
	}
	g := *s
	g.shards = shards
	return &g, nil
}

var errZeroSharded = fmt.Errorf("%w: a zero ShardedFilter is not usable; make one with NewSharded or OpenSharded", ErrZeroValue)

// Count returns the keys added, summed over the shards (see Filter.Count).
func (s *ShardedFilter) Count(ctx context.Context) (uint64, error) {
	if s.rdb == nil {
		return 0, errZeroSharded
	}
	return countShards(ctx, s.shards)
}

// Export returns an in-memory copy of every shard, in order (see
// Filter.Export): shard i's answers for the keys for which Shard returns i.
func (s *ShardedFilter) Export(ctx context.Context) ([]*bloom.BloomFilter, error) {
	if s.rdb == nil {
		return nil, errZeroSharded
	}
	return exportShards(ctx, s.shards)
}

// Import replaces every shard with the corresponding filter of src (see
// Filter.Import), shard by shard: not atomic as a whole. src must have one
// filter per shard, of the classic layout, with its bits, hashes and seed,
// or Import returns an error wrapping bloom.ErrIncompatible and changes
// nothing.
func (s *ShardedFilter) Import(ctx context.Context, src []*bloom.BloomFilter) error {
	if s.rdb == nil {
		return errZeroSharded
	}
	return importShards(ctx, s.name, s.shards, src)
}

// Delete removes every shard and the top metadata.
func (s *ShardedFilter) Delete(ctx context.Context) error {
	if s.rdb == nil {
		return errZeroSharded
	}
	return deleteShards(ctx, s.rdb, s.name, s.shards)
}

// shardedCreateScript writes the top metadata (ARGV: field, value, ...)
// unless it exists, and returns what the key holds then.
var shardedCreateScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
`)
