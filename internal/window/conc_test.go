package window

import (
	"math/rand/v2"
	"testing"
)

// TestConcurrentMatchesPlain feeds a Concurrent ring and a plain one the same
// keys at the same times, through rotations on count, on time (jumps of
// one to r+1 periods) and, under Grow, extensions that come and go: after
// every step they are Equal, and TestAtomic and TestManyAtomic answer as
// Test and TestMany do, for keys added and keys never added, at times up to
// r+1 periods after the last add. It failed when TestAtomic counted every
// generation live.
func TestConcurrentMatchesPlain(t *testing.T) {
	for _, c := range []struct {
		name   string
		period int64
		policy Policy
	}{{"count", 0, RotateEarly}, {"time", 1000, RotateEarly}, {"saturate", 1000, Saturate}, {"grow", 1000, Grow}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(200, 5)
			cfg.Period, cfg.Policy = c.period, c.policy
			plain := New(cfg, 0, testSizer)
			conc := New(cfg, 0, testSizer)
			conc.SetConcurrent()
			rng := rand.New(rand.NewPCG(1, 2))
			now := int64(0)
			keys := make([]uint64, 40)
			got, want := make([]bool, len(keys)), make([]bool, len(keys))
			grew := false
			for i := range uint64(6000) {
				switch {
				case c.period == 0:
				case i%500 == 499:
					now += c.period * (1 + rng.Int64N(int64(cfg.Gens)+1))
				case c.policy == Grow && i/400%3 == 1:
					// a burst: many keys within a period
				default:
					now += c.period / 20
				}
				if add(plain, i, now) != add(conc, i, now) {
					t.Fatalf("key %d: Add answers differ", i)
				}
				grew = grew || conc.Extensions() != 0
				if !plain.Equal(conc) {
					t.Fatalf("key %d: the rings differ", i)
				}
				if i%7 != 0 {
					continue
				}
				for j := range keys {
					keys[j] = rng.Uint64N(2 * (i + 1)) // half never added
				}
				at := now // tested later than the last add: fewer live generations
				if c.period != 0 {
					at += rng.Int64N(c.period * int64(cfg.Gens+1))
				}
				TestMany(plain, keys, want, plain.Live(at))
				TestManyAtomic(conc, keys, got, at)
				for j, k := range keys {
					h1, h2 := hashOf(k, cfg.Seed)
					single := conc.TestAtomic(h1, h2, at)
					if test(plain, k, at) != single || want[j] != got[j] || single != got[j] {
						t.Fatalf("key %d at %d: Test %v TestAtomic %v, TestMany %v TestManyAtomic %v", k, at, test(plain, k, at), single, want[j], got[j])
					}
				}
			}
			if c.policy == Grow && !grew {
				t.Fatal("no extension")
			}
			if plain.Rotations() == 0 {
				t.Fatal("no rotation")
			}
		})
	}
}
