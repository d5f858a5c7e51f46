package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadConcurrent is issue 13 item 2: a decoded filter can be made
// Concurrent, and is then exactly-once under racing TestAndAdd.
func TestReadConcurrent(t *testing.T) {
	f := mustNew(t, 20_000, 1e-9, Seed(5))
	f.AddString("saved")
	var buf bytes.Buffer
	f.WriteTo(&buf)
	g, err := Read(&buf, Concurrent(), Seed(5))
	if err != nil {
		t.Fatal(err)
	}
	if g.conc == nil || !g.Equal(f) {
		t.Fatalf("Read(Concurrent): concurrent %v, equal %v", g.conc != nil, g.Equal(f))
	}
	if !g.TestString("saved") {
		t.Fatal("false negative")
	}
	g.Clear()
	exactlyOnce(t, g, 5000)

	s := mustNewScalable(t, 100, 1e-6, Linear(2), Tightening(0.5))
	for i := range 1000 {
		s.AddString(strings.Repeat("s", i))
	}
	s.WriteTo(&buf)
	sg, err := ReadScalable(&buf, Concurrent(), Linear(2), Tightening(0.5))
	if err != nil {
		t.Fatal(err)
	}
	if sg.conc == nil || !sg.Equal(s) {
		t.Fatalf("ReadScalable(Concurrent): concurrent %v, equal %v", sg.conc != nil, sg.Equal(s))
	}
	exactlyOnceScalable(t, sg)

	plain, err := Read(bytes.NewReader(mustMarshal(t, f)))
	if err != nil || plain.conc != nil || !plain.Equal(f) {
		t.Fatalf("Read without options: %v", err)
	}
}

// exactlyOnceScalable races TestAndAdd on new keys on a concurrent s.
func exactlyOnceScalable(t *testing.T, s *ScalableBloomFilter) {
	t.Helper()
	before := s.Count()
	const keys = 3000
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			if !s.TestAndAdd(keyOf(buf, 7, uint64(i))) {
				news[g][i]++
			}
		}
	})
	total := 0
	for i := range keys {
		var n int32
		for g := range news {
			n += news[g][i]
		}
		if n > 1 {
			t.Fatalf("key %d reported new %d times", i, n)
		}
		total += int(n)
	}
	if got := s.Count() - before; got != uint64(total) {
		t.Errorf("Count grew by %d, %d keys reported new", got, total)
	}
}

func mustMarshal(t *testing.T, f interface{ MarshalBinary() ([]byte, error) }) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadOptions: options that contradict the encoding are errors, those
// that agree are not, and invalid options are refused before reading.
func TestReadOptions(t *testing.T) {
	f := mustNew(t, 100, 0.01, Seed(3))
	s := mustNewScalable(t, 100, 0.01, Exponential(2), Seed(3))
	pb, sb := mustMarshal(t, f), mustMarshal(t, s)
	for _, tc := range []struct {
		name string
		read func(r io.Reader) error
		ok   bool
	}{
		{"Read Seed agrees", func(r io.Reader) error { _, err := Read(r, Seed(3)); return err }, true},
		{"Read Seed contradicts", func(r io.Reader) error { _, err := Read(r, Seed(4)); return err }, false},
		{"Read Linear", func(r io.Reader) error { _, err := Read(r, Linear(1)); return err }, false},
		{"Read Tightening", func(r io.Reader) error { _, err := Read(r, Tightening(0.9)); return err }, false},
		{"ReadAny plain Exponential", func(r io.Reader) error { _, err := ReadAny(r, Exponential(2)); return err }, false},
		{"ReadAny plain Seed contradicts", func(r io.Reader) error { _, err := ReadAny(r, Seed(4)); return err }, false},
	} {
		err := tc.read(bytes.NewReader(pb))
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		opts []Option
		ok   bool
	}{
		{"agreeing", []Option{Seed(3), Exponential(2), Tightening(DefaultTightening), Concurrent()}, true},
		{"Seed", []Option{Seed(4)}, false},
		{"Exponential scale", []Option{Exponential(3)}, false},
		{"Linear", []Option{Linear(2)}, false},
		{"Tightening", []Option{Tightening(0.8)}, false},
	} {
		for name, read := range map[string]func(r io.Reader) error{
			"ReadScalable": func(r io.Reader) error { _, err := ReadScalable(r, tc.opts...); return err },
			"ReadAny":      func(r io.Reader) error { _, err := ReadAny(r, tc.opts...); return err },
		} {
			err := read(bytes.NewReader(sb))
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidParameter)) {
				t.Errorf("%s %s: %v", name, tc.name, err)
			}
		}
	}
	// Invalid options: nothing is read.
	r := bytes.NewReader(pb)
	if _, err := Read(r, Option{}); !errors.Is(err, ErrInvalidParameter) || r.Len() != len(pb) {
		t.Errorf("Read with a zero Option: %v, read %d bytes", err, len(pb)-r.Len())
	}
	if _, err := ReadScalable(r, Linear(1), Exponential(2)); !errors.Is(err, ErrInvalidParameter) || r.Len() != len(pb) {
		t.Errorf("ReadScalable with two growth options: %v", err)
	}
	if _, err := Read(bytes.NewReader(sb)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Read of a scalable encoding: %v", err)
	}
	if _, err := ReadScalable(bytes.NewReader(pb)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadScalable of a plain encoding: %v", err)
	}
}

