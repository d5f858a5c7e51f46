package bfdump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// TestNoModule runs every call that talks to Redis against a server
// without BF.* commands: each fails with an error wrapping ErrNoModule
// that names what the server needs and holds no binary bytes (the server's
// "unknown command" echoes the header chunk), the target keeps its value,
// and no temporary key is left.
func TestNoModule(t *testing.T) {
	rdb := noBFClient(t)
	ctx := context.Background()
	if ok, err := HasCommands(ctx, rdb); err != nil || ok {
		t.Fatalf("HasCommands: %v, %v; want false", ok, err)
	}
	key := testKey(t, rdb)
	if err := rdb.Set(ctx, key, "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// 1000 keys: the header starts with e8 03 00, which the server's
	// "unknown command" echoes up to the 00.
	f, _ := Reserve(1000, 0.01)
	for i := range 1000 {
		_ = f.AddString("key-" + strconv.Itoa(i))
	}
	saved, _ := f.MarshalBinary()
	var backup bytes.Buffer
	for name, call := range map[string]func() error{
		"Restore":     func() error { return Restore(ctx, rdb, key, f, true) },
		"RestoreFrom": func() error { return RestoreFrom(ctx, rdb, key, bytes.NewReader(saved), true) },
		"ScanDump": func() error {
			_, err := ScanDump(ctx, rdb, key)
			return err
		},
		"ScanDumpTo": func() error {
			_, err := ScanDumpTo(ctx, rdb, key, &backup)
			return err
		},
	} {
		err := call()
		if !errors.Is(err, ErrNoModule) {
			t.Errorf("%s without RedisBloom: %v, want an error wrapping ErrNoModule", name, err)
			continue
		}
		if msg := printable(err.Error()); msg != "" {
			t.Errorf("%s without RedisBloom: %s", name, msg)
		}
		if s := err.Error(); !strings.Contains(s, "Redis 8") || !strings.Contains(s, "RedisBloom") {
			t.Errorf("%s without RedisBloom: %q does not say what the server needs", name, s)
		}
	}
	if v, _ := rdb.Get(ctx, key).Result(); v != "old" {
		t.Errorf("the target holds %q after a failed Restore, want %q", v, "old")
	}
	if l := leftovers(t, rdb); len(l) != 0 {
		t.Errorf("temporary keys left: %q", l)
	}
	if backup.Len() != 0 {
		t.Errorf("the failed ScanDumpTo wrote %d bytes (%q)", backup.Len(), backup.Bytes())
	}
}

// TestScanDumpToWritesNothingOnError reads keys that hold no filter: a
// missing key, a string, and a key of another module type. ScanDumpTo
// fails and writes nothing, so no file looks like a backup.
func TestScanDumpToWritesNothingOnError(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	missing, str := testKey(t, rdb), testKey(t, rdb)
	if err := rdb.Set(ctx, str, "not a filter", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cuckoo := testKey(t, rdb)
	if err := rdb.Do(ctx, "CF.RESERVE", cuckoo, 1000).Err(); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{missing, str, cuckoo} {
		var buf bytes.Buffer
		n, err := ScanDumpTo(ctx, rdb, key, &buf)
		if err == nil {
			t.Errorf("ScanDumpTo of %s succeeded", key)
		}
		if n != 0 || buf.Len() != 0 {
			t.Errorf("ScanDumpTo of %s: %v, and wrote %d bytes (reported %d): %q", key, err, buf.Len(), n, buf.Bytes())
		}
	}
}

// TestRestoreRoundTrip restores filters built in Go into RedisBloom, on one
// server and through a Cluster: the golden ones, Reserve's with EXPANSION
// 0, 1 and 4, NONSCALING and the default, grown to several sub-filters or
// full, New's and NewWithSize's. For each it checks that BF.MEXISTS
// answers as TestMany does for the added keys and 20,000 others, BF.INFO
// as Info and BF.CARD as Count, then reads the key back with ScanDump and
// ScanDumpTo and restores the backup with RestoreFrom.
func TestRestoreRoundTrip(t *testing.T) {
	probes := make([]string, 0, 25000)
	for i := range 5000 {
		probes = append(probes, "key-"+strconv.Itoa(i))
	}
	for i := range 20000 {
		probes = append(probes, "probe-"+strconv.Itoa(i))
	}
	filters := map[string]*Filter{}
	for _, g := range loadGolden(t) {
		filters["golden/"+g.Name] = g.load(t)
	}
	// fill adds key-0, key-1, ... until f has links sub-filters, or is full.
	must := func(f *Filter, err error) *Filter {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fill := func(f *Filter, links int) *Filter {
		t.Helper()
		for i := 0; len(f.links) < links; i++ {
			if err := f.AddString("key-" + strconv.Itoa(i)); errors.Is(err, ErrFull) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	filters["reserve/exp0"] = fill(must(Reserve(500, 0.01, Expansion(0))), 2)
	filters["reserve/exp1"] = fill(must(Reserve(200, 0.01, Expansion(1))), 5)
	filters["reserve/exp4"] = fill(must(Reserve(100, 0.001, Expansion(4))), 3)
	filters["reserve/nonscaling"] = fill(must(Reserve(300, 0.05, NonScaling())), 2)
	filters["reserve/default"] = fill(must(Reserve(100, 0.01)), 5)
	filters["new/grown"] = fill(must(New(300, 1e-4, Expansion(3))), 3)
	filters["new/small"] = fill(must(New(10, 1e-4, NonScaling())), 2)
	filters["newwithsize/grown"] = fill(must(NewWithSize(2000, 4, 150, 0.02)), 4)
	bfServers(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for name, f := range filters {
			t.Run(name, func(t *testing.T) {
				key := testKey(t, rdb)
				if err := Restore(ctx, rdb, key, f, false); err != nil {
					t.Fatal(err)
				}
				want := f.TestManyStrings(probes, nil)
				got := mexists(t, rdb, key, probes)
				diff := 0
				for i := range want {
					if got[i] != want[i] {
						diff++
					}
				}
				if diff != 0 {
					t.Errorf("%d of %d keys: BF.MEXISTS differs from Test", diff, len(probes))
				}
				checkServerInfo(t, rdb, key, f)
				if n, err := rdb.Do(ctx, "BF.CARD", key).Uint64(); err != nil || n != f.Count() {
					t.Errorf("BF.CARD %d, %v; Count %d", n, err, f.Count())
				}
				// Read back, in memory and as a saved form.
				g, err := ScanDump(ctx, rdb, key)
				if err != nil || !g.Equal(f) {
					t.Fatalf("ScanDump: %v, equal %v", err, err == nil && g.Equal(f))
				}
				var buf bytes.Buffer
				if _, err := ScanDumpTo(ctx, rdb, key, &buf); err != nil {
					t.Fatal(err)
				}
				saved, _ := f.MarshalBinary()
				if !bytes.Equal(buf.Bytes(), saved) {
					t.Error("ScanDumpTo's saved form differs from MarshalBinary's")
				}
				// RestoreFrom the saved form into a second key.
				key2 := testKey(t, rdb)
				if err := RestoreFrom(ctx, rdb, key2, bytes.NewReader(saved), false); err != nil {
					t.Fatal(err)
				}
				if g2, err := ScanDump(ctx, rdb, key2); err != nil || !g2.Equal(f) {
					t.Errorf("RestoreFrom then ScanDump: %v", err)
				}
			})
		}
		if l := leftovers(t, rdb); len(l) != 0 {
			t.Errorf("temporary keys left: %q", l)
		}
	})
}

// TestRestoreThenAdd restores a Reserve filter and adds the same keys to it
// in Redis (BF.MADD) and in Go, across growth: the server's filter and the
// Go one stay equal, as their answers.
func TestRestoreThenAdd(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	f, _ := Reserve(500, 0.01, Expansion(2))
	for i := range 400 {
		_ = f.AddString("key-" + strconv.Itoa(i))
	}
	key := testKey(t, rdb)
	if err := Restore(ctx, rdb, key, f, false); err != nil {
		t.Fatal(err)
	}
	args := []any{"BF.MADD", key}
	keys := make([]string, 0, 3000)
	for i := 400; i < 3400; i++ {
		keys = append(keys, "key-"+strconv.Itoa(i))
		args = append(args, keys[len(keys)-1])
	}
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.AddManyStrings(keys); err != nil {
		t.Fatal(err)
	}
	g, err := ScanDump(ctx, rdb, key)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Equal(f) || len(g.links) < 3 {
		t.Errorf("after BF.MADD across growth the server's filter (%d sub-filters) differs from Go's (%d)", len(g.links), len(f.links))
	}
}

// TestRestoreExisting checks replace: without it an existing key is left
// alone (ErrExists); with it the key is replaced whatever its type.
func TestRestoreExisting(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	key := testKey(t, rdb)
	rdb.Set(ctx, key, "old", 0)
	f, _ := Reserve(100, 0.01)
	_ = f.AddString("x")
	if err := Restore(ctx, rdb, key, f, false); !errors.Is(err, ErrExists) {
		t.Errorf("Restore over an existing key without replace: %v", err)
	}
	if v, _ := rdb.Get(ctx, key).Result(); v != "old" {
		t.Errorf("the key holds %q", v)
	}
	if err := Restore(ctx, rdb, key, f, true); err != nil {
		t.Fatal(err)
	}
	if got := mexists(t, rdb, key, []string{"x"}); !got[0] {
		t.Error("the replaced key does not hold the filter")
	}
	if ttl, _ := rdb.PTTL(ctx, key).Result(); ttl != -1 {
		t.Errorf("the restored key has a time to live %v", ttl)
	}
	if l := leftovers(t, rdb); len(l) != 0 {
		t.Errorf("temporary keys left: %q", l)
	}
}

// failHook fails the n-th BF.LOADCHUNK, as a connection lost in the middle
// of a load would.
type failHook struct {
	n, seen atomic.Int64
}

func (h *failHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "bf.loadchunk" && h.seen.Add(1) == h.n.Load() {
				return errors.New("injected: connection lost")
			}
		}
		return next(ctx, cmds)
	}
}

// TestRestoreInterrupted fails a load in the middle (after the header and
// the first 16 MiB chunk): the target keeps its old filter, and no
// temporary key is left, so nothing half-loaded is ever queryable.
func TestRestoreInterrupted(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	key := testKey(t, rdb)
	old, _ := Reserve(100, 0.01)
	_ = old.AddString("old")
	if err := Restore(ctx, rdb, key, old, false); err != nil {
		t.Fatal(err)
	}
	f, err := NewWithSize(8*(MaxChunkSize+64), 7, 1000000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.AddString("new")
	for _, n := range []int64{1, 2, 3} { // the header, the first chunk, the last
		h := &failHook{}
		h.n.Store(n)
		c := redis.NewClient(rdb.Options())
		c.AddHook(h)
		err := Restore(ctx, c, key, f, true)
		c.Close()
		if err == nil || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("failing BF.LOADCHUNK %d: %v", n, err)
		}
		if got := mexists(t, rdb, key, []string{"old", "new"}); !got[0] || got[1] {
			t.Errorf("failing BF.LOADCHUNK %d: the target answers old %v, new %v", n, got[0], got[1])
		}
		if l := leftovers(t, rdb); len(l) != 0 {
			t.Errorf("failing BF.LOADCHUNK %d: temporary keys left: %q", n, l)
		}
	}
	// A context cancelled during the load: the same.
	cctx, cancel := context.WithCancel(ctx)
	h := &cancelHook{cancel: cancel}
	c := redis.NewClient(rdb.Options())
	c.AddHook(h)
	err = Restore(cctx, c, key, f, true)
	c.Close()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Restore with its context cancelled: %v", err)
	}
	if l := leftovers(t, rdb); len(l) != 0 {
		t.Errorf("cancelled: temporary keys left: %q", l)
	}
}

// cancelHook cancels the context after the first BF.LOADCHUNK.
type cancelHook struct{ cancel func() }

func (h *cancelHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *cancelHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *cancelHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.cancel()
		return err
	}
}

