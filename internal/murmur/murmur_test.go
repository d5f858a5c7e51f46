package murmur

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/spaolacci/murmur3"
)

// spaolacci/murmur3 is the reference: the library hashed with its
// Sum128WithSeed before, and the golden vectors of the root package were
// computed with it.

func check(t *testing.T, key []byte, seed uint32) {
	t.Helper()
	g1, g2 := Sum128(key, seed)
	w1, w2 := murmur3.Sum128WithSeed(key, seed)
	if g1 != w1 || g2 != w2 {
		t.Fatalf("Sum128(%x, %#x) = %#x, %#x; spaolacci/murmur3: %#x, %#x", key, seed, g1, g2, w1, w2)
	}
	if p1, p2 := pieces(key, seed); p1 != w1 || p2 != w2 {
		t.Fatalf("Blocks, Tail, Finish of (%x, %#x) = %#x, %#x; spaolacci/murmur3: %#x, %#x", key, seed, p1, p2, w1, w2)
	}
}

// pieces is Sum128 from Blocks, Tail and Finish, as the root package's
// single-key calls write it out.
func pieces(key []byte, seed uint32) (uint64, uint64) {
	h1, h2 := Blocks(key, seed)
	if len(key)%16 != 0 {
		h1, h2 = Tail(h1, h2, key)
	}
	return Finish(h1, h2, len(key))
}

func TestSum128MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	buf := make([]byte, 320)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, seed := range []uint32{0, 1, 0x5eed, 0xdeadbeef, ^uint32(0)} {
		for n := 0; n <= 300; n++ {
			check(t, buf[:n], seed)
			// At an odd offset too, so that no load relies on alignment.
			check(t, buf[3:3+n], seed)
		}
	}
	for range 10000 {
		n := rng.IntN(200)
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		check(t, key, rng.Uint32())
	}
	check(t, nil, 7)
}

// TestSum128KnownValues pins values from the reference C++ implementation
// (MurmurHash3_x64_128), independent of any Go package.
func TestSum128KnownValues(t *testing.T) {
	for _, tt := range []struct {
		key    string
		seed   uint32
		h1, h2 uint64
	}{
		{"", 0, 0, 0},
		{"hello", 0, 0xcbd8a7b341bd9b02, 0x5b1e906a48ae1d19},
		{"The quick brown fox jumps over the lazy dog", 0, 0xe34bbc7bbc071b6c, 0x7a433ca9c49a9347},
	} {
		h1, h2 := Sum128([]byte(tt.key), tt.seed)
		if h1 != tt.h1 || h2 != tt.h2 {
			t.Errorf("Sum128(%q, %d) = %#x, %#x, want %#x, %#x", tt.key, tt.seed, h1, h2, tt.h1, tt.h2)
		}
	}
}

func TestSum128DoesNotAllocate(t *testing.T) {
	key := []byte("https://www.example.com/articles/1f3a9c/000123457?p=3a4")
	if a := testing.AllocsPerRun(100, func() { Sum128(key, 1) }); a != 0 {
		t.Errorf("Sum128 allocates %v times per call", a)
	}
}

func FuzzSum128(f *testing.F) {
	f.Add([]byte(""), uint32(0))
	f.Add([]byte("hello"), uint32(1))
	f.Add([]byte("0123456789abcdef0123456789abcdef0"), uint32(0x5eed))
	f.Fuzz(func(t *testing.T, key []byte, seed uint32) {
		check(t, key, seed)
	})
}

func BenchmarkSum128(b *testing.B) {
	for _, n := range []int{16, 60} {
		key := make([]byte, n)
		b.Run("murmur/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				key[0] = byte(i)
				sink, _ = Sum128(key, 1)
			}
		})
		b.Run("spaolacci/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				key[0] = byte(i)
				sink, _ = murmur3.Sum128WithSeed(key, 1)
			}
		})
	}
}

var sink uint64
