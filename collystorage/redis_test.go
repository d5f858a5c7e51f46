package collystorage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/gocolly/colly/v2/storage"
	"github.com/redis/go-redis/v9"
)

// The Redis tests run against a real redis-server (7.0 or later), as
// redisbloom's do: its address comes from BLOOM_REDIS_ADDR (.ci/start-redis.sh
// starts one and sets it). Without it they skip, except under CI=true, where
// they fail.
const addrEnv = "BLOOM_REDIS_ADDR"

// redisClient returns a client of the test server, closed when the test ends.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		msg := fmt.Sprintf("%s is not set: start a redis-server (for example `. .ci/start-redis.sh` from the repository root) and set %s=host:port to run the Redis tests", addrEnv, addrEnv)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: the Redis tests must run)", msg)
		}
		t.Skip(msg)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis-server at %s (%s) does not answer: %v", addr, addrEnv, err)
	}
	return rdb
}

// filterName returns a name no other test uses.
func filterName(t testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	return "collystorage-test:" + t.Name() + ":" + hex.EncodeToString(b[:])
}

// newRedisStorage returns a RedisStorage on a new filter that is deleted
// when the test ends.
func newRedisStorage(t testing.TB, rdb redis.UniversalClient, name string) *collystorage.RedisStorage {
	t.Helper()
	s, err := collystorage.NewRedis(context.Background(), rdb, name, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(context.Background()) })
	return s
}

// The environment of a crawler child process (TestCrawlTwoProcessesRedis):
// "site URL|filter name|agent|seed".
const childEnv = "COLLYSTORAGE_TEST_CRAWLER"

// redisSiteLinks is the random links per page of the site that
// TestCrawlTwoProcessesRedis crawls: every link costs each process a round
// trip, so fewer than siteLinks() (65 links to up to 9 others a page).
const redisSiteLinks = 8

// TestCrawlTwoProcessesRedis crawls the site from two crawler processes (this
// test binary run again) that share one filter in Redis, at the same time:
// each visits every page as a start URL, in its own order, and follows every
// link, four requests at a time. Every page must be fetched exactly once,
// by one process or the other.
func TestCrawlTwoProcessesRedis(t *testing.T) {
	if env := os.Getenv(childEnv); env != "" {
		crawlChild(t, env)
		return
	}
	rdb := redisClient(t)
	name := filterName(t)
	// Create the filter here, so that the children only open it, and
	// delete it when the test ends.
	newRedisStorage(t, rdb, name)
	s := newSite(t, sitePages, redisSiteLinks, 2*time.Millisecond, 2)
	agents := []string{"crawler-a", "crawler-b"}
	outs := make([]bytes.Buffer, len(agents))
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i, agent := range agents {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrawlTwoProcessesRedis$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{s.srv.URL, name, agent, strconv.Itoa(i)}, "|"))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cmd.Wait()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("crawler %s: %v\n%s", agents[i], err, outs[i].String())
		}
	}
	s.checkOnce(t, 0, sitePages-1)
	_, byAgent := s.counts()
	for _, agent := range agents {
		if byAgent[agent] == 0 {
			t.Errorf("crawler %s fetched nothing: the crawls did not overlap", agent)
		}
	}
	t.Logf("pages fetched by process: %v", byAgent)
}

// crawlChild is the crawler process of TestCrawlTwoProcessesRedis.
func crawlChild(t *testing.T, env string) {
	runCrawlChild(t, childEnv, env, redisSiteLinks, func(rdb redis.UniversalClient, name string) (storage.Storage, error) {
		return collystorage.NewRedis(context.Background(), rdb, name, testCapacity, testRate)
	})
}

// runCrawlChild is a crawler process of the tests of two processes on one
// Redis: env (in the variable envName) is "site URL|filter name|agent|seed";
// it opens the storage with open, then, once the other process is ready too
// (the site's barrier), crawls the site of links links a page from every
// page, in an order of its own (the seed's).
func runCrawlChild(t *testing.T, envName, env string, links int, open func(rdb redis.UniversalClient, name string) (storage.Storage, error)) {
	f := strings.Split(env, "|")
	if len(f) != 4 {
		t.Fatalf("%s=%q", envName, env)
	}
	siteURL, name, agent := f[0], f[1], f[2]
	seed, err := strconv.Atoi(f[3])
	if err != nil {
		t.Fatal(err)
	}
	store, err := open(redisClient(t), name)
	if err != nil {
		t.Fatal(err)
	}
	// A handle on the parent's site, for its URLs.
	s := &site{t: t, n: sitePages, links: links, url: siteURL}
	start := make([]string, sitePages)
	for i, j := range mrand.New(mrand.NewPCG(uint64(seed), 7)).Perm(sitePages) {
		start[i] = s.page(j)
	}
	// Start together with the other process.
	resp, err := http.Get(siteURL + "/barrier")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := &crawler{store: store, async: true, parallel: 4, agent: agent}
	c.crawl(t, s, start...)
}

