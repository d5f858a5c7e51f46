package bloom

import (
	"bytes"
	"os"
	"testing"
)

// legacyAbsent is the number of absent keys (tag 1) whose answers the
// encodings under testdata/v1 pin.
const legacyAbsent = 20000

// legacyAnswers returns how many of the legacyAbsent absent keys test present
// and the CRC-32C of the answers as a bit vector.
func legacyAnswers(test func([]byte) bool) (int, uint32) {
	buf := make([]byte, 16)
	ans := make([]byte, legacyAbsent/8)
	n := 0
	for i := range uint64(legacyAbsent) {
		if test(keyOf(buf, 1, i)) {
			ans[i/8] |= 1 << (i % 8)
			n++
		}
	}
	return n, crc32Checksum(ans)
}

// TestLegacyEncodings loads encodings written by the release before sizing
// used the exact false-positive rate (testdata/v1, written once by that code
// and never regenerated): plain filters and scalable ones, small and default
// parameters, grown and saturated. They must keep loading, answer exactly as
// they did, encode to the same bytes, and keep growing without false
// negatives. Keys 0..keys-1 (keyOf tag 0) were added.
func TestLegacyEncodings(t *testing.T) {
	tests := []struct {
		name      string
		scalable  bool
		keys      uint64
		bits      uint64
		hashes    uint // plain filters only
		count     uint64
		filters   int
		saturated bool
		fps       int    // absent keys testing present
		answers   uint32 // legacyAnswers' checksum
	}{
		{"plain-n1-p1e-7", false, 1, 34, 24, 1, 1, false, 0, 0x1a6aa448},
		{"plain-n1-p1e-6", false, 1, 29, 20, 1, 1, false, 0, 0x1a6aa448},
		{"plain-n2-p1e-7", false, 2, 68, 24, 2, 1, false, 0, 0x1a6aa448},
		{"plain-n5-p1e-6", false, 5, 144, 20, 5, 1, false, 0, 0x1a6aa448},
		{"plain-n10-p1e-3", false, 10, 144, 10, 10, 1, false, 14, 0xe909cfc7},
		{"plain-n1000-p0.01", false, 1000, 9593, 7, 998, 1, false, 199, 0xbb947a8a},
		{"plain-n10000-p1e-4", false, 5000, 191730, 13, 5000, 1, false, 0, 0x1a6aa448},
		{"scalable-n1-p1e-6", true, 40, 1705, 0, 40, 8, false, 0, 0x1a6aa448},
		{"scalable-n1-p1e-3-t0.5", true, 60, 1866, 0, 60, 9, false, 21, 0x1f00e073},
		{"scalable-n2-p1e-7-lin", true, 30, 1254, 0, 30, 6, false, 0, 0x1a6aa448},
		{"scalable-n100-p1e-18", true, 700, 74387, 0, 700, 4, false, 0, 0x1a6aa448},
		{"scalable-n1000-p0.01", true, 20000, 315196, 0, 19934, 6, false, 96, 0xa2073286},
		{"scalable-n100-p0.001-lin", true, 3000, 60074, 0, 2999, 6, false, 14, 0x52dfd4bb},
		{"scalable-saturated", true, 150, 3031, 0, 68, 63, true, 15615, 0x5ea151a},
		{"scalable-n1-p1e-18-saturated", true, 86, 6938, 0, 86, 9, true, 0, 0x1a6aa448},
	}
	buf := make([]byte, 16)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := os.ReadFile("testdata/v1/" + tt.name + ".bin")
			if err != nil {
				t.Fatal(err)
			}
			var (
				test             func([]byte) bool
				add              func([]byte)
				reencode         func() ([]byte, error)
				bits, count      uint64
				filters          = 1
				saturated, plain = false, !tt.scalable
			)
			if plain {
				var f, r BloomFilter
				if err := f.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				if _, err := r.ReadFrom(bytes.NewReader(enc)); err != nil || !r.Equal(&f) {
					t.Fatalf("ReadFrom: %v", err)
				}
				if f.Hashes() != tt.hashes {
					t.Errorf("Hashes = %d, want %d", f.Hashes(), tt.hashes)
				}
				test, add, reencode = f.Test, f.Add, f.MarshalBinary
				bits, count = f.Bits(), f.Count()
			} else {
				var s, r ScalableBloomFilter
				if err := s.UnmarshalBinary(enc); err != nil {
					t.Fatal(err)
				}
				if _, err := r.ReadFrom(bytes.NewReader(enc)); err != nil || !r.Equal(&s) {
					t.Fatalf("ReadFrom: %v", err)
				}
				test, add, reencode = s.Test, s.Add, s.MarshalBinary
				bits, count, filters, saturated = s.Bits(), s.Count(), s.NumFilters(), s.Saturated()
			}
			if bits != tt.bits || count != tt.count || filters != tt.filters || saturated != tt.saturated {
				t.Errorf("bits %d, count %d, %d filters, saturated %v; want %d, %d, %d, %v",
					bits, count, filters, saturated, tt.bits, tt.count, tt.filters, tt.saturated)
			}
			if again, err := reencode(); err != nil || !bytes.Equal(again, enc) {
				t.Errorf("encodes to other bytes (%v)", err)
			}
			for i := range tt.keys {
				if !test(keyOf(buf, 0, i)) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			if fps, sum := legacyAnswers(test); fps != tt.fps || sum != tt.answers {
				t.Errorf("%d absent keys test present (answers %#x); want %d (%#x)", fps, sum, tt.fps, tt.answers)
			}
			// Grow on: new sub-filters follow the current sizing, after
			// the old ones, and the result round-trips.
			more := tt.keys + 3000
			for i := tt.keys; i < more; i++ {
				add(keyOf(buf, 0, i))
			}
			for i := range more {
				if !test(keyOf(buf, 0, i)) {
					t.Fatalf("false negative for key %d after growth", i)
				}
			}
			if tt.scalable {
				grown, _ := reencode()
				var d ScalableBloomFilter
				if err := d.UnmarshalBinary(grown); err != nil {
					t.Fatalf("grown filter does not decode: %v", err)
				}
			}
		})
	}
}
