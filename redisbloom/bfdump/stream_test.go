package bfdump

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom"
)

// savedGolden returns the saved form of each golden file's filter.
func savedGolden(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, g := range loadGolden(t) {
		b, err := g.load(t).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		out[g.Name] = b
	}
	return out
}

// TestSavedForm pins the saved form of the smallest golden filter: the
// magic, the records of its BF.SCANDUMP stream and the CRC-32C.
func TestSavedForm(t *testing.T) {
	var g golden
	for _, x := range loadGolden(t) {
		if x.Name == "cap100-p0.0001" {
			g = x
		}
	}
	f := g.load(t)
	var want []byte
	want = append(want, "bfdump\x00\x01"...)
	le := binary.LittleEndian
	for _, p := range g.Scandump {
		chunk, _ := hex.DecodeString(p.Hex)
		want = le.AppendUint64(want, uint64(p.Iter))
		want = le.AppendUint32(want, uint32(len(chunk)))
		want = append(want, chunk...)
	}
	want = append(want, make([]byte, 12)...)
	want = le.AppendUint32(want, 0x7be5465b)
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) || buf.Len() != f.EncodedSize() {
		t.Fatalf("WriteTo: %d, %v; %d bytes written, EncodedSize %d", n, err, buf.Len(), f.EncodedSize())
	}
	if got := buf.Bytes(); !bytes.Equal(got[:len(got)-4], want[:len(want)-4]) {
		t.Fatalf("saved form\n%x\nwant\n%x", got, want)
	}
	// The checksum is pinned too: a change of the framing must be a new
	// version.
	if got := le.Uint32(buf.Bytes()[buf.Len()-4:]); got != le.Uint32(want[len(want)-4:]) {
		t.Errorf("checksum %#x, want %#x", got, le.Uint32(want[len(want)-4:]))
	}
	var h Filter
	m, err := h.ReadFrom(bytes.NewReader(buf.Bytes()))
	if err != nil || m != int64(buf.Len()) || !h.Equal(f) {
		t.Fatalf("ReadFrom: %d, %v, equal %v", m, err, h.Equal(f))
	}
}

// TestReadFromStopsAtEnd checks that ReadFrom reads the saved form and not
// a byte more, so saved forms can be concatenated.
func TestReadFromStopsAtEnd(t *testing.T) {
	saved := savedGolden(t)
	var all []byte
	for _, name := range []string{"cap100-p0.0001", "cap1000-p0.01-scaled", "cap500-p0.001-exp4"} {
		all = append(all, saved[name]...)
	}
	r := bytes.NewReader(all)
	for _, name := range []string{"cap100-p0.0001", "cap1000-p0.01-scaled", "cap500-p0.001-exp4"} {
		var f Filter
		n, err := f.ReadFrom(r)
		if err != nil || n != int64(len(saved[name])) {
			t.Fatalf("%s: %d, %v", name, n, err)
		}
		if b, _ := f.MarshalBinary(); !bytes.Equal(b, saved[name]) {
			t.Fatalf("%s read back differs", name)
		}
	}
}

// TestCorruptSavedForm flips every bit of a saved form with two sub-filters
// and truncates it at every length: each is an error wrapping
// bloom.ErrCorrupt (the checksum catches what the structure does not), and
// the receiver is unchanged.
func TestCorruptSavedForm(t *testing.T) {
	saved := savedGolden(t)["cap1000-p0.01-scaled"]
	orig, _ := New(10, 0.01)
	before, _ := orig.MarshalBinary()
	for i := range saved {
		for bit := range 8 {
			if testing.Short() && bit != i%8 {
				continue // one bit per byte
			}
			b := bytes.Clone(saved)
			b[i] ^= 1 << bit
			f := orig.Clone()
			if err := f.UnmarshalBinary(b); !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("byte %d bit %d flipped: %v", i, bit, err)
			}
			if after, _ := f.MarshalBinary(); !bytes.Equal(after, before) {
				t.Fatal("a failed UnmarshalBinary changed the filter")
			}
		}
	}
	for n := range len(saved) {
		var f Filter
		_, err := f.ReadFrom(bytes.NewReader(saved[:n]))
		if !errors.Is(err, bloom.ErrCorrupt) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("saved form cut to %d bytes: %v", n, err)
		}
	}
	var f Filter
	if err := f.UnmarshalBinary(append(bytes.Clone(saved), 0)); !errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("a byte after the saved form: %v", err)
	}
}

