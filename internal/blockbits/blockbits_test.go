package blockbits

import (
	"math/rand/v2"
	"testing"
)

// randomCase returns a hash whose candidates repeat about one time in
// three (a field copied onto another of h2, or onto one of w1 by choosing
// h2 again until they agree), and a block that is full, random, sparse or
// holds all but one of the candidates.
func randomCase(rng *rand.Rand, n1 uint64) (h2 uint64, blk [8]uint64) {
	h2 = rng.Uint64()
	switch rng.IntN(6) {
	case 0:
		i, j := rng.IntN(7), rng.IntN(7)
		f := h2 >> (9 * i) & 511
		h2 = h2&^(511<<(9*j)) | f<<(9*j)
	case 1:
		// The first field of w1 equal to a field of h2: set that field.
		a0 := splitmix(h2+golden) & 511
		j := rng.IntN(7)
		h2 = h2&^(511<<(9*j)) | a0<<(9*j)
	}
	c := candidates(h2, n1)
	switch rng.IntN(4) {
	case 0:
		for i := range blk {
			blk[i] = ^uint64(0)
		}
	case 1:
		for i := range blk {
			blk[i] = rng.Uint64() | rng.Uint64()
		}
	case 2:
		for i := range blk {
			blk[i] = rng.Uint64() & rng.Uint64() & rng.Uint64()
		}
	}
	if rng.IntN(2) == 0 {
		// Every candidate set, and with probability 1/2 one cleared.
		for _, p := range c {
			blk[p>>6] |= 1 << (p & 63)
		}
		if rng.IntN(2) == 0 {
			p := c[rng.IntN(len(c))]
			blk[p>>6] &^= 1 << (p & 63)
		}
	}
	return h2, blk
}

// TestMatchesGo checks the assembly against addGo, testGo and testAllGo,
// which follow the package doc literally, on a million random cases for each n1.
func TestMatchesGo(t *testing.T) {
	if !Native {
		t.Skip("no AVX-512F and AVX-512CD on this CPU (or purego): Add and Test are addGo and testGo")
	}
	rng := rand.New(rand.NewPCG(8, 9))
	var repeats, presents, absents [3]int
	for _, n1 := range []uint64{1, 2} {
		for range 1_000_000 {
			h2, blk := randomCase(rng, n1)
			want := blk
			wp, wok := addGo(&want, h2, n1)
			got := blk
			gp, gok := Add(&got, h2, n1)
			if gp != wp || gok != wok || got != want {
				t.Fatalf("n1=%d h2=%#x blk=%x: Add %v %v -> %x, want %v %v -> %x", n1, h2, blk, gp, gok, got, wp, wok, want)
			}
			wp, wok = testAllGo(&blk, h2, n1)
			if gp, gok := TestAll(&blk, h2, n1); gp != wp || gok != wok {
				t.Fatalf("n1=%d h2=%#x blk=%x: TestAll %v %v, want %v %v", n1, h2, blk, gp, gok, wp, wok)
			}
			// Test's contract: the seven candidates of h2 are set.
			for _, p := range candidates(h2, n1)[:7] {
				blk[p>>6] |= 1 << (p & 63)
			}
			wp, wok = testGo(&blk, h2, n1)
			gp, gok = Test(&blk, h2, n1)
			if gp != wp || gok != wok {
				t.Fatalf("n1=%d h2=%#x blk=%x: Test %v %v, want %v %v", n1, h2, blk, gp, gok, wp, wok)
			}
			switch {
			case !wok:
				repeats[n1]++
			case wp:
				presents[n1]++
			default:
				absents[n1]++
			}
		}
	}
	// Every outcome must have been exercised often.
	for n1 := 1; n1 <= 2; n1++ {
		if repeats[n1] < 10000 || presents[n1] < 10000 || absents[n1] < 10000 {
			t.Errorf("n1=%d: %d repeats, %d present, %d absent: too few of some", n1, repeats[n1], presents[n1], absents[n1])
		}
	}
}

