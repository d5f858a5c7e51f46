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
	opt := &redis.Options{Addr: addr}
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
	cmd  *exec.Cmd
}

// startServer starts a private redis-server on a free loopback port, with
// persistence off, and stops it when the test ends.
func startServer(t testing.TB) *server {
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
	s := &server{t: t, bin: bin, port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
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

// restart kills the server (losing everything: persistence is off) and
// starts it again on the same port.
func (s *server) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}