// header returns a one-sub-filter header with the given fields.
func header(options uint32, bytes_, bits, size uint64, rate, bpe float64, k uint32, entries uint64, n2 byte) []byte {
	le := binary.LittleEndian
	h := le.AppendUint64(nil, size)
	h = le.AppendUint32(h, 1)
	h = le.AppendUint32(h, options)
	h = le.AppendUint32(h, 2)
	h = le.AppendUint64(h, bytes_)
	h = le.AppendUint64(h, bits)
	h = le.AppendUint64(h, size)
	h = le.AppendUint64(h, math.Float64bits(rate))
	h = le.AppendUint64(h, math.Float64bits(bpe))
	h = le.AppendUint32(h, k)
	h = le.AppendUint64(h, entries)
	return append(h, n2)
}

func TestHeaderChecks(t *testing.T) {
	bpe := calcBPE(0.005)
	good := header(5, 16, 128, 3, 0.005, bpe, 8, 10, 0) // Reserve(10, 0.01)
	if _, _, err := decodeHeader(good); err != nil {
		t.Fatalf("valid header: %v", err)
	}
	for _, c := range []struct {
		name        string
		h           []byte
		unsupported bool
	}{
		{"short", good[:19], false},
		{"no sub-filter", append(binary.LittleEndian.AppendUint64(nil, 0), make([]byte, 12)...), false},
		{"length", good[:len(good)-1], false},
		{"unknown option", header(5|16, 8, 64, 3, 0.005, bpe, 8, 10, 0), false},
		{"32-bit hashing", header(1, 8, 64, 3, 0.005, bpe, 8, 10, 0), true},
		{"power-of-two sizing", header(4, 8, 64, 3, 0.005, bpe, 8, 10, 0), true},
		{"n2", header(5, 8, 64, 3, 0.005, bpe, 8, 10, 6), true},
		{"rate 0", header(5, 8, 64, 3, 0, bpe, 8, 10, 0), false},
		{"rate 1", header(5, 8, 64, 3, 1, bpe, 8, 10, 0), false},
		{"rate NaN", header(5, 8, 64, 3, math.NaN(), bpe, 8, 10, 0), false},
		{"bits not bytes*8", header(5, 16, 127, 3, 0.005, bpe, 8, 10, 0), false},
		{"zero bytes", header(5, 0, 0, 3, 0.005, bpe, 8, 10, 0), false},
		{"bytes*8 overflows", header(5, 1<<61, 0, 3, 0.005, bpe, 8, 10, 0), false},
		{"top bit of the bytes (stops Redis 7.0)", header(5, 1<<63+16, 128, 3, 0.005, bpe, 8, 10, 0), false},
		{"past MaxBits", header(5, MaxBits/8+1, MaxBits+8, 3, 0.005, bpe, 8, 10, 0), false},
		{"hashes unlike bpe", header(5, 8, 64, 3, 0.005, bpe, 9, 10, 0), false},
		{"no hash function", header(5, 8, 64, 3, 0.005, 0, 0, 10, 0), false},
		{"too many hashes", header(5, 8, 64, 3, 0.005, 1e9, uint32(hashesOf(1e9)), 10, 0), false},
		{"count", append(binary.LittleEndian.AppendUint64(nil, 4), good[8:]...), false},
	} {
		f, _, err := decodeHeader(c.h)
		want := bloom.ErrCorrupt
		if c.unsupported {
			want = errors.ErrUnsupported
		}
		if f != nil || !errors.Is(err, want) {
			t.Errorf("%s: %v, want an error wrapping %v", c.name, err, want)
		}
	}
}

