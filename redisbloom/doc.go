// Package redisbloom keeps a Bloom filter in Redis, so that many processes on
// many machines share one set: a fleet of crawler workers sharing one
// seen-URL set, say.
//
//	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
//	if err != nil {
//		return err
//	}
//	present, err := seen.TestAndAdd(ctx, []byte(url)) // atomic, one round trip
//	switch {
//	case err != nil:
//		return err // ErrNotFound, ErrLost, ErrCorrupt: never a silent "absent"
//	case !present:
//		fetch(url) // exactly one client hears "new" for a key
//	}
//
// # Which type
//
//   - Filter (New, Open): a fixed filter, bit for bit the in-memory
//     bloom.BloomFilter of the classic layout with the same bits, hashes and
//     seed, so Export and Import move it between Redis and memory.
//   - ScalableFilter (NewScalable, OpenScalable): grows like
//     bloom.ScalableBloomFilter, inside the script that finds it full.
//   - ShardedFilter and ShardedScalableFilter: split over S hash slots, past
//     one Redis string's 512 MiB and over the masters of a Cluster.
//   - WindowFilter (NewWindow, OpenWindow): bloom.WindowFilter in Redis, the
//     last N keys or the keys of the last d, in fixed memory.
//   - Coalesced: a Filter handle whose concurrent single-key calls share
//     script calls; AddPipelined and friends queue a call on a Pipeliner.
//   - NativeFilter (NewNative, OpenNative) and ShardedNativeFilter: on a
//     server with RedisBloom's BF.* commands (Redis 8, Redis Stack, the
//     module), RedisBloom's own filter through BF.MADD and BF.MEXISTS, at
//     about their cost, with the same promises; ErrNoModule elsewhere.
//   - bfdump: RedisBloom's own BF.* filters, byte for byte, in Go.
//
// # What every call promises
//
// Every operation is one Lua script on the server (for a NativeFilter, one
// MULTI/EXEC around the BF.* command): atomic, one round trip for one key or
// a whole batch, and checked in that same round trip against the metadata
// kept beside the bits. A filter that was deleted, flushed, evicted
// or lost in a restart gives ErrNotFound; one whose keys were changed behind
// the package's back ErrCorrupt; one that lost writes a handle saw
// acknowledged ErrLost; a replica behind the handle's own writes ErrStale.
// None of them answers "absent". The promise of no false negative holds as
// long as Redis keeps every write it acknowledged: AOF with appendfsync
// always, no eviction of the filter's keys (maxmemory-policy noeviction or
// volatile-*), and failover only to replicas that have every write (WithWait).
//
// Handles are safe for concurrent use. A name is two or more Redis keys that
// share the hash tag {name}, so they live on one Cluster slot. Retrying Add
// after a network error is always safe; a retried TestAndAdd may report as
// present a key that the failed attempt added (set go-redis's MaxRetries to
// -1 where every new key must be reported new exactly once).
//
// # Requirements
//
// Redis 7.0 or later, or Valkey 8.0 or later, through go-redis v9 (any
// redis.UniversalClient). Create the client with ContextTimeoutEnabled: true
// so that contexts' deadlines bound each call.
//
// docs/design.md in the repository gives the keys' layout, the durability
// settings, replica reads and retries in full
// (https://github.com/bloomfilters/bloom/blob/main/redisbloom/docs/design.md).
package redisbloom
