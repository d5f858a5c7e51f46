package format

import (
	"bytes"
	"encoding/base64"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"testing"

	"github.com/bloomfilters/bloom/internal/hugepage"
)

// encoding returns the encoding of a filter with header h and words.
func encoding(h Header, words []uint64) []byte {
	return Append(nil, h, words, false)
}

func sample(blocked bool) (Header, []uint64) {
	h := Header{Seed: 7, K: 3, M: 100, Capacity: 10, ErrorRate: 0.01, Count: 2}
	words := []uint64{0x8001, 1 << 35}
	if blocked {
		h.M, h.Blocked = 1024, true
		words = make([]uint64, 16)
		words[3], words[12] = 5, 1<<63
	}
	return h, words
}

// TestRoundTrip: Decode, Read and Write give back what Append wrote, for
// both layouts, and Write writes Append's bytes.
func TestRoundTrip(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		h, words := sample(blocked)
		enc := encoding(h, words)
		if uint64(len(enc)) != h.Size() {
			t.Fatalf("blocked %v: %d bytes, Size %d", blocked, len(enc), h.Size())
		}
		check := func(how string, g Header, w []uint64) {
			t.Helper()
			if g != h || len(w) != len(words) {
				t.Fatalf("blocked %v, %s: %+v with %d words, want %+v with %d", blocked, how, g, len(w), h, len(words))
			}
			for i := range w {
				if w[i] != words[i] {
					t.Fatalf("blocked %v, %s: word %d differs", blocked, how, i)
				}
			}
		}
		g, w, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		check("Decode", g, w)
		g, w, n, err := Read(bytes.NewReader(enc), nil)
		if err != nil || n != int64(len(enc)) {
			t.Fatalf("Read: %d bytes, %v", n, err)
		}
		check("Read", g, w)
		br := bytes.NewReader(enc) // which Holds trusts: the words in one slice
		g, w, n, err = Read(br, br)
		if err != nil || n != int64(len(enc)) {
			t.Fatalf("Read of a known size: %d bytes, %v", n, err)
		}
		check("Read of a known size", g, w)
		var buf bytes.Buffer
		if n, err := Write(&buf, h, words, true); err != nil || n != int64(len(enc)) || !bytes.Equal(buf.Bytes(), enc) {
			t.Fatalf("blocked %v: Write wrote %d bytes (%v), not Append's", blocked, n, err)
		}
	}
}

// TestDecodersFailClosed: every truncation is io.ErrUnexpectedEOF and every
// damage an error wrapping ErrCorrupt, in Decode and Read alike.
func TestDecodersFailClosed(t *testing.T) {
	h, words := sample(false)
	enc := encoding(h, words)
	for n := range len(enc) {
		if _, _, err := Decode(enc[:n]); err != io.ErrUnexpectedEOF {
			t.Fatalf("Decode of %d of %d bytes: %v", n, len(enc), err)
		}
		_, _, _, err := Read(bytes.NewReader(enc[:n]), nil)
		if want := io.ErrUnexpectedEOF; n == 0 {
			if err != want && err != io.EOF {
				t.Fatalf("Read of 0 bytes: %v", err)
			}
		} else if err != want {
			t.Fatalf("Read of %d of %d bytes: %v", n, len(enc), err)
		}
	}
	corrupt := func(name string, edit func(b []byte)) {
		b := bytes.Clone(enc)
		edit(b)
		if _, _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode %v", name, err)
		}
		if _, _, _, err := Read(bytes.NewReader(b), nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Read %v", name, err)
		}
	}
	corrupt("magic", func(b []byte) { b[0] = 'X' })
	corrupt("version", func(b []byte) { b[4] = 3 })
	corrupt("flags", func(b []byte) { b[6] = 1 })
	corrupt("k", func(b []byte) { b[12], b[13] = 0, 0 })
	corrupt("checksum", func(b []byte) { b[len(b)-1] ^= 1 })
	corrupt("bit", func(b []byte) { b[HeaderSize] ^= 4 })
	if _, _, err := Decode(append(bytes.Clone(enc), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v", err)
	}
	// Payload checks behind a valid checksum.
	for name, bad := range map[string]func() (Header, []uint64){
		"padding": func() (Header, []uint64) { h, w := sample(false); w[1] |= 1 << 40; return h, w },
		"count":   func() (Header, []uint64) { h, w := sample(false); h.Count = 4; return h, w },
	} {
		h, w := bad()
		if _, _, err := Decode(encoding(h, w)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode %v", name, err)
		}
	}
}

