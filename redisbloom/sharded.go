package redisbloom

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// shardedFormatName is the format field of a ShardedFilter's top metadata.
const shardedFormatName = "redisbloom-sharded/1"

// MaxShards is the most shards NewSharded splits a filter into.
const MaxShards = 1024

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// shardSeedOffset is added to the filter's seed to hash a key for its shard,
// so that the shard a key goes to is independent of its positions in the
// shard (the same hash would put every key of shard i in the i-th part of
// its shard's bits).
const shardSeedOffset = 0x9E3779B9

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

// checkShard returns an error wrapping ErrCorrupt unless shard shard of the
// sharded filter name has the seed, capacity (initial capacity for a
// scalable shard) and error rate that the top metadata gives it: one of the
// top record's fields was changed after the shards were made.
func checkShard(name, shard string, seed, shardSeed uint32, capacity, shardCapacity uint64, errorRate, shardErrorRate float64) error {
	if seed != shardSeed || capacity != shardCapacity || math.Float64bits(errorRate) != math.Float64bits(shardErrorRate) {
		return fmt.Errorf("%w: sharded filter %q: shard %q has seed %d, capacity %d and error rate %v; the top metadata gives it %d, %d and %v",
			ErrCorrupt, name, shard, shardSeed, shardCapacity, shardErrorRate, seed, capacity, errorRate)
	}
	return nil
}

// createShardedMeta writes the top metadata of a sharded filter (fields:
// field, value, ..., format first) unless it exists, and returns an error
// wrapping bloom.ErrIncompatible if it exists with other values, ErrFormat
// if it is of another kind.
func createShardedMeta(ctx context.Context, rdb redis.UniversalClient, name string, fields []any) error {
	res, err := shardedCreateScript.Run(ctx, rdb, []string{shardedMetaKey(name)}, fields...).Slice()
	if err != nil {
		return fmt.Errorf("redisbloom: sharded filter %q: %w", name, err)
	}
	meta, err := parseShardedMeta(name, res, fields[1].(string))
	if err != nil {
		return err
	}
	for i := 0; i < len(fields); i += 2 {
		if got := meta[fields[i].(string)]; got != fields[i+1] {
			return fmt.Errorf("%w: sharded filter %q exists with %s %s, not %s", bloom.ErrIncompatible, name, fields[i], got, fields[i+1])
		}
	}
	return nil
}

// readShardedMeta reads the top metadata of the sharded filter name, of
// format format, and its number of shards.
func readShardedMeta(ctx context.Context, rdb redis.UniversalClient, name, format string) (map[string]string, int, error) {
	if err := checkName(name); err != nil {
		return nil, 0, err
	}
	res, err := rdb.HGetAll(ctx, shardedMetaKey(name)).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("redisbloom: sharded filter %q: %w", name, err)
	}
	if len(res) == 0 {
		return nil, 0, fmt.Errorf("%w: sharded filter %q", ErrNotFound, name)
	}
	reply := make([]any, 0, 2*len(res))
	for k, v := range res {
		reply = append(reply, k, v)
	}
	meta, err := parseShardedMeta(name, reply, format)
	if err != nil {
		return nil, 0, err
	}
	shards, err := strconv.Atoi(meta["shards"])
	if err != nil || shards < 1 || shards > MaxShards {
		return nil, 0, fmt.Errorf("%w: sharded filter %q: invalid metadata %v", ErrCorrupt, name, meta)
	}
	return meta, shards, nil
}

// openShards opens (or creates) the shards concurrently.
func openShards(ctx context.Context, rdb redis.UniversalClient, name string, shards int, capacity uint64, errorRate float64, seed uint32,
	open func(context.Context, string) (*Filter, error)) (*ShardedFilter, error) {
	fs, err := openEach(ctx, name, shards, open)
	if err != nil {
		return nil, err
	}
	return &ShardedFilter{rdb: rdb, name: name, shards: fs, seed: seed, capacity: capacity, errorRate: errorRate}, nil
}