// TestReadAnyStream reads a stream of filters of both kinds until io.EOF:
// each is of its kind, equal to what was written, and nothing past the last
// is read.
func TestReadAnyStream(t *testing.T) {
	want := []Filter{mustNew(t, 10, 0.1), mustNewScalable(t, 5, 0.01), mustNew(t, 1000, 1e-6, Seed(9))}
	for i, f := range want {
		for j := range 20 * (i + 1) {
			f.AddString(strings.Repeat("a", j))
		}
	}
	var stream bytes.Buffer
	for _, f := range want {
		f.WriteTo(&stream)
	}
	var got []Filter
	for {
		f, err := ReadAny(&stream, Concurrent())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d filters, want %d", len(got), len(want))
	}
	for i := range want {
		switch w := want[i].(type) {
		case *BloomFilter:
			g, ok := got[i].(*BloomFilter)
			if !ok || !g.Equal(w) || g.conc == nil {
				t.Errorf("filter %d: %T, not equal or not concurrent", i, got[i])
			}
		case *ScalableBloomFilter:
			g, ok := got[i].(*ScalableBloomFilter)
			if !ok || !g.Equal(w) || g.conc == nil {
				t.Errorf("filter %d: %T, not equal or not concurrent", i, got[i])
			}
		}
	}
	stream.WriteString("tail")
	want[0].WriteTo(&stream)
	stream.WriteString("tail")
	if _, err := ReadAny(&stream); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad magic: %v", err)
	}
	if f, err := ReadAny(&stream); err != nil || !f.(*BloomFilter).Equal(want[0].(*BloomFilter)) || stream.String() != "tail" {
		t.Errorf("ReadAny read past the filter: %v, left %q", err, stream.String())
	}
}

// TestReadTruncated: every truncation of either encoding is
// io.ErrUnexpectedEOF from all three readers (io.EOF when empty), with a nil
// result, never a panic.
func TestReadTruncated(t *testing.T) {
	f := mustNew(t, 100, 0.01)
	f.AddString("x")
	s := mustNewScalable(t, 3, 0.01)
	for i := range 20 {
		s.AddString(strings.Repeat("y", i))
	}
	for _, enc := range [][]byte{mustMarshal(t, f), mustMarshal(t, s)} {
		scalable := string(enc[:4]) == scalableMagic
		for n := range len(enc) {
			want := io.ErrUnexpectedEOF
			if n == 0 {
				want = io.EOF
			}
			a, err := ReadAny(bytes.NewReader(enc[:n]))
			if a != nil || err != want {
				t.Fatalf("ReadAny of %d bytes: %v, %v", n, a, err)
			}
			if scalable {
				g, err := ReadScalable(bytes.NewReader(enc[:n]))
				if g != nil || err != want {
					t.Fatalf("ReadScalable of %d bytes: %v", n, err)
				}
			} else {
				g, err := Read(bytes.NewReader(enc[:n]))
				if g != nil || err != want {
					t.Fatalf("Read of %d bytes: %v", n, err)
				}
			}
		}
	}
}

// TestReadAllocatesWhatArrives: a header that claims MaxBits bits followed
// by a little data costs about what arrives, as with ReadFrom.
func TestReadAllocatesWhatArrives(t *testing.T) {
	f, _ := NewWithSize(64, 1)
	b, _ := f.MarshalBinary()
	hostile := bytes.Clone(b[:headerSize])
	binary.LittleEndian.PutUint64(hostile[16:], MaxBits)
	hostile = append(hostile, make([]byte, 1<<20)...)
	for name, read := range map[string]func(r io.Reader) error{
		"Read":    func(r io.Reader) error { _, err := Read(r, Concurrent()); return err },
		"ReadAny": func(r io.Reader) error { _, err := ReadAny(r, Concurrent()); return err },
	} {
		var err error
		got := allocated(func() { err = read(bytes.NewReader(hostile)) })
		if err != io.ErrUnexpectedEOF || got > 2<<20 {
			t.Errorf("%s: %v, allocated %d bytes for %d", name, err, got, len(hostile))
		}
	}
}
