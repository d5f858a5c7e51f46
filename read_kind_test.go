package bloom

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/window"
)

// TestReadOtherKind: a reader given the encoding of another kind of filter
// says which kind the input holds and which functions read it, in an error
// that still wraps ErrCorrupt, for every reader and decoder of each kind
// and every format version. Before, each said only "bad magic" and the
// four bytes (`bad magic "BLMS"`).
func TestReadOtherKind(t *testing.T) {
	f := mustNew(t, 100, 0.01)
	s := mustScalable(t, 100, 0.01)
	w, err := NewWindow(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{[]byte("a"), []byte("b")} {
		f.Add(k)
		s.Add(k)
		w.Add(k)
	}
	v1 := func(name string) []byte {
		b, err := os.ReadFile("testdata/v1/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// kind -> the encodings of a filter of that kind, and the readers that
	// the error must name.
	encodings := map[string][][]byte{
		"BloomFilter":         {mustMarshal(t, f), v1("plain-n1000-p0.01.bin")},
		"ScalableBloomFilter": {mustMarshal(t, s), v1("scalable-n1000-p0.01.bin")},
		"WindowFilter":        {mustMarshal(t, w)},
	}
	names := map[string]string{"BloomFilter": "Read", "ScalableBloomFilter": "ReadScalable", "WindowFilter": "ReadWindow"}
	readers := map[string]map[string]func([]byte) error{
		"BloomFilter": {
			"Read":            func(b []byte) error { _, err := Read(bytes.NewReader(b)); return err },
			"ReadFrom":        func(b []byte) error { _, err := new(BloomFilter).ReadFrom(bytes.NewReader(b)); return err },
			"UnmarshalBinary": func(b []byte) error { return new(BloomFilter).UnmarshalBinary(b) },
		},
		"ScalableBloomFilter": {
			"ReadScalable":    func(b []byte) error { _, err := ReadScalable(bytes.NewReader(b)); return err },
			"ReadFrom":        func(b []byte) error { _, err := new(ScalableBloomFilter).ReadFrom(bytes.NewReader(b)); return err },
			"UnmarshalBinary": func(b []byte) error { return new(ScalableBloomFilter).UnmarshalBinary(b) },
		},
		"WindowFilter": {
			"ReadWindow":      func(b []byte) error { _, err := ReadWindow(bytes.NewReader(b)); return err },
			"ReadFrom":        func(b []byte) error { _, err := new(WindowFilter).ReadFrom(bytes.NewReader(b)); return err },
			"UnmarshalBinary": func(b []byte) error { return new(WindowFilter).UnmarshalBinary(b) },
		},
	}
	for want, rs := range readers {
		for holds, encs := range encodings {
			if holds == want {
				continue
			}
			for i, enc := range encs {
				for rname, read := range rs {
					name := want + "." + rname + " of a " + holds + "'s encoding " + string(rune('0'+i))
					err := read(enc)
					if !errors.Is(err, ErrCorrupt) {
						t.Errorf("%s: %v, want an error wrapping ErrCorrupt", name, err)
						continue
					}
					msg := err.Error()
					for _, s := range []string{"holds a " + holds + ", not a " + want, names[holds], "ReadAny"} {
						if !strings.Contains(msg, s) {
							t.Errorf("%s: %q does not say %q", name, msg, s)
						}
					}
					if strings.Contains(msg, "bad magic") {
						t.Errorf("%s: %q still speaks of a bad magic", name, msg)
					}
				}
			}
		}
	}
	// Bytes of no kind keep the plain error.
	junk := bytes.Repeat([]byte("XXXX"), 32)
	for want, rs := range readers {
		for rname, read := range rs {
			if err := read(junk); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `bad magic "XXXX"`) {
				t.Errorf("%s.%s of junk: %v, want bad magic", want, rname, err)
			}
		}
	}
	if window.Magic != format.WindowMagic {
		t.Errorf("window.Magic %q, format.WindowMagic %q", window.Magic, format.WindowMagic)
	}
}
