package bfdump

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// The tests that talk to Redis take the server from BLOOM_REDIS_ADDR
// (.ci/start-redis.sh starts one and sets it) and the Cluster from
// BLOOM_REDIS_CLUSTER_ADDRS (.ci/start-redis-cluster.sh); without them they
// skip, except under CI=true, where they fail.
//
// Whether those servers have RedisBloom's BF.* commands (Redis 8, or the
// RedisBloom module) is BLOOM_REDIS_BF's to say, a contract the CI scripts
// and every run of the tests share:
//
//   - BLOOM_REDIS_BF=1: the servers must have them (the start scripts load
//     the module and set it). A test that needs them fails if they are
//     missing.
//   - BLOOM_REDIS_BF=0: the servers must not have them. A test that needs
//     them skips, saying so; the tests of the path without them
//     (TestNoModule) run against these servers.
//   - unset: each test asks the server (HasCommands) and skips without
//     them, for a developer's own server.
//
// TestNoModule runs whatever the servers have: without BF.* at the test
// server, it starts a private redis-server from PATH without modules.
const bfEnv = "BLOOM_REDIS_BF"

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the Redis tests must run)", msg)
	}
	t.Skip(msg)
}

func testClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv("BLOOM_REDIS_ADDR")
	if addr == "" {
		unavailable(t, "BLOOM_REDIS_ADDR is not set: start a redis-server (`. .ci/start-redis.sh` from the repository root) to run the Redis tests")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis-server at %s does not answer: %v", addr, err)
	}
	return rdb
}

func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := os.Getenv("BLOOM_REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		unavailable(t, "BLOOM_REDIS_CLUSTER_ADDRS is not set: start a cluster with `. .ci/start-redis-cluster.sh` from the repository root")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return node.Ping(ctx).Err() }); err != nil {
		t.Fatalf("Redis Cluster at %s does not answer: %v", addrs, err)
	}
	return rdb
}

// hasBF reports whether every server rdb reaches (every master of a
// Cluster) has the BF.* commands, and applies the BLOOM_REDIS_BF contract
// to the answer: it fails the test where the answer contradicts it.
func hasBF(t testing.TB, rdb redis.UniversalClient, where string) bool {
	t.Helper()
	ctx := context.Background()
	ok, err := HasCommands(ctx, rdb)
	if cc, isCluster := rdb.(*redis.ClusterClient); isCluster && err == nil {
		var mu sync.Mutex // ForEachMaster calls concurrently
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			has, err := HasCommands(ctx, node)
			mu.Lock()
			ok = ok && has
			mu.Unlock()
			return err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	switch v := os.Getenv(bfEnv); v {
	case "1":
		if !ok {
			t.Fatalf("%s=1, but the servers at %s lack BF.LOADCHUNK / BF.SCANDUMP: load the RedisBloom module (--loadmodule; .ci/start-redis.sh does) or use Redis 8", bfEnv, where)
		}
	case "0":
		if ok {
			t.Fatalf("%s=0, but the servers at %s have the BF.* commands", bfEnv, where)
		}
	case "":
	default:
		t.Fatalf("%s=%q: want 1 (the servers have BF.*), 0 (they have not) or unset (ask them)", bfEnv, v)
	}
	return ok
}

// skipNoBF skips a test that needs the BF.* commands, which the servers at
// where have not.
func skipNoBF(t testing.TB, where string) {
	t.Helper()
	if os.Getenv(bfEnv) == "0" {
		t.Skipf("%s=0: the servers at %s have no BF.* commands; the golden streams test the stream code", bfEnv, where)
	}
	t.Skipf("the servers at %s have no BF.LOADCHUNK / BF.SCANDUMP (RedisBloom is not loaded; Redis 8 and the RedisBloom module have them; set %s=1 to make this an error): skipping the round trip through a server; the golden streams test the stream code", where, bfEnv)
}

// bfClient returns a client of the test server if it has the BF.*
// commands, and skips the test otherwise (see BLOOM_REDIS_BF).
func bfClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb := testClient(t)
	if !hasBF(t, rdb, "BLOOM_REDIS_ADDR") {
		skipNoBF(t, "BLOOM_REDIS_ADDR")
	}
	return rdb
}

// bfCluster returns a client of the test Cluster if its masters have the
// BF.* commands, and skips the test otherwise (see BLOOM_REDIS_BF).
func bfCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := clusterClient(t)
	if !hasBF(t, rdb, "BLOOM_REDIS_CLUSTER_ADDRS") {
		skipNoBF(t, "BLOOM_REDIS_CLUSTER_ADDRS")
	}
	return rdb
}

