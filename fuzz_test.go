package bloom

import (
	"bytes"
	"encoding/base64"
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
