package bloom

import (
	"errors"
	"math"
	"testing"
)

// TestFromWords round-trips filters through Header, AppendWords and
// FromWords, plain and concurrent, and checks that FromWords copies.
func TestFromWords(t *testing.T) {
	for _, opts := range [][]Option{nil, {Concurrent()}} {
		for _, bitsN := range []uint64{1, 63, 64, 65, 1000, 4096} {
			f := mustNewWithSize(t, bitsN, 3, append([]Option{Seed(99)}, opts...)...)
			for i := range bitsN / 4 {
				f.AddString(string(rune('a' + i%26)))
			}
			h := f.Header()
			prefix := []uint64{42}
			words := f.AppendWords(prefix)
			if words[0] != 42 || len(words) != 1+int((bitsN+63)/64) {
				t.Fatalf("AppendWords: %d words, first %d", len(words), words[0])
			}
			g, err := FromWords(h, words[1:], opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !g.Equal(f) || (g.conc != nil) != (opts != nil) {
				t.Fatalf("%d bits: FromWords(Header, AppendWords) is not Equal", bitsN)
			}
			clear(words)
			if !g.Equal(f) {
				t.Fatalf("FromWords kept the caller's words")
			}
			w := g.AppendWords(nil)
			w[0] = math.MaxUint64 >> (64 - min(bitsN, 64))
			if !g.Equal(f) {
				t.Fatalf("AppendWords handed out the filter's words")
			}
		}
	}
	var zero BloomFilter
	if zero.Header() != (Header{}) || len(zero.AppendWords(nil)) != 0 {
		t.Errorf("zero value: Header %+v", zero.Header())
	}
}

// TestFromWordsErrors: every invalid field is refused before allocating.
func TestFromWordsErrors(t *testing.T) {
	f := mustNewWithSize(t, 100, 3)
	f.AddString("a")
	good, words := f.Header(), f.AppendWords(nil)
	if _, err := FromWords(good, words, Seed(good.Seed)); err != nil {
		t.Fatalf("agreeing Seed: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Header) []uint64
		opts  []Option
		wants error
	}{
		{"bits 0", func(h *Header) []uint64 { h.Bits = 0; return nil }, nil, ErrInvalidParameter},
		{"bits > MaxBits", func(h *Header) []uint64 { h.Bits = MaxBits + 1; return words }, nil, ErrInvalidParameter},
		{"hashes 0", func(h *Header) []uint64 { h.Hashes = 0; return words }, nil, ErrInvalidParameter},
		{"hashes 65", func(h *Header) []uint64 { h.Hashes = 65; return words }, nil, ErrInvalidParameter},
		{"capacity 0", func(h *Header) []uint64 { h.Capacity = 0; return words }, nil, ErrInvalidParameter},
		{"rate 0", func(h *Header) []uint64 { h.ErrorRate = 0; return words }, nil, ErrInvalidParameter},
		{"rate 1", func(h *Header) []uint64 { h.ErrorRate = 1; return words }, nil, ErrInvalidParameter},
		{"rate NaN", func(h *Header) []uint64 { h.ErrorRate = math.NaN(); return words }, nil, ErrInvalidParameter},
		{"short words", func(h *Header) []uint64 { return words[:1] }, nil, ErrInvalidParameter},
		{"long words", func(h *Header) []uint64 { return append(append([]uint64{}, words...), 0) }, nil, ErrInvalidParameter},
		{"padding bit", func(h *Header) []uint64 {
			w := append([]uint64{}, words...)
			w[1] |= 1 << 63
			return w
		}, nil, ErrInvalidParameter},
		{"count above set bits", func(h *Header) []uint64 { h.Count = 4; return words }, nil, ErrInvalidParameter},
		{"contradicting Seed", func(h *Header) []uint64 { return words }, []Option{Seed(1)}, ErrInvalidParameter},
		{"growth option", func(h *Header) []uint64 { return words }, []Option{Linear(1)}, ErrInvalidParameter},
	} {
		h := good
		w := tc.edit(&h)
		g, err := FromWords(h, w, tc.opts...)
		if g != nil || !errors.Is(err, tc.wants) {
			t.Errorf("%s: FromWords = %v, %v", tc.name, g, err)
		}
	}
}
