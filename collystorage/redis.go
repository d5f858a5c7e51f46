package collystorage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/gocolly/colly/v2/storage"
	"github.com/redis/go-redis/v9"
)

// RedisStorage is a colly storage.Storage that keeps the visited request IDs
// in a redisbloom.ScalableFilter, so that crawler processes on any number of
// machines sharing one Redis fetch each URL once between them: IsVisited is
// one atomic script call, and exactly one of the processes that ask about a
// new URL at once hears false (see the package doc). Cookies are kept in
// memory, per process, by colly's storage.InMemoryStorage: they are not
// shared through Redis.
//
// The filter has the growth and sizes of bloom.NewScalable and keeps its
// false-positive rate at most the error rate given; it lives in Redis as
// redisbloom describes (keys {name}:meta and {name}:s:0, {name}:s:1, ...), plus
// the key {name}:collystorage, which records how request IDs are encoded as
// keys so that processes of releases that encode them differently refuse to
// share a filter instead of missing each other's URLs.
//
// Each IsVisited or Visited call is one round trip, bounded by the client's
// timeouts (go-redis: ReadTimeout and WriteTimeout, 3 s by default): colly's
// storage calls take no context. Visited right after an IsVisited that
// answered false for the same ID, as colly calls it, takes none. When Redis
// fails, IsVisited returns the error and colly does not fetch the URL; if the
// failed call had marked it (a timeout after the server ran the script), and
// also when go-redis retries such a call itself, no process will fetch it
// (see redisbloom's "Errors and retries").
//
// A RedisStorage is safe for concurrent use. A zero RedisStorage is not
// usable: its methods return an error, or do nothing (SetCookies) or ""
// (Cookies).
type RedisStorage struct {
	f       *redisbloom.ScalableFilter
	rdb     redis.UniversalClient
	cookies storage.InMemoryStorage
	// claimed holds IDs that IsVisited just marked, so that the Visited
	// colly calls next for each skips its round trip. A slot may be
	// overwritten by another ID meanwhile: Visited then makes the call.
	claimed [64]atomic.Uint64
}

// keyEncodingValue is what {name}:collystorage holds (keyRequestID8): the
// request ID as the filter's hashed key, the key of its 8 little-endian
// bytes.
const keyEncodingValue = "request-id/le64"

var errZeroRedis = errors.New("collystorage: use of a zero RedisStorage (create one with NewRedis)")

