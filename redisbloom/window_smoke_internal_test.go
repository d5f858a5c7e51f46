package redisbloom

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

func TestWindowSmoke(t *testing.T) {
	addr := os.Getenv("BLOOM_REDIS_ADDR")
	if addr == "" {
		t.Skip()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for _, period := range []time.Duration{0, 300 * time.Millisecond} {
		p, err := windowParamsFor(1000, 0.01, 0, period, 0, bloom.DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("smoke-%d-%d", period, time.Now().UnixNano())
		defer Destroy(ctx, rdb, name)
		w, err := createWindow(ctx, rdb, name, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", p)
		var keys [][]byte
		for i := range 5000 {
			keys = append(keys, []byte(fmt.Sprint("k", i)))
		}
		pres, err := w.TestAndAddMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		fp := 0
		for _, b := range pres {
			if b {
				fp++
			}
		}
		got, err := w.TestMany(ctx, keys[len(keys)-1000:])
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range got {
			if !b {
				t.Fatalf("key %d of the last window absent", i)
			}
		}
		c, err := w.Count(ctx)
		t.Logf("fp %d rotations %d count %d %v", fp, w.Rotations(), c, err)
		o, err := OpenWindow(ctx, rdb, name)
		if err != nil {
			t.Fatal(err)
		}
		if period > 0 {
			time.Sleep(time.Duration(p.gens) * period)
			got, err := o.TestMany(ctx, keys[len(keys)-1000:])
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, b := range got {
				if b {
					n++
				}
			}
			t.Logf("after %v: %d present; ttl %v", time.Duration(p.gens)*period, n, rdb.PTTL(ctx, w.h.keys[1]).Val())
			time.Sleep(1100 * time.Millisecond)
			ex, _ := rdb.Exists(ctx, w.h.keys[1:]...).Result()
			t.Logf("slots left %d", ex)
			if err := o.Add(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			ok, err := o.Test(ctx, []byte("x"))
			t.Log(ok, err, o.Rotations())
		}
	}
}