// TestLoaderOrder checks that a Loader takes only the stream in order.
func TestLoaderOrder(t *testing.T) {
	f, err := NewWithSize(8*(MaxChunkSize+24), 3, 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		_ = f.AddString(strconv.Itoa(i))
	}
	type pair struct {
		it    int64
		chunk []byte
	}
	var pairs []pair
	for it, c := range f.Chunks() {
		pairs = append(pairs, pair{it, c})
	}
	if len(pairs) != 3 || pairs[1].it != 1+MaxChunkSize || len(pairs[2].chunk) != 24 || pairs[2].it != 1+MaxChunkSize+24 {
		t.Fatalf("stream of a %d-byte sub-filter: %d pairs", MaxChunkSize+24, len(pairs))
	}
	load := func(ps ...pair) error {
		var ld Loader
		for _, p := range ps {
			if err := ld.LoadChunk(p.it, p.chunk); err != nil {
				return err
			}
		}
		_, err := ld.Filter()
		return err
	}
	if err := load(pairs...); err != nil {
		t.Fatalf("the stream in order: %v", err)
	}
	for name, ps := range map[string][]pair{
		"no header":     pairs[1:],
		"swapped":       {pairs[0], pairs[2], pairs[1]},
		"repeated":      {pairs[0], pairs[1], pairs[1], pairs[2]},
		"missing last":  pairs[:2],
		"header twice":  {pairs[0], pairs[0]},
		"wrong iter":    {pairs[0], {pairs[1].it + 1, pairs[1].chunk}, pairs[2]},
		"empty chunk":   {pairs[0], {1, nil}},
		"extra chunk":   {pairs[0], pairs[1], pairs[2], {pairs[2].it + 1, []byte{0}}},
		"split differs": {pairs[0], {1 + 10, pairs[1].chunk[:10]}, {pairs[1].it, pairs[1].chunk[10:]}, pairs[2]},
	} {
		err := load(ps...)
		if name == "split differs" {
			// Another split of the same bytes is a valid stream (LOADCHUNK
			// takes any), as long as it is in order.
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("%s: %v, want an error wrapping bloom.ErrCorrupt", name, err)
		}
	}
	// A chunk that crosses a sub-filter is refused.
	g, _ := Reserve(1000, 0.01)
	for i := 0; len(g.links) < 2; i++ {
		_ = g.AddString(strconv.Itoa(i))
	}
	var all []byte
	var hdr []byte
	for it, c := range g.Chunks() {
		if it == 1 {
			hdr = c
			continue
		}
		all = append(all, c...)
	}
	var ld Loader
	if err := ld.LoadChunk(1, hdr); err != nil {
		t.Fatal(err)
	}
	if err := ld.LoadChunk(int64(1+len(all)), all); !errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("a chunk across two sub-filters: %v", err)
	}
}

// TestDecodeAllocation checks that a header declaring a huge filter, with
// little input behind it, makes the decoder allocate about what the input
// holds, not what the header declares.
func TestDecodeAllocation(t *testing.T) {
	h := header(5, MaxBits/8, MaxBits, 0, 0.005, bpeFor(8), 8, 10, 0) // NewWithSize(MaxBits, 8, 10, 0.005)
	var in []byte
	in = append(in, magic...)
	in = binary.LittleEndian.AppendUint64(in, 1)
	in = binary.LittleEndian.AppendUint32(in, uint32(len(h)))
	in = append(in, h...)
	in = binary.LittleEndian.AppendUint64(in, 1+MaxChunkSize)
	in = binary.LittleEndian.AppendUint32(in, MaxChunkSize)
	in = append(in, make([]byte, 1000)...) // the chunk ends early
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var f Filter
	if _, err := f.ReadFrom(bytes.NewReader(in)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v", err)
	}
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 4<<20 {
		t.Errorf("reading %d bytes that declare a 128 GiB filter allocated %d bytes", len(in), grown)
	}
}

func FuzzReadFrom(f *testing.F) {
	for _, b := range savedGolden(f) {
		f.Add(b)
	}
	small, _ := New(3, 0.1)
	_ = small.AddString("x")
	b, _ := small.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Filter
		n, err := g.ReadFrom(bytes.NewReader(data))
		if n > int64(len(data)) {
			t.Fatalf("read %d of %d bytes", n, len(data))
		}
		if err != nil {
			if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			if len(g.links) != 0 {
				t.Fatal("a failed ReadFrom changed the filter")
			}
			return
		}
		// A valid saved form writes back as read (the chunking may differ
		// from WriteTo's if the input split the bits otherwise), loads
		// again, and the filter works.
		out, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var h Filter
		if err := h.UnmarshalBinary(out); err != nil || !h.Equal(&g) {
			t.Fatalf("re-encoded filter: %v", err)
		}
		g.TestString("probe")
		_, _ = g.TestAndAddString("probe")
	})
}
