package redisbloom_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests run against a real redis-server (7.0 or later). They take its
// address from BLOOM_REDIS_ADDR (.ci/start-redis.sh starts one and sets it).
// Without it they skip, except under CI=true, where they fail. Tests that
// restart the server start their own private redis-server from PATH.

const addrEnv = "BLOOM_REDIS_ADDR"

func inCI() bool { return os.Getenv("CI") == "true" }

// unavailable fails the test under CI=true and skips it otherwise.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("%s (CI=true: the Redis tests must run)", msg)
	}
	t.Skip(msg)
}

// serverAddr returns the address of the shared test server.
func serverAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		unavailable(t, "%s is not set: start a redis-server (for example `. .ci/start-redis.sh` from the repository root) and set %s=host:port to run the Redis tests", addrEnv, addrEnv)
	}
	return addr
}

// newClient returns a client of addr that is closed when the test ends; it
// fails the test if the server does not answer. configure may adjust the
// options.
func newClient(t testing.TB, addr string, configure ...func(*redis.Options)) *redis.Client {
	t.Helper()
	// A script call over 200,000 keys can outlast go-redis's default 3 s
	// read timeout under -race on a loaded machine, and the retry that
	// follows answers "present" for keys the first attempt added (see the
	// package doc, "Errors and retries"): tests wait instead.
	opt := &redis.Options{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	for _, c := range configure {
		c(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis-server at %s (%s) does not answer: %v", addr, addrEnv, err)
	}
	return rdb
}

// client returns a client of the shared test server.
func client(t testing.TB, configure ...func(*redis.Options)) *redis.Client {
	t.Helper()
	return newClient(t, serverAddr(t), configure...)
}

// filterName returns a name no other test uses, and deletes the filter's
// keys when the test ends.
func filterName(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "redisbloom-test:" + t.Name() + ":" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		rdb.Del(context.Background(), "{"+name+"}:meta", "{"+name+"}:bits")
	})
	return name
}

// server is a private redis-server process that a test can restart.
type server struct {
	t    testing.TB
	bin  string
	port int
	dir  string   // working directory: RDB and AOF files, nodes.conf
	args []string // configuration after the defaults
	cmd  *exec.Cmd
}

// startServer starts a private redis-server on a free loopback port, with
// persistence off unless args (configuration options, "--save", "60 1", ...)
// say otherwise, in a temporary directory that outlives restarts, and stops
// it when the test ends.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server is not on PATH (apt-get install redis-server): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &server{t: t, bin: bin, port: port, dir: t.TempDir(), args: args}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) start() {
	s.t.Helper()
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0",
		"--daemonize", "no", "--loglevel", "warning"}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	var log bytes.Buffer // shown only if the server does not come up
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	probe := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer probe.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if probe.Ping(context.Background()).Err() == nil {
			return
		}
		if time.Now().After(deadline) {
			s.stop()
			s.t.Fatalf("private redis-server on %s did not answer PING; its output:\n%s", s.addr(), log.String())
		}
	}
}

func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// restart kills the server (SIGKILL: it saves nothing on the way out, so it
// loses everything unless persistence is on, and then what its last snapshot
// or AOF fsync did not hold) and starts it again on the same port and
// directory.
func (s *server) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

// startReplica starts a private redis-server replicating master and waits
// until it is in sync.
func startReplica(t testing.TB, master *server) *server {
	t.Helper()
	r := startServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	r.waitInSync(master)
	return r
}

// info returns the field of INFO section's reply of the server at addr.
func info(t testing.TB, rdb *redis.Client, section, field string) string {
	t.Helper()
	text, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitInSync waits until replica r has the link to master up and has
// processed everything master has written.
func (r *server) waitInSync(master *server) {
	r.t.Helper()
	m := redis.NewClient(&redis.Options{Addr: master.addr()})
	defer m.Close()
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if info(r.t, c, "replication", "master_link_status") == "up" &&
			info(r.t, c, "replication", "slave_repl_offset") == info(r.t, m, "replication", "master_repl_offset") {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("replica %s did not get in sync with %s", r.addr(), master.addr())
		}
	}
}

// freeze detaches replica r from its master without promoting it: it points
// r at a port where no server listens, so r keeps its data, stays a replica
// and serves reads from a view that no longer changes.
func (r *server) freeze() {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	dead := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := c.ReplicaOf(context.Background(), "127.0.0.1", strconv.Itoa(dead)).Err(); err != nil {
		r.t.Fatal(err)
	}
}

// follow makes r a replica of master again.
func (r *server) follow(master *server) error {
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	return c.ReplicaOf(context.Background(), "127.0.0.1", strconv.Itoa(master.port)).Err()
}
