package bloom

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// state is a program's state holding filters, as issue 13 found it: it
// marshaled to {"Seen":{}} and the first Test after unmarshaling panicked.
type state struct {
	Seen  *BloomFilter
	Grown *ScalableBloomFilter
	Value BloomFilter
	Pages int
}

func newState(t *testing.T) state {
	seen := mustNew(t, 1000, 0.01)
	grown, err := NewScalable(10, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		seen.AddString(strings.Repeat("k", i))
		grown.AddString(strings.Repeat("k", i))
	}
	value := mustNew(t, 50, 0.001, Seed(7))
	value.AddString("v")
	return state{Seen: seen, Grown: grown, Value: *value, Pages: 3}
}

func TestJSONRoundTrip(t *testing.T) {
	in := newState(t)
	for name, v := range map[string]any{"pointer": &in, "value": in} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Contains(data, []byte("{}")) {
			t.Fatalf("%s: a filter marshaled to {}: %s", name, data[:min(len(data), 200)])
		}
		var out state
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.Seen == nil || !out.Seen.Equal(in.Seen) || out.Grown == nil || !out.Grown.Equal(in.Grown) ||
			!out.Value.Equal(&in.Value) || out.Pages != 3 {
			t.Fatalf("%s: round trip changed the state", name)
		}
		if !out.Seen.TestString("kkk") || !out.Grown.TestString("kkk") || !out.Value.TestString("v") {
			t.Errorf("%s: false negative after the round trip", name)
		}
	}

	// The field's string is the base64 of MarshalBinary.
	bin, _ := in.Seen.MarshalBinary()
	var fields map[string]any
	data, _ := json.Marshal(in)
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["Seen"] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("Seen is %.40v..., want the base64 of MarshalBinary", fields["Seen"])
	}

	// A zero filter fails loudly, like MarshalBinary.
	if _, err := json.Marshal(state{}); err == nil {
		t.Error("a state with a zero BloomFilter marshaled without error")
	}

	// Decoding into Concurrent filters keeps them concurrent.
	out := state{Seen: mustNew(t, 1, 0.5, Concurrent())}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Seen.conc == nil || !out.Seen.Equal(in.Seen) {
		t.Error("UnmarshalText into a Concurrent filter: not concurrent or not equal")
	}
}

func TestXMLRoundTrip(t *testing.T) {
	in := newState(t)
	data, err := xml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out state
	if err := xml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Seen.Equal(in.Seen) || !out.Grown.Equal(in.Grown) || !out.Value.Equal(&in.Value) {
		t.Error("XML round trip changed the state")
	}
}

