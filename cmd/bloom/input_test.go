package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestStopReader checks that a stopReader passes data through and that a
// Read waiting on an idle pipe returns errStopped once stop closes.
func TestStopReader(t *testing.T) {
	if err := iotest.TestReader(newStopReader(strings.NewReader("a\nbc\n"), nil), []byte("a\nbc\n")); err != nil {
		t.Error(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	stop := make(chan struct{})
	r := newStopReader(pr, stop)
	got := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	select {
	case err := <-got:
		if !errors.Is(err, errStopped) {
			t.Errorf("Read after stop: %v, want errStopped", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting 5 s after stop")
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, errStopped) {
		t.Errorf("second Read after stop: %v, want errStopped", err)
	}
}

// TestInputFiles checks the concatenation of files and stdin, with a
// newline supplied after a file that lacks one, and small reads.
func TestInputFiles(t *testing.T) {
	dir := t.TempDir()
	a, b, empty := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "empty")
	for name, s := range map[string]string{a: "1\n2", b: "3\n", empty: ""} {
		if err := os.WriteFile(name, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	in, err := openInputFiles([]string{a, empty, "-", b, a}, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(iotest.OneByteReader(in))
	if want := "1\n2\nx\n3\n1\n2\n"; string(got) != want || err != nil {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := openInputFiles([]string{a, dir}, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}
