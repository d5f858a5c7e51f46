package collystorage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveFailureKeepsOld checks that a save whose writing fails halfway
// leaves the old file as it was and no temporary file behind.
func TestSaveFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte("old state"), 0o600); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("disk full")
	err := saveFile(path, func(w io.Writer) (int64, error) {
		n, _ := w.Write(bytes.Repeat([]byte("new"), 1<<20)) // past the buffer
		return int64(n), failure
	})
	if !errors.Is(err, failure) {
		t.Fatalf("saveFile: %v, want the write's error", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old state" {
		t.Errorf("after a failed save the file holds %.20q (%v)", b, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("after a failed save the directory holds %v (%v)", entries, err)
	}
	// And a save that succeeds replaces it.
	if err := saveFile(path, func(w io.Writer) (int64, error) {
		n, err := w.Write([]byte("new state"))
		return int64(n), err
	}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new state" {
		t.Errorf("after a save the file holds %q (%v)", b, err)
	}
}
