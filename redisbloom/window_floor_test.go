package redisbloom_test

import (
	"context"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// TestWindowBurstFloorRepro is issue 30's repro on the server's clock: a
// window of 100 keys in 4 generations of a second, a burst of 300 keys, 1.1
// s, one more Add: every one of the last 99 keys of the burst, added about
// a second earlier (within the window's 3 s and among its last 100 keys),
// must test present. Before the floor was kept, 3 of them were absent.
func TestWindowBurstFloorRepro(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	w, err := redisbloom.NewWindow(ctx, rdb, windowName(t, rdb), 100, 0.01, bloom.Generations(4), bloom.Every(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	burst := keyRange("burst-", 0, 300)
	if err := w.AddMany(ctx, burst); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := w.Add(ctx, []byte("one more")); err != nil {
		t.Fatal(err)
	}
	last := burst[len(burst)-99:]
	present, err := w.TestMany(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	absent := 0
	for _, ok := range present {
		if !ok {
			absent++
		}
	}
	if absent != 0 {
		t.Fatalf("%d of the last 99 keys of the burst absent, 1.1 s after it in a window of 3 s", absent)
	}
}
