package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineReader reads lines around the buffer size, with both endings and
// with and without a final newline, through a reader that returns one byte
// at a time as well as a whole buffer.
func TestLineReader(t *testing.T) {
	var lines []string
	for _, n := range []int{0, 1, ioBufferSize - 2, ioBufferSize - 1, ioBufferSize, ioBufferSize + 1, 3 * ioBufferSize} {
		lines = append(lines, strings.Repeat("a", n), strings.Repeat("b", n)+"\r")
	}
	for _, eol := range []string{"\n", "\r\n"} {
		for _, final := range []bool{true, false} {
			t.Run(fmt.Sprintf("eol=%q/final=%v", eol, final), func(t *testing.T) {
				var in bytes.Buffer
				for i, l := range lines {
					in.WriteString(l)
					if i < len(lines)-1 || final {
						in.WriteString(eol)
					}
				}
				// A line's "\r" before "\n" reads as a CRLF ending, and so
				// does a "\r" that ends the input.
				want := make([]string, len(lines))
				for i, l := range lines {
					want[i] = l
					if eol == "\n" || i == len(lines)-1 && !final {
						want[i] = strings.TrimSuffix(l, "\r")
					}
				}
				for _, r := range []io.Reader{bytes.NewReader(in.Bytes()), iotest.OneByteReader(bytes.NewReader(in.Bytes()))} {
					var got []string
					if err := eachLine(r, func(k []byte) error {
						got = append(got, string(k))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("%d lines, want %d", len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Errorf("line %d: %d bytes %q..., want %d bytes", i, len(got[i]), head(got[i]), len(want[i]))
						}
					}
				}
			})
		}
	}
}

func head(s string) string { return s[:min(len(s), 10)] }

// TestLineReaderError passes on a read error.
func TestLineReaderError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(io.ErrClosedPipe))
	var got []string
	err := eachLine(r, func(k []byte) error { got = append(got, string(k)); return nil })
	if err != io.ErrClosedPipe || len(got) != 1 {
		t.Errorf("got %q, %v; want [a] and %v", got, err, io.ErrClosedPipe)
	}
}

// TestBatchReader checks that the batches of a batchReader hold the lines
// and keys eachLine passes, around the buffer size, with lines longer than
// it, whole, one byte at a time and in reads of half the remaining input;
// that a batch holds the lines of one Read only; and that a read error comes
// after the lines before it.
func TestBatchReader(t *testing.T) {
	for _, n := range []int{0, 1, 1000, batchBytes/8 - 1, batchBytes / 8, batchBytes/8 + 1, 3*batchBytes/8 + 7} {
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "key %05d%s", i, []string{"\n", "\r\n"}[i%2])
			if i%1000 == 999 {
				in.WriteString(strings.Repeat("x", 2*batchBytes+i) + "\n") // a long line
			}
		}
		in.WriteString("last\r")
		for _, read := range []string{"whole", "one byte", "half"} {
			var wantKeys, gotKeys, gotLines []string
			if err := eachLine(strings.NewReader(in.String()), func(k []byte) error { wantKeys = append(wantKeys, string(k)); return nil }); err != nil {
				t.Fatal(err)
			}
			var r io.Reader = strings.NewReader(in.String())
			switch read {
			case "one byte":
				r = iotest.OneByteReader(r)
			case "half":
				r = iotest.HalfReader(r)
			}
			br := readBatches(r)
			var err error
			for {
				lb := br.next()
				if read == "one byte" && len(lb.keys) > 1 {
					t.Errorf("n=%d: one-byte reads made a batch of %d lines", n, len(lb.keys))
				}
				for _, k := range lb.keys {
					gotKeys = append(gotKeys, string(k))
					gotLines = append(gotLines, string(lineOf(k)))
				}
				if lb.err != nil {
					err = lb.err
					break
				}
				br.recycle(lb)
			}
			br.close()
			if err != io.EOF || strings.Join(gotKeys, "|") != strings.Join(wantKeys, "|") || strings.Join(gotLines, "") != in.String() {
				t.Errorf("n=%d %s: %d keys, %v; want %d keys and io.EOF, lines rejoined equal: %v", n, read, len(gotKeys), err, len(wantKeys), strings.Join(gotLines, "") == in.String())
			}
		}
	}
	// An error after whole lines, and after the start of a line that it
	// cuts short, which is no line (an interrupt made "https://" of
	// "https://example.com/..." a line of dedup's output before).
	for _, in := range []string{"a\nb\n", "a\nb\npart"} {
		r := io.MultiReader(strings.NewReader(in), iotest.ErrReader(io.ErrClosedPipe))
		var got []string
		err := eachBatch(r, func(keys [][]byte) error {
			for _, k := range keys {
				got = append(got, string(k))
			}
			return nil
		})
		if err != io.ErrClosedPipe || strings.Join(got, " ") != "a b" {
			t.Errorf("%q: got %q, %v; want [a b] and %v", in, got, err, io.ErrClosedPipe)
		}
	}
}
