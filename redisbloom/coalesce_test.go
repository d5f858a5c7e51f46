package redisbloom_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// TestCoalesced has 16 goroutines on one Coalesced handle (and 8 more on
// another client's) TestAndAdd the same 10^4 keys in their own orders, with
// Test and Add mixed in: every key is new to exactly one of them, and the
// filter ends bit for bit the in-memory one. A call whose context has ended
// returns its error.
func TestCoalesced(t *testing.T) {
	ctx := context.Background()
	rdb := client(t)
	const n = 10_000
	name := filterName(t, rdb)
	f, err := redisbloom.New(ctx, rdb, name, n, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	other, err := redisbloom.New(ctx, client(t), name, n, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	handles := []*redisbloom.Filter{f.Coalesced(), other.Coalesced()}
	keys := keyRange("co-", 0, n)
	var news [n]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for w := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := handles[w/16]
			for _, i := range rand.New(rand.NewPCG(uint64(w), 2)).Perm(n) {
				if w%5 == 4 {
					if _, err := h.Test(ctx, keys[i]); err != nil {
						errs <- err
						return
					}
				}
				present, err := h.TestAndAdd(ctx, keys[i])
				if err != nil {
					errs <- err
					return
				}
				if !present {
					news[i].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range news {
		if got := news[i].Load(); got != 1 {
			t.Fatalf("key %q reported new %d times", keys[i], got)
		}
	}
	mem, err := bloom.New(n, 1e-9, bloom.Classic())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		mem.Add(key)
	}
	checkExport(t, f, mem)
	if err := handles[0].Add(ctx, []byte("one more")); err != nil {
		t.Fatal(err)
	}
	if ok, err := handles[1].Test(ctx, []byte("one more")); err != nil || !ok {
		t.Fatalf("Test after a coalesced Add: %v, %v", ok, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := handles[0].TestAndAdd(done, []byte("cancelled")); !errors.Is(err, context.Canceled) {
		t.Fatalf("TestAndAdd with an ended context: %v", err)
	}
}