// TestReference checks addGo and testGo on hand-made cases: distinct
// candidates set every bit, a repeated candidate changes nothing.
func TestReference(t *testing.T) {
	const h2 = 1 | 2<<9 | 3<<18 | 4<<27 | 5<<36 | 6<<45 | 7<<54
	c := candidates(h2, 2)
	if !distinct(c) {
		t.Skipf("w1's fields of this h2 repeat one of 1..7: %v", c)
	}
	var blk [8]uint64
	if present, ok := addGo(&blk, h2, 2); present || !ok {
		t.Fatalf("addGo on an empty block: %v %v", present, ok)
	}
	var want [8]uint64
	for _, p := range c {
		want[p>>6] |= 1 << (p & 63)
	}
	if blk != want {
		t.Fatalf("addGo set %x, want %x", blk, want)
	}
	if present, ok := addGo(&blk, h2, 2); !present || !ok {
		t.Fatalf("addGo again: %v %v", present, ok)
	}
	if present, ok := testGo(&blk, h2, 2); !present || !ok {
		t.Fatalf("testGo: %v %v", present, ok)
	}
	const rep = 1 | 1<<9 | 3<<18 | 4<<27 | 5<<36 | 6<<45 | 7<<54
	var empty [8]uint64
	if _, ok := addGo(&empty, rep, 2); ok || empty != [8]uint64{} {
		t.Fatalf("addGo with a repeat: ok %v, block %x", ok, empty)
	}
}

func BenchmarkAdd(b *testing.B) {
	if !Native {
		b.Skip("no AVX-512")
	}
	var blk [8]uint64
	h := uint64(1)
	for range b.N {
		h = h*0x9E3779B97F4A7C15 + 1
		Add(&blk, h, 2)
	}
}

// TestFieldsMatchesGo checks the assembly of AddFields and TestFields
// against addFieldsGo and testFieldsGo, which follow their docs literally, for every k from 2 to 7 on random cases
// whose first k fields repeat about one time in three, with blocks that
// hold all the k candidates, all but one, or random bits.
func TestFieldsMatchesGo(t *testing.T) {
	if !Native {
		t.Skip("no AVX-512F and AVX-512CD on this CPU (or purego): TestFields is testFieldsGo")
	}
	rng := rand.New(rand.NewPCG(33, 7))
	for k := uint64(2); k <= 7; k++ {
		var repeats, presents, absents int
		for range 300_000 {
			h2, blk := randomCase(rng, 0)
			if rng.IntN(3) == 0 {
				i, j := rng.IntN(int(k)), rng.IntN(int(k))
				f := h2 >> (9 * i) & 511
				h2 = h2&^(511<<(9*j)) | f<<(9*j)
			}
			c := candidates(h2, 0)[:k]
			switch rng.IntN(3) {
			case 0:
				for _, p := range c {
					blk[p>>6] |= 1 << (p & 63)
				}
			case 1:
				for _, p := range c {
					blk[p>>6] |= 1 << (p & 63)
				}
				p := c[rng.IntN(len(c))]
				blk[p>>6] &^= 1 << (p & 63)
			}
			want := blk
			ap, aok := addFieldsGo(&want, h2, k)
			got := blk
			if gp, gok := AddFields(&got, h2, k); gp != ap || gok != aok || got != want {
				t.Fatalf("k=%d h2=%#x blk=%x: AddFields %v %v -> %x, want %v %v -> %x", k, h2, blk, gp, gok, got, ap, aok, want)
			}
			wp, wok := testFieldsGo(&blk, h2, k)
			gp, gok := TestFields(&blk, h2, k)
			if gp != wp || gok != wok {
				t.Fatalf("k=%d h2=%#x blk=%x: TestFields %v %v, want %v %v", k, h2, blk, gp, gok, wp, wok)
			}
			switch {
			case !wok:
				repeats++
			case wp:
				presents++
			default:
				absents++
			}
		}
		if repeats < 10000 || presents < 10000 || absents < 10000 {
			t.Errorf("k=%d: %d repeats, %d present, %d absent: too few of some", k, repeats, presents, absents)
		}
	}
}
