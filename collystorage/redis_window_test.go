package collystorage_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// The Redis window of TestCrawlWindowTwoProcessesRedis, on the server's real
// clock (a test cannot move it): redisWindow (15 s) in redisWindowGens
// generations of 1 s (a whole number of microseconds, as redisbloom
// requires), so a page is forgotten at most redisForgetBy (16 s) after it
// was marked; sized for the site crawled twice within one generation, for
// the reason windowPages gives. Its site has redisWindowLinks random links
// a page (25 links), so that a crawl takes well under the window, under
// the race detector too.
const (
	redisWindowGens  = 16
	redisWindowLinks = 3
	redisWindow      = (redisWindowGens - 1) * time.Second
	redisForgetBy    = redisWindow * redisWindowGens / (redisWindowGens - 1)
	redisWindowPages = 2 * sitePages * (redisWindowGens - 1)
)

func redisWindowOpts() []bloom.Option {
	return []bloom.Option{bloom.Every(redisWindow), bloom.Generations(redisWindowGens)}
}

// newRedisWindowStorage returns a RedisWindowStorage on the window name,
// creating it, deleted when the test ends.
func newRedisWindowStorage(t testing.TB, rdb redis.UniversalClient, name string) *collystorage.RedisWindowStorage {
	t.Helper()
	s, err := collystorage.NewRedisWindow(context.Background(), rdb, name, redisWindowPages, testRate, redisWindowOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(context.Background()) })
	return s
}

// The environment of a crawler child process of
// TestCrawlWindowTwoProcessesRedis: "site URL|window name|agent|seed".
const windowChildEnv = "COLLYSTORAGE_TEST_WINDOW_CRAWLER"

// TestCrawlWindowTwoProcessesRedis crawls the site twice from two crawler
// processes (this test binary run again) that share one window in Redis, as
// TestCrawlTwoProcessesRedis does: in the first crawl every page is fetched
// exactly once, by one process or the other; a crawl from this process
// within the window, from every page, fetches nothing; once the window has
// passed for the first crawl's pages (redisForgetBy, 16 s, after it
// started), the two processes crawl again and fetch every page exactly once
// more. The refused crawl met every page, so a window that kept a page
// another 15 s each time it met a link to it would fetch nothing the second
// time.
func TestCrawlWindowTwoProcessesRedis(t *testing.T) {
	if env := os.Getenv(windowChildEnv); env != "" {
		crawlWindowChild(t, env)
		return
	}
	rdb := redisClient(t)
	name := filterName(t)
	store := newRedisWindowStorage(t, rdb, name)
	if got := store.Duration(); got != redisWindow {
		t.Fatalf("Duration = %v, want %v", got, redisWindow)
	}
	agents := []string{"crawler-a", "crawler-b"}
	s := newSite(t, sitePages, redisWindowLinks, 2*time.Millisecond, 0)
	crawl := func(round int) {
		t.Helper()
		// Both processes start together, at the barrier.
		s.mu.Lock()
		s.barrier, s.waiting = make(chan struct{}), len(agents)
		s.mu.Unlock()
		_, before := s.counts()
		outs := make([]bytes.Buffer, len(agents))
		errs := make([]error, len(agents))
		var wg sync.WaitGroup
		for i, agent := range agents {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrawlWindowTwoProcessesRedis$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), windowChildEnv+"="+strings.Join([]string{s.srv.URL, name, agent, strconv.Itoa(2*round + i)}, "|"))
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
		s.checkTimes(t, 0, sitePages-1, round+1)
		_, byAgent := s.counts()
		for _, agent := range agents {
			if byAgent[agent] <= before[agent] {
				t.Errorf("round %d: crawler %s fetched nothing: the crawls did not overlap", round, agent)
			}
		}
		t.Logf("round %d: pages fetched by process in all rounds: %v", round, byAgent)
	}

	start := time.Now()
	crawl(0)
	took := time.Since(start)
	t.Logf("the first crawl took %v", took)
	if took > redisWindow-time.Second {
		t.Fatalf("the first crawl took %v, too close to the window (%v): the machine is too slow for this test's timing", took, redisWindow)
	}
	// The refused crawl, at least a second after the first began, so that a
	// page it marked again would still be kept at the second crawl.
	time.Sleep(time.Until(start.Add(time.Second)))
	c := &crawler{store: store, async: true, parallel: 4}
	c.crawl(t, s, allPages(s)...)
	s.checkOnce(t, 0, sitePages-1)
	if refused := len(c.refused); refused != sitePages {
		t.Errorf("the crawl within the window refused visits of %d pages, want %d", refused, sitePages)
	}
	if since := time.Since(start); since >= redisWindow {
		t.Fatalf("the crawl within the window ended %v after the first began, after the window (%v): too slow", since, redisWindow)
	}
	// Every page counted once: a process that lost the race for a page
	// finds it present and adds nothing (first-seen TestAndAdd). With the
	// Test-then-TestAndAdd workaround, the loser's TestAndAdd added it
	// again in a later generation: 302 in one run under the race
	// detector, with generations of 600 ms.
	n, err := store.Count(context.Background())
	if err != nil || n != sitePages {
		t.Errorf("Count = %d, %v; want %d", n, err, sitePages)
	}

	time.Sleep(time.Until(start.Add(redisForgetBy + 100*time.Millisecond)))
	crawl(1)
}

