package bloom

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSingleKeyCallsMatchLocations pins the single-key calls of blocked
// filters, whose hash and probes addKey and testKey write out for k from 2
// to 7 and leave to addHashed and testHashed otherwise, to the documented
// positions (AppendBlockedLocations): on random keys of every length from 0
// to 70 bytes (the murmur3 blocks, tail and finish written out), each Add
// sets exactly the key's positions, TestAndAdd reports whether they were all
// set before and Count goes up when they were not, and Test, TestString and
// TestHash answer as the bits say, with the blocked assembly and without.
func TestSingleKeyCallsMatchLocations(t *testing.T) {
	withBlockPaths(t, testSingleKeyCallsMatchLocations)
}

func testSingleKeyCallsMatchLocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	for _, k := range []uint{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 20} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			// Three blocks: keys often share one, so that TestAndAdd meets
			// keys whose bits are partly or wholly set.
			f, err := NewWithSize(3*BlockBits, k, Blocked(), Seed(rng.Uint32()))
			if err != nil {
				t.Fatal(err)
			}
			var locs []uint64
			for i := range 3000 {
				key := make([]byte, rng.IntN(71))
				for j := range key {
					key[j] = byte(rng.Uint32())
				}
				locs = AppendBlockedLocations(locs[:0], key, f.m, f.k, f.seed)
				var want [3 * 8]uint64
				for _, p := range locs {
					want[p/64] |= 1 << (p % 64)
				}
				wasSet := true
				for j, w := range want {
					wasSet = wasSet && f.words[j]&w == w
				}
				before := append([]uint64(nil), f.words...)
				if got := f.Test(key); got != wasSet {
					t.Fatalf("key %d (%d bytes): Test %v before the add, bits say %v", i, len(key), got, wasSet)
				}
				if got := f.TestString(string(key)); got != wasSet {
					t.Fatalf("key %d (%d bytes): TestString %v before the add, bits say %v", i, len(key), got, wasSet)
				}
				count := f.Count()
				var present bool
				if i%2 == 0 {
					present = f.TestAndAdd(key)
				} else {
					present = f.TestAndAddString(string(key))
				}
				if present != wasSet {
					t.Fatalf("key %d (%d bytes): TestAndAdd %v, bits were all set: %v", i, len(key), present, wasSet)
				}
				if !wasSet {
					count++
				}
				if f.Count() != count {
					t.Fatalf("key %d: Count %d after the add, want %d", i, f.Count(), count)
				}
				for j := range f.words {
					if f.words[j] != before[j]|want[j] {
						t.Fatalf("key %d (%d bytes): word %d is %#x after the add, want %#x | %#x", i, len(key), j, f.words[j], before[j], want[j])
					}
				}
				if !f.Test(key) {
					t.Fatalf("key %d (%d bytes): absent after the add", i, len(key))
				}
				h := rng.Uint64()
				var hb [8]byte
				for j := range hb {
					hb[j] = byte(h >> (8 * j))
				}
				if got, want := f.TestHash(h), f.Test(hb[:]); got != want {
					t.Fatalf("TestHash(%#x) %v, Test of its bytes %v", h, got, want)
				}
			}
		})
	}
}
