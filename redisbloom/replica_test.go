package redisbloom_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// replicaReader returns a client that sends writes to master and read-only
// commands (EVALSHA_RO, so Test, TestMany, Count, Export, Open) to replica:
// go-redis's ClusterClient over a fixed slot map, the way it reads from the
// replicas of a non-cluster master.
func replicaReader(t *testing.T, master, replica *server) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{
				{Addr: master.addr()}, {Addr: replica.addr()},
			}}}, nil
		},
		ReadOnly: true,
	})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// readsServed returns how many read-only script calls the server has run.
func readsServed(t *testing.T, s *server) int {
	t.Helper()
	c := newClient(t, s.addr())
	v := info(t, c, "commandstats", "cmdstat_evalsha_ro")
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, _ := strconv.Atoi(calls)
	return n
}

// TestReplicaReads reads, through a client that routes reads to a replica,
// keys the same handle has just added while the replica is cut off from the
// master. The reads must not answer "absent": with a short deadline they
// return ErrStale; given time, they wait until the replica has caught up and
// then answer true for every key.
func TestReplicaReads(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	cc := replicaReader(t, master, replica)
	ctx := context.Background()
	f, err := redisbloom.New(ctx, cc, "replicated", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	early := keyRange("early-", 0, 100)
	if err := f.AddMany(ctx, early); err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master)
	before := readsServed(t, replica)
	if n, err := falseNegatives(ctx, f, early); n != 0 || err != nil {
		t.Fatalf("in sync: %d false negatives, %v", n, err)
	}
	if readsServed(t, replica) == before {
		t.Fatal("the replica served no read: the test would not test replica reads")
	}

	replica.freeze()
	keys := keyRange("late-", 0, 5000)
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	n, err := falseNegatives(short, f, keys)
	cancel()
	if !errors.Is(err, redisbloom.ErrStale) {
		t.Fatalf("read from a replica behind the handle's writes: %d of %d keys absent, error %v; want ErrStale", n, len(keys), err)
	}
	t.Logf("replica cut off: %v", err)
	for name, op := range map[string]func(context.Context) error{
		"Test":   func(ctx context.Context) error { _, err := f.Test(ctx, keys[0]); return err },
		"Count":  func(ctx context.Context) error { _, err := f.Count(ctx); return err },
		"Export": func(ctx context.Context) error { _, err := f.Export(ctx); return err },
	} {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if err := op(short); !errors.Is(err, redisbloom.ErrStale) {
			t.Errorf("%s from the cut-off replica: %v, want ErrStale", name, err)
		}
		cancel()
	}

	// The replica comes back while a read waits for it.
	go func() {
		time.Sleep(100 * time.Millisecond)
		if err := replica.follow(master); err != nil {
			t.Error(err)
		}
	}()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	var last error
	for time.Since(start) < 10*time.Second { // a full resync may take longer than one read's retries
		if n, err = falseNegatives(wait, f, keys); !errors.Is(err, redisbloom.ErrStale) {
			break
		}
		last = err
	}
	if n != 0 || err != nil {
		t.Fatalf("after the replica caught up: %d false negatives, %v (last stale error %v)", n, err, last)
	}
	t.Logf("the read waited %v for the replica", time.Since(start).Round(time.Millisecond))
}

// TestWithWait checks durable writes: with WithWait(1, ...) an add returns
// only once the replica has it, so that any process reading from the replica
// sees it at once; with the replica cut off, adds fail with
// ErrNotReplicated, also when they set no new bit because another client's
// unreplicated add set them.
func TestWithWait(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	rdb := newClient(t, master.addr())
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "durable", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	durable, err := f.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master) // New does not wait
	onReplica, err := redisbloom.Open(ctx, newClient(t, replica.addr()), "durable")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		key := keyOf("one-", i)
		if err := durable.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
		// Another process, reading from the replica right away.
		if ok, err := onReplica.Test(ctx, key); !ok || err != nil {
			t.Fatalf("replica read right after a durable Add of %q: %v, %v", key, ok, err)
		}
	}
	batch := keyRange("batch-", 0, 20_000) // several script calls
	if _, err := durable.TestAndAddMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if n, err := falseNegatives(ctx, onReplica, batch); n != 0 || err != nil {
		t.Fatalf("replica read right after a durable TestAndAddMany: %d false negatives, %v", n, err)
	}
	mem, err := f.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.Import(ctx, mem); err != nil {
		t.Fatalf("durable Import: %v", err)
	}

	// Through a ClusterClient, WAIT goes to the master that holds the filter.
	viaCluster, err := redisbloom.Open(ctx, replicaReader(t, master, replica), "durable")
	if err != nil {
		t.Fatal(err)
	}
	clusterDurable, err := viaCluster.WithWait(1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clusterKeys := keyRange("cluster-", 0, 100)
	if err := clusterDurable.AddMany(ctx, clusterKeys); err != nil {
		t.Fatalf("durable AddMany through a ClusterClient: %v", err)
	}
	if n, err := falseNegatives(ctx, onReplica, clusterKeys); n != 0 || err != nil {
		t.Fatalf("replica read right after a durable AddMany through a ClusterClient: %d false negatives, %v", n, err)
	}

	twoReplicas, err := f.WithWait(2, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := twoReplicas.Add(ctx, []byte("two")); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("WithWait(2) with one replica: %v, want ErrNotReplicated", err)
	}

	replica.freeze()
	quick, err := f.WithWait(1, 100*time.Millisecond)
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
	// Another client adds a key without waiting; the durable add of the
	// same key sets no new bit, and must still wait for the replica.
	if err := f.Add(ctx, []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if err := quick.Add(ctx, []byte("shared")); !errors.Is(err, redisbloom.ErrNotReplicated) {
		t.Errorf("durable Add of a key another client added unreplicated: %v, want ErrNotReplicated", err)
	}

	for _, c := range []struct {
		replicas int
		timeout  time.Duration
	}{{0, time.Second}, {1, 0}, {1, time.Microsecond}} {
		if _, err := f.WithWait(c.replicas, c.timeout); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("WithWait(%d, %v): %v, want bloom.ErrInvalidParameter", c.replicas, c.timeout, err)
		}
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": master.addr()}})
	defer ring.Close()
	g, err := redisbloom.Open(ctx, ring, "durable")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WithWait(1, time.Second); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("WithWait on a Ring: %v, want bloom.ErrInvalidParameter", err)
	}
}
