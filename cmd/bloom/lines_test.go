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

// TestEachBlock checks that eachBlock passes the keys eachLine passes, in
// blocks of at most blockLines, at the block boundaries and around them,
// whole and one byte at a time, and passes on a read error after the keys
// before it.
func TestEachBlock(t *testing.T) {
	for _, n := range []int{0, 1, blockLines - 1, blockLines, blockLines + 1, 3*blockLines + 7} {
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "key %d%s", i, []string{"\n", "\r\n"}[i%2])
		}
		in.WriteString("last")
		for _, oneByte := range []bool{false, true} {
			var want, got []string
			if err := eachLine(strings.NewReader(in.String()), func(k []byte) error { want = append(want, string(k)); return nil }); err != nil {
				t.Fatal(err)
			}
			var r io.Reader = strings.NewReader(in.String())
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			err := eachBlock(r, func(keys [][]byte) error {
				if len(keys) == 0 || len(keys) > blockLines {
					t.Errorf("block of %d keys", len(keys))
				}
				for _, k := range keys {
					got = append(got, string(k))
				}
				return nil
			})
			if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("n=%d oneByte=%v: %d keys, %v; want %d keys", n, oneByte, len(got), err, len(want))
			}
		}
	}
	r := io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(io.ErrClosedPipe))
	var got []string
	err := eachBlock(r, func(keys [][]byte) error {
		for _, k := range keys {
			got = append(got, string(k))
		}
		return nil
	})
	if err != io.ErrClosedPipe || len(got) != 2 {
		t.Errorf("got %q, %v; want [a b] and %v", got, err, io.ErrClosedPipe)
	}
}
