package collystorage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/gocolly/colly/v2/storage"
	"github.com/redis/go-redis/v9"
)

// RedisWindowStorage is a colly storage.Storage that remembers the requests
// of the recent past only, in a redisbloom.WindowFilter, so that crawler
// processes on any number of machines share one re-crawl window: with
// bloom.Every(d), a page fetched by any of them is refused by all for at
// least d and fetched again, by one of them, once it is forgotten, at most
// d*r/(r-1) after it was fetched. Time is the Redis server's, the same for
// every process. Cookies are kept in memory, per process, by colly's
// storage.InMemoryStorage.
//
// It keeps the promises of WindowStorage, with redisbloom's (see its
// "Durability"): a page is remembered from the time it was first found not
// visited, of all the processes that ask about a page not in the window at
// once exactly one hears false, a page fetched within the last d is not
// fetched again (unless more pages came than the window was sized for and
// RotateEarly forgot some sooner), and a page not fetched within the window
// is skipped with a probability of at most the error rate. The window lives
// in Redis as redisbloom describes (keys {name}:meta and {name}:w:0,
// {name}:w:1, ...; a time window's generations expire when nobody uses
// them), plus the key {name}:collystorage, as for RedisStorage.
//
// IsVisited takes one round trip, the window's first-seen TestAndAddHash
// (a script that writes nothing for a page in the window, the common case
// of a crawl: every link to a page met again); Visited right after an
// IsVisited that answered false for the same ID, as colly calls it, takes
// none. Each is bounded by the client's timeouts. Errors are handled as by
// RedisStorage.
//
// A RedisWindowStorage is safe for concurrent use. A zero
// RedisWindowStorage is not usable: its methods return an error, or do
// nothing (SetCookies) or return "" (Cookies).
type RedisWindowStorage struct {
	f       *redisbloom.WindowFilter
	rdb     redis.UniversalClient
	cookies storage.InMemoryStorage
	// claimed is as RedisStorage's.
	claimed [64]atomic.Uint64
}

var errZeroRedisWindow = errors.New("collystorage: use of a zero RedisWindowStorage (create one with NewRedisWindow)")

