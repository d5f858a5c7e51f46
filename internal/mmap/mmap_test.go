package mmap

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	want := make([]byte, 3<<20+5)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if mapped := runtime.GOOS == "linux" || runtime.GOOS == "darwin"; f.Mapped != mapped {
		t.Errorf("Mapped = %v on %s", f.Mapped, runtime.GOOS)
	}
	if !bytes.Equal(f.Data, want) {
		t.Fatal("contents differ")
	}
	if f.Mapped && uintptr(unsafe.Pointer(&f.Data[0]))%uintptr(os.Getpagesize()) != 0 {
		t.Error("mapping not on a page")
	}
	if err := f.Close(); err != nil || f.Data != nil {
		t.Errorf("Close: %v", err)
	}
	// The fallback, as on systems without mappings.
	fd, _ := os.Open(path)
	defer fd.Close()
	r, err := read(fd, len(want))
	if err != nil || !bytes.Equal(r.Data, want) || uintptr(unsafe.Pointer(&r.Data[0]))%8 != 0 || r.Mapped {
		t.Fatalf("read: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, p := range []string{empty, dir, filepath.Join(dir, "missing")} {
		if f, err := Open(p); err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded", p)
		}
	}
}