// NewRedis returns a RedisStorage on the scalable filter called name in rdb,
// creating the filter if it does not exist, as redisbloom.NewScalable(ctx,
// rdb, name, initialCapacity, errorRate, opts...) does: every crawler process
// calls it with the same arguments. initialCapacity is the number of URLs
// the first sub-filter holds, errorRate the largest false-positive rate
// allowed. It returns the errors of redisbloom.NewScalable, and one wrapping
// bloom.ErrIncompatible if the filter was made by a release of this package
// that encodes request IDs differently.
func NewRedis(ctx context.Context, rdb redis.UniversalClient, name string, initialCapacity uint64, errorRate float64, opts ...bloom.Option) (*RedisStorage, error) {
	f, err := redisbloom.NewScalable(ctx, rdb, name, initialCapacity, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	if err := claimEncoding(ctx, rdb, name); err != nil {
		return nil, err
	}
	s := &RedisStorage{f: f, rdb: rdb}
	if err := s.cookies.Init(); err != nil {
		return nil, fmt.Errorf("collystorage: cookies: %w", err)
	}
	return s, nil
}

// claimEncoding sets {name}:collystorage to keyEncodingValue unless it is
// set, and returns an error wrapping bloom.ErrIncompatible if it holds
// another encoding.
func claimEncoding(ctx context.Context, rdb redis.UniversalClient, name string) error {
	marker := "{" + name + "}:collystorage"
	old, err := rdb.SetArgs(ctx, marker, keyEncodingValue, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case err == redis.Nil: // set now
	case err != nil:
		return fmt.Errorf("collystorage: %s: %w", marker, err)
	case old != keyEncodingValue:
		return fmt.Errorf("collystorage: filter %q holds request IDs encoded as %q, not %q: %w", name, old, keyEncodingValue, bloom.ErrIncompatible)
	}
	return nil
}

// Init implements storage.Storage; Collector.SetStorage calls it. It returns
// an error for a zero RedisStorage and does nothing else.
func (s *RedisStorage) Init() error {
	if s.f == nil {
		return errZeroRedis
	}
	return nil
}

// IsVisited implements storage.Storage. It reports whether the request ID
// was marked visited before the call, and marks it, in one atomic script
// call: of all the goroutines and processes that ask about the same new ID
// at once, exactly one gets false (none does if the ID is a false
// positive). It returns redisbloom's errors (ErrNotFound if the filter was
// deleted or lost, ErrLost, ErrCorrupt, or the round trip's).
func (s *RedisStorage) IsVisited(requestID uint64) (bool, error) {
	if s.f == nil {
		return false, errZeroRedis
	}
	present, err := s.call(opTestAndAdd, requestID)
	if err == nil && !present && requestID != 0 {
		s.claimed[slot(requestID)].Store(requestID)
	}
	return present, err
}

// Visited implements storage.Storage: it marks the request ID as visited,
// with one round trip unless IsVisited has just marked it. Marking an ID
// twice changes nothing. It returns the errors of IsVisited.
func (s *RedisStorage) Visited(requestID uint64) error {
	if s.f == nil {
		return errZeroRedis
	}
	if requestID != 0 && s.claimed[slot(requestID)].CompareAndSwap(requestID, 0) {
		return nil
	}
	_, err := s.call(opAdd, requestID)
	return err
}

// slot returns the index in claimed of requestID, from its top bits.
func slot(requestID uint64) int { return int((requestID * 0x9e3779b97f4a7c15) >> 58) }

// Cookies implements storage.Storage: the cookies for u, kept in memory by
// this process.
func (s *RedisStorage) Cookies(u *url.URL) string {
	if s.f == nil {
		return ""
	}
	return s.cookies.Cookies(u)
}

// SetCookies implements storage.Storage: it keeps cookies for u in this
// process's memory.
func (s *RedisStorage) SetCookies(u *url.URL, cookies string) {
	if s.f == nil {
		return
	}
	s.cookies.SetCookies(u, cookies)
}

// Count returns the number of request IDs marked as visited by all the
// processes (false positives are not counted), in one round trip.
func (s *RedisStorage) Count(ctx context.Context) (uint64, error) {
	if s.f == nil {
		return 0, errZeroRedis
	}
	return s.f.Count(ctx)
}

// Delete removes the filter and its {name}:collystorage key from Redis: every
// process's IsVisited then returns redisbloom.ErrNotFound. Deleting a filter
// that does not exist is not an error.
func (s *RedisStorage) Delete(ctx context.Context) error {
	if s.f == nil {
		return errZeroRedis
	}
	if err := s.f.Delete(ctx); err != nil {
		return err
	}
	return s.rdb.Del(ctx, "{"+s.f.Name()+"}:collystorage").Err()
}

// call does op with requestID in the filter, and reports the filter's
// answer (false for opAdd). Every filter call of RedisStorage goes through
// it.
//
// hashed-calls: as Storage.call (storage.go): requestID goes to the
// filter's hashed calls, whose positions are those of the byte calls on its
// 8 little-endian bytes that releases before them made, so
// keyEncodingValue is unchanged and processes of both share a filter
// (TestRedisByteKeyState checks it).
func (s *RedisStorage) call(o op, requestID uint64) (bool, error) {
	if o == opAdd {
		return false, s.f.AddHash(context.Background(), requestID)
	}
	return s.f.TestAndAddHash(context.Background(), requestID)
}
