package main

import (
	"fmt"
	"math"
	"testing"

	"github.com/bloomfilters/bloom"
)

// These tests check the adapters, not the timings: every implementation
// must answer "present" for every key it was given, and its false-positive
// rate must be in a plausible range, or the tables would compare the wrong
// things. CI runs them (with -race); it does not run the benchmark.

func TestFixedAdaptersHaveNoFalseNegatives(t *testing.T) {
	for _, kind := range []keyKind{randomKeys, urlKeys} {
		present := genKeys(kind, 2000, 11)
		absent := genKeys(kind, 20000, 12)
		for _, p := range errorRates {
			for _, impl := range fixedImpls {
				t.Run(fmt.Sprintf("%s/p=%g/%s", kind, p, impl.name), func(t *testing.T) {
					s := impl.build(uint64(present.len()), p)
					s.addRange(present, 0, present.len())
					if hits := s.testRange(present, 0, present.len()); hits != present.len() {
						t.Fatalf("%d of %d added keys reported absent", present.len()-hits, present.len())
					}
					fp := s.testRange(absent, 0, absent.len())
					if impl.isMap {
						if fp != 0 {
							t.Fatalf("map reports %d absent keys present", fp)
						}
						return
					}
					// Loose bounds: a broken adapter (say, one that hashes
					// nothing) lands far outside them.
					if fpr := float64(fp) / float64(absent.len()); fpr > 3*p+0.002 {
						t.Errorf("false-positive rate %.4f, want about %g", fpr, p)
					}
				})
			}
		}
	}
}

func TestScalableAdaptersHaveNoFalseNegatives(t *testing.T) {
	const initial, total = 100, 20_000
	present := genKeys(randomKeys, total, 13)
	for _, impl := range scalableImpls {
		t.Run(impl.name, func(t *testing.T) {
			g := impl.build(initial, growP)
			for added, step := 0, initial; added < total; added, step = added+step, step*2 {
				to := min(added+step, total)
				if err := g.addRange(present, added, to); err != nil {
					t.Fatal(err)
				}
				if hits := g.testAll(present, to); hits != to {
					t.Fatalf("after %d keys: %d reported absent", to, to-hits)
				}
			}
			if g.subFilters() < 2 {
				t.Errorf("%d sub-filters after growing from %d to %d keys, want several", g.subFilters(), initial, total)
			}
			if g.bits() == 0 {
				t.Error("bits() = 0")
			}
		})
	}
}

func TestOursScalableStaysWithinTarget(t *testing.T) {
	present := genKeys(randomKeys, 50_000, 14)
	absent := genKeys(randomKeys, 100_000, 15)
	g := scalableImpls[0]
	if g.name != nameOursScalable {
		t.Fatalf("first scalable implementation is %q, want ours", g.name)
	}
	f := g.build(growInitial, growP)
	if err := f.addRange(present, 0, present.len()); err != nil {
		t.Fatal(err)
	}
	if fp := f.testAll(absent, absent.len()); !withinTarget(fp, absent.len(), growP) {
		t.Errorf("false-positive rate %.4f after growing to %d keys, target %g", float64(fp)/float64(absent.len()), present.len(), growP)
	}
}

// TestLowerBoundMatchesOurs checks that the hand-written reference sets
// exactly the bits bloom.AppendLocations documents, so that it is a lower
// bound for the same work and not for something easier.
func TestLowerBoundMatchesOurs(t *testing.T) {
	f, err := bloom.New(5000, 0.001, bloom.Classic()) // the lower bound has the classic positions
	if err != nil {
		t.Fatal(err)
	}
	lb := newLowerBound(f.Bits(), f.Hashes())
	keys := genKeys(urlKeys, 5000, 16)
	var locs []uint64
	for i := range keys.len() {
		key := keys.key(i)
		lb.Add(key)
		f.Add(key)
		locs = bloom.AppendLocations(locs[:0], key, f.Bits(), f.Hashes(), bloom.DefaultSeed)
		for _, p := range locs {
			if lb.words[p/64]&(1<<(p%64)) == 0 {
				t.Fatalf("key %d: bit %d not set", i, p)
			}
		}
	}
	if lb.count != f.Count() {
		t.Errorf("lower bound counted %d keys, ours %d", lb.count, f.Count())
	}
	absent := genKeys(urlKeys, 50_000, 17)
	for i := range absent.len() {
		if lb.Test(absent.key(i)) != f.Test(absent.key(i)) {
			t.Fatalf("absent key %d: lower bound and ours disagree", i)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, kind := range []keyKind{randomKeys, urlKeys} {
		a, b := genKeys(kind, 10_000, 1), genKeys(kind, 10_000, 2)
		seen := make(map[string]bool)
		for _, ks := range []*keySet{a, b} {
			for i := range ks.len() {
				k := string(ks.key(i))
				if seen[k] {
					t.Fatalf("%s: duplicate key %q", kind, k)
				}
				seen[k] = true
			}
		}
		if kind == randomKeys && a.meanLen() != 16 {
			t.Errorf("random keys average %.1f bytes, want 16", a.meanLen())
		}
		if kind == urlKeys && math.Abs(a.meanLen()-60) > 8 {
			t.Errorf("URL-like keys average %.1f bytes, want about 60", a.meanLen())
		}
	}
}

// The benchmarks below time one implementation at a time with testing.B,
// for use with benchstat (go test -bench . -count 10). The filter holds
// benchN keys whatever b.N is.

const (
	benchN     = 1_000_000
	benchBatch = 1000
)

var benchKeys struct {
	present, absent *keySet
}

func keysForBench(b *testing.B) (present, absent *keySet) {
	b.Helper()
	if benchKeys.present == nil {
		benchKeys.present = genKeys(randomKeys, benchN, 1)
		benchKeys.absent = genKeys(randomKeys, benchN, 2)
	}
	return benchKeys.present, benchKeys.absent
}

// loop runs op over b.N keys in batches of benchBatch, cycling through ks.
func loop(b *testing.B, ks *keySet, op func(ks *keySet, from, to int)) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		from := i % ks.len()
		op(ks, from, from+min(benchBatch, b.N-i))
	}
}

func BenchmarkFixed(b *testing.B) {
	const p = 0.01
	present, absent := keysForBench(b)
	for _, impl := range fixedImpls {
		b.Run("Add/"+impl.short, func(b *testing.B) {
			s := impl.build(benchN, p)
			loop(b, present, s.addRange)
		})
		s := impl.build(benchN, p)
		s.addRange(present, 0, present.len())
		b.Run("TestPresent/"+impl.short, func(b *testing.B) {
			loop(b, present, func(ks *keySet, from, to int) { s.testRange(ks, from, to) })
		})
		b.Run("TestAbsent/"+impl.short, func(b *testing.B) {
			loop(b, absent, func(ks *keySet, from, to int) { s.testRange(ks, from, to) })
		})
	}
}
