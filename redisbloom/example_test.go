package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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
