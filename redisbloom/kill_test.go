package redisbloom_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// slowConn writes at most 16 KiB per millisecond, so that a large batch is
// still on its way to the server when the test kills the connection.
type slowConn struct{ net.Conn }

// NetConn returns the underlying connection, so that go-redis can check an
// idle connection's health (as it does through a tls.Conn).
func (c slowConn) NetConn() net.Conn { return c.Conn }

func (c slowConn) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		w, err := c.Conn.Write(b[:min(len(b), 16<<10)])
		n += w
		if err != nil {
			return n, err
		}
		b = b[w:]
		time.Sleep(time.Millisecond)
	}
	return n, nil
}

// TestKilledMidBatch kills the connection of a client (CLIENT KILL from a
// second client) while the server is in the middle of applying its batch:
// part of the batch has been applied, the rest not. The batch must fail, and
// retrying it must leave no false negatives and the same bits and Count as
// adding every key once.
func TestKilledMidBatch(t *testing.T) {
	for _, method := range []string{"AddMany", "TestAndAddMany"} {
		t.Run(method, func(t *testing.T) {
			addr := serverAddr(t)
			admin := newClient(t, addr)
			var tag [4]byte
			rand.Read(tag[:])
			victimName := "redisbloom-victim-" + hex.EncodeToString(tag[:])
			victim := newClient(t, addr, func(o *redis.Options) {
				o.PoolSize = 1    // the connection we look up is the one the batch uses
				o.MaxRetries = -1 // go-redis would otherwise resend the batch by itself
				o.ClientName = victimName
				o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return slowConn{c}, nil
				}
			})
			ctx := context.Background()
			const n = 100_000 // 700,000 positions: 11 script calls
			name := filterName(t, admin)
			f, err := redisbloom.New(ctx, victim, name, n, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			watch, err := redisbloom.Open(ctx, admin, name)
			if err != nil {
				t.Fatal(err)
			}
			keys := keyRange("https://example.com/killed/", 0, n)
			batch := func() error {
				if method == "AddMany" {
					return f.AddMany(ctx, keys)
				}
				_, err := f.TestAndAddMany(ctx, keys)
				return err
			}

			killed := make(chan uint64, 1)
			go func() {
				// Kill as soon as the first script call has been applied.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
					if c, err := watch.Count(ctx); err == nil && c > 0 {
						killByName(ctx, t, admin, victimName)
						killed <- c
						return
					}
				}
				killed <- 0
			}()
			batchErr := batch()
			atKill := <-killed
			if batchErr == nil {
				t.Fatalf("%s succeeded although its connection was killed (count %d at the kill): the kill came too late", method, atKill)
			}
			if errors.Is(batchErr, redisbloom.ErrNotFound) {
				t.Fatalf("%s after CLIENT KILL: %v, want a network error", method, batchErr)
			}
			partial, err := watch.Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s failed: %v; %d of %d keys applied", method, batchErr, partial, n)
			if partial == 0 || partial >= n-100 {
				t.Logf("the kill did not land in the middle of the batch")
			}

			// Retry on the same client, as a caller would. Without go-redis's
			// own retries, each pooled connection that the kill closed fails
			// once more before the client has replaced them all.
			for attempt := 1; ; attempt++ {
				err := batch()
				if err == nil {
					break
				}
				if attempt == 3 {
					t.Fatalf("retry: %v", err)
				}
				t.Logf("retry %d: %v", attempt, err)
			}
			got, err := watch.TestMany(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range got {
				if !ok {
					t.Fatalf("false negative for %q after the retry", keys[i])
				}
			}
			mem, err := bloom.New(n, 0.01, bloom.Classic())
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range keys {
				mem.Add(key)
			}
			checkExport(t, watch, mem)
		})
	}
}

// killByName kills the connections of the clients called name.
func killByName(ctx context.Context, t *testing.T, admin *redis.Client, name string) {
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Error(err)
		return
	}
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		var id string
		named := false
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if f == "name="+name {
				named = true
			}
		}
		if named && id != "" {
			if err := admin.ClientKillByFilter(ctx, "ID", id).Err(); err != nil {
				t.Error(err)
			}
		}
	}
}
