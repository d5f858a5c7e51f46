// Command readme is the Redis example of the repository's README.md, word
// for word (TestReadmeSnippet checks it), so that the snippet is known to
// compile. Run it against a Redis server on localhost:6379.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	// Every process calls New with the same arguments: the first creates the
	// filter (10^7 keys at 0.1%: 18 MiB in Redis), the others open it.
	seen, err := redisbloom.New(ctx, rdb, "crawler:seen", 10_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	present, err := seen.TestAndAdd(ctx, []byte("https://example.com/")) // one round trip, atomic
	if err != nil {
		log.Fatal(err) // ErrNotFound, ErrLost, ErrCorrupt: see below; a network error: retry
	}
	fmt.Println("seen before:", present)

	urls := [][]byte{[]byte("https://example.com/a"), []byte("https://example.com/b")}
	answers, err := seen.TestAndAddMany(ctx, urls) // one round trip per batch
	if err != nil {
		log.Fatal(err)
	}
	for i, url := range urls {
		if !answers[i] {
			fmt.Printf("crawl %s\n", url)
		}
	}
}
