package classic

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/bloomfilters/bloom/internal/layout"
)

// TestAddSetsPositions: Add sets exactly the positions AppendPositions
// gives, Test, TestAtomic and Unset see them, and a filter holding all but
// one of them tests absent, for sizes from one word to many and k from 1
// to 64.
func TestAddSetsPositions(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for range 3000 {
		m := 1 + rng.Uint64N(5000)
		k := uint(1 + rng.IntN(64))
		w := make([]uint64, (m+63)/64)
		h1, h2 := rng.Uint64(), rng.Uint64()
		pos := AppendPositions(nil, h1, h2, m, k)
		if uint(len(pos)) != k {
			t.Fatalf("%d positions, want %d", len(pos), k)
		}
		want := make([]uint64, len(w))
		for _, p := range pos {
			if p >= m {
				t.Fatalf("position %d of %d bits", p, m)
			}
			want[p/64] |= 1 << (p % 64)
		}
		if u := Unset(w, m, k, h1, h2); bits.OnesCount64(u) != int(k) {
			t.Fatalf("m=%d k=%d: Unset of an empty filter marks %d positions", m, k, bits.OnesCount64(u))
		}
		if Add(w, m, k, h1, h2) {
			t.Fatalf("m=%d k=%d: Add to an empty filter reported present", m, k)
		}
		for i := range w {
			if w[i] != want[i] {
				t.Fatalf("m=%d k=%d: word %d is %#x, want %#x", m, k, i, w[i], want[i])
			}
		}
		if !Add(w, m, k, h1, h2) || !Test(w, m, k, h1, h2) || !TestAtomic(w, m, k, h1, h2) || Unset(w, m, k, h1, h2) != 0 {
			t.Fatalf("m=%d k=%d: the key is not present after Add", m, k)
		}
		p := pos[rng.IntN(len(pos))]
		w[p/64] &^= 1 << (p % 64)
		if Test(w, m, k, h1, h2) || TestAtomic(w, m, k, h1, h2) {
			t.Fatalf("m=%d k=%d: present with position %d clear", m, k, p)
		}
		unset := Unset(w, m, k, h1, h2)
		if !Set(w, m, k, h1, h2, unset) || !Test(w, m, k, h1, h2) {
			t.Fatalf("m=%d k=%d: Set did not restore position %d", m, k, p)
		}
	}
}

// TestBatchMatchesLoop: TestMany and AddMany, in rounds and in the loop of
// single calls, give the answers, bits and counts of the single-key calls,
// plain and with locks.
func TestBatchMatchesLoop(t *testing.T) {
	saved := BatchMinBits
	defer func() { BatchMinBits = saved }()
	rng := rand.New(rand.NewPCG(21, 2))
	keys := make([][]byte, 5000)
	for i := range keys {
		keys[i] = []byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(i), byte(i >> 8), byte(i % 7)}
	}
	for _, minBits := range []uint64{0, 1 << 62} {
		BatchMinBits = minBits
		for _, k := range []uint{1, 2, 7, 8, 20} {
			const m = 30011
			loop := layout.Bits{Words: make([]uint64, (m+63)/64), M: m, K: k}
			batch := layout.Bits{Words: make([]uint64, (m+63)/64), M: m, K: k}
			locked := layout.Bits{Words: make([]uint64, (m+63)/64), M: m, K: k}
			var loopCount, batchCount uint64
			want := make([]bool, len(keys))
			h := make([]layout.Hash, len(keys))
			layout.HashRound(h, keys, 7)
			for i := range keys {
				if want[i] = Add(loop.Words, m, k, h[i].H1, h[i].H2); !want[i] {
					loopCount++
				}
			}
			got := make([]bool, len(keys))
			AddMany(batch, 7, keys, got, &batchCount, nil)
			l := layout.NewLocks(len(locked.Words))
			gotLocked := make([]bool, len(keys))
			AddMany(locked, 7, keys, gotLocked, nil, l)
			for i := range keys {
				if got[i] != want[i] || gotLocked[i] != want[i] {
					t.Fatalf("min %d k=%d key %d: AddMany %v, locked %v, Add %v", minBits, k, i, got[i], gotLocked[i], want[i])
				}
			}
			if batchCount != loopCount || l.Count() != loopCount {
				t.Fatalf("min %d k=%d: counts %d and %d, loop %d", minBits, k, batchCount, l.Count(), loopCount)
			}
			for i := range loop.Words {
				if batch.Words[i] != loop.Words[i] || locked.Words[i] != loop.Words[i] {
					t.Fatalf("min %d k=%d: word %d differs", minBits, k, i)
				}
			}
			probe := append(keys[:2500:2500], make([][]byte, 2500)...)
			for i := 2500; i < len(probe); i++ {
				probe[i] = []byte{byte(i), 1, 2, 3, byte(i >> 8), 9}
			}
			layout.HashRound(h, probe, 7)
			for _, conc := range []bool{false, true} {
				res := make([]bool, len(probe))
				TestMany(batch, 7, probe, res, conc)
				for i := range probe {
					if w := Test(loop.Words, m, k, h[i].H1, h[i].H2); res[i] != w {
						t.Fatalf("min %d k=%d conc %v key %d: TestMany %v, Test %v", minBits, k, conc, i, res[i], w)
					}
				}
			}
		}
	}
}

// TestAnyHoldsMatchesLoop: the side-by-side test of several filters agrees
// with testing each, whatever the deep size, with more than 64 filters too.
func TestAnyHoldsMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	var subs []layout.Bits
	for i := range 70 {
		m := uint64(64 + 37*i*i)
		k := uint(1 + i%12)
		b := layout.Bits{Words: make([]uint64, (m+63)/64), M: m, K: k}
		for range 3 + i {
			Add(b.Words, m, k, rng.Uint64(), rng.Uint64())
		}
		subs = append(subs, b)
	}
	present := 0
	for range 20000 {
		h1, h2 := rng.Uint64(), rng.Uint64()
		want := false
		for _, b := range subs {
			want = want || Test(b.Words, b.M, b.K, h1, h2)
		}
		for _, deep := range []uint64{0, 1000, 1 << 62} {
			for _, conc := range []bool{false, true} {
				if got := AnyHolds(subs, h1, h2, deep, conc); got != want {
					t.Fatalf("deep %d conc %v: AnyHolds %v, loop %v", deep, conc, got, want)
				}
			}
		}
		if want {
			present++
		}
	}
	if present == 0 || present == 20000 {
		t.Fatalf("degenerate: %d of 20000 present", present)
	}
}