// NewRedisWindow returns a RedisWindowStorage on the window filter called
// name in rdb, creating it if it does not exist, as
// redisbloom.NewWindow(ctx, rdb, name, window, errorRate, opts...) does:
// every crawler process calls it with the same arguments. With
// bloom.Every(d), window is the number of pages the crawlers fetch within d
// at most, errorRate the largest false-positive rate allowed; opts are
// those of redisbloom.NewWindow (bloom.Clock means nothing there: the
// window reads the server's clock). It returns the errors of
// redisbloom.NewWindow, and one wrapping bloom.ErrIncompatible if the
// window was made by a release of this package that encodes request IDs
// differently.
func NewRedisWindow(ctx context.Context, rdb redis.UniversalClient, name string, window uint64, errorRate float64, opts ...bloom.Option) (*RedisWindowStorage, error) {
	f, err := redisbloom.NewWindow(ctx, rdb, name, window, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	if err := claimEncoding(ctx, rdb, name); err != nil {
		return nil, err
	}
	s := &RedisWindowStorage{f: f, rdb: rdb}
	if err := s.cookies.Init(); err != nil {
		return nil, fmt.Errorf("collystorage: cookies: %w", err)
	}
	return s, nil
}

// Init implements storage.Storage; Collector.SetStorage calls it. It returns
// an error for a zero RedisWindowStorage and does nothing else.
func (s *RedisWindowStorage) Init() error {
	if s.f == nil {
		return errZeroRedisWindow
	}
	return nil
}

// IsVisited implements storage.Storage. It reports whether the request ID
// is in the window, and if it is not, marks it, atomically: of all the
// goroutines and processes that ask about the same ID at once while it is
// not in the window, exactly one gets false. An ID in the window is left as
// it is, as by WindowStorage.IsVisited. It returns redisbloom's errors
// (ErrNotFound if the window was deleted or lost, ErrLost, ErrCorrupt, or
// the round trip's).
func (s *RedisWindowStorage) IsVisited(requestID uint64) (bool, error) {
	if s.f == nil {
		return false, errZeroRedisWindow
	}
	// The window's first-seen test-and-add, one script atomic on the
	// server: an ID in the window is not added again, so that a page is
	// not kept another d each time a link to it is met.
	present, err := s.f.TestAndAddHash(context.Background(), requestID)
	if err == nil && !present && requestID != 0 {
		s.claimed[slot(requestID)].Store(requestID)
	}
	return present, err
}

// Visited implements storage.Storage: it marks the request ID as visited
// unless it is in the window, as IsVisited does, with no round trip if
// IsVisited has just marked it and one otherwise. It returns the
// errors of IsVisited.
func (s *RedisWindowStorage) Visited(requestID uint64) error {
	if s.f == nil {
		return errZeroRedisWindow
	}
	if requestID != 0 && s.claimed[slot(requestID)].CompareAndSwap(requestID, 0) {
		return nil
	}
	_, err := s.IsVisited(requestID)
	if err == nil && requestID != 0 {
		s.claimed[slot(requestID)].CompareAndSwap(requestID, 0)
	}
	return err
}

// Cookies implements storage.Storage: the cookies for u, kept in memory by
// this process.
func (s *RedisWindowStorage) Cookies(u *url.URL) string {
	if s.f == nil {
		return ""
	}
	return s.cookies.Cookies(u)
}

// SetCookies implements storage.Storage: it keeps cookies for u in this
// process's memory.
func (s *RedisWindowStorage) SetCookies(u *url.URL, cookies string) {
	if s.f == nil {
		return
	}
	s.cookies.SetCookies(u, cookies)
}

// Count returns the number of request IDs marked by all the processes in
// the generations still in the window (redisbloom.WindowFilter.Count), in
// one round trip: about the pages fetched within the window, and a few more
// when a process that lost the race for a page marked it again in a later
// generation than the winner's.
func (s *RedisWindowStorage) Count(ctx context.Context) (uint64, error) {
	if s.f == nil {
		return 0, errZeroRedisWindow
	}
	return s.f.Count(ctx)
}

// Bits returns the size of the window in Redis in bits, all generations.
func (s *RedisWindowStorage) Bits() uint64 {
	if s.f == nil {
		return 0
	}
	return uint64(s.f.Generations()) * s.f.GenerationBits()
}

// Duration returns how long a page is at least remembered after it was
// marked (redisbloom.WindowFilter.Duration), or 0 without Every.
func (s *RedisWindowStorage) Duration() time.Duration {
	if s.f == nil {
		return 0
	}
	return s.f.Duration()
}

// Import replaces what the window in Redis remembers with what src
// remembers, atomically (redisbloom.WindowFilter.Import), so that a crawl
// that moves from one process and its file (WindowStorage, OpenWindow) to
// processes sharing Redis keeps its history: a page src remembers is still
// refused for the rest of its time in the window. src must have been made
// with the window, error rate and options (bloom.Every, Generations,
// OnOverflow, Seed) of s, or Import returns an error wrapping
// bloom.ErrIncompatible. A time window's generations keep their start
// times, read from src's clock and from then on compared with the server's:
// generations whose time is up on the server's clock are dropped. Pages
// other processes marked in the window before Import are forgotten: import
// before the crawlers start. It takes one round trip carrying src's bits.
func (s *RedisWindowStorage) Import(ctx context.Context, src *WindowStorage) error {
	if s.f == nil {
		return errZeroRedisWindow
	}
	if src == nil || src.f == nil {
		return fmt.Errorf("%w: collystorage: Import of a nil or zero WindowStorage", bloom.ErrIncompatible)
	}
	return s.f.Import(ctx, src.f)
}

// Delete removes the window and its {name}:collystorage key from Redis:
// every process's IsVisited then returns redisbloom.ErrNotFound. Deleting a
// window that does not exist is not an error.
func (s *RedisWindowStorage) Delete(ctx context.Context) error {
	if s.f == nil {
		return errZeroRedisWindow
	}
	if err := s.f.Delete(ctx); err != nil {
		return err
	}
	return s.rdb.Del(ctx, "{"+s.f.Name()+"}:collystorage").Err()
}
