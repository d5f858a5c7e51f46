package bloom

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/internal/format"
)

// FuzzWindowDecode feeds the decoders of WindowFilter any bytes, the
// golden windows (one under Grow, with extensions) as seeds: they agree,
// an error leaves no usable result and the receiver unchanged, a decoded
// window re-encodes to its input and is usable, and none allocates more
// than the input justifies.
func FuzzWindowDecode(f *testing.F) {
	var seedWindow []byte
	for _, path := range []string{"count-n100-p0.01.bin", "time-1h-n100-p0.01.bin", "grow-1h-n100-p0.01.bin"} {
		data, err := os.ReadFile("testdata/window/" + path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		seedWindow = data
	}
	// Trailing bytes: UnmarshalBinary refuses them, ReadWindow leaves them
	// unread.
	f.Add(append(bytes.Clone(seedWindow), 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		var u WindowFilter
		var uerr, rerr error
		checkDecodeAllocs(t, "UnmarshalBinary", data, func() { uerr = u.UnmarshalBinary(data) })
		var r *WindowFilter
		rd := bytes.NewReader(data)
		checkDecodeAllocs(t, "ReadWindow", data, func() { r, rerr = ReadWindow(rd) })
		var v WindowFilter
		verr := v.UnmarshalText([]byte(base64.StdEncoding.EncodeToString(data)))
		a, aerr := ReadAny(bytes.NewReader(data))
		if (uerr == nil) != (rerr == nil && rd.Len() == 0) || (uerr == nil) != (verr == nil) {
			t.Fatalf("UnmarshalBinary %v, ReadWindow %v with %d bytes left, UnmarshalText %v", uerr, rerr, rd.Len(), verr)
		}
		if rerr != nil && r != nil {
			t.Fatal("ReadWindow: a result with an error")
		}
		if uerr != nil {
			if u.f != nil || v.f != nil {
				t.Fatal("a changed receiver on error")
			}
			return
		}
		if aerr != nil || !a.(*WindowFilter).Equal(&u) || !r.Equal(&u) || !v.Equal(&u) {
			t.Fatalf("the decoders disagree (ReadAny %v)", aerr)
		}
		if out, _ := u.MarshalBinary(); !bytes.Equal(out, data) {
			t.Fatal("re-encoding differs")
		}
		u.AddString("x")
		if !u.TestString("x") {
			t.Fatal("decoded window does not keep a key")
		}
	})
}

// FuzzView: a View over any bytes, with or without the body check, never
// panics; when the decoder accepts the bytes, the View does and answers as
// the decoded filter; when the View accepts them and the decoder does not,
// it is for the one thing a View does not check, a count above the bits
// set, or for bits the View was told not to check.
func FuzzView(f *testing.F) {
	f.Add(mustMarshal(f, goldenFilter(f)), []byte(nil), false)
	f.Add(encodeV1(goldenFilter(f)), []byte(nil), true)
	f.Add(mustMarshal(f, goldenBlockedFilter(f)), []byte{4, 0, 0, 2, 0, 0, 0, 0, 0, 0}, false)
	s := mustScalable(f, 10, 0.1)
	for i := range 50 {
		s.AddString(fmt.Sprint(i))
	}
	f.Add(mustMarshal(f, s), []byte(nil), false)
	f.Add(encodeScalableV1(s), []byte(nil), false)
	_, keys := viewKeys(50)
	f.Fuzz(func(t *testing.T, data, edits []byte, skip bool) {
		if len(edits) >= editOpSize && len(data) >= 64 {
			if string(data[:4]) == format.ScalableMagic {
				data = resealScalable(applyEdits(data, edits, scalableFields, filterFields, subFilterAt))
			} else {
				data = reseal(applyEdits(data, edits, filterFields, nil, nil))
			}
		}
		var opts []ViewOption
		if skip {
			opts = append(opts, SkipBodyCheck())
		}
		var v *View
		var err error
		checkDecodeAllocs(t, "NewView", data, func() { v, err = NewView(data, opts...) })
		var whole error
		if string(data[:min(4, len(data))]) == format.ScalableMagic {
			var g ScalableBloomFilter
			whole = g.UnmarshalBinary(data)
		} else {
			var g BloomFilter
			whole = g.UnmarshalBinary(data)
		}
		switch {
		case whole == nil && err != nil:
			t.Fatalf("the decoder accepts what NewView refuses: %v", err)
		case whole != nil && err == nil && !skip && !strings.Contains(whole.Error(), "set bits"):
			t.Fatalf("NewView accepts what the decoder refuses: %v", whole)
		case whole == nil:
			d, err := ReadAny(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("ReadAny refuses what UnmarshalBinary accepts: %v", err)
			}
			checkViewAnswers(t, "fuzz", v, d.(viewed), keys)
		}
	})
}

func FuzzUnmarshalBinary(f *testing.F) {
	enc, _ := goldenFilter(f).MarshalBinary()
	f.Add(enc, []byte(nil))
	f.Add(encodeV1(goldenFilter(f)), []byte(nil))
	f.Add(encodeV1(goldenBlockedFilter(f)), []byte(nil))
	g := mustNew(f, 300, 0.01)
	g.AddString("x")
	enc2, _ := g.MarshalBinary()
	f.Add(enc2, []byte(nil))
	f.Add([]byte(format.Magic), []byte(nil))
	blocked, _ := goldenBlockedFilter(f).MarshalBinary()
	f.Add(blocked, []byte(nil))
	// m = MaxBits: the decoder must not believe it.
	f.Add(enc, []byte{4, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		check := func(data []byte) {
			var b BloomFilter
			var err error
			checkDecodeAllocs(t, "UnmarshalBinary", data, func() { err = b.UnmarshalBinary(data) })
			if err != nil {
				if b.k != 0 {
					t.Fatal("receiver changed on error")
				}
				return
			}
			// A decoded filter is usable and re-encodes to the same bytes,
			// in its version.
			b.Test(data)
			if out := sameVersion(&b, data); !bytes.Equal(out, data) {
				t.Fatal("re-encoding differs")
			}
		}
		check(data)
		if len(edits) >= editOpSize && len(data) >= format.HeaderSize+format.CRCSize {
			check(reseal(applyEdits(data, edits, filterFields, nil, nil)))
		}
		if len(data) >= 6 && !format.IsV3(data) {
			// Every version-1 or 2 encoding that decodes has a version 3
			// that decodes to the same filter.
			var b BloomFilter
			if b.UnmarshalBinary(data) == nil {
				var c BloomFilter
				if err := c.UnmarshalBinary(mustMarshal(t, &b)); err != nil || !c.Equal(&b) {
					t.Fatalf("version 3 of a version-%d encoding: %v", data[4], err)
				}
			}
		}
	})
}

func FuzzReadFrom(f *testing.F) {
	enc, _ := goldenFilter(f).MarshalBinary()
	f.Add(enc, []byte(nil))
	f.Add(append(bytes.Clone(enc), enc...), []byte(nil))
	f.Add(enc, []byte{4, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	blocked, _ := goldenBlockedFilter(f).MarshalBinary()
	f.Add(append(blocked, enc...), []byte(nil))
	f.Add(append(encodeV1(goldenFilter(f)), enc...), []byte(nil))
	f.Add(append(bytes.Clone(enc), encodeV1(goldenBlockedFilter(f))...), []byte(nil))
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		check := func(data []byte) {
			var b BloomFilter
			var n int64
			var err error
			checkDecodeAllocs(t, "ReadFrom", data, func() { n, err = b.ReadFrom(bytes.NewReader(data)) })
			if n > int64(len(data)) {
				t.Fatalf("read %d bytes of %d", n, len(data))
			}
			if err != nil {
				if b.k != 0 {
					t.Fatal("receiver changed on error")
				}
				return
			}
			if out := sameVersion(&b, data[:n]); !bytes.Equal(out, data[:n]) {
				t.Fatal("re-encoding differs from the bytes read")
			}
			var c BloomFilter
			if c.UnmarshalBinary(data[:n]) != nil || !c.Equal(&b) {
				t.Fatal("UnmarshalBinary disagrees with ReadFrom")
			}
		}
		check(data)
		if len(edits) >= editOpSize && len(data) >= format.HeaderSize+format.CRCSize {
			// Reseal the first filter of the stream only.
			b := applyEdits(data, edits, filterFields, nil, nil)
			if m := binary.LittleEndian.Uint64(b[16:]); m > 0 && m <= MaxBits {
				end := format.HeaderSize + 8*((m+63)/64) + format.CRCSize
				if format.IsV3(b) {
					end = format.V3Size(m)
				}
				if end <= uint64(len(b)) {
					reseal(b[:end])
				}
			}
			check(b)
		}
	})
}

// FuzzBatch splits its input into keys (at 0x00) and batches (at 0x01), runs
// each batch through a batch call chosen by the batch's first byte, on a
// small BloomFilter in rounds and on a ScalableBloomFilter that grows from 2
// keys, and checks them against the loop of single calls.
func FuzzBatch(f *testing.F) {
	f.Add([]byte("a\x00b\x00a\x01\x02c\x00a\x00c\x00c\x01\x04x"))
	f.Add([]byte("\x05one\x00two\x00three\x00four\x00five\x00one\x01\x03one\x00six"))
	f.Add(bytes.Repeat([]byte("\x04k\x00kk\x00kkk\x00\x01"), 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		inRounds(t, true)
		a, _ := NewWithSize(512, 3)
		b, _ := NewWithSize(512, 3)
		sa := mustScalable(t, 2, 0.1)
		sb := mustScalable(t, 2, 0.1)
		for _, part := range bytes.Split(data, []byte{1}) {
			op := 0
			if len(part) > 0 {
				op, part = int(part[0])%len(batchOpNames), part[1:]
			}
			var keys [][]byte
			if len(part) > 0 {
				keys = bytes.Split(part, []byte{0})
			}
			batchVsLoop(t, a, b, op, keys, nil)
			batchVsLoop(t, sa, sb, op, keys, make([]bool, 0, len(keys)))
		}
	})
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
		f.Add([]byte(base64.StdEncoding.EncodeToString(encodeV1(g))))
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
		data, _ := base64.StdEncoding.DecodeString(string(text))
		if again := base64.StdEncoding.EncodeToString(sameVersion(g, data)); again != string(text) {
			t.Fatal("decoded text does not encode back")
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
		f.Add([]byte(base64.StdEncoding.EncodeToString(encodeScalableV1(s))))
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
		data, _ := base64.StdEncoding.DecodeString(string(text))
		if again := base64.StdEncoding.EncodeToString(sameVersion(s, data)); again != string(text) {
			t.Fatal("decoded text does not encode back")
		}
	})
}