// TestRedisIsVisitedClaims checks the claim in IsVisited through two
// handles, as two processes would have them: the first to ask about an ID
// hears false, everyone after it true, and Visited after either changes
// nothing.
func TestRedisIsVisitedClaims(t *testing.T) {
	rdb := redisClient(t)
	name := filterName(t)
	a := newRedisStorage(t, rdb, name)
	b, err := collystorage.NewRedis(context.Background(), rdb, name, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	const ids = 200
	for id := uint64(1); id <= ids; id++ {
		v, err := a.IsVisited(id)
		if err != nil || v {
			t.Fatalf("a.IsVisited(%d) = %v, %v, want false", id, v, err)
		}
		if v, err := b.IsVisited(id); err != nil || !v {
			t.Fatalf("b.IsVisited(%d) after a's = %v, %v, want true", id, v, err)
		}
		if err := a.Visited(id); err != nil {
			t.Fatal(err)
		}
		if err := b.Visited(id); err != nil {
			t.Fatal(err)
		}
	}
	// Visited alone marks an ID.
	if err := b.Visited(ids + 1); err != nil {
		t.Fatal(err)
	}
	if v, err := a.IsVisited(ids + 1); err != nil || !v {
		t.Fatalf("IsVisited after another handle's Visited = %v, %v, want true", v, err)
	}
	n, err := a.Count(context.Background())
	if err != nil || n != ids+1 {
		t.Fatalf("Count = %d, %v, want %d", n, err, ids+1)
	}
}

// TestRedisIsVisitedConcurrent has 8 goroutines, each with its own handle,
// ask IsVisited about the same 500 IDs at once: each ID must hear false
// exactly once.
func TestRedisIsVisitedConcurrent(t *testing.T) {
	rdb := redisClient(t)
	name := filterName(t)
	newRedisStorage(t, rdb, name)
	isVisitedOnce(t, func() (visitedStore, error) {
		return collystorage.NewRedis(context.Background(), rdb, name, testCapacity, testRate)
	})
}

// visitedStore is what isVisitedOnce asks: colly's IsVisited.
type visitedStore interface {
	IsVisited(requestID uint64) (bool, error)
}

// isVisitedOnce has 8 goroutines, each with its own handle from open, ask
// IsVisited about the same 500 IDs at once: each ID must hear false exactly
// once.
func isVisitedOnce(t *testing.T, open func() (visitedStore, error)) {
	t.Helper()
	const goroutines, ids = 8, 500
	falses := make([][ids]bool, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := uint64(i)*0x9e3779b97f4a7c15 + 1
				v, err := s.IsVisited(id)
				if err != nil {
					t.Error(err)
					return
				}
				falses[g][i] = !v
			}
		}()
	}
	wg.Wait()
	for i := range ids {
		n := 0
		for g := range goroutines {
			if falses[g][i] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("ID %d heard false %d times, want 1", i, n)
		}
	}
}

// TestRedisKeyEncoding checks that a filter whose {name}:collystorage key
// records another key encoding is refused, that a redisbloom filter of the
// same parameters is adopted, one of others refused, and that a deleted
// filter gives errors.
func TestRedisKeyEncoding(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	name := filterName(t)
	s := newRedisStorage(t, rdb, name)
	if err := rdb.Set(ctx, "{"+name+"}:collystorage", "request-id/hash64", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := collystorage.NewRedis(ctx, rdb, name, testCapacity, testRate)
	if !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("NewRedis on a filter of another key encoding: %v, want ErrIncompatible", err)
	}
	// A filter made by redisbloom alone, with the same parameters: adopted,
	// and its keys are kept.
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := redisbloom.NewScalable(ctx, rdb, name, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], 42)
	if err := f.Add(ctx, key[:]); err != nil {
		t.Fatal(err)
	}
	if s, err = collystorage.NewRedis(ctx, rdb, name, testCapacity, testRate); err != nil {
		t.Fatal(err)
	}
	if v, err := s.IsVisited(42); err != nil || !v {
		t.Fatalf("IsVisited(42) added by redisbloom = %v, %v, want true", v, err)
	}
	// Other parameters: redisbloom's error.
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := redisbloom.NewScalable(ctx, rdb, name, testCapacity, 0.01); err != nil {
		t.Fatal(err)
	}
	if _, err = collystorage.NewRedis(ctx, rdb, name, testCapacity, testRate); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("NewRedis on a filter of another error rate: %v, want ErrIncompatible", err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	// Deleted: IsVisited fails, never answers false.
	if _, err := s.IsVisited(1); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("IsVisited on a deleted filter: %v, want ErrNotFound", err)
	}
	if n, err := rdb.Exists(ctx, "{"+name+"}:collystorage", "{"+name+"}:meta").Result(); err != nil || n != 0 {
		t.Fatalf("after Delete %d keys are left (%v)", n, err)
	}
}

// TestRedisZero checks that a zero RedisStorage fails loudly.
func TestRedisZero(t *testing.T) {
	var s collystorage.RedisStorage
	if err := s.Init(); err == nil {
		t.Error("Init of a zero RedisStorage succeeded")
	}
	if _, err := s.IsVisited(1); err == nil {
		t.Error("IsVisited of a zero RedisStorage succeeded")
	}
	if err := s.Visited(1); err == nil {
		t.Error("Visited of a zero RedisStorage succeeded")
	}
	if _, err := s.Count(context.Background()); err == nil {
		t.Error("Count of a zero RedisStorage succeeded")
	}
	if err := s.Delete(context.Background()); err == nil {
		t.Error("Delete of a zero RedisStorage succeeded")
	}
	s.SetCookies(nil, "a=b")
	if c := s.Cookies(nil); c != "" {
		t.Errorf("Cookies of a zero RedisStorage = %q", c)
	}
}
