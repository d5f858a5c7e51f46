package redisbloom_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// afterRestart runs op until it returns something other than a network
// error: the pool's connections died with the server, and the first calls on
// them may fail before the client reconnects.
func afterRestart(t *testing.T, op func() error) error {
	t.Helper()
	var err error
	for range 5 {
		err = op()
		if err == nil || errors.Is(err, redisbloom.ErrLost) || errors.Is(err, redisbloom.ErrNotFound) ||
			errors.Is(err, redisbloom.ErrCorrupt) || errors.Is(err, redisbloom.ErrStale) {
			return err
		}
		t.Logf("call after the restart: %v", err)
	}
	return err
}

// falseNegatives returns how many of keys f reports absent, and the error.
func falseNegatives(ctx context.Context, f *redisbloom.Filter, keys [][]byte) (int, error) {
	got, err := f.TestMany(ctx, keys)
	n := 0
	for _, ok := range got {
		if !ok {
			n++
		}
	}
	return n, err
}

// checkLost fails the test unless every method of f, and New and Open of its
// name, return ErrLost.
func checkLost(t *testing.T, rdb redis.UniversalClient, f *redisbloom.Filter) {
	t.Helper()
	ctx := context.Background()
	for method, err := range every(ctx, f) {
		if !errors.Is(err, redisbloom.ErrLost) {
			t.Errorf("%s: %v, want ErrLost", method, err)
		}
	}
	if _, err := redisbloom.Open(ctx, rdb, f.Name()); !errors.Is(err, redisbloom.ErrLost) {
		t.Errorf("Open: %v, want ErrLost", err)
	}
	if _, err := redisbloom.New(ctx, rdb, f.Name(), f.Capacity(), f.ErrorRate()); !errors.Is(err, redisbloom.ErrLost) {
		t.Errorf("New: %v, want ErrLost", err)
	}
}

