package redisbloom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
)

// TestScalableWithWait checks durable writes of a scalable filter: with
// WithWait(1, ...) adds, across growth steps, return only once the replica
// has them, so that a reader on the replica sees them at once; with the
// replica cut off, adds and Import fail with ErrNotReplicated, also an add
// of a key another client added unreplicated (which writes no bit).
func TestScalableWithWait(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	rdb := newClient(t, master.addr())
	ctx := context.Background()
	s, err := redisbloom.NewScalable(ctx, rdb, "durable", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	durable, err := s.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master) // NewScalable does not wait
	onReplica, err := redisbloom.OpenScalable(ctx, newClient(t, replica.addr()), "durable")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		key := keyOf("one-", i)
		if err := durable.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
		if ok, err := onReplica.Test(ctx, key); !ok || err != nil {
			t.Fatalf("replica read right after a durable Add of %q: %v, %v", key, ok, err)
		}
	}
	batch := keyRange("batch-", 0, 20_000) // several growth steps and script calls
	if _, err := durable.TestAndAddMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if durable.NumFilters() < 4 {
		t.Fatalf("%d sub-filters after 20,100 keys from 1,000", durable.NumFilters())
	}
	present, err := onReplica.TestMany(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range present {
		if !ok {
			t.Fatalf("replica read right after a durable TestAndAddMany: %q absent", batch[i])
		}
	}
	mem, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.Import(ctx, mem); err != nil {
		t.Fatalf("durable Import: %v", err)
	}

	replica.freeze()
	quick, err := s.WithWait(1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := quick.AddMany(ctx, keyRange("cut-", 0, 10)); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable AddMany with the replica cut off: %v, want ErrNotReplicated", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("durable AddMany took %v with a 100ms timeout", d)
	}
	if err := s.Add(ctx, []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if err := quick.Add(ctx, []byte("shared")); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable Add of a key another client added unreplicated: %v, want ErrNotReplicated", err)
	}
	if ok, err := quick.Test(ctx, []byte("shared")); err != nil || !ok {
		t.Errorf("Test on a WithWait handle: %v, %v", ok, err)
	}
	if err := quick.Import(ctx, mem); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable Import with the replica cut off: %v, want ErrNotReplicated", err)
	}

	for _, c := range []struct {
		replicas int
		timeout  time.Duration
	}{{0, time.Second}, {1, 0}, {1, time.Microsecond}} {
		if _, err := s.WithWait(c.replicas, c.timeout); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("WithWait(%d, %v): %v, want bloom.ErrInvalidParameter", c.replicas, c.timeout, err)
		}
	}
	var zero redisbloom.ScalableFilter
	if _, err := zero.WithWait(1, time.Second); err == nil {
		t.Error("WithWait on a zero ScalableFilter succeeded")
	}
}
