// Command consumer is the program .ci/consumer-check builds in a module of its
// own outside this repository, as a user's program after `go get`: its go.mod
// requires github.com/bloomfilters/bloom, .../redisbloom and .../collystorage
// at the release version, served by a module proxy made from the tree, with
// no replace directive. It uses a package of each module, needs no Redis
// server, prints what it checked and exits 1 if an answer is wrong.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run() error {
	// bloom: a filter answers present for what it holds.
	f, err := bloom.New(1000, 0.01)
	if err != nil {
		return err
	}
	f.AddString("https://example.com/")
	if !f.TestString("https://example.com/") || f.Stats().SetBits == 0 {
		return errors.New("bloom: an added key is not present")
	}
	fmt.Println("bloom: ok")

	// redisbloom: a filter too large for one Redis string is refused
	// before any round trip (no server listens on port 1).
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	if _, err := redisbloom.New(context.Background(), rdb, "consumer", 1<<40, 0.01); !errors.Is(err, bloom.ErrInvalidParameter) {
		return fmt.Errorf("redisbloom.New of %d bits: err = %v, want bloom.ErrInvalidParameter", uint64(1)<<40, err)
	}
	// redisbloom/bfdump: RedisBloom's filter, in memory.
	d, err := bfdump.New(1000, 0.01)
	if err != nil {
		return err
	}
	if err := d.AddString("key"); err != nil || !d.TestString("key") {
		return fmt.Errorf("bfdump: an added key is not present (%v)", err)
	}
	fmt.Println("redisbloom: ok")

	// collystorage: IsVisited marks; the storage saves and loads.
	s, err := collystorage.New(1000, 0.001)
	if err != nil {
		return err
	}
	if v, err := s.IsVisited(42); v || err != nil {
		return fmt.Errorf("collystorage: a new ID visited (%v, %v)", v, err)
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		return err
	}
	loaded, err := collystorage.Read(&buf)
	if err != nil {
		return err
	}
	if v, err := loaded.IsVisited(42); !v || err != nil {
		return fmt.Errorf("collystorage: a visited ID is new after Read (%v, %v)", v, err)
	}
	fmt.Println("collystorage: ok")
	return nil
}
