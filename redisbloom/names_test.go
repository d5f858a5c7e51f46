package redisbloom_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// startCluster starts a private one-node Redis Cluster that serves every
// slot, and returns a ClusterClient of it.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	srv := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := context.Background()
	node := newClient(t, srv.addr())
	if err := node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); info(t, node, "cluster", "cluster_enabled") != "1" ||
		!strings.Contains(node.ClusterInfo(ctx).Val(), "cluster_state:ok"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the one-node cluster did not reach cluster_state:ok")
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.addr()}})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestNames checks that a name is accepted or refused alike on a standalone
// server and on a Cluster, and that every accepted name puts both keys in one
// Cluster slot: names starting with '}' have no hash tag ("{}x}:meta" hashes
// whole), so they must be refused everywhere, not only where Cluster says
// CROSSSLOT.
func TestNames(t *testing.T) {
	rdb := client(t)
	cc := startCluster(t)
	ctx := context.Background()
	refused := []string{"", "}", "}x", "}}", "}{x}", "}crawler:seen"}
	accepted := []string{"x", "crawler:seen", "a}b", "a}", "{", "{x}", "{}", "x{", "a{b}c", "{}}", "é}"}
	for _, name := range refused {
		if _, err := redisbloom.New(ctx, rdb, name, 100, 0.01); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("New(%q) on a standalone server: %v, want bloom.ErrInvalidParameter", name, err)
		}
		if _, err := redisbloom.New(ctx, cc, name, 100, 0.01); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("New(%q) on a Cluster: %v, want bloom.ErrInvalidParameter", name, err)
		}
		if _, err := redisbloom.Open(ctx, rdb, name); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("Open(%q): %v, want bloom.ErrInvalidParameter", name, err)
		}
		if err := redisbloom.Destroy(ctx, rdb, name); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("Destroy(%q): %v, want bloom.ErrInvalidParameter", name, err)
		}
	}
	for _, name := range accepted {
		for desc, c := range map[string]redis.UniversalClient{"standalone": rdb, "Cluster": cc} {
			name := "redisbloom-test:" + name
			f, err := redisbloom.New(ctx, c, name, 100, 0.01)
			if err != nil {
				t.Errorf("New(%q) on %s: %v", name, desc, err)
				continue
			}
			if err := f.Add(ctx, []byte("k")); err != nil {
				t.Errorf("Add on %q on %s: %v", name, desc, err)
			}
			if err := redisbloom.Destroy(ctx, c, name); err != nil {
				t.Errorf("Destroy(%q) on %s: %v", name, desc, err)
			}
		}
	}
	// Names as written, without a prefix, on the Cluster: accepted ones work.
	for _, name := range accepted {
		if _, err := redisbloom.New(ctx, cc, name, 100, 0.01); err != nil {
			t.Errorf("New(%q) on a Cluster: %v", name, err)
		}
		redisbloom.Destroy(ctx, cc, name)
	}

	// Random names over the characters that matter: accepted exactly when
	// the Cluster puts both keys in one slot.
	r := rand.New(rand.NewPCG(11, 0))
	node := cc.Options().Addrs[0]
	slots := newClient(t, node)
	for range 300 {
		var b strings.Builder
		for range 1 + r.IntN(5) {
			b.WriteByte("{}a:"[r.IntN(4)])
		}
		name := b.String()
		meta, err1 := slots.ClusterKeySlot(ctx, "{"+name+"}:meta").Result()
		bits, err2 := slots.ClusterKeySlot(ctx, "{"+name+"}:bits").Result()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		_, err := redisbloom.Open(ctx, rdb, name) // no round trip if refused
		refused := errors.Is(err, bloom.ErrInvalidParameter)
		if refused == (meta == bits) {
			t.Errorf("name %q: keys in slots %d and %d, refused: %v", name, meta, bits, refused)
		}
	}
}
