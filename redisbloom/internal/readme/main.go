// Command readme is the quick start of redisbloom/README.md, word for word
// (TestReadmeSnippet checks it), so that the snippet is known to compile.
// Run it against a Redis server on localhost:6379.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true, // let contexts' deadlines bound each call
	})
	defer rdb.Close()

	// Every worker calls New with the same arguments: the first creates the
	// filter (10^7 keys at 0.1%: 144 Mbit, 18 MiB in Redis), the others open it.
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}

	url := []byte("https://example.com/")
	present, err := seen.TestAndAdd(ctx, url) // one round trip, atomic
	switch {
	case errors.Is(err, redisbloom.ErrNotFound):
		// The filter was deleted, flushed, evicted or lost in a restart.
		log.Fatal(err)
	case errors.Is(err, redisbloom.ErrLost), errors.Is(err, redisbloom.ErrCorrupt):
		// Acknowledged adds were lost (restart from an older snapshot, failover
		// to a lagging replica), or the keys were changed behind our back:
		// redisbloom.Destroy(ctx, rdb, "crawler:seen"), then rebuild.
		log.Fatal(err)
	case err != nil:
		// Network trouble: the key may or may not have been added; retrying is safe.
		log.Fatal(err)
	case !present:
		fmt.Printf("crawl %s\n", url)
	}

	urls := [][]byte{[]byte("https://example.com/a"), []byte("https://example.com/b")}
	answers, err := seen.TestAndAddMany(ctx, urls) // one round trip per batch
	if err != nil {
		log.Fatal(err) // the same errors as above
	}
	for i, u := range urls {
		if !answers[i] {
			fmt.Printf("crawl %s\n", u)
		}
	}
}
