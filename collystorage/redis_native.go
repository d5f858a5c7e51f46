package collystorage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"

	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/gocolly/colly/v2/storage"
	"github.com/redis/go-redis/v9"
)

// RedisNativeStorage is RedisStorage on a server with RedisBloom's BF.*
// commands (Redis 8, Redis Stack, the RedisBloom module): the visited
// request IDs are kept in a redisbloom.NativeFilter, a RedisBloom key that
// IsVisited adds to with the server's own BF.MADD. Its promises are
// RedisStorage's: one round trip per call, exactly one of the processes
// that ask about a new URL at once hears false, and an error, never
// "absent", when the filter was lost (see redisbloom's NativeFilter).
// Cookies are kept in memory, per process.
//
// The filter lives in Redis as redisbloom.NativeFilter describes (keys
// {name}:meta and the RedisBloom key {name}:bits, whose keys are the request
// IDs' 8 little-endian bytes), plus {name}:collystorage, which records that
// encoding as RedisStorage's does. It grows as RedisBloom grows a filter
// (sub-filters of twice the capacity at half the rate, unless
// bfdump.Expansion or bfdump.NonScaling say otherwise).
//
// A RedisNativeStorage is safe for concurrent use. A zero RedisNativeStorage
// is not usable: its methods return an error, or do nothing (SetCookies) or
// "" (Cookies).
type RedisNativeStorage struct {
	f       *redisbloom.NativeFilter
	rdb     redis.UniversalClient
	cookies storage.InMemoryStorage
	claimed [64]atomic.Uint64 // as RedisStorage's
}

var errZeroRedisNative = errors.New("collystorage: use of a zero RedisNativeStorage (create one with NewRedisNative)")

// NewRedisNative returns a RedisNativeStorage on the native filter called
// name in rdb, creating it if it does not exist, as
// redisbloom.NewNative(ctx, rdb, name, capacity, errorRate, opts...) does
// (BF.RESERVE's parameters): every crawler process calls it with the same
// arguments. It returns redisbloom.NewNative's errors (redisbloom.ErrNoModule
// on a server without BF.*), and one wrapping bloom.ErrIncompatible if the
// name's {name}:collystorage key records another encoding of request IDs.
func NewRedisNative(ctx context.Context, rdb redis.UniversalClient, name string, capacity uint64, errorRate float64, opts ...bfdump.Option) (*RedisNativeStorage, error) {
	f, err := redisbloom.NewNative(ctx, rdb, name, capacity, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	if err := claimEncoding(ctx, rdb, name); err != nil {
		return nil, err
	}
	s := &RedisNativeStorage{f: f, rdb: rdb}
	if err := s.cookies.Init(); err != nil {
		return nil, fmt.Errorf("collystorage: cookies: %w", err)
	}
	return s, nil
}

// Init implements storage.Storage. It returns an error for a zero
// RedisNativeStorage and does nothing else.
func (s *RedisNativeStorage) Init() error {
	if s.f == nil {
		return errZeroRedisNative
	}
	return nil
}

// IsVisited implements storage.Storage: it reports whether the request ID
// was marked visited before the call, and marks it, in one atomic call
// (BF.MADD): of all the goroutines and processes that ask about the same
// new ID at once, exactly one gets false (none does if the ID is a false
// positive). It returns redisbloom's errors.
func (s *RedisNativeStorage) IsVisited(requestID uint64) (bool, error) {
	if s.f == nil {
		return false, errZeroRedisNative
	}
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], requestID)
	present, err := s.f.TestAndAdd(context.Background(), key[:])
	if err == nil && !present && requestID != 0 {
		s.claimed[slot(requestID)].Store(requestID)
	}
	return present, err
}

// Visited implements storage.Storage: it marks the request ID as visited,
// with one round trip unless IsVisited has just marked it. It returns the
// errors of IsVisited.
func (s *RedisNativeStorage) Visited(requestID uint64) error {
	if s.f == nil {
		return errZeroRedisNative
	}
	if requestID != 0 && s.claimed[slot(requestID)].CompareAndSwap(requestID, 0) {
		return nil
	}
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], requestID)
	return s.f.Add(context.Background(), key[:])
}

// Cookies implements storage.Storage: the cookies for u, kept in memory by
// this process.
func (s *RedisNativeStorage) Cookies(u *url.URL) string {
	if s.f == nil {
		return ""
	}
	return s.cookies.Cookies(u)
}

// SetCookies implements storage.Storage: it keeps cookies for u in this
// process's memory.
func (s *RedisNativeStorage) SetCookies(u *url.URL, cookies string) {
	if s.f == nil {
		return
	}
	s.cookies.SetCookies(u, cookies)
}

// Count returns the number of request IDs marked visited by all the
// processes (BF.CARD: false positives are not counted), in one round trip.
func (s *RedisNativeStorage) Count(ctx context.Context) (uint64, error) {
	if s.f == nil {
		return 0, errZeroRedisNative
	}
	return s.f.Count(ctx)
}

// Filter returns the filter the storage keeps the request IDs in.
func (s *RedisNativeStorage) Filter() *redisbloom.NativeFilter { return s.f }

// Delete removes the filter and its {name}:collystorage key from Redis:
// every process's IsVisited then returns redisbloom.ErrNotFound.
func (s *RedisNativeStorage) Delete(ctx context.Context) error {
	if s.f == nil {
		return errZeroRedisNative
	}
	if err := s.f.Delete(ctx); err != nil {
		return err
	}
	return s.rdb.Del(ctx, "{"+s.f.Name()+"}:collystorage").Err()
}
