package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

func randomWords(rng *rand.Rand, n int) []uint64 {
	w := make([]uint64, n)
	for i := range w {
		w[i] = rng.Uint64()
	}
	return w
}

// v3Filter returns a header and words for a classic filter of n words, all
// bits below m set at random, with the given section size.
func v3Filter(rng *rand.Rand, n int, section uint64) (V3Header, []uint64) {
	words := randomWords(rng, n)
	m := uint64(64*n) - uint64(rng.IntN(64))
	if r := m % 64; r != 0 {
		words[n-1] &= 1<<r - 1
	}
	return V3Header{Header: Header{Seed: 7, K: 3, M: m, Capacity: 10, ErrorRate: 0.01}, SectionSize: section}, words
}

// readers returns a reader of data that shows its size (so ReadV3 reads the
// words into one slice) and one that does not (chunks).
func readers(data []byte) map[string][2]io.Reader {
	known := bytes.NewReader(data)
	stream := struct{ io.Reader }{bytes.NewReader(data)}
	return map[string][2]io.Reader{"known": {known, known}, "stream": {stream, stream}}
}

// TestV3RoundTrip writes filters of many sizes with many section sizes and
// reads them back every way: DecodeV3, ReadV3 from a reader that shows its
// size and from one that does not, CheckV3 without the body.
func TestV3RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		n := 1 + rng.IntN(3000)
		section := uint64(64) << rng.IntN(8)
		h, words := v3Filter(rng, n, section)
		enc := AppendV3(nil, h, words, rng.IntN(2) == 0)
		if uint64(len(enc)) != h.Size() {
			t.Fatalf("%d words, sections of %d: %d bytes, Size says %d", n, section, len(enc), h.Size())
		}
		var w bytes.Buffer
		if got, err := WriteV3(&w, h, words, false); err != nil || got != int64(len(enc)) || !bytes.Equal(w.Bytes(), enc) {
			t.Fatalf("%d words, sections of %d: WriteV3 differs from AppendV3 (%d bytes, %v)", n, section, got, err)
		}
		gh, gw, err := DecodeV3(enc)
		if err != nil || gh != h || !equalWords(gw, words) {
			t.Fatalf("%d words, sections of %d: DecodeV3: %v", n, section, err)
		}
		for name, r := range readers(append(bytes.Clone(enc), "tail"...)) {
			rh, rw, read, err := ReadV3(r[0], r[1], nil)
			if err != nil || rh != h || !equalWords(rw, words) || read != int64(len(enc)) {
				t.Fatalf("%d words, sections of %d, %s: ReadV3: %v, %d bytes read", n, section, name, err, read)
			}
		}
		if _, err := CheckV3(enc, false); err != nil {
			t.Fatalf("CheckV3: %v", err)
		}
	}
	if V3Size(1) != V3HeaderSize+8+4 || V3Size(64*(1<<17)+1) != V3HeaderSize+8*(1<<17+1)+4*2 {
		t.Errorf("V3Size: %d, %d", V3Size(1), V3Size(64*(1<<17)+1))
	}
}

func equalWords(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestV3FlippedBitNamesItsSection flips one bit in every section of the
// words, and in the header and the table, and checks that every reader
// refuses it, the words' by the section's number; truncations are
// io.ErrUnexpectedEOF.
func TestV3FlippedBitNamesItsSection(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	h, words := v3Filter(rng, 1000, 256)
	enc := AppendV3(nil, h, words, false)
	for sec := range int(h.Sections()) {
		bit := (sec*256 + rng.IntN(min(256, 8000-sec*256))) * 8
		bit += rng.IntN(8)
		bad := bytes.Clone(enc)
		bad[V3HeaderSize+bit/8] ^= 1 << (bit % 8)
		want := fmt.Sprintf("section %d ", sec)
		for name, err := range v3Errors(bad) {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
				t.Fatalf("bit %d of the words flipped: %s: %v, want the %s", bit, name, err, want)
			}
		}
	}
	for i := range 8 * V3HeaderSize {
		bad := bytes.Clone(enc)
		bad[i/8] ^= 1 << (i % 8)
		for name, err := range v3Errors(bad) {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("header bit %d flipped: %s: %v", i, name, err)
			}
		}
	}
	for i := len(enc) - 4*int(h.Sections()); i < len(enc); i++ {
		bad := bytes.Clone(enc)
		bad[i] ^= 0x10
		for name, err := range v3Errors(bad) {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("table byte %d damaged: %s: %v", i, name, err)
			}
		}
	}
	for n := range len(enc) {
		for name, err := range v3Errors(enc[:n]) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("truncated to %d bytes: %s: %v", n, name, err)
			}
		}
	}
}

