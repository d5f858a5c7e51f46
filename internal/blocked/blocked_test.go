package blocked

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomfilters/bloom/internal/blockbits"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/layout"
)

// maxHashes is bloom.MaxHashes.
const maxHashes = 64

// withBlockPaths runs test with the assembly of internal/blockbits, which
// filters of 8 and 9 hashes use where the CPU has AVX-512, and again with
// the Go paths it replaces.
func withBlockPaths(t *testing.T, test func(t *testing.T)) {
	native := blockbits.Native
	defer func() { blockbits.Native = native }()
	if native {
		t.Run("asm", test)
	} else {
		t.Log("no AVX-512F and AVX-512CD here: the Go paths only")
	}
	blockbits.Native = false
	t.Run("go", test)
}

// TestBlockedFastPath checks the branch-free paths of the blocked layout
// (firstDistinct, and Mask, Test and Add through it)
// against the candidate sequence written out with a map, for every k up to
// 20 and MaxHashes, on random hashes and on hashes whose fields repeat.
func TestBlockedFastPath(t *testing.T) { withBlockPaths(t, testBlockedFastPath) }

func testBlockedFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	ref := func(h2 uint64, k uint) (m [8]uint64, firstK []uint64) {
		seen := map[uint64]bool{}
		x, n := h2, uint(0)
		for tt := uint64(0); n < k; tt++ {
			if tt > 0 {
				x = splitmix(h2 + tt*golden)
			}
			for j := 0; j < 7 && n < k; j++ {
				q := x >> (9 * j) & 511
				if uint(len(firstK)) < k {
					firstK = append(firstK, q)
				}
				if !seen[q] {
					seen[q] = true
					m[q>>6] |= 1 << (q & 63)
					n++
				}
			}
		}
		return m, firstK
	}
	hashes := make([]uint64, 0, 30000)
	for range 20000 {
		hashes = append(hashes, rng.Uint64())
	}
	for range 10000 {
		// Copy one field onto another, so that candidates repeat.
		h := rng.Uint64()
		i, j := rng.IntN(7), rng.IntN(7)
		f := h >> (9 * i) & 511
		h = h&^(511<<(9*j)) | f<<(9*j)
		hashes = append(hashes, h)
	}
	ks := []uint{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, maxHashes}
	for _, k := range ks {
		b := layout.Bits{Words: hugepage.AlignedWords(32), M: 4 * BlockBits, K: k}
		for _, h2 := range hashes {
			want, firstK := ref(h2, k)
			if got := Mask(h2, k); got != want {
				t.Fatalf("k=%d h2=%#x: Mask %x, sequence %x", k, h2, got, want)
			}
			distinct := k <= 14
			seen := map[uint64]bool{}
			for _, q := range firstK {
				distinct = distinct && !seen[q]
				seen[q] = true
			}
			if _, ok := firstDistinct(h2, k); ok != distinct {
				t.Fatalf("k=%d h2=%#x: firstDistinct %v, want %v", k, h2, ok, distinct)
			}
			// Test on a block holding the key's bits but one, all of
			// them, and all of them plus random others.
			h1 := rng.Uint64()
			blk := Block(b.Words, b.M, h1)
			var rnd [8]uint64
			for i := range rnd {
				rnd[i] = rng.Uint64() & rng.Uint64()
			}
			drop := rng.IntN(int(k))
			for i := range blk {
				blk[i] = want[i]
			}
			for i, n := 0, 0; i < 8; i++ {
				for w := want[i]; w != 0; w &= w - 1 {
					if n == drop {
						blk[i] &^= w & -w
					}
					n++
				}
			}
			if Test(b.Words, b.M, b.K, h1, h2) {
				t.Fatalf("k=%d h2=%#x: Test true with a position clear", k, h2)
			}
			for i := range blk {
				blk[i] = rnd[i]
			}
			missing := false
			for i := range blk {
				missing = missing || want[i]&^rnd[i] != 0
			}
			if got := Test(b.Words, b.M, b.K, h1, h2); got != !missing {
				t.Fatalf("k=%d h2=%#x: Test %v on random bits, want %v", k, h2, got, !missing)
			}
			if present := Add(b.Words, b.M, b.K, h1, h2); present != !missing {
				t.Fatalf("k=%d h2=%#x: Add %v, want %v", k, h2, present, !missing)
			}
			for i := range blk {
				if blk[i] != rnd[i]|want[i] {
					t.Fatalf("k=%d h2=%#x: Add left word %d %#x, want %#x", k, h2, i, blk[i], rnd[i]|want[i])
				}
			}
			if !Test(b.Words, b.M, b.K, h1, h2) {
				t.Fatalf("k=%d h2=%#x: Test false after Add", k, h2)
			}
			clear(blk[:])
		}
	}
}

// TestBlockSeqMatchesMask: one walk of blockSeq gives Mask(h2, k) for every
// k, growing or not, which AnyHolds relies on to make all sub-filters'
// masks from one walk.
func TestBlockSeqMatchesMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	for range 2000 {
		h2 := rng.Uint64()
		seq := newBlockSeq(h2)
		for range 12 {
			k := uint(1 + rng.IntN(int(maxHashes)))
			if rng.IntN(2) == 0 {
				k = uint(1 + rng.IntN(20))
			}
			if got, want := *seq.maskOf(k), Mask(h2, k); got != want {
				t.Fatalf("h2 = %#x, k = %d: blockSeq gives %x, Mask %x", h2, k, got, want)
			}
		}
	}
	// Prefixes: the mask of k holds the mask of every smaller k.
	for k := uint(2); k <= maxHashes; k++ {
		a, b := Mask(0x1234567, k-1), Mask(0x1234567, k)
		for i := range a {
			if a[i]&^b[i] != 0 {
				t.Fatalf("Mask(k=%d) is not within Mask(k=%d)", k-1, k)
			}
		}
	}
}
