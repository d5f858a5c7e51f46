package redisbloom_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// TestPipelinedSameAsDirect queues single-key calls on caller pipelines, on
// the standalone server and on the 3-master Cluster: their answers are those
// of the in-memory filter fed the same keys in the same order (duplicates
// included), the exported bits are equal, and a pipeline of many calls is
// one round trip on a standalone server.
func TestPipelinedSameAsDirect(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			var rdb redis.UniversalClient
			var rt roundTrips
			if where == "cluster" {
				rdb = clusterClient(t)
			} else {
				c := client(t)
				c.AddHook(&rt)
				rdb = c
			}
			ctx := context.Background()
			f, mem := newPair(t, rdb, 20_000, 0.01, bloom.DefaultSeed)
			keys := keyRange("pl-", 0, 3000)
			keys = append(keys, keys[:300]...) // duplicates: present from their second time on
			for lo := 0; lo < len(keys); lo += 500 {
				batch := keys[lo:min(lo+500, len(keys))]
				pipe := rdb.Pipeline()
				pending := make([]*redisbloom.Pending, len(batch))
				for i, key := range batch {
					if i%3 == 0 {
						pending[i] = f.AddPipelined(ctx, pipe, key)
					} else {
						pending[i] = f.TestAndAddPipelined(ctx, pipe, key)
					}
				}
				before := rt.n.Load()
				if _, err := pipe.Exec(ctx); err != nil {
					t.Fatal(err)
				}
				if where == "standalone" {
					if n := rt.n.Load() - before; n != 1 && lo > 0 {
						t.Errorf("a pipeline of %d calls took %d round trips", len(batch), n)
					}
				}
				for i, key := range batch {
					want := mem.TestAndAdd(key)
					got, err := pending[i].Result(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if i%3 != 0 && got != want {
						t.Fatalf("TestAndAddPipelined(%q) = %v, memory %v", key, got, want)
					}
				}
			}
			checkExport(t, f, mem)
			pipe := rdb.Pipeline()
			probes := append(keyRange("pl-", 0, 100), keyRange("pl-absent-", 0, 2000)...)
			pending := make([]*redisbloom.Pending, len(probes))
			for i, key := range probes {
				pending[i] = f.TestPipelined(ctx, pipe, key)
			}
			pipe.Exec(ctx)
			for i, key := range probes {
				got, err := pending[i].Result(ctx)
				if err != nil || got != mem.Test(key) {
					t.Fatalf("TestPipelined(%q) = %v, %v; memory %v", key, got, err, mem.Test(key))
				}
			}
		})
	}
}

// TestPipelinedErrors checks the errors of pipelined calls: a Result read
// before Exec, a deleted filter (ErrNotFound, never "absent"), a flushed
// script cache (the call is made again and answers), a WithWait handle
// (errors.ErrUnsupported) and a zero Pending.
func TestPipelinedErrors(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	f, mem := newPair(t, rdb, 1000, 0.01, bloom.DefaultSeed)
	key := []byte("pe-1")
	mem.Add(key)

	pipe := rdb.Pipeline()
	p := f.AddPipelined(ctx, pipe, key)
	if _, err := p.Result(ctx); err == nil {
		t.Error("Result before Exec succeeded")
	}
	pipe.Exec(ctx)
	if _, err := p.Result(ctx); err != nil {
		t.Fatal(err)
	}

	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	pipe = rdb.Pipeline()
	p1, p2 := f.TestPipelined(ctx, pipe, key), f.TestAndAddPipelined(ctx, pipe, []byte("pe-2"))
	pipe.Exec(ctx)
	if ok, err := p1.Result(ctx); err != nil || !ok {
		t.Errorf("TestPipelined after SCRIPT FLUSH: %v, %v", ok, err)
	}
	if ok, err := p2.Result(ctx); err != nil || ok {
		t.Errorf("TestAndAddPipelined of a new key after SCRIPT FLUSH: %v, %v", ok, err)
	}

	waiting, err := f.WithWait(1, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	pipe = rdb.Pipeline()
	p = waiting.AddPipelined(ctx, pipe, key)
	if pipe.Len() != 0 {
		t.Errorf("a WithWait handle queued %d commands", pipe.Len())
	}
	if _, err := p.Result(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("AddPipelined on a WithWait handle: %v, want errors.ErrUnsupported", err)
	}

	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	pipe = rdb.Pipeline()
	p1, p2 = f.TestPipelined(ctx, pipe, key), f.AddPipelined(ctx, pipe, key)
	pipe.Exec(ctx)
	for i, p := range []*redisbloom.Pending{p1, p2} {
		if ok, err := p.Result(ctx); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("call %d on a deleted filter: %v, %v; want ErrNotFound", i, ok, err)
		}
	}
	var zero redisbloom.Pending
	if _, err := zero.Result(ctx); err == nil {
		t.Error("Result of a zero Pending succeeded")
	}
}

// TestPipelinedNewOnce has 8 clients TestAndAddPipelined the same 2,000 new
// keys, in pipelines of 100, at once: each key is new to exactly one of
// them.
func TestPipelinedNewOnce(t *testing.T) {
	rdb := client(t, func(o *redis.Options) { o.PoolSize = 16 })
	ctx := context.Background()
	f, _ := newPair(t, rdb, 100_000, 0.001, bloom.DefaultSeed)
	keys := keyRange("once-", 0, 2000)
	const clients = 8
	news := make([][]bool, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			news[c] = make([]bool, len(keys))
			for lo := 0; lo < len(keys); lo += 100 {
				pipe := rdb.Pipeline()
				pending := make([]*redisbloom.Pending, 0, 100)
				for _, key := range keys[lo : lo+100] {
					pending = append(pending, f.TestAndAddPipelined(ctx, pipe, key))
				}
				pipe.Exec(ctx)
				for i, p := range pending {
					present, err := p.Result(ctx)
					if err != nil {
						errs <- err
						return
					}
					news[c][lo+i] = !present
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	falsePositives := 0
	for i := range keys {
		n := 0
		for c := range clients {
			if news[c][i] {
				n++
			}
		}
		switch n {
		case 0:
			falsePositives++ // a false positive before its first add
		case 1:
		default:
			t.Fatalf("key %q new to %d clients", keys[i], n)
		}
	}
	if falsePositives > 20 {
		t.Errorf("%d of %d keys new to no client", falsePositives, len(keys))
	}
}
