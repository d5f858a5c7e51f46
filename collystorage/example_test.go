package collystorage_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
	"github.com/gocolly/colly/v2"
	"github.com/redis/go-redis/v9"
)

// A crawler that remembers what it fetched across runs: the second run
// fetches only the pages the first did not.
func ExampleOpen() {
	// A small site: / links to /a and /b, /new to /a and /c.
	links := map[string][]string{"/": {"/a", "/b"}, "/new": {"/a", "/c"}}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, l := range links[r.URL.Path] {
			fmt.Fprintf(w, "<a href=%q>%s</a>\n", l, l)
		}
	}))
	defer site.Close()
	dir, err := os.MkdirTemp("", "crawl")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "visited.bf")

	run := func(start ...string) {
		// 100,000 URLs before the filter first grows; at most 1 in 10^4
		// new URLs taken for visited ones.
		visited, err := collystorage.Open(state, 100_000, 1e-4)
		if err != nil {
			log.Fatal(err)
		}
		c := colly.NewCollector()
		if err := c.SetStorage(visited); err != nil {
			log.Fatal(err)
		}
		c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
		c.OnResponse(func(r *colly.Response) { fmt.Println("fetched", r.Request.URL.Path) })
		for _, u := range start {
			var already *colly.AlreadyVisitedError
			if err := c.Visit(site.URL + u); errors.As(err, &already) {
				fmt.Println("already visited", already.Destination.Path)
			} else if err != nil {
				log.Fatal(err)
			}
		}
		c.Wait()
		if err := visited.Save(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("run 1:")
	run("/")
	fmt.Println("run 2:")
	run("/", "/new")
	// Output:
	// run 1:
	// fetched /
	// fetched /a
	// fetched /b
	// run 2:
	// already visited /
	// fetched /new
	// fetched /c
}

// Crawlers on several machines share one filter in Redis: each URL is
// fetched by one of them. (The example needs a Redis server, so it is
// compiled but not run.)
func ExampleNewRedis() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	// Every crawler process makes the same call: the first creates the
	// filter, the others open it.
	visited, err := collystorage.NewRedis(context.Background(), rdb, "crawl:example.com", 1_000_000, 1e-4)
	if err != nil {
		log.Fatal(err)
	}
	c := colly.NewCollector(colly.AllowedDomains("example.com"), colly.Async())
	if err := c.SetStorage(visited); err != nil {
		log.Fatal(err)
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
	c.Visit("https://example.com/")
	c.Wait()
}

// A crawler that fetches each page again a week after it fetched it, run on
// day 0, day 3 and day 8 (the example's clock moves; a crawler runs on
// time.Now): on day 3 every page is still remembered, on day 8 none is.
func ExampleOpenWindow() {
	links := map[string][]string{"/": {"/a", "/b"}}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, l := range links[r.URL.Path] {
			fmt.Fprintf(w, "<a href=%q>%s</a>\n", l, l)
		}
	}))
	defer site.Close()
	dir, err := os.MkdirTemp("", "crawl")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "visited.bw")
	day0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	now := day0
	clock := bloom.Clock(func() time.Time { return now })

	run := func(start string) {
		// Remember each page fetched for a week: fetch it again 7 to 8
		// days later. Sized for 100,000 pages a week; at most 1 new page
		// in 10^4 taken for a visited one.
		visited, err := collystorage.OpenWindow(state, 100_000, 1e-4,
			bloom.Every(7*24*time.Hour),
			clock, // the example's; a crawler leaves it out (time.Now)
		)
		if err != nil {
			log.Fatal(err)
		}
		c := colly.NewCollector()
		if err := c.SetStorage(visited); err != nil {
			log.Fatal(err)
		}
		c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
		c.OnResponse(func(r *colly.Response) { fmt.Println("fetched", r.Request.URL.Path) })
		var already *colly.AlreadyVisitedError
		if err := c.Visit(start); errors.As(err, &already) {
			fmt.Println("already visited", already.Destination.Path)
		} else if err != nil {
			log.Fatal(err)
		}
		c.Wait()
		if err := visited.Save(); err != nil {
			log.Fatal(err)
		}
	}
	for _, day := range []int{0, 3, 8} {
		now = day0.AddDate(0, 0, day)
		fmt.Printf("day %d:\n", day)
		run(site.URL + "/")
	}
	// Output:
	// day 0:
	// fetched /
	// fetched /a
	// fetched /b
	// day 3:
	// already visited /
	// day 8:
	// fetched /
	// fetched /a
	// fetched /b
}

// Crawlers on several machines share one re-crawl window in Redis, on the
// server's clock: each page is fetched by one of them, and again by one of
// them a week later. (The example needs a Redis server, so it is compiled
// but not run.)
func ExampleNewRedisWindow() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	// Every crawler process makes the same call: the first creates the
	// window, the others open it.
	visited, err := collystorage.NewRedisWindow(context.Background(), rdb, "recrawl:example.com", 1_000_000, 1e-4,
		bloom.Every(7*24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	c := colly.NewCollector(colly.AllowedDomains("example.com"), colly.Async())
	if err := c.SetStorage(visited); err != nil {
		log.Fatal(err)
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
	c.Visit("https://example.com/")
	c.Wait()
}

// A crawl that ran in one process with its file moves to processes sharing
// Redis and keeps its history: the file's window is imported into the Redis
// window, made with the same window, error rate and options, before the
// crawlers start.
func ExampleRedisWindowStorage_Import() {
	ctx := context.Background()
	week := bloom.Every(7 * 24 * time.Hour)
	file, err := collystorage.OpenWindow("crawl.bw", 1_000_000, 1e-4, week)
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	shared, err := collystorage.NewRedisWindow(ctx, rdb, "recrawl:example.com", 1_000_000, 1e-4, week)
	if err != nil {
		log.Fatal(err)
	}
	if err := shared.Import(ctx, file); err != nil {
		log.Fatal(err)
	}
}