func TestParseHeaderLimits(t *testing.T) {
	for name, edit := range map[string]func(h *Header){
		"no bits":       func(h *Header) { h.M = 0 },
		"too many bits": func(h *Header) { h.M = MaxBits + 1 },
		"no hashes":     func(h *Header) { h.K = 0 },
		"many hashes":   func(h *Header) { h.K = MaxHashes + 1 },
		"capacity":      func(h *Header) { h.Capacity = 0 },
		"rate 0":        func(h *Header) { h.ErrorRate = 0 },
		"rate 1":        func(h *Header) { h.ErrorRate = 1 },
		"rate NaN":      func(h *Header) { h.ErrorRate = math.NaN() },
		"count":         func(h *Header) { h.Count = h.M + 1 },
		"blocked size":  func(h *Header) { h.Blocked, h.M = true, 1000 },
	} {
		h, _ := sample(false)
		edit(&h)
		if _, err := ParseHeader(AppendHeader(nil, h)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScalableHeader(t *testing.T) {
	h := ScalableHeader{Seed: 3, Growth: GrowthExponential, Scale: 1.5, Tightening: 0.9,
		InitialCapacity: 1000, ErrorRate: 0.01, Saturated: true, Blocked: true, N: 2}
	b := AppendScalableHeader(nil, h)
	if len(b) != ScalableHeaderSize {
		t.Fatalf("%d bytes", len(b))
	}
	if g, err := ParseScalableHeader(b); err != nil || g != h {
		t.Fatalf("%+v, %v", g, err)
	}
	for name, edit := range map[string]func(h *ScalableHeader){
		"growth":     func(h *ScalableHeader) { h.Growth = 3 },
		"scale":      func(h *ScalableHeader) { h.Scale = 1 },
		"tightening": func(h *ScalableHeader) { h.Tightening = 1 },
		"capacity":   func(h *ScalableHeader) { h.InitialCapacity = 0 },
		"rate":       func(h *ScalableHeader) { h.ErrorRate = 1 },
		"none":       func(h *ScalableHeader) { h.N = 0 },
		"too many":   func(h *ScalableHeader) { h.N = MaxSubFilters + 1 },
	} {
		g := h
		edit(&g)
		if _, err := ParseScalableHeader(AppendScalableHeader(nil, g)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSubFilterSizes(t *testing.T) {
	h, words := sample(false)
	sub := encoding(h, words)
	sh := ScalableHeader{Growth: GrowthLinear, Scale: 1, Tightening: 0.5, InitialCapacity: 10, ErrorRate: 0.1, N: 2}
	data := AppendScalableHeader(nil, sh)
	data = append(append(data, sub...), sub...)
	data = appendCRC(data)
	sizes, err := SubFilterSizes(data, 2)
	if err != nil || len(sizes) != 2 || sizes[0] != uint64(len(sub)) || sizes[1] != uint64(len(sub)) {
		t.Fatalf("%v, %v", sizes, err)
	}
	for n := ScalableHeaderSize; n < len(data); n++ {
		if _, err := SubFilterSizes(data[:n], 2); err != io.ErrUnexpectedEOF {
			t.Fatalf("%d of %d bytes: %v", n, len(data), err)
		}
	}
	data[len(data)-1] ^= 1
	if _, err := SubFilterSizes(data, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad checksum: %v", err)
	}
}

func TestDecodeText(t *testing.T) {
	h, words := sample(false)
	enc := encoding(h, words)
	text := []byte(base64.StdEncoding.EncodeToString(enc))
	parse := func(hdr []byte) (uint64, error) {
		h, err := ParseHeader(hdr)
		return h.Size(), err
	}
	if got, err := DecodeText(text, HeaderSize, parse); err != nil || !bytes.Equal(got, enc) {
		t.Fatalf("%v", err)
	}
	// A truncated text is io.ErrUnexpectedEOF, here or, for a text too
	// short to hold a header, in the binary decoder after it.
	for n := range len(text) {
		got, err := DecodeText(text[:n], HeaderSize, parse)
		if err == nil {
			_, _, err = Decode(got)
		}
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("%d of %d characters: %v", n, len(text), err)
		}
	}
	for name, bad := range map[string][]byte{
		"line break": append(bytes.Clone(text[:8]), append([]byte("\n"), text[8:]...)...),
		"not base64": append([]byte("!"), text[1:]...),
	} {
		if _, err := DecodeText(bad, HeaderSize, parse); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// appendCRC appends the CRC-32C of b to it.
func appendCRC(b []byte) []byte {
	var sum [CRCSize]byte
	c := crc32.Checksum(b, Castagnoli)
	sum[0], sum[1], sum[2], sum[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	return append(b, sum[:]...)
}

// TestReadLargeKnownSize: past one chunk of words, Read of an input that
// shows its size reads into one slice, aligned to a cache line for the
// blocked layout, and gives the same words as Read of a plain stream.
func TestReadLargeKnownSize(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		h := Header{Seed: 1, K: 5, M: 4 * readChunk * 64, Capacity: 1000, ErrorRate: 0.01, Blocked: blocked}
		words := make([]uint64, h.Words())
		for i := range words {
			words[i] = uint64(i) * 0x9E3779B97F4A7C15 & 0x0101010101010101
		}
		h.Count = 100
		enc := encoding(h, words)
		br := bytes.NewReader(enc)
		if !Holds(br, uint64(len(enc))) || Holds(br, uint64(len(enc))+1) {
			t.Fatal("Holds of a bytes.Reader is not its length")
		}
		_, known, _, err := Read(br, br)
		if err != nil {
			t.Fatal(err)
		}
		_, chunked, _, err := Read(io.MultiReader(bytes.NewReader(enc)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if blocked && !hugepage.IsAligned(known) {
			t.Error("blocked words read at a known size are not cache-line aligned")
		}
		for i := range words {
			if known[i] != words[i] || chunked[i] != words[i] {
				t.Fatalf("blocked %v: word %d differs", blocked, i)
			}
		}
	}
}
