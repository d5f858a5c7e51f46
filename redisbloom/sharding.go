// The sharding core of ShardedFilter, ShardedScalableFilter and
// ShardedNativeFilter: shard names and slot ranges, routing keys to shards
// and answers back, and creating and opening the shards.

package redisbloom

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// MaxShards is the most shards NewSharded splits a filter into.
const MaxShards = 1024

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// shardSeedOffset is added to the filter's seed to hash a key for its shard,
// so that the shard a key goes to is independent of its positions in the
// shard (the same hash would put every key of shard i in the i-th part of
// its shard's bits).
const shardSeedOffset = 0x9E3779B9

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

// shardOf returns the shard of key among shards, for a filter of seed seed,
// and -1 when there are none.
func shardOf(key []byte, shards int, seed uint32) int {
	if shards == 0 {
		return -1
	}
	var loc [1]uint64
	return int(bloom.AppendLocations(loc[:0], key, uint64(shards), 1, seed+shardSeedOffset)[0])
}

// groupByShard splits keys by the shard, of shards, that Shard gives each
// with seed: groups[j] holds shard j's keys in order, and index[j] their
// places in keys.
func groupByShard[K []byte | string](keys []K, shards int, seed uint32) (groups [][]K, index [][]int) {
	groups = make([][]K, shards)
	index = make([][]int, shards)
	for i, key := range keys {
		j := shardOf(bytesOf(key), shards, seed)
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

// bytesOf returns the bytes of key without copying them; shardOf only
// reads them.
func bytesOf[K []byte | string](key K) []byte {
	switch k := any(key).(type) {
	case string:
		return unsafe.Slice(unsafe.StringData(k), len(k))
	default:
		return k.([]byte)
	}
}

// countShards sums the shards' counts: the Count of every sharded type.
func countShards[F interface {
	Count(context.Context) (uint64, error)
}](ctx context.Context, shards []F) (uint64, error) {
	var total uint64
	for _, f := range shards {
		n, err := f.Count(ctx)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// exportShards exports every shard, in order: the Export of every sharded
// type.
func exportShards[T any, F interface {
	Export(context.Context) (T, error)
}](ctx context.Context, shards []F) ([]T, error) {
	out := make([]T, len(shards))
	for i, f := range shards {
		g, err := f.Export(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

// importShards checks that src has one filter per shard, each compatible
// with its shard, and only then imports them, shard by shard: the Import of
// every sharded type.
func importShards[T any, F interface {
	compatible(T) error
	Import(context.Context, T) error
}](ctx context.Context, name string, shards []F, src []T) error {
	if len(src) != len(shards) {
		return fmt.Errorf("%w: sharded filter %q has %d shards, the imported one %d", bloom.ErrIncompatible, name, len(shards), len(src))
	}
	for i, f := range shards {
		if err := f.compatible(src[i]); err != nil {
			return err
		}
	}
	for i, f := range shards {
		if err := f.Import(ctx, src[i]); err != nil {
			return err
		}
	}
	return nil
}

// deleteShards deletes every shard, then the top metadata: the Delete of
// every sharded type.
func deleteShards[F interface {
	Delete(context.Context) error
}](ctx context.Context, rdb redis.UniversalClient, name string, shards []F) error {
	for _, f := range shards {
		if err := f.Delete(ctx); err != nil {
			return err
		}
	}
	return rdb.Del(ctx, shardedMetaKey(name)).Err()
}
