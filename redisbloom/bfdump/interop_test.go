package bfdump

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// keyRange returns prefix-lo .. prefix-(hi-1).
func keyRange(prefix string, lo, hi int) []string {
	keys := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, prefix+strconv.Itoa(i))
	}
	return keys
}

// sameAnswers reports how many of keys BF.MEXISTS of key answers unlike
// f.TestManyStrings.
func sameAnswers(t testing.TB, rdb redis.UniversalClient, key string, f *Filter, keys []string) int {
	t.Helper()
	want := f.TestManyStrings(keys, nil)
	got := mexists(t, rdb, key, keys)
	diff := 0
	for i := range want {
		if got[i] != want[i] {
			diff++
		}
	}
	return diff
}

// TestServerFiltersReadBack makes filters with RedisBloom's own commands,
// on one server and through a Cluster (BF.RESERVE with EXPANSION 0, 1 and
// 4, NONSCALING and the default, then BF.MADD until they have several
// sub-filters or are full), reads each back with ScanDump and checks that
// it equals the filter Reserve and the same adds build in Go, answers
// BF.MEXISTS's answers for the added keys and 20,000 others, has BF.INFO's
// Info, and that ScanDumpTo's backup is that filter's saved form. A full
// non-scaling filter refuses the next key in both.
func TestServerFiltersReadBack(t *testing.T) {
	probes := append(keyRange("key-", 0, 5000), keyRange("probe-", 0, 20000)...)
	cases := []struct {
		name     string
		capacity uint64
		rate     float64
		args     []any // BF.RESERVE's options
		opts     []Option
		keys     int
		links    int // sub-filters after the adds
	}{
		{"exp0", 500, 0.01, []any{"EXPANSION", 0}, []Option{Expansion(0)}, 500, 1},
		{"exp1", 200, 0.01, []any{"EXPANSION", 1}, []Option{Expansion(1)}, 900, 5},
		{"exp4", 100, 0.001, []any{"EXPANSION", 4}, []Option{Expansion(4)}, 2000, 3},
		{"nonscaling", 300, 0.05, []any{"NONSCALING"}, []Option{NonScaling()}, 300, 1},
		{"default", 100, 0.01, nil, nil, 3000, 5},
	}
	bfServers(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := testKey(t, rdb)
				args := append([]any{"BF.RESERVE", key, c.rate, c.capacity}, c.args...)
				if err := rdb.Do(ctx, args...).Err(); err != nil {
					t.Fatal(err)
				}
				f, err := Reserve(c.capacity, c.rate, c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				// A non-scaling filter takes keys until its count reaches
				// its capacity: false positives are not counted, so that
				// is more keys than the capacity. Add as many as Go takes.
				keys := keyRange("key-", 0, c.keys)
				for i, k := range keys {
					if err := f.AddString(k); errors.Is(err, ErrFull) {
						keys = keys[:i]
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
				if f.NonScaling() {
					for len(keys) < 5000 && f.Count() < f.Capacity() {
						k := "key-" + strconv.Itoa(len(keys))
						if err := f.AddString(k); err != nil {
							t.Fatal(err)
						}
						keys = append(keys, k)
					}
				}
				madd(t, rdb, key, keys)
				g, err := ScanDump(ctx, rdb, key)
				if err != nil {
					t.Fatal(err)
				}
				if !g.Equal(f) || len(g.links) != c.links {
					t.Errorf("read back: %d sub-filters, count %d; Reserve and the adds in Go: %d, %d; equal %v",
						len(g.links), g.Count(), len(f.links), f.Count(), g.Equal(f))
				}
				if d := sameAnswers(t, rdb, key, g, probes); d != 0 {
					t.Errorf("%d of %d keys: BF.MEXISTS differs from the filter read back", d, len(probes))
				}
				checkServerInfo(t, rdb, key, g)
				var buf bytes.Buffer
				if _, err := ScanDumpTo(ctx, rdb, key, &buf); err != nil {
					t.Fatal(err)
				}
				if saved, _ := f.MarshalBinary(); !bytes.Equal(buf.Bytes(), saved) {
					t.Error("ScanDumpTo's backup differs from the Go filter's saved form")
				}
				if f.NonScaling() {
					next := "beyond-capacity"
					err := rdb.Do(ctx, "BF.ADD", key, next).Err()
					if err == nil || !strings.Contains(err.Error(), "full") {
						t.Errorf("BF.ADD to the full non-scaling filter: %v", err)
					}
					if err := g.AddString(next); !errors.Is(err, ErrFull) {
						t.Errorf("Add to the full non-scaling filter read back: %v, want ErrFull", err)
					}
				}
			})
		}
	})
}

// TestServerGrowsNewFilter restores a filter New sized, lets the server
// grow it (BF.MADD adds sub-filters sized by RedisBloom's rule), reads it
// back, grows it further in Go (by Size) and restores it again: the chain
// of both sizings loads each way, equals the one Go grows the same way,
// and BF.MEXISTS answers as Test does throughout.
func TestServerGrowsNewFilter(t *testing.T) {
	probes := append(keyRange("key-", 0, 6000), keyRange("probe-", 0, 20000)...)
	bfServers(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f, err := New(200, 0.001)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AddManyStrings(keyRange("key-", 0, 200)); err != nil {
			t.Fatal(err)
		}
		key := testKey(t, rdb)
		if err := Restore(ctx, rdb, key, f, false); err != nil {
			t.Fatal(err)
		}
		// The server grows it by RedisBloom's sizing; so does a Go copy
		// told to size as Reserve's filters do.
		more := keyRange("key-", 200, 1500)
		madd(t, rdb, key, more)
		model := f.Clone()
		model.exact = false
		if err := model.AddManyStrings(more); err != nil {
			t.Fatal(err)
		}
		g, err := ScanDump(ctx, rdb, key)
		if err != nil {
			t.Fatal(err)
		}
		model.exact = true
		if !g.Equal(model) || len(g.links) < 3 || !g.exact {
			t.Fatalf("grown by the server: %d sub-filters, sized by Size %v; equal to the model %v", len(g.links), g.exact, g.Equal(model))
		}
		if d := sameAnswers(t, rdb, key, g, probes); d != 0 {
			t.Errorf("after the server's growth: %d of %d keys: BF.MEXISTS differs from Test", d, len(probes))
		}
		// Go grows it by Size, after the server's sub-filters.
		if err := g.AddManyStrings(keyRange("key-", 1500, 6000)); err != nil {
			t.Fatal(err)
		}
		n := len(g.links)
		if n <= len(model.links) || g.links[n-1].redisBloomGeometry() || !g.links[n-1].sizeGeometry() {
			t.Fatalf("Go's growth: %d sub-filters, the newest sized by Size %v", n, g.links[n-1].sizeGeometry())
		}
		if err := Restore(ctx, rdb, key, g, true); err != nil {
			t.Fatal(err)
		}
		h, err := ScanDump(ctx, rdb, key)
		if err != nil || !h.Equal(g) {
			t.Fatalf("both sizings read back: %v, equal %v", err, err == nil && h.Equal(g))
		}
		if d := sameAnswers(t, rdb, key, h, probes); d != 0 {
			t.Errorf("after Go's growth: %d of %d keys: BF.MEXISTS differs from Test", d, len(probes))
		}
		checkServerInfo(t, rdb, key, h)
	})
}