func FuzzScalableUnmarshalBinary(f *testing.F) {
	scalableSeeds(f)
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		checkScalableDecode(t, data)
		if len(edits) >= editOpSize {
			checkScalableDecode(t, resealScalable(applyEdits(data, edits, scalableFields, filterFields, subFilterAt)))
		}
	})
}

// FuzzScalableReadFrom feeds ReadFrom a stream: the encoding, edited and
// resealed, then more bytes, which it must not read.
func FuzzScalableReadFrom(f *testing.F) {
	scalableSeeds(f)
	f.Fuzz(func(t *testing.T, data, edits []byte) {
		b := resealScalable(applyEdits(data, edits, scalableFields, filterFields, subFilterAt))
		stream := append(bytes.Clone(b), "tail"...)
		var r ScalableBloomFilter
		var n int64
		var err error
		checkDecodeAllocs(t, "ReadFrom", stream, func() { n, err = r.ReadFrom(bytes.NewReader(stream)) })
		if err != nil {
			if r.filters != nil {
				t.Fatal("receiver changed on error")
			}
			return
		}
		if n > int64(len(b)) {
			t.Fatalf("read %d bytes of a %d-byte encoding", n, len(b))
		}
		var d ScalableBloomFilter
		if err := d.UnmarshalBinary(stream[:n]); err != nil || !d.Equal(&r) {
			t.Fatalf("UnmarshalBinary disagrees with ReadFrom: %v", err)
		}
	})
}
