package bfdump_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// Build a filter in Go, sized for its rate, and save it; load it back.
func Example() {
	f, err := bfdump.New(1000, 0.01) // scaling, like BF.RESERVE k 0.01 1000
	if err != nil {
		log.Fatal(err)
	}
	for _, url := range []string{"https://example.com/", "https://example.com/a"} {
		if err := f.AddString(url); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(f.TestString("https://example.com/a"), f.TestString("https://example.com/b"))

	var saved bytes.Buffer // a file, say
	if _, err := f.WriteTo(&saved); err != nil {
		log.Fatal(err)
	}
	var g bfdump.Filter
	if _, err := g.ReadFrom(&saved); err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.TestString("https://example.com/a"), g.Count())
	// Output:
	// true false
	// true 2
}

// Reserve builds the very filter RedisBloom builds: after the same adds,
// its BF.SCANDUMP stream is the server's, byte for byte.
func ExampleReserve() {
	f, err := bfdump.Reserve(100, 0.0001) // BF.RESERVE k 0.0001 100
	if err != nil {
		log.Fatal(err)
	}
	if err := f.AddManyStrings([]string{"key-0", "key-1", "key-2"}); err != nil { // BF.MADD k key-0 key-1 key-2
		log.Fatal(err)
	}
	for it, chunk := range f.Chunks() { // BF.SCANDUMP k 0, BF.SCANDUMP k 1, ...
		fmt.Println(it, len(chunk))
	}
	sf := f.SubFilters()[0]
	fmt.Println(sf.Bits, sf.Hashes, sf.ErrorRate)
	// Output:
	// 1 73
	// 265 264
	// 2112 15 5e-05
}

// Load a filter built in Go into Redis under a key, atomically, and read a
// key back. (It needs a server with RedisBloom's BF.* commands, so it is
// compiled but not run.)
func ExampleRestore() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	f, err := bfdump.New(1_000_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	_ = f.AddString("https://example.com/")
	// Readers of "crawler:seen" see the old filter or this one, never a part.
	if err := bfdump.Restore(ctx, rdb, "crawler:seen", f, true); err != nil {
		log.Fatal(err)
	}
	// BF.EXISTS crawler:seen https://example.com/ now answers 1; and back:
	g, err := bfdump.ScanDump(ctx, rdb, "crawler:seen")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.TestString("https://example.com/"))
}
