package bloom

import (
	"bytes"
	"encoding/base64"
	"os"
	"testing"
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
