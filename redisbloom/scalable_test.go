package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/redis/go-redis/v9"
)

// scalableName returns a name no other test uses, and destroys the filter
// when the test ends.
func scalableName(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	name := filterName(t, rdb)
	t.Cleanup(func() { redisbloom.Destroy(context.Background(), rdb, name) })
	return name
}

// checkScalableExport fails the test unless s exports to a filter Equal to
// want.
func checkScalableExport(t *testing.T, s *redisbloom.ScalableFilter, want *bloom.ScalableBloomFilter) {
	t.Helper()
	got, err := s.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatalf("Export differs from the in-memory filter: %d vs %d sub-filters, count %d vs %d, bits %d vs %d",
			got.NumFilters(), want.NumFilters(), got.Count(), want.Count(), got.Bits(), want.Bits())
	}
}

// TestScalableParity grows a Redis scalable filter and the in-memory one with
// the same parameters from 1,000 keys through the same keys in the same
// order (batches of varied sizes, duplicates within and across batches,
// single-key calls), and checks at every growth step that the answers, the
// number of sub-filters, Count and Export are the in-memory filter's, that
// no added key is absent and that the false-positive rate measured on 10^4
// absent keys is within the target.
func TestScalableParity(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	total := 100_000
	switch {
	case os.Getenv("BLOOM_REDIS_LARGE") != "":
		total = 1_000_000 // the 1,000 to 10^6; minutes of server time
	case testing.Short(), raceEnabled:
		total = 20_000
	}
	for _, c := range []struct {
		desc   string
		opts   []bloom.Option
		copies int64 // CacheFullSubFilters
	}{
		{"defaults", nil, 0},
		{"linear/tightening=0.5/seed=7", []bloom.Option{bloom.Linear(2), bloom.Tightening(0.5), bloom.Seed(7)}, 0},
		{"defaults/copies=64KiB", nil, 64 << 10},
	} {
		t.Run(c.desc, func(t *testing.T) {
			const initial, p = 1000, 0.01
			s, err := redisbloom.NewScalable(ctx, rdb, scalableName(t, rdb), initial, p, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			s.CacheFullSubFilters(c.copies)
			mem, err := bloom.NewScalable(initial, p, append(c.opts, bloom.Classic())...)
			if err != nil {
				t.Fatal(err)
			}
			added := 0
			batch := 1
			for step := 0; added < total; step++ {
				n := min(batch, total-added)
				keys := keyRange("k-", added, added+n)
				if step%3 == 1 {
					// Duplicates within the batch and of earlier batches.
					keys = append(keys, keys[0], keyOf("k-", added/2))
				}
				var got []bool
				switch {
				case len(keys) == 1 && step%2 == 0:
					var ok bool
					ok, err = s.TestAndAdd(ctx, keys[0])
					got = []bool{ok}
				case step%4 == 3:
					err = s.AddMany(ctx, keys)
				default:
					got, err = s.TestAndAddMany(ctx, keys)
				}
				if err != nil {
					t.Fatal(err)
				}
				before := mem.NumFilters()
				for i, key := range keys {
					want := mem.TestAndAdd(key)
					if got != nil && got[i] != want {
						t.Fatalf("step %d: key %q: Redis says present=%v, memory %v", step, key, got[i], want)
					}
				}
				added += n
				batch = min(2*batch+1, 7000)
				if mem.NumFilters() != before || added >= total {
					// A growth step: check everything.
					if s.NumFilters() != mem.NumFilters() {
						t.Fatalf("after %d keys: %d sub-filters, memory %d", added, s.NumFilters(), mem.NumFilters())
					}
					checkScalableExport(t, s, mem)
					if cnt, err := s.Count(ctx); err != nil || cnt != mem.Count() {
						t.Fatalf("Count %d, %v; memory %d", cnt, err, mem.Count())
					}
					probe := keyRange("absent-"+strconv.Itoa(added)+"-", 0, 10_000)
					present, err := s.TestMany(ctx, probe)
					if err != nil {
						t.Fatal(err)
					}
					fp := 0
					for i, ok := range present {
						if ok != mem.Test(probe[i]) {
							t.Fatalf("TestMany(%q) = %v, memory %v", probe[i], ok, !ok)
						}
						if ok {
							fp++
						}
					}
					rate := float64(fp) / float64(len(probe))
					if limit := p + 3*math.Sqrt(p*(1-p)/float64(len(probe))); rate > limit {
						t.Errorf("after %d keys (%d sub-filters): false-positive rate %.4f, above %v (target %v)", added, s.NumFilters(), rate, limit, p)
					}
					t.Logf("%d keys, %d sub-filters, %.1f bits/key, false-positive rate %.4f", added, s.NumFilters(), float64(mem.Bits())/float64(mem.Count()), rate)
				}
			}
			// Zero false negatives.
			all := keyRange("k-", 0, total)
			present, err := s.TestMany(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range present {
				if !ok {
					t.Fatalf("added key %q absent", all[i])
				}
			}
			if ok, err := s.Test(ctx, all[0]); err != nil || !ok {
				t.Fatalf("Test of an added key: %v, %v", ok, err)
			}
		})
	}
}

// TestScalableConcurrentGrowth has 8 clients, each with its own connection,
// TestAndAdd the same 10^4 new keys, in the same order and in batches, into a
// filter whose newest sub-filter is nearly full, so that they race across
// several growth steps: every key is reported new exactly once (by one
// client; by none for a false positive), Count equals the number of keys
// reported new, every sub-filter but the newest holds exactly its capacity
// (so each was created once, when the one before filled), and Export decodes
// (the bloom package validates the sizes of every sub-filter).
func TestScalableConcurrentGrowth(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := scalableName(t, rdb)
	s, err := redisbloom.NewScalable(ctx, rdb, name, 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddMany(ctx, keyRange("pre-", 0, 990)); err != nil {
		t.Fatal(err)
	}
	keys := keyRange("race-", 0, 10_000)
	const clients = 8
	news := make([][]bool, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No retries by go-redis: a resent call whose first attempt
			// was applied would report its new keys as present (see the
			// package documentation, "Errors and retries").
			own := newClient(t, serverAddr(t), func(o *redis.Options) {
				o.PoolSize, o.MaxRetries, o.ReadTimeout = 1, -1, 30*time.Second
			})
			h, err := redisbloom.OpenScalable(ctx, own, name)
			if err != nil {
				errs <- err
				return
			}
			news[c] = make([]bool, len(keys))
			for lo := 0; lo < len(keys); lo += 100 + 37*c {
				hi := min(len(keys), lo+100+37*c)
				var present []bool
				if c%2 == 0 {
					present, err = h.TestAndAddMany(ctx, keys[lo:hi])
				} else {
					present = make([]bool, hi-lo)
					for i := range present {
						if present[i], err = h.TestAndAdd(ctx, keys[lo+i]); err != nil {
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
				for i, ok := range present {
					news[c][lo+i] = !ok
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	newKeys := 0
	for i := range keys {
		n := 0
		for c := range clients {
			if news[c][i] {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("key %q reported new %d times", keys[i], n)
		}
		newKeys += n
	}
	if newKeys < len(keys)*98/100 {
		t.Fatalf("only %d of %d keys reported new", newKeys, len(keys))
	}
	cnt, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := redisbloom.OpenScalable(ctx, rdb, name) // a fresh view of n
	if err != nil {
		t.Fatal(err)
	}
	exported, err := pre.Export(ctx)
	if err != nil {
		t.Fatalf("Export after the race: %v", err)
	}
	if exported.Count() != cnt {
		t.Fatalf("Export's count %d, Count %d", exported.Count(), cnt)
	}
	// Every key reported new set a bit, and nothing else did (the 990
	// keys before did, less their false positives).
	preCount := cnt - uint64(newKeys)
	if preCount > 990 || preCount < 980 {
		t.Fatalf("Count %d with %d keys reported new: %d from the 990 keys before", cnt, newKeys, preCount)
	}
	n := exported.NumFilters()
	if n < 4 {
		t.Fatalf("%d sub-filters: the race did not cross several growth steps", n)
	}
	meta := "{" + name + "}:meta"
	for j := range n - 1 {
		c, err := rdb.HGet(ctx, meta, "c"+strconv.Itoa(j)).Uint64()
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(math.Round(1000 * math.Pow(bloom.DefaultScale, float64(j))))
		if c != want {
			t.Errorf("sub-filter %d holds %d keys, want its capacity %d", j, c, want)
		}
	}
	if got, err := rdb.Exists(ctx, "{"+name+"}:s:"+strconv.Itoa(n)).Result(); err != nil || got != 0 {
		t.Errorf("a sub-filter past the %d counted exists: %d, %v", n, got, err)
	}
	t.Logf("8 clients: %d keys new once, %d sub-filters, count %d", newKeys, n, cnt)
}

// TestScalableErrors: the loss of any one of the filter's keys gives
// ErrNotFound from every method; other parameters ErrIncompatible; a fixed
// filter's keys ErrFormat, and the other way round; Destroy removes every
// sub-filter so that NewScalable starts again.
func TestScalableErrors(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	grown := func(t *testing.T) (*redisbloom.ScalableFilter, [][]byte) {
		s, err := redisbloom.NewScalable(ctx, rdb, scalableName(t, rdb), 100, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		keys := keyRange("e-", 0, 600)
		if err := s.AddMany(ctx, keys); err != nil {
			t.Fatal(err)
		}
		if s.NumFilters() < 3 {
			t.Fatalf("%d sub-filters", s.NumFilters())
		}
		return s, keys
	}
	every := func(s *redisbloom.ScalableFilter, keys [][]byte) map[string]error {
		errs := map[string]error{}
		_, errs["Test"] = s.Test(ctx, keys[0])
		_, errs["TestMany"] = s.TestMany(ctx, keys)
		errs["Add"] = s.Add(ctx, []byte("new key"))
		errs["AddMany"] = s.AddMany(ctx, keys[:10])
		_, errs["TestAndAdd"] = s.TestAndAdd(ctx, []byte("new key"))
		_, errs["TestAndAddMany"] = s.TestAndAddMany(ctx, keys[:10])
		_, errs["Count"] = s.Count(ctx)
		_, errs["Export"] = s.Export(ctx)
		mem, _ := bloom.NewScalable(100, 0.01, bloom.Classic())
		errs["Import"] = s.Import(ctx, mem)
		return errs
	}
	for _, which := range []string{"meta", "s:0", "s:1", "s:2"} {
		t.Run("deleted "+which, func(t *testing.T) {
			s, keys := grown(t)
			if err := rdb.Del(ctx, "{"+s.Name()+"}:"+which).Err(); err != nil {
				t.Fatal(err)
			}
			for method, err := range every(s, keys) {
				if !errors.Is(err, redisbloom.ErrNotFound) {
					t.Errorf("%s: %v, want ErrNotFound", method, err)
				}
			}
		})
	}
	t.Run("bitmap replaced", func(t *testing.T) {
		s, keys := grown(t)
		if err := rdb.Set(ctx, "{"+s.Name()+"}:s:1", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		for method, err := range every(s, keys) {
			if !errors.Is(err, redisbloom.ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt", method, err)
			}
		}
		if _, err := redisbloom.OpenScalable(ctx, rdb, s.Name()); err != nil {
			t.Logf("OpenScalable: %v", err) // the metadata is intact; calls refuse
		}
	})
	t.Run("incompatible", func(t *testing.T) {
		s, _ := grown(t)
		for desc, opts := range map[string][]bloom.Option{
			"seed":       {bloom.Seed(1)},
			"linear":     {bloom.Linear(1.5)},
			"scale":      {bloom.Exponential(2)},
			"tightening": {bloom.Tightening(0.8)},
		} {
			if _, err := redisbloom.NewScalable(ctx, rdb, s.Name(), 100, 0.01, opts...); !errors.Is(err, bloom.ErrIncompatible) {
				t.Errorf("NewScalable with another %s: %v, want bloom.ErrIncompatible", desc, err)
			}
		}
		if _, err := redisbloom.NewScalable(ctx, rdb, s.Name(), 101, 0.01); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("NewScalable with another capacity: %v", err)
		}
		if _, err := redisbloom.NewScalable(ctx, rdb, s.Name(), 100, 0.02); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("NewScalable with another error rate: %v", err)
		}
		other, _ := bloom.NewScalable(100, 0.01, bloom.Seed(1), bloom.Classic())
		if err := s.Import(ctx, other); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("Import with another seed: %v", err)
		}
		if _, err := redisbloom.New(ctx, rdb, s.Name(), 100, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("New on a scalable filter's keys: %v, want ErrFormat", err)
		}
		if _, err := redisbloom.Open(ctx, rdb, s.Name()); err == nil {
			t.Errorf("Open of a scalable filter succeeded")
		}
		f, err := redisbloom.New(ctx, rdb, scalableName(t, rdb), 100, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := redisbloom.NewScalable(ctx, rdb, f.Name(), 100, 0.01); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("NewScalable on a fixed filter's keys: %v, want ErrFormat", err)
		}
		if _, err := redisbloom.OpenScalable(ctx, rdb, f.Name()); !errors.Is(err, redisbloom.ErrFormat) {
			t.Errorf("OpenScalable of a fixed filter: %v, want ErrFormat", err)
		}
		if _, err := redisbloom.OpenScalable(ctx, rdb, scalableName(t, rdb)); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("OpenScalable of a missing filter: %v, want ErrNotFound", err)
		}
		for _, c := range []struct {
			n uint64
			p float64
		}{{0, 0.01}, {100, 0}, {100, 1}, {1e9, 1e-9}} {
			if _, err := redisbloom.NewScalable(ctx, rdb, "x", c.n, c.p); !errors.Is(err, bloom.ErrInvalidParameter) {
				t.Errorf("NewScalable(%d, %v): %v, want ErrInvalidParameter", c.n, c.p, err)
			}
		}
	})
	t.Run("destroy", func(t *testing.T) {
		s, keys := grown(t)
		n := s.NumFilters()
		if err := redisbloom.Destroy(ctx, rdb, s.Name()); err != nil {
			t.Fatal(err)
		}
		for j := range n + 1 {
			if got := rdb.Exists(ctx, fmt.Sprintf("{%s}:s:%d", s.Name(), j)).Val(); got != 0 {
				t.Errorf("sub-filter %d left after Destroy", j)
			}
		}
		if _, err := s.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("Test after Destroy: %v", err)
		}
		again, err := redisbloom.NewScalable(ctx, rdb, s.Name(), 100, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := again.AddMany(ctx, keys); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Test(ctx, keys[0]); !errors.Is(err, redisbloom.ErrNotFound) {
			t.Errorf("old handle on the new filter: %v, want ErrNotFound", err)
		}
		if err := again.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := rdb.Exists(ctx, "{"+s.Name()+"}:meta", "{"+s.Name()+"}:s:0", "{"+s.Name()+"}:s:1").Result(); n != 0 {
			t.Errorf("%d keys left after Delete", n)
		}
	})
}

// TestScalableImport loads in-memory filters, larger and smaller than the
// Redis one, and exports them back Equal; adds after an Import grow as the
// in-memory filter does.
func TestScalableImport(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	name := scalableName(t, rdb)
	s, err := redisbloom.NewScalable(ctx, rdb, name, 200, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	// Another handle with copies of the full sub-filters, which every Import
	// replaces behind its back.
	cached, err := redisbloom.OpenScalable(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	cached.CacheFullSubFilters(1 << 20)
	probe := append(keyRange("imp-", 0, 5000), keyRange("more-", 0, 2000)...)
	for _, n := range []int{5000, 100, 0, 3000} {
		mem, err := bloom.NewScalable(200, 0.001, bloom.Classic())
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range keyRange("imp-", 0, n) {
			mem.Add(key)
		}
		if err := s.Import(ctx, mem); err != nil {
			t.Fatalf("Import of %d keys: %v", n, err)
		}
		checkScalableExport(t, s, mem)
		got, err := cached.TestMany(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range probe {
			if want := mem.Test(key); got[i] != want {
				t.Fatalf("after Import of %d keys: the handle with copies says %q present=%v, memory %v", n, key, got[i], want)
			}
		}
		more := keyRange("more-", 0, 2000)
		got, err = s.TestAndAddMany(ctx, more)
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range more {
			if want := mem.TestAndAdd(key); got[i] != want {
				t.Fatalf("after Import of %d keys: %q present=%v, memory %v", n, key, got[i], want)
			}
		}
		checkScalableExport(t, s, mem)
	}
}

// absentOf reports what testMany answers for keys, every one of them added:
// "n of N keys absent", or its error.
func absentOf(ctx context.Context, testMany func(context.Context, [][]byte) ([]bool, error), keys [][]byte) (string, error) {
	got, err := testMany(ctx, keys)
	if err != nil {
		return "error " + err.Error(), err
	}
	n := 0
	for _, p := range got {
		if !p {
			n++
		}
	}
	return fmt.Sprintf("%d of %d keys absent, error nil", n, len(keys)), nil
}

// TestScalableEditedSubFilterCount edits the number of sub-filters (n) and
// the fields that go with it in the metadata of a scalable filter of 6
// sub-filters, as an operator or another program could: every method of a
// handle that had seen the 6 (one with copies of the full sub-filters too)
// and of new handles (OpenScalable, NewScalable) must fail with ErrCorrupt
// (ErrNotFound where a sub-filter the metadata names does not exist), never
// answer "absent" for an added key. (Before issue 21, after HSET n 1 the
// TestMany of either handle answered 1,894 of 2,000 added keys absent with a
// nil error.)
func TestScalableEditedSubFilterCount(t *testing.T) {
	ctx := context.Background()
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			var rdb redis.UniversalClient
			if where == "cluster" {
				rdb = clusterClient(t)
			} else {
				rdb = client(t)
			}
			for _, c := range []struct {
				desc string
				edit func(meta string) error
				// notFound: a sub-filter the metadata names does not exist.
				notFound bool
			}{
				{"n 1", func(meta string) error { return rdb.HSet(ctx, meta, "n", 1).Err() }, false},
				{"n 5", func(meta string) error { return rdb.HSet(ctx, meta, "n", 5).Err() }, false},
				{"n 5, c5 deleted", func(meta string) error {
					return errors.Join(rdb.HSet(ctx, meta, "n", 5).Err(), rdb.HDel(ctx, meta, "c5").Err())
				}, false},
				{"n 1, epoch 9, c1..c5 deleted", func(meta string) error {
					return errors.Join(rdb.HSet(ctx, meta, "n", 1, "epoch", 9).Err(), rdb.HDel(ctx, meta, "c1", "c2", "c3", "c4", "c5").Err())
				}, false},
				{"n 7", func(meta string) error { return rdb.HSet(ctx, meta, "n", 7).Err() }, true},
				{"n 0", func(meta string) error { return rdb.HSet(ctx, meta, "n", 0).Err() }, false},
				{"n 2.5", func(meta string) error { return rdb.HSet(ctx, meta, "n", "2.5").Err() }, false},
				{"c5 deleted", func(meta string) error { return rdb.HDel(ctx, meta, "c5").Err() }, false},
				{"c6 added", func(meta string) error { return rdb.HSet(ctx, meta, "c6", 0).Err() }, false},
				{"c5 not a number", func(meta string) error { return rdb.HSet(ctx, meta, "c5", "many").Err() }, false},
			} {
				t.Run(c.desc, func(t *testing.T) {
					name := scalableName(t, rdb)
					s, err := redisbloom.NewScalable(ctx, rdb, name, 100, 0.01)
					if err != nil {
						t.Fatal(err)
					}
					keys := keyRange("ed-", 0, 2000)
					if err := s.AddMany(ctx, keys); err != nil {
						t.Fatal(err)
					}
					if s.NumFilters() != 6 {
						t.Fatalf("%d sub-filters, want 6", s.NumFilters())
					}
					cached, err := redisbloom.OpenScalable(ctx, rdb, name)
					if err != nil {
						t.Fatal(err)
					}
					cached.CacheFullSubFilters(1 << 20)
					if _, err := cached.TestMany(ctx, keys); err != nil { // fetches the copies
						t.Fatal(err)
					}
					if err := c.edit("{" + name + "}:meta"); err != nil {
						t.Fatal(err)
					}
					want := func(err error) bool {
						return errors.Is(err, redisbloom.ErrCorrupt) || (c.notFound && errors.Is(err, redisbloom.ErrNotFound))
					}
					for desc, h := range map[string]*redisbloom.ScalableFilter{"handle that saw 6": s, "handle with copies": cached} {
						if got, err := absentOf(ctx, h.TestMany, keys); !want(err) {
							t.Errorf("%s: TestMany: %s; want ErrCorrupt", desc, got)
						}
						for method, err := range everyScalable(ctx, h, keys) {
							if !want(err) {
								t.Errorf("%s: %s: %v, want ErrCorrupt", desc, method, err)
							}
						}
					}
					for desc, open := range map[string]func() (*redisbloom.ScalableFilter, error){
						"OpenScalable": func() (*redisbloom.ScalableFilter, error) { return redisbloom.OpenScalable(ctx, rdb, name) },
						"NewScalable":  func() (*redisbloom.ScalableFilter, error) { return redisbloom.NewScalable(ctx, rdb, name, 100, 0.01) },
					} {
						h, err := open()
						if err != nil {
							if !want(err) {
								t.Errorf("%s: %v, want ErrCorrupt", desc, err)
							}
							continue
						}
						if got, err := absentOf(ctx, h.TestMany, keys); !want(err) {
							t.Errorf("%s, then TestMany: %s; want ErrCorrupt", desc, got)
						}
					}
				})
			}
		})
	}
}

// everyScalable calls every method of s but TestMany with keys (added keys),
// and returns the errors.
func everyScalable(ctx context.Context, s *redisbloom.ScalableFilter, keys [][]byte) map[string]error {
	errs := map[string]error{}
	_, errs["Test"] = s.Test(ctx, keys[0])
	errs["Add"] = s.Add(ctx, []byte("new key"))
	errs["AddMany"] = s.AddMany(ctx, keys[:10])
	_, errs["TestAndAdd"] = s.TestAndAdd(ctx, []byte("new key"))
	_, errs["TestAndAddMany"] = s.TestAndAddMany(ctx, keys[:10])
	_, errs["Count"] = s.Count(ctx)
	_, errs["Export"] = s.Export(ctx)
	return errs
}

// TestScalableHugeSubFilterCount sets the number of sub-filters in a
// scalable filter's metadata far past what its parameters can build: a
// handle that sees it (in a GROWN reply) and OpenScalable must refuse it
// with ErrCorrupt at once, and a call must return when its context ends
// while the sizes of many sub-filters that can be built are computed.
// (Before issue 21, with n = 100,000 one Test took 4.1 s of client CPU and
// with n = 1,000,000 a call with a 60 s deadline still ran after 6 min 40 s.)
func TestScalableHugeSubFilterCount(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	// within runs call and fails the test if it has not returned after
	// limit; it returns how long it took and the bytes the process
	// allocated meanwhile, for the log, and call's error.
	within := func(t *testing.T, limit time.Duration, call func() error) (string, error) {
		t.Helper()
		done := make(chan error, 1)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		go func() { done <- call() }()
		select {
		case err := <-done:
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			return fmt.Sprintf("%v, %d KB allocated", took.Round(time.Microsecond), (after.TotalAlloc-before.TotalAlloc)>>10), err
		case <-time.After(limit):
			t.Fatalf("still running after %v", limit)
			return "", nil
		}
	}
	for _, c := range []struct {
		n    string
		opts []bloom.Option
		// deadline: the call's context deadline; the error must be
		// ErrCorrupt or the context's.
		deadline time.Duration
	}{
		{"100000", nil, 0},
		{"1000000", nil, 0},
		{"1000000", nil, 60 * time.Second},
		{"65536", nil, 0},
		{"60000", nil, 0},
		{"65537", nil, 0},
		{"4294967296", nil, 0},
		// Sub-filters of one key each, rates tightening by 0.999: all
		// 65,536 the format holds can be built, and sizing them takes long.
		{"65536", []bloom.Option{bloom.Linear(1e-9), bloom.Tightening(0.999)}, time.Second},
		{"65537", []bloom.Option{bloom.Linear(1e-9), bloom.Tightening(0.999)}, 0},
	} {
		t.Run(fmt.Sprintf("n=%s/options=%d/deadline=%v", c.n, len(c.opts), c.deadline), func(t *testing.T) {
			name := scalableName(t, rdb)
			initial := uint64(100)
			if c.opts != nil {
				initial = 1
			}
			s, err := redisbloom.NewScalable(ctx, rdb, name, initial, 0.01, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			keys := keyRange("huge-", 0, 300)
			if err := s.AddMany(ctx, keys); err != nil {
				t.Fatal(err)
			}
			// With the count of the newest sub-filter as well, so that
			// the scripts, which check it, pass n on (GROWN) to the client.
			fields := []any{"n", c.n}
			if n, err := strconv.ParseUint(c.n, 10, 64); err == nil && n >= 1 {
				fields = append(fields, "c"+strconv.FormatUint(n-1, 10), "0")
			}
			if err := rdb.HSet(ctx, "{"+name+"}:meta", fields...).Err(); err != nil {
				t.Fatal(err)
			}
			want := func(err error) bool {
				return errors.Is(err, redisbloom.ErrCorrupt) ||
					(c.deadline > 0 && errors.Is(err, context.DeadlineExceeded))
			}
			callCtx := func() (context.Context, context.CancelFunc) {
				if c.deadline > 0 {
					return context.WithTimeout(ctx, c.deadline)
				}
				return context.WithCancel(ctx)
			}
			limit := 30 * time.Second
			if c.deadline > 0 {
				limit = c.deadline + 10*time.Second
			}
			var present bool
			took, err := within(t, limit, func() error {
				ctx, cancel := callCtx()
				defer cancel()
				var err error
				present, err = s.Test(ctx, keys[0])
				return err
			})
			if !want(err) {
				t.Errorf("Test on the handle that saw %d sub-filters: %v, %v after %v; want ErrCorrupt", s.NumFilters(), present, err, took)
			} else {
				t.Logf("Test: %v after %v", err, took)
			}
			took, err = within(t, limit, func() error {
				ctx, cancel := callCtx()
				defer cancel()
				h, err := redisbloom.OpenScalable(ctx, rdb, name)
				if err == nil {
					present, err = h.Test(ctx, keys[0])
				}
				return err
			})
			if !want(err) {
				t.Errorf("OpenScalable, Test: %v, %v after %v; want ErrCorrupt", present, err, took)
			} else {
				t.Logf("OpenScalable: %v after %v", err, took)
			}
		})
	}
}

// TestScalableMissingCount deletes the count field of a full sub-filter:
// Test needs no count and answers right, and Count and Export, which read
// every count, fail with ErrCorrupt rather than report fewer keys.
func TestScalableMissingCount(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	s, err := redisbloom.NewScalable(ctx, rdb, scalableName(t, rdb), 100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyRange("mc-", 0, 2000)
	if err := s.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, "{"+s.Name()+"}:meta", "c2").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := absentOf(ctx, s.TestMany, keys); err != nil || !strings.HasPrefix(got, "0 of") {
		t.Errorf("TestMany: %s", got)
	}
	if n, err := s.Count(ctx); !errors.Is(err, redisbloom.ErrCorrupt) {
		t.Errorf("Count: %d, %v; want ErrCorrupt", n, err)
	}
	if _, err := s.Export(ctx); !errors.Is(err, redisbloom.ErrCorrupt) {
		t.Errorf("Export: %v, want ErrCorrupt", err)
	}
}