// v3Errors returns what each reader of a BloomFilter's encoding says of data.
func v3Errors(data []byte) map[string]error {
	_, err1 := CheckV3(data, true)
	_, _, err2 := DecodeV3(data)
	rs := readers(data)
	_, _, _, err3 := ReadV3(rs["known"][0], rs["known"][1], nil)
	_, _, _, err4 := ReadV3(rs["stream"][0], rs["stream"][1], nil)
	h, err5 := CheckV3(data, false)
	if err5 == nil {
		err5 = VerifyV3(data, h, 0) // on every core
	}
	return map[string]error{"CheckV3": err1, "DecodeV3": err2, "ReadV3 known": err3, "ReadV3 stream": err4, "VerifyV3 parallel": err5}
}

// TestVerifyV3ParallelFindsFirst damages two sections of a filter checked
// on several goroutines: the error names the first.
func TestVerifyV3ParallelFindsFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	h, words := v3Filter(rng, 1<<16, 1024) // 512 sections
	enc := AppendV3(nil, h, words, false)
	for range 20 {
		a, b := rng.IntN(512), rng.IntN(512)
		bad := bytes.Clone(enc)
		bad[V3HeaderSize+a*1024+rng.IntN(1024)] ^= 4
		bad[V3HeaderSize+b*1024+rng.IntN(1024)] ^= 8
		err := VerifyV3(bad, h, 0)
		if want := fmt.Sprintf("section %d ", min(a, b)); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("sections %d and %d damaged: %v, want the %s", a, b, err, want)
		}
	}
	if err := VerifyV3(enc, h, 0); err != nil {
		t.Fatal(err)
	}
}

// TestV3ScalableWalk lays out a scalable filter's encoding and walks it.
func TestV3ScalableWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	var subs [][]byte
	var sizes []uint64
	for i := range 5 {
		h, words := v3Filter(rng, 1+rng.IntN(50)*i, V3SectionSize)
		subs = append(subs, AppendV3(nil, h, words, false))
		sizes = append(sizes, h.Size())
	}
	offsets, total := V3ScalableOffsets(sizes)
	hdr := V3ScalableHeader{ScalableHeader: ScalableHeader{Seed: 7, Growth: 2, Scale: 2, Tightening: 0.5, InitialCapacity: 10, ErrorRate: 0.01, N: len(subs)}}
	enc := AppendV3ScalableHeader(nil, hdr, offsets)
	for i, sub := range subs {
		if offsets[i]%V3Align != 0 {
			t.Fatalf("sub-filter %d at %d", i, offsets[i])
		}
		enc = append(enc, make([]byte, int(offsets[i])-len(enc))...)
		enc = append(enc, sub...)
	}
	if uint64(len(enc)) != total {
		t.Fatalf("%d bytes, V3ScalableOffsets says %d", len(enc), total)
	}
	gh, gsubs, err := WalkV3Scalable(enc)
	if err != nil || gh.N != len(subs) || gh.Seed != 7 || gh.Scale != 2 {
		t.Fatalf("WalkV3Scalable: %v, %+v", err, gh)
	}
	for i, s := range gsubs {
		if s.Off != offsets[i] || !bytes.Equal(enc[s.Off:s.Off+s.H.Size()], subs[i]) {
			t.Fatalf("sub-filter %d: at %d, want %d", i, s.Off, offsets[i])
		}
	}
	// Damage in the padding, a truncation, a trailing byte.
	pad := int(offsets[1]) - 1
	if offsets[1] == uint64(len(subs[0]))+offsets[0] {
		t.Fatal("no padding after sub-filter 0 to damage")
	}
	bad := bytes.Clone(enc)
	bad[pad] = 1
	if _, _, err := WalkV3Scalable(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("non-zero padding: %v", err)
	}
	for n := range len(enc) {
		if _, _, err := WalkV3Scalable(enc[:n]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if _, _, err := WalkV3Scalable(append(bytes.Clone(enc), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v", err)
	}
	// The table read from a stream agrees.
	r := bytes.NewReader(enc[V3HeaderSize:])
	got, read, err := ReadV3Table(r, gh)
	if err != nil || !equalWords(got, offsets) || read != int64(offsets[0]-V3HeaderSize) {
		t.Errorf("ReadV3Table: %v, %v, %d bytes", got, err, read)
	}
}

// BenchmarkVerifyV3 checks the section checksums of a 256 MiB filter in
// memory, the body check of a View, on one goroutine and on GOMAXPROCS of
// them, and reports GB/s (of the bits; the CRC-32C of package hash/crc32
// uses SSE4.2 or AVX-512 on amd64):
//
//	go test -run X -bench VerifyV3 -count 5 ./internal/format
func BenchmarkVerifyV3(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	h, words := v3Filter(rng, 256<<20/8, V3SectionSize)
	enc := AppendV3(nil, h, words, true)
	for _, parallel := range []uint64{math.MaxUint64, ParallelMin} {
		name := "serial"
		if parallel == ParallelMin {
			name = fmt.Sprintf("parallel-%d", runtime.GOMAXPROCS(0))
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(8 * len(words)))
			for range b.N {
				if err := VerifyV3(enc, h, parallel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