// openEach runs open on the names of the shards of name concurrently and
// returns the shards, or the first error.
func openEach[T any](ctx context.Context, name string, shards int, open func(context.Context, string) (T, error)) ([]T, error) {
	out := make([]T, shards)
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = open(ctx, shardName(name, i, shards))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func shardedMetaKey(name string) string { return "{" + name + "}:sharded" }

// parseShardedMeta checks the format of a sharded filter's top metadata
// (field, value, ...) against format.
func parseShardedMeta(name string, reply []any, format string) (map[string]string, error) {
	meta := make(map[string]string, len(reply)/2)
	for i := 0; i+1 < len(reply); i += 2 {
		k, ok1 := reply[i].(string)
		v, ok2 := reply[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %q: malformed metadata", ErrFormat, name)
		}
		meta[k] = v
	}
	if meta["format"] != format {
		return nil, fmt.Errorf("%w: %q has format %q, want %q", ErrFormat, name, meta["format"], format)
	}
	return meta, nil
}

// shardName returns the name of shard i of S: name/i/c with the first c
// whose keys' hash slot is in the i-th of S equal ranges of slots.
func shardName(name string, i, S int) string {
	lo, hi := i*clusterSlots/S, (i+1)*clusterSlots/S
	for c := 0; ; c++ {
		shard := name + "/" + strconv.Itoa(i) + "/" + strconv.Itoa(c)
		if slot := int(crc16([]byte(shard)) % clusterSlots); slot >= lo && slot < hi {
			return shard
		}
	}
}

// crc16 is the CRC-16/XMODEM of b (polynomial 0x1021, initial 0), which
// Redis Cluster takes modulo 16384 as a key's hash slot (Redis Cluster
// specification, "Key distribution model"). Of a shard's keys
// {name/i/c}:meta and :bits it hashes the tag name/i/c.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Shard returns the index of the shard that holds key, in [0, len(Shards())),
// or -1 for a zero ShardedFilter, which has no shards.
func (s *ShardedFilter) Shard(key []byte) int { return shardOf(key, len(s.shards), s.seed) }

// shardOf returns the shard of key among shards, for a filter of seed seed,
// and -1 when there are none.
func shardOf(key []byte, shards int, seed uint32) int {
	if shards == 0 {
		return -1
	}
	var loc [1]uint64
	return int(bloom.AppendLocations(loc[:0], key, uint64(shards), 1, seed+shardSeedOffset)[0])
}

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

// groupByShard splits keys by the shard, of shards, that Shard gives each
// with seed: groups[j] holds shard j's keys in order, and index[j] their
// places in keys.
func groupByShard(keys [][]byte, shards int, seed uint32) (groups [][][]byte, index [][]int) {
	groups = make([][][]byte, shards)
	index = make([][]int, shards)
	for i, key := range keys {
		j := shardOf(key, shards, seed)
		groups[j] = append(groups[j], key)
		index[j] = append(index[j], i)
	}
	return groups, index
}

// gather returns the first error of errs, in shard order, or else the
// answers of n keys grouped by groupByShard: answers[j][x] is '1' for the
// key at index[j][x] if it was (probably) present.
func gather(answers [][]byte, errs []error, index [][]int, n int) ([]bool, error) {
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := make([]bool, n)
	for j, r := range answers {
		for x, i := range index[j] {
			out[i] = r[x] == '1'
		}
	}
	return out, nil
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

// withWaitAll returns the WithWait(replicas, timeout) handles of shards,
// the shards of a ShardedFilter or a ShardedScalableFilter.
func withWaitAll[F interface {
	WithWait(int, time.Duration) (F, error)
}](shards []F, replicas int, timeout time.Duration) ([]F, error) {
	w := make([]F, len(shards))
	for i, f := range shards {
		var err error
		if w[i], err = f.WithWait(replicas, timeout); err != nil {
			return nil, err
		}
	}
	return w, nil
}

var errZeroSharded = fmt.Errorf("%w: a zero ShardedFilter is not usable; make one with NewSharded or OpenSharded", ErrZeroValue)

// Count returns the keys added, summed over the shards (see Filter.Count).
func (s *ShardedFilter) Count(ctx context.Context) (uint64, error) {
	if s.rdb == nil {
		return 0, errZeroSharded
	}
	var total uint64
	for _, f := range s.shards {
		n, err := f.Count(ctx)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Export returns an in-memory copy of every shard, in order (see
// Filter.Export): shard i's answers for the keys for which Shard returns i.
func (s *ShardedFilter) Export(ctx context.Context) ([]*bloom.BloomFilter, error) {
	if s.rdb == nil {
		return nil, errZeroSharded
	}
	out := make([]*bloom.BloomFilter, len(s.shards))
	for i, f := range s.shards {
		g, err := f.Export(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
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
	if len(src) != len(s.shards) {
		return fmt.Errorf("%w: sharded filter %q has %d shards, the imported one %d", bloom.ErrIncompatible, s.name, len(s.shards), len(src))
	}
	for i, f := range s.shards {
		if err := f.compatible(src[i]); err != nil {
			return err
		}
	}
	for i, f := range s.shards {
		if err := f.Import(ctx, src[i]); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes every shard and the top metadata.
func (s *ShardedFilter) Delete(ctx context.Context) error {
	if s.rdb == nil {
		return errZeroSharded
	}
	for _, f := range s.shards {
		if err := f.Delete(ctx); err != nil {
			return err
		}
	}
	return s.rdb.Del(ctx, shardedMetaKey(s.name)).Err()
}

// shardedCreateScript writes the top metadata (ARGV: field, value, ...)
// unless it exists, and returns what the key holds then.
var shardedCreateScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
`)
