package collystorage_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
)

// visit marks the IDs 0, 7, 14, ... below 7*n in s.
func visit(t testing.TB, s *collystorage.Storage, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.IsVisited(uint64(i) * 7); err != nil {
			t.Fatal(err)
		}
	}
}

// checkVisited fails the test unless s holds the IDs visit(n) marks and,
// apart from false positives, none of the others.
func checkVisited(t testing.TB, s *collystorage.Storage, n int) {
	t.Helper()
	if got := s.Count(); got != uint64(n) {
		t.Errorf("Count = %d, want %d", got, n)
	}
	for i := range n {
		if v, err := s.IsVisited(uint64(i) * 7); err != nil || !v {
			t.Fatalf("IsVisited(%d) = %v, %v after reload, want true", i*7, v, err)
		}
	}
	for i := range n {
		if v, err := s.IsVisited(uint64(i)*7 + 1); err != nil || v {
			t.Fatalf("IsVisited(%d) = %v, %v after reload, want false", i*7+1, v, err)
		}
	}
}

// TestOpenSave saves a Storage and opens it again, twice over.
func TestOpenSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	s, err := collystorage.Open(path, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a new path created it (%v)", err)
	}
	visit(t, s, 1000)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Size(), int64(s.Bits()/8); got < want || got > want+4096 {
		t.Errorf("saved %d bytes for %d bits", got, s.Bits())
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new file has mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	again, err := collystorage.Open(path, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	checkVisited(t, again, 1000) // marks 1000 more: 7i+1
	if err := again.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("saved over a file of mode 0640: %v, %v", fi.Mode().Perm(), err)
	}
	third, err := collystorage.Open(path, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	if third.Count() != 2000 {
		t.Errorf("Count = %d after the second save, want 2000", third.Count())
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want the state alone", entries, err)
	}
}

// TestSaveSymlink checks that Save replaces a link's target, not the link.
func TestSaveSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	s, err := collystorage.Open(link, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	visit(t, s, 10)
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced (%v)", err)
	}
	again, err := collystorage.Open(target, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	checkVisited(t, again, 10)
}

// TestSaveNeedsOpen checks that a Storage made by New or Read cannot Save.
func TestSaveNeedsOpen(t *testing.T) {
	s := newStorage(t)
	if err := s.Save(); err == nil {
		t.Error("Save of a Storage made by New succeeded")
	}
}

// TestWriteToRead checks the stream form, and that Read stops at the end of
// the Storage.
func TestWriteToRead(t *testing.T) {
	s := newStorage(t)
	visit(t, s, 500)
	var buf bytes.Buffer
	n, err := s.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d", n, err, buf.Len())
	}
	buf.WriteString("next")
	r, err := collystorage.Read(&buf, bloom.Seed(bloom.DefaultSeed))
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != "next" {
		t.Errorf("Read left %q, want \"next\"", buf.String())
	}
	checkVisited(t, r, 500)
}

// saved returns the bytes a Storage of 100 visited IDs saves.
func saved(t testing.TB) []byte {
	s := newStorage(t)
	visit(t, s, 100)
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadErrors checks that damaged input gives the errors Read promises.
func TestReadErrors(t *testing.T) {
	good := saved(t)
	change := func(i int, b byte) []byte {
		d := bytes.Clone(good)
		d[i] = b
		return d
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"short header", good[:11], io.ErrUnexpectedEOF},
		{"header only", good[:12], io.ErrUnexpectedEOF},
		{"cut", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"magic", change(0, 'C'), bloom.ErrCorrupt},
		{"version", change(8, 2), bloom.ErrCorrupt},
		{"key encoding", change(9, 2), bloom.ErrCorrupt},
		{"reserved", change(11, 1), bloom.ErrCorrupt},
		{"filter", change(40, good[40]^1), bloom.ErrCorrupt},
		{"bits", change(len(good)-10, good[len(good)-10]^0x80), bloom.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := collystorage.Read(bytes.NewReader(tc.data))
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("Read: %v, %v; want nil, %v", s, err, tc.want)
			}
		})
	}
	if _, err := collystorage.Read(bytes.NewReader(good), bloom.Seed(1)); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Read with another seed: %v, want ErrInvalidParameter", err)
	}
}

// TestOpenErrors checks Open's refusals: other parameters, trailing bytes,
// damage, and a directory.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := saved(t)
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("good", good)
	if _, err := collystorage.Open(path, testCapacity, testRate); err != nil {
		t.Fatal(err)
	}
	if _, err := collystorage.Open(path, testCapacity+1, testRate); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("Open with another capacity: %v, want ErrIncompatible", err)
	}
	if _, err := collystorage.Open(path, testCapacity, 0.01); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("Open with another error rate: %v, want ErrIncompatible", err)
	}
	if _, err := collystorage.Open(path, testCapacity, testRate, bloom.Linear(2)); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Open with another growth: %v, want ErrInvalidParameter", err)
	}
	if _, err := collystorage.Open(path, testCapacity, testRate, bloom.Blocked()); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Open of a classic filter with Blocked: %v, want ErrInvalidParameter", err)
	}
	if _, err := collystorage.Open(write("trailing", append(bytes.Clone(good), 0)), testCapacity, testRate); !errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("Open of a file with a trailing byte: %v, want ErrCorrupt", err)
	}
	if _, err := collystorage.Open(write("empty", nil), testCapacity, testRate); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Open of an empty file: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := collystorage.Open(dir, testCapacity, testRate); err == nil {
		t.Error("Open of a directory succeeded")
	}
	// Bad parameters for a new file are refused too.
	if _, err := collystorage.Open(filepath.Join(dir, "new"), 0, testRate); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("Open of a new file with capacity 0: %v, want ErrInvalidParameter", err)
	}
}

// FuzzRead checks that Read never panics, and that what it accepts saves
// back to the same bytes.
func FuzzRead(f *testing.F) {
	f.Add(saved(f))
	f.Add([]byte("colly-bf\x01\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := collystorage.Read(bytes.NewReader(data))
		if err != nil {
			if s != nil {
				t.Fatal("a Storage with an error")
			}
			return
		}
		var buf bytes.Buffer
		if _, err := s.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data[:buf.Len()]) {
			t.Fatal("a Storage read saves to other bytes")
		}
	})
}
