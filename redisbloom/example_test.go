package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// Every crawler worker opens the same seen-URL filter and crawls a URL only
// if TestAndAdd reports it new. (The examples need a Redis server, so they
// are compiled but not run.)
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true, // let contexts' deadlines bound each call
	})
	defer rdb.Close()

	// 10 million URLs at a 0.1% false-positive rate: 144 Mbit (18 MiB) in
	// Redis. Every worker calls New with the same arguments; the first
	// creates the filter, the others open it.
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}

	for _, url := range []string{"https://example.com/", "https://example.com/a"} {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		present, err := seen.TestAndAdd(ctx, []byte(url))
		cancel()
		switch {
		case errors.Is(err, redisbloom.ErrNotFound):
			log.Fatal("the filter was lost (flushed, evicted or restarted): rebuild it")
		case errors.Is(err, redisbloom.ErrLost), errors.Is(err, redisbloom.ErrCorrupt):
			// Acknowledged adds were lost, or the keys were changed: remove
			// the filter by name, then rebuild it from the source of its keys.
			if err := redisbloom.Destroy(ctx, rdb, "crawler:seen"); err != nil {
				log.Fatal(err)
			}
			log.Fatal("the filter lost adds: rebuild it")
		case err != nil:
			// The URL may or may not have been added: retrying is safe.
			log.Print(err)
		case !present:
			fmt.Println("crawl", url)
		}
	}
}

// Batches take one round trip for many keys.
func ExampleFilter_TestAndAddMany() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}

	urls := [][]byte{[]byte("https://example.com/b"), []byte("https://example.com/c")}
	present, err := seen.TestAndAddMany(ctx, urls)
	if err != nil {
		log.Fatal(err)
	}
	for i, url := range urls {
		if !present[i] {
			fmt.Printf("crawl %s\n", url)
		}
	}
}

// Export copies the filter into memory, for example to save it to a file;
// Import loads such a copy back into Redis.
func ExampleFilter_Export() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	seen, err := redisbloom.Open(ctx, rdb, "crawler:seen")
	if err != nil {
		log.Fatal(err)
	}
	mem, err := seen.Export(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mem.Count(), mem.TestString("https://example.com/"))
	// Later, after losing the Redis data: recreate the filter and reload it.
	restored, err := redisbloom.New(ctx, rdb, "crawler:seen", mem.Capacity(), mem.ErrorRate(), bloom.Seed(mem.Seed()))
	if err != nil {
		log.Fatal(err)
	}
	if err := restored.Import(ctx, mem); err != nil {
		log.Fatal(err)
	}
}

// WithWait makes every add wait until the replicas have it, so that it
// survives a failover and replica reads by any process see it.
func ExampleFilter_WithWait() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	durable, err := seen.WithWait(1, 500*time.Millisecond) // one replica, at most 500ms per write
	if err != nil {
		log.Fatal(err)
	}
	err = durable.Add(ctx, []byte("https://example.com/"))
	if errors.Is(err, redisbloom.ErrNotReplicated) {
		// Applied on the master only: retry, or accept the risk.
		log.Print(err)
	}
}

// A filter that grows: the same sub-filters as bloom.NewScalable, created
// inside Redis by the call that finds the newest one full.
func ExampleNewScalable() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	seen, err := redisbloom.NewScalable(ctx, rdb, "crawler:seen-growing", 100_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	urls := [][]byte{[]byte("https://example.com/"), []byte("https://example.com/a")}
	present, err := seen.TestAndAddMany(ctx, urls)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(present)
	// An in-memory copy, Equal to bloom.NewScalable(100_000, 0.01, bloom.Classic()) fed the
	// same keys in the same order.
	mem, err := seen.Export(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mem.Count(), mem.NumFilters())
}

// Crawler workers that re-fetch a page once a week: a time window shared in
// Redis keeps the URLs fetched within the last 7 days (sized for 10 million
// of them at 1%), on the server's clock, and forgets each at most 7 days and
// 1/(r-1) of that later. Generations nobody uses expire on their own.
func ExampleNewWindow() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	week, err := redisbloom.NewWindow(ctx, rdb, "crawler:fetched-this-week", 10_000_000, 0.01,
		bloom.Every(7*24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	urls := [][]byte{[]byte("https://example.com/"), []byte("https://example.com/a")}
	fetchedThisWeek, err := week.TestAndAddMany(ctx, urls) // rotation, when due, inside the same atomic call
	if err != nil {
		log.Fatal(err)
	}
	for i, u := range urls {
		if !fetchedThisWeek[i] {
			fmt.Printf("fetch %s\n", u)
		}
	}
	// An in-memory copy: a bloom.WindowFilter, Equal to bloom.NewWindow with the
	// same arguments fed the same keys at the same (server) times.
	mem, err := week.Export(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(mem.Generations(), mem.Duration(), mem.Count())
}

// A filter split over 6 hash slots: on a 3-master Cluster, two shards per
// master, and up to 6 times the 512 MiB of one Redis string.
func ExampleNewSharded() {
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:7000", "localhost:7001", "localhost:7002"}})
	defer rdb.Close()

	seen, err := redisbloom.NewSharded(ctx, rdb, "crawler:seen-sharded", 6, 1_000_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	urls := [][]byte{[]byte("https://example.com/"), []byte("https://example.com/a")}
	present, err := seen.TestAndAddMany(ctx, urls) // one round trip per master, the masters concurrently
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(present)
}

// Many goroutines with one key each share script calls through a Coalesced
// handle.
func ExampleFilter_Coalesced() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	f, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	seen := f.Coalesced()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("https://example.com/%d", i)
			if present, err := seen.TestAndAdd(ctx, []byte(url)); err == nil && !present {
				fmt.Println("crawl", url)
			}
		}()
	}
	wg.Wait()
}

// A growing filter split over 6 hash slots: each shard is a ScalableFilter
// that starts at 1/6 of the initial capacity and grows on its own.
func ExampleNewShardedScalable() {
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:7000", "localhost:7001", "localhost:7002"}})
	defer rdb.Close()

	seen, err := redisbloom.NewShardedScalable(ctx, rdb, "crawler:seen-sharded-growing", 6, 600_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	urls := [][]byte{[]byte("https://example.com/"), []byte("https://example.com/a")}
	present, err := seen.TestAndAddMany(ctx, urls) // the shards concurrently
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(present)
	// One in-memory copy per shard; Import loads them into a filter of the
	// same parameters.
	shards, err := seen.Export(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(shards))
}

// A caller with one key at a time keeps several calls in flight: queue them
// on a pipeline, with any other commands, run it once, then read each
// answer.
func ExampleFilter_TestAndAddPipelined() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}

	urls := []string{"https://example.com/d", "https://example.com/e"}
	pipe := rdb.Pipeline()
	pending := make([]*redisbloom.Pending, len(urls))
	for i, url := range urls {
		pending[i] = seen.TestAndAddPipelined(ctx, pipe, []byte(url))
	}
	pipe.Incr(ctx, "crawler:batches")
	_, _ = pipe.Exec(ctx) // each Result reports its own call's error
	for i, p := range pending {
		present, err := p.Result(ctx)
		if err != nil {
			log.Print(err) // the URL may or may not have been added
			continue
		}
		if !present {
			fmt.Println("crawl", urls[i])
		}
	}
}