// TestUnmarshalTextErrors: every truncation, a damaged byte, other kinds of
// encodings, line breaks and non-base64 text are errors that leave the
// receiver unchanged.
func TestUnmarshalTextErrors(t *testing.T) {
	in := newState(t)
	plain, _ := in.Seen.MarshalText()
	scalable, _ := in.Grown.MarshalText()
	for _, tc := range []struct {
		name   string
		text   []byte
		decode func(f *BloomFilter, s *ScalableBloomFilter, text []byte) error
	}{
		{"plain", plain, func(f *BloomFilter, _ *ScalableBloomFilter, text []byte) error { return f.UnmarshalText(text) }},
		{"scalable", scalable, func(_ *BloomFilter, s *ScalableBloomFilter, text []byte) error { return s.UnmarshalText(text) }},
	} {
		f, s := mustNew(t, 10, 0.1), mustNewScalable(t, 10, 0.1)
		f.AddString("before")
		s.AddString("before")
		f0, s0 := f.Clone(), s.Clone()
		check := func(what string, err, want error) {
			t.Helper()
			ok := errors.Is(err, want)
			if want == nil { // corrupt or short
				ok = errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF)
			}
			if !ok {
				t.Errorf("%s %s: %v, want %v", tc.name, what, err, want)
			}
			if !f.Equal(f0) || !s.Equal(s0) {
				t.Fatalf("%s %s: the receiver changed on error", tc.name, what)
			}
		}
		for n := range len(tc.text) {
			check("truncated", tc.decode(f, s, tc.text[:n]), io.ErrUnexpectedEOF)
		}
		for _, i := range []int{0, 10, 70, 100, len(tc.text) - 5} {
			bad := bytes.Clone(tc.text)
			bad[i] ^= 'A' ^ 'B'
			if bad[i] == tc.text[i] || bad[i] == '=' {
				continue
			}
			// A damaged size field may also make the text look short.
			check("damaged", tc.decode(f, s, bad), nil)
		}
		wrapped := append(bytes.Clone(tc.text[:76]), '\n')
		check("line break", tc.decode(f, s, append(wrapped, tc.text[76:]...)), ErrCorrupt)
		check("not base64", tc.decode(f, s, append([]byte("!"), tc.text[1:]...)), ErrCorrupt)
		check("trailing", tc.decode(f, s, append(bytes.Clone(tc.text), "AAAA"...)), ErrCorrupt)
		other := scalable
		if tc.name == "scalable" {
			other = plain
		}
		check("other kind", tc.decode(f, s, other), ErrCorrupt)
		if err := tc.decode(f, s, tc.text); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestUnmarshalTextHostileHeader: a short text whose header claims MaxBits
// bits is refused before anything the size of the claim is allocated.
func TestUnmarshalTextHostileHeader(t *testing.T) {
	f := mustNewWithSize(t, 64, 1)
	data, _ := f.MarshalBinary()
	binary.LittleEndian.PutUint64(data[16:], MaxBits)
	text := []byte(base64.StdEncoding.EncodeToString(data))
	var g BloomFilter
	var err error
	if n := allocated(func() { err = g.UnmarshalText(text) }); n > 4096 {
		t.Errorf("allocated %d bytes for a %d-byte text", n, len(text))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("UnmarshalText = %v, want io.ErrUnexpectedEOF", err)
	}
}

func mustNewScalable(t testing.TB, n uint64, p float64, opts ...Option) *ScalableBloomFilter {
	t.Helper()
	s, err := NewScalable(n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzUnmarshalText: any text either decodes to a filter whose MarshalText
// gives it back, or is an error that leaves the receiver unchanged; never a
// panic.
func FuzzUnmarshalText(f *testing.F) {
	for _, n := range []uint64{1, 10, 1000} {
		g, _ := New(n, 0.01)
		g.AddString("a")
		text, _ := g.MarshalText()
		f.Add(text)
		f.Add(text[:len(text)/2])
	}
	f.Add([]byte("QkxNRg=="))
	f.Fuzz(func(t *testing.T, text []byte) {
		g, _ := NewWithSize(10, 2)
		before := g.Clone()
		if err := g.UnmarshalText(text); err != nil {
			if !g.Equal(before) {
				t.Fatal("receiver changed on error")
			}
			return
		}
		again, err := g.MarshalText()
		if err != nil || !bytes.Equal(again, text) {
			t.Fatalf("decoded text does not encode back: %v", err)
		}
	})
}

// FuzzScalableUnmarshalText is FuzzUnmarshalText for ScalableBloomFilter.
func FuzzScalableUnmarshalText(f *testing.F) {
	for _, n := range []int{1, 30, 300} {
		s, _ := NewScalable(10, 0.01)
		for i := range n {
			s.AddString(strings.Repeat("x", i))
		}
		text, _ := s.MarshalText()
		f.Add(text)
		f.Add(text[:len(text)-7])
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		s, _ := NewScalable(2, 0.1)
		before := s.Clone()
		if err := s.UnmarshalText(text); err != nil {
			if !s.Equal(before) {
				t.Fatal("receiver changed on error")
			}
			return
		}
		again, err := s.MarshalText()
		if err != nil || !bytes.Equal(again, text) {
			t.Fatalf("decoded text does not encode back: %v", err)
		}
	})
}