// crawlWindowChild is the crawler process of
// TestCrawlWindowTwoProcessesRedis.
func crawlWindowChild(t *testing.T, env string) {
	runCrawlChild(t, windowChildEnv, env, redisWindowLinks, func(rdb redis.UniversalClient, name string) (storage.Storage, error) {
		return collystorage.NewRedisWindow(context.Background(), rdb, name, redisWindowPages, testRate, redisWindowOpts()...)
	})
}

// TestRedisWindowIsVisitedClaims checks IsVisited and Visited through two
// handles, as two processes would have them: the first to ask about an ID
// hears false, everyone after it true, Visited after either adds nothing
// (Count stays at one per ID), and Visited alone marks an ID.
func TestRedisWindowIsVisitedClaims(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	name := filterName(t)
	// A window of an hour: nothing is forgotten during the test.
	opts := []bloom.Option{bloom.Every(time.Hour)}
	a, err := collystorage.NewRedisWindow(ctx, rdb, name, 10_000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Delete(ctx) })
	b, err := collystorage.NewRedisWindow(ctx, rdb, name, 10_000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	const ids = 200
	for id := uint64(1); id <= ids; id++ {
		if v, err := a.IsVisited(id); err != nil || v {
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
	if err := b.Visited(ids + 1); err != nil {
		t.Fatal(err)
	}
	if v, err := a.IsVisited(ids + 1); err != nil || !v {
		t.Fatalf("IsVisited after another handle's Visited = %v, %v, want true", v, err)
	}
	if n, err := a.Count(ctx); err != nil || n != ids+1 {
		t.Fatalf("Count = %d, %v, want %d", n, err, ids+1)
	}
	if a.Bits() == 0 || a.Bits() != b.Bits() {
		t.Fatalf("Bits = %d and %d", a.Bits(), b.Bits())
	}
}

// TestRedisWindowIsVisitedConcurrent has 8 goroutines, each with its own
// handle, ask IsVisited about the same 500 IDs at once: each ID must hear
// false exactly once.
func TestRedisWindowIsVisitedConcurrent(t *testing.T) {
	rdb := redisClient(t)
	name := filterName(t)
	newRedisWindowStorage(t, rdb, name)
	isVisitedOnce(t, func() (visitedStore, error) {
		return collystorage.NewRedisWindow(context.Background(), rdb, name, redisWindowPages, testRate, redisWindowOpts()...)
	})
}

// TestRedisWindowKeyEncoding checks that a window whose {name}:collystorage
// key records another key encoding is refused, that a window of other
// parameters is refused, and that a deleted window gives errors and leaves
// no key.
func TestRedisWindowKeyEncoding(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	name := filterName(t)
	s := newRedisWindowStorage(t, rdb, name)
	if err := rdb.Set(ctx, "{"+name+"}:collystorage", "request-id/hash64", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := collystorage.NewRedisWindow(ctx, rdb, name, redisWindowPages, testRate, redisWindowOpts()...); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("NewRedisWindow on a window of another key encoding: %v, want ErrIncompatible", err)
	}
	if _, err := collystorage.NewRedisWindow(ctx, rdb, name, redisWindowPages, 0.01, redisWindowOpts()...); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("NewRedisWindow on a window of another error rate: %v, want ErrIncompatible", err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IsVisited(1); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("IsVisited on a deleted window: %v, want ErrNotFound", err)
	}
	if err := s.Visited(1); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("Visited on a deleted window: %v, want ErrNotFound", err)
	}
	if n, err := rdb.Exists(ctx, "{"+name+"}:collystorage", "{"+name+"}:meta").Result(); err != nil || n != 0 {
		t.Fatalf("after Delete %d keys are left (%v)", n, err)
	}
}

// TestRedisWindowZero checks that a zero RedisWindowStorage fails loudly.
func TestRedisWindowZero(t *testing.T) {
	var s collystorage.RedisWindowStorage
	if s.Init() == nil {
		t.Error("Init of a zero RedisWindowStorage succeeded")
	}
	if v, err := s.IsVisited(1); v || err == nil {
		t.Errorf("IsVisited = %v, %v; want false and an error", v, err)
	}
	if s.Visited(1) == nil {
		t.Error("Visited of a zero RedisWindowStorage succeeded")
	}
	if _, err := s.Count(context.Background()); err == nil {
		t.Error("Count of a zero RedisWindowStorage succeeded")
	}
	if s.Delete(context.Background()) == nil {
		t.Error("Delete of a zero RedisWindowStorage succeeded")
	}
	if s.Bits() != 0 || s.Duration() != 0 {
		t.Error("accessors of a zero RedisWindowStorage are not zero")
	}
	s.SetCookies(nil, "a=b")
	if s.Cookies(nil) != "" {
		t.Error("Cookies of a zero RedisWindowStorage")
	}
}

// TestRedisWindowImport moves a crawl's history from a file to Redis: a
// WindowStorage marks 300 pages and saves its file, a later process opens
// it and imports it into a RedisWindowStorage, whose every handle then
// refuses those pages and no others (at testRate), and counts them; a
// window of other parameters and a nil source are refused with
// bloom.ErrIncompatible.
func TestRedisWindowImport(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	name := filterName(t)
	path := filepath.Join(t.TempDir(), "crawl.bw")
	opts := []bloom.Option{bloom.Every(time.Hour)}
	file, err := collystorage.OpenWindow(path, 1000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	const pages = 300
	for id := uint64(1); id <= pages; id++ {
		if v, err := file.IsVisited(id); err != nil || v {
			t.Fatalf("IsVisited(%d) = %v, %v in a new file window", id, v, err)
		}
	}
	if err := file.Save(); err != nil {
		t.Fatal(err)
	}
	src, err := collystorage.OpenWindow(path, 1000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := collystorage.NewRedisWindow(ctx, rdb, name, 1000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Delete(ctx) })
	if v, err := dst.IsVisited(pages + 1); err != nil || v {
		t.Fatalf("IsVisited(%d) = %v, %v before Import", pages+1, v, err)
	}
	if err := dst.Import(ctx, src); err != nil {
		t.Fatal(err)
	}
	other, err := collystorage.NewRedisWindow(ctx, rdb, name, 1000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= pages; id++ {
		if v, err := other.IsVisited(id); err != nil || !v {
			t.Fatalf("IsVisited(%d) = %v, %v after Import, want true", id, v, err)
		}
	}
	// The page marked in Redis before Import is forgotten, as documented.
	if v, err := other.IsVisited(pages + 1); err != nil || v {
		t.Fatalf("IsVisited(%d) = %v, %v: marked before Import, want false", pages+1, v, err)
	}
	if n, err := other.Count(ctx); err != nil || n != pages+1 {
		t.Fatalf("Count = %d, %v after Import and one page, want %d", n, err, pages+1)
	}
	wider, err := collystorage.NewRedisWindow(ctx, rdb, name+"-wider", 2000, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wider.Delete(ctx) })
	if err := wider.Import(ctx, src); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("Import into a window of 2000 pages from one of 1000: %v, want ErrIncompatible", err)
	}
	if err := dst.Import(ctx, nil); !errors.Is(err, bloom.ErrIncompatible) {
		t.Fatalf("Import(nil): %v, want ErrIncompatible", err)
	}
}