// bfServers runs test against the test server and the test Cluster, each
// in a subtest ("server", "cluster") that skips or fails as bfClient and
// bfCluster do.
func bfServers(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("server", func(t *testing.T) { test(t, bfClient(t)) })
	t.Run("cluster", func(t *testing.T) { test(t, bfCluster(t)) })
}

// noBFClient returns a client of a server without BF.* commands: the test
// server when it has none, and otherwise a private redis-server started
// from PATH without modules, stopped when the test ends.
func noBFClient(t testing.TB) *redis.Client {
	t.Helper()
	if os.Getenv("BLOOM_REDIS_ADDR") != "" {
		rdb := testClient(t)
		if !hasBF(t, rdb, "BLOOM_REDIS_ADDR") {
			return rdb
		}
	}
	return startPlainServer(t)
}

// startPlainServer starts a private redis-server from PATH, without
// modules, listening on a Unix socket only, and returns a client of it.
func startPlainServer(t testing.TB) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server is not on PATH (apt-get install redis-server): %v", err)
	}
	// A socket path must be short (about 100 bytes): t.TempDir's may not be.
	dir, err := os.MkdirTemp("", "bfdump")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--dir", dir, "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--loglevel", "warning")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("private redis-server on %s did not answer PING; its output:\n%s", sock, log.String())
		}
	}
	return rdb
}

// testKey returns a key name no other test uses, deleted when the test
// ends.
func testKey(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	key := fmt.Sprintf("bfdump-test:%s:%d", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	return key
}

// leftovers returns the temporary Restore keys on the server, or on every
// master of a Cluster.
func leftovers(t testing.TB, rdb redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var (
			mu  sync.Mutex // ForEachMaster calls concurrently
			out []string
		)
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			keys, err := node.Keys(ctx, "*bfdump-restore:*").Result()
			mu.Lock()
			out = append(out, keys...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	keys, err := rdb.Keys(ctx, "*bfdump-restore:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// mexists returns BF.MEXISTS of keys, in batches of 1,000.
func mexists(t testing.TB, rdb redis.UniversalClient, key string, keys []string) []bool {
	t.Helper()
	out := make([]bool, 0, len(keys))
	for lo := 0; lo < len(keys); lo += 1000 {
		args := []any{"BF.MEXISTS", key}
		for _, k := range keys[lo:min(lo+1000, len(keys))] {
			args = append(args, k)
		}
		res, err := rdb.Do(context.Background(), args...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			switch r := r.(type) {
			case bool: // RESP3
				out = append(out, r)
			case int64: // RESP2
				out = append(out, r == 1)
			default:
				t.Fatalf("BF.MEXISTS answered %T", r)
			}
		}
	}
	return out
}

// madd adds keys with BF.MADD, in batches of 1,000.
func madd(t testing.TB, rdb redis.UniversalClient, key string, keys []string) {
	t.Helper()
	for lo := 0; lo < len(keys); lo += 1000 {
		args := []any{"BF.MADD", key}
		for _, k := range keys[lo:min(lo+1000, len(keys))] {
			args = append(args, k)
		}
		if err := rdb.Do(context.Background(), args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkServerInfo compares BF.INFO of key with f.Info().
func checkServerInfo(t testing.TB, rdb redis.UniversalClient, key string, f *Filter) {
	t.Helper()
	raw, err := rdb.Do(context.Background(), "BF.INFO", key).Result()
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]any{}
	switch raw := raw.(type) {
	case map[any]any: // RESP3
		for k, v := range raw {
			info[fmt.Sprint(k)] = v
		}
	case []any: // RESP2
		for i := 0; i+1 < len(raw); i += 2 {
			info[fmt.Sprint(raw[i])] = raw[i+1]
		}
	}
	in := f.Info()
	exp := any(int64(in.Expansion))
	if in.Expansion == 0 {
		exp = nil
	}
	want := map[string]any{"Capacity": int64(in.Capacity), "Size": int64(in.Size), "Number of filters": int64(in.Filters),
		"Number of items inserted": int64(in.Items), "Expansion rate": exp}
	if fmt.Sprint(info) != fmt.Sprint(want) {
		t.Errorf("BF.INFO %v, Info %v", info, want)
	}
}

// printable reports what in s is not printable text, or "".
func printable(s string) string {
	for i, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return fmt.Sprintf("byte %d of %q is not printable", i, s)
		}
	}
	return ""
}