// addHook adds a key to the filter being read, through another client,
// before the first chunk is read: the read must not mix the two states.
type addHook struct {
	other *redis.Client
	key   string
	times atomic.Int64
	added atomic.Int64
}

func (h *addHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *addHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if cmd.Name() == "bf.scandump" && len(args) == 3 && fmt.Sprint(args[2]) == "1" && h.times.Add(-1) >= 0 {
			h.other.Do(ctx, "BF.ADD", h.key, "added-meanwhile-"+strconv.FormatInt(h.added.Add(1), 10))
		}
		return next(ctx, cmd)
	}
}
func (h *addHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestScanDumpChanged changes the key while ScanDump and ScanDumpTo read
// it: ScanDumpTo gives ErrChanged, ScanDump reads again and returns the
// new state.
func TestScanDumpChanged(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	key := testKey(t, rdb)
	f, _ := Reserve(1000, 0.01)
	if err := Restore(ctx, rdb, key, f, false); err != nil {
		t.Fatal(err)
	}
	h := &addHook{other: rdb, key: key}
	c := redis.NewClient(rdb.Options())
	defer c.Close()
	c.AddHook(h)
	h.times.Store(1)
	var buf bytes.Buffer
	if _, err := ScanDumpTo(ctx, c, key, &buf); !errors.Is(err, ErrChanged) {
		t.Errorf("ScanDumpTo of a key changed meanwhile: %v", err)
	}
	h.times.Store(2)
	g, err := ScanDump(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	if g.Count() != 3 || !g.TestString("added-meanwhile-3") {
		t.Errorf("ScanDump after changes: count %d", g.Count())
	}
	h.times.Store(scanDumpAttempts)
	if _, err := ScanDump(ctx, c, key); !errors.Is(err, ErrChanged) {
		t.Errorf("ScanDump of a key that keeps changing: %v", err)
	}
}

// TestRestoreCluster restores and reads filters through a Redis Cluster
// client (BLOOM_REDIS_CLUSTER_ADDRS), under names with and without hash
// tags and with braces that are no tag, so that the temporary key must get
// a tag of its own: the rename works on the node that holds the slot. It
// needs BF.* commands on the cluster's nodes and skips without them.
func TestRestoreCluster(t *testing.T) {
	rdb := bfCluster(t)
	ctx := context.Background()
	f, _ := New(5000, 0.001)
	for i := range 5000 {
		_ = f.AddString("key-" + strconv.Itoa(i))
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, key := range []string{"bfdump-cluster-" + stamp, "{bfdump-tag}-" + stamp, "a}b{}-" + stamp, "x{" + stamp} {
		t.Run(key, func(t *testing.T) {
			defer rdb.Del(ctx, key)
			if err := Restore(ctx, rdb, key, f, false); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"key-0", "key-4999"} {
				if ok, err := rdb.Do(ctx, "BF.EXISTS", key, k).Bool(); err != nil || !ok {
					t.Errorf("BF.EXISTS %s %s: %v, %v", key, k, ok, err)
				}
			}
			g, err := ScanDump(ctx, rdb, key)
			if err != nil || !g.Equal(f) {
				t.Errorf("ScanDump: %v", err)
			}
			if err := Restore(ctx, rdb, key, f, false); !errors.Is(err, ErrExists) {
				t.Errorf("second Restore without replace: %v", err)
			}
		})
	}
	if l := leftovers(t, rdb); len(l) != 0 {
		t.Errorf("temporary keys left: %q", l)
	}
}

// fakeRedisError is an error as go-redis returns a server's error reply.
type fakeRedisError string

func (e fakeRedisError) Error() string { return string(e) }
func (fakeRedisError) RedisError()     {}

// TestCommandError checks the errors of BF.* commands: "unknown command",
// in any form, is ErrNoModule, and other server errors keep their meaning
// with unprintable bytes escaped.
func TestCommandError(t *testing.T) {
	for _, msg := range []string{
		"ERR unknown command 'BF.LOADCHUNK', with args beginning with: 'k' '1' '\xe8\x03'",
		"ERR unknown command `BF.SCANDUMP`, with args beginning with: `k`, `0`, ",
	} {
		if err := commandError(fakeRedisError(msg)); err != ErrNoModule {
			t.Errorf("commandError(%q) = %v, want ErrNoModule", msg, err)
		}
	}
	orig := fakeRedisError("ERR bad data \xe8\x03\x00 here")
	err := commandError(orig)
	if !errors.Is(err, orig) || errors.Is(err, ErrNoModule) {
		t.Errorf("commandError(%q) = %v, want it wrapped", string(orig), err)
	}
	if msg := printable(err.Error()); msg != "" || err.Error() != `ERR bad data \xe8\x03\x00 here` {
		t.Errorf("commandError(%q): %s (%q)", string(orig), msg, err.Error())
	}
	plain := errors.New("ERR not found")
	if err := commandError(plain); err != plain {
		t.Errorf("commandError(%v) = %v, want it unchanged", plain, err)
	}
}

// TestRawLoadChunkLosesKeys measures what the package documentation says
// of a plain BF.LOADCHUNK loop: RedisBloom answers OK to streams that are
// damaged (a chunk one byte short, the last chunk missing, the header
// alone), and the key then answers "absent" for keys the filter holds. The
// Loader, which Restore's and RestoreFrom's input goes through, refuses
// every one. If the server starts refusing them, the documentation needs
// an update.
func TestRawLoadChunkLosesKeys(t *testing.T) {
	rdb := bfClient(t)
	ctx := context.Background()
	f, _ := Reserve(1000, 0.01)
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
		_ = f.AddString(keys[i])
	}
	type pair struct {
		it    int64
		chunk []byte
	}
	var pairs []pair
	for it, c := range f.Chunks() {
		pairs = append(pairs, pair{it, c})
	}
	if len(pairs) != 5 {
		t.Fatalf("%d pairs, want the header and 4 sub-filters", len(pairs))
	}
	streams := map[string][]pair{
		"last chunk missing": pairs[:len(pairs)-1],
		"header alone":       pairs[:1],
	}
	for i := 1; i < len(pairs); i++ {
		ps := append([]pair(nil), pairs...)
		ps[i] = pair{ps[i].it, ps[i].chunk[:len(ps[i].chunk)-1]}
		streams["chunk "+strconv.Itoa(i)+" one byte short"] = ps
	}
	for name, ps := range streams {
		key := testKey(t, rdb)
		for _, p := range ps {
			if err := rdb.Do(ctx, "BF.LOADCHUNK", key, p.it, p.chunk).Err(); err != nil {
				t.Errorf("%s: BF.LOADCHUNK %d: %v (the server refuses it now: update the package documentation)", name, p.it, err)
			}
		}
		absent := 0
		for _, e := range mexists(t, rdb, key, keys) {
			if !e {
				absent++
			}
		}
		t.Logf("%s: the server answered OK, then %d of %d keys absent", name, absent, len(keys))
		if absent == 0 {
			t.Errorf("%s: no key absent", name)
		}
		var ld Loader
		var err error
		for _, p := range ps {
			if err = ld.LoadChunk(p.it, p.chunk); err != nil {
				break
			}
		}
		if err == nil {
			_, err = ld.Filter()
		}
		if !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("%s: the Loader: %v, want an error wrapping bloom.ErrCorrupt", name, err)
		}
	}
}