// checkRecreate destroys the filter by name, creates it again and checks that
// the new filter works and the old handle gets ErrNotFound.
func checkRecreate(t *testing.T, rdb redis.UniversalClient, old *redisbloom.Filter, key []byte) {
	t.Helper()
	ctx := context.Background()
	if err := redisbloom.Destroy(ctx, rdb, old.Name()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	g, err := redisbloom.New(ctx, rdb, old.Name(), old.Capacity(), old.ErrorRate())
	if err != nil {
		t.Fatalf("New after Destroy: %v", err)
	}
	if ok, err := g.Test(ctx, key); ok || err != nil {
		t.Fatalf("re-created filter: Test = %v, %v; want false, nil", ok, err)
	}
	if err := g.Add(ctx, key); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Test(ctx, key); !ok || err != nil {
		t.Fatalf("re-created filter after Add: Test = %v, %v; want true, nil", ok, err)
	}
	if _, err := old.Test(ctx, key); !errors.Is(err, redisbloom.ErrNotFound) {
		t.Fatalf("old handle on the re-created filter: %v, want ErrNotFound", err)
	}
}

// TestRestartFromOlderSnapshot restarts a server from an RDB snapshot taken
// halfway through the adds (Redis's default persistence loses the writes
// since the last snapshot). A handle that saw the later writes, the writer
// and a reader alike, must get ErrLost instead of "absent" for the lost half;
// from then on every handle, New and Open too, must get ErrLost, and Destroy
// must let New create the filter again.
func TestRestartFromOlderSnapshot(t *testing.T) {
	srv := startServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "snapshot", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 2000)
	if err := f.AddMany(ctx, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys[1000:] {
		if err := f.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := redisbloom.Open(ctx, rdb, "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := falseNegatives(ctx, reader, keys); n != 0 || err != nil {
		t.Fatalf("before the restart: %d false negatives, %v", n, err)
	}

	srv.restart()
	var n int
	err = afterRestart(t, func() error { n, err = falseNegatives(ctx, reader, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("reader after a restart from an older snapshot: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	err = afterRestart(t, func() error { n, err = falseNegatives(ctx, f, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("writer after a restart from an older snapshot: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	t.Logf("after the restart: %v", err)
	checkLost(t, rdb, f)
	checkRecreate(t, rdb, f, keys[0])
}

// TestLostMarkReachesNewHandles checks that once a handle has noticed lost
// writes, a handle opened after the restart, which never saw them, gets
// ErrLost too instead of adding on top of the older state.
func TestLostMarkReachesNewHandles(t *testing.T) {
	srv := startServer(t)
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "snapshot", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	late, err := redisbloom.Open(ctx, newClient(t, srv.addr()), "snapshot")
	if err != nil {
		t.Fatal(err) // nothing has noticed yet: it opens
	}
	if err := afterRestart(t, func() error { return f.Add(ctx, []byte("next")) }); !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("Add on the handle that saw the lost write: %v, want ErrLost", err)
	}
	if err := late.Add(ctx, []byte("other")); !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("Add on a handle opened after the restart: %v, want ErrLost", err)
	}
}

// TestRestartWithAOF checks the configuration the documentation gives for
// adds that survive a crash: appendonly yes with appendfsync always. Killed
// with SIGKILL and restarted, the server has every acknowledged add, and
// every handle goes on working.
func TestRestartWithAOF(t *testing.T) {
	srv := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := newClient(t, srv.addr())
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "aof", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 2000)
	if err := f.AddMany(ctx, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys[1000:] {
		if err := f.Add(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	srv.restart()
	var n int
	err = afterRestart(t, func() error { n, err = falseNegatives(ctx, f, keys); return err })
	if n != 0 || err != nil {
		t.Fatalf("after a restart with appendfsync always: %d false negatives, %v", n, err)
	}
	if err := f.Add(ctx, []byte("more")); err != nil {
		t.Fatal(err)
	}
}

// switchDialer dials whichever address it holds, so that a test can move a
// client to another server as a virtual IP or DNS name does in a failover.
type switchDialer struct{ addr atomic.Value }

func (d *switchDialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, network, d.addr.Load().(string))
}

// TestFailoverToLaggingReplica promotes a replica that missed the last
// writes (asynchronous replication) and moves the client to it: the handle
// that made the writes must get ErrLost, not "absent".
func TestFailoverToLaggingReplica(t *testing.T) {
	master := startServer(t)
	replica := startReplica(t, master)
	var d switchDialer
	d.addr.Store(master.addr())
	rdb := newClient(t, master.addr(), func(o *redis.Options) { o.Dialer = d.dial })
	ctx := context.Background()
	f, err := redisbloom.New(ctx, rdb, "failover", 10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("k", 0, 2000)
	if err := f.AddMany(ctx, keys[:1000]); err != nil {
		t.Fatal(err)
	}
	replica.waitInSync(master)
	replica.freeze() // the link breaks: the next writes do not reach it
	if err := f.AddMany(ctx, keys[1000:]); err != nil {
		t.Fatal(err)
	}
	// Failover: promote the replica, retire the master, move the client.
	if err := newClient(t, replica.addr()).ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	master.stop()
	d.addr.Store(replica.addr())
	var n int
	err = afterRestart(t, func() error { n, err = falseNegatives(ctx, f, keys); return err })
	if !errors.Is(err, redisbloom.ErrLost) {
		t.Fatalf("after a failover to a lagging replica: %d of %d keys absent, error %v; want ErrLost", n, len(keys), err)
	}
	checkLost(t, rdb, f)
}

// TestCorruptFilter changes a filter's keys behind the package's back in
// each way eviction, expiry, other programs or an operator can, and checks
// that no method answers "absent" without an error, that New and Open fail,
// and that Destroy by name lets New create the filter again.
func TestCorruptFilter(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	type keys struct{ meta, bits string }
	cases := []struct {
		desc string
		// tamper changes the keys of the filter f.
		tamper func(f *redisbloom.Filter, k keys) error
		// want is the error every method of an existing handle must return.
		want error
	}{
		{"bits+8", func(f *redisbloom.Filter, k keys) error {
			return rdb.HSet(ctx, k.meta, "bits", strconv.FormatUint(f.Bits()+8, 10)).Err()
		}, redisbloom.ErrCorrupt},
		{"bits-1, same bitmap length", func(f *redisbloom.Filter, k keys) error {
			return rdb.HSet(ctx, k.meta, "bits", strconv.FormatUint(f.Bits()-1, 10)).Err()
		}, redisbloom.ErrCorrupt},
		{"hashes+1", func(f *redisbloom.Filter, k keys) error {
			return rdb.HSet(ctx, k.meta, "hashes", strconv.FormatUint(uint64(f.Hashes())+1, 10)).Err()
		}, redisbloom.ErrCorrupt},
		{"seed+1", func(f *redisbloom.Filter, k keys) error {
			return rdb.HSet(ctx, k.meta, "seed", strconv.FormatUint(uint64(f.Seed())+1, 10)).Err()
		}, redisbloom.ErrCorrupt},
		{"bitmap replaced by a short string", func(f *redisbloom.Filter, k keys) error {
			return rdb.Set(ctx, k.bits, "x", 0).Err()
		}, redisbloom.ErrCorrupt},
		{"bitmap replaced by an empty string", func(f *redisbloom.Filter, k keys) error {
			return rdb.Set(ctx, k.bits, "", 0).Err()
		}, redisbloom.ErrCorrupt},
		{"bitmap extended", func(f *redisbloom.Filter, k keys) error {
			return rdb.Append(ctx, k.bits, "\x00").Err()
		}, redisbloom.ErrCorrupt},
		{"metadata deleted", func(f *redisbloom.Filter, k keys) error {
			return rdb.Del(ctx, k.meta).Err()
		}, redisbloom.ErrNotFound},
		{"metadata expired", func(f *redisbloom.Filter, k keys) error {
			if err := rdb.PExpire(ctx, k.meta, time.Millisecond).Err(); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
			return nil
		}, redisbloom.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			// A size that is neither whole bytes nor one bit more, so
			// that bits-1 keeps the bitmap's length.
			capacity := uint64(100)
			for m, _, _ := bloom.Size(capacity, 0.01); m%8 < 2; m, _, _ = bloom.Size(capacity, 0.01) {
				capacity++
			}
			f, err := redisbloom.New(ctx, rdb, filterName(t, rdb), capacity, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			if f.Bits()%8 < 2 {
				t.Fatalf("m = %d: the test needs m%%8 >= 2", f.Bits())
			}
			added := keyRange("added-", 0, 50)
			if err := f.AddMany(ctx, added); err != nil {
				t.Fatal(err)
			}
			k := keys{"{" + f.Name() + "}:meta", "{" + f.Name() + "}:bits"}
			if err := c.tamper(f, k); err != nil {
				t.Fatal(err)
			}
			if n, err := falseNegatives(ctx, f, added); !errors.Is(err, c.want) {
				t.Fatalf("TestMany: %d of %d added keys absent, error %v; want %v", n, len(added), err, c.want)
			}
			for method, err := range every(ctx, f) {
				if !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", method, err, c.want)
				}
			}
			if _, err := redisbloom.Open(ctx, rdb, f.Name()); err == nil {
				t.Errorf("Open succeeded")
			} else {
				t.Logf("Open: %v", err)
			}
			if _, err := redisbloom.New(ctx, rdb, f.Name(), f.Capacity(), f.ErrorRate()); err == nil {
				t.Errorf("New succeeded")
			} else {
				t.Logf("New: %v", err)
			}
			checkRecreate(t, rdb, f, added[0])
		})
	}
}
