package collystorage_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/bloomfilters/bloom/collystorage"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// bfRedisClient returns a client of the test server if it has the BF.*
// commands; BLOOM_REDIS_BF says whether it must ("1": the test fails
// without), must not ("0": the test skips) or may ("": the test skips
// without), as in redisbloom's tests.
func bfRedisClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redisClient(t)
	has, err := bfdump.HasCommands(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	switch os.Getenv("BLOOM_REDIS_BF") {
	case "1":
		if !has {
			t.Fatalf("BLOOM_REDIS_BF=1 but the server at %s has no BF.* commands", addrEnv)
		}
	case "0":
		if has {
			t.Fatalf("BLOOM_REDIS_BF=0 but the server at %s has BF.* commands", addrEnv)
		}
		t.Skip("BLOOM_REDIS_BF=0: the server has no BF.* commands; TestRedisNativeWithoutModule covers it")
	default:
		if !has {
			t.Skip("the server has no BF.* commands (Redis 8, or the RedisBloom module, have them)")
		}
	}
	return rdb
}

func newRedisNativeStorage(t testing.TB, rdb redis.UniversalClient, name string) *collystorage.RedisNativeStorage {
	t.Helper()
	s, err := collystorage.NewRedisNative(context.Background(), rdb, name, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
	return s
}

// TestRedisNativeIsVisited: two handles on one native filter, as two
// processes: the first to ask about an ID hears false, everyone after it
// true; the IDs are in the RedisBloom key as their 8 little-endian bytes
// (BF.EXISTS from another client); 8 racing handles hear false once per ID;
// a deleted filter gives ErrNotFound.
func TestRedisNativeIsVisited(t *testing.T) {
	rdb := bfRedisClient(t)
	ctx := context.Background()
	name := filterName(t)
	a := newRedisNativeStorage(t, rdb, name)
	b, err := collystorage.NewRedisNative(ctx, rdb, name, testCapacity, testRate)
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
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], 7)
	if ok, err := rdb.Do(ctx, "BF.EXISTS", a.Filter().Key(), key[:]).Bool(); err != nil || !ok {
		t.Fatalf("BF.EXISTS of ID 7's bytes = %v, %v", ok, err)
	}
	race := filterName(t)
	newRedisNativeStorage(t, rdb, race)
	isVisitedOnce(t, func() (visitedStore, error) {
		return collystorage.NewRedisNative(ctx, rdb, race, testCapacity, testRate)
	})
	if err := a.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.IsVisited(1); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("IsVisited after Delete: %v, want ErrNotFound", err)
	}
	var zero collystorage.RedisNativeStorage
	if _, err := zero.IsVisited(1); err == nil || zero.Init() == nil {
		t.Fatal("a zero RedisNativeStorage answered")
	}
}

// TestRedisNativeWithoutModule: on a server without BF.*, NewRedisNative
// fails with redisbloom.ErrNoModule.
func TestRedisNativeWithoutModule(t *testing.T) {
	rdb := redisClient(t)
	if has, err := bfdump.HasCommands(context.Background(), rdb); err != nil || has {
		t.Skipf("the server has BF.* commands (%v): TestRedisNativeIsVisited covers it", err)
	}
	if _, err := collystorage.NewRedisNative(context.Background(), rdb, filterName(t), testCapacity, testRate); !errors.Is(err, redisbloom.ErrNoModule) {
		t.Fatalf("NewRedisNative without BF.*: %v, want ErrNoModule", err)
	}
}
