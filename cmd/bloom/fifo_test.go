//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bloomfilters/bloom"
)

// TestQueryFIFO gives query and info a filter through a FIFO, as a shell's
// <(...) does: a pipe cannot be mapped, so they read it into memory, and
// check it the same way.
func TestQueryFIFO(t *testing.T) {
	t.Parallel()
	f, err := bloom.NewScalable(10, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		f.AddString(k)
	}
	good, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 1 // the checksum of the last sub-filter's section
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		data  []byte
		args  []string
		check func(r result)
	}{
		{"query", good, []string{"query", "FIFO", "a", "z"}, func(r result) { r.want(t, exitAbsent, ptr("a\tpresent\nz\tabsent\n")) }},
		{"info", good, []string{"info", "FIFO"}, func(r result) { r.want(t, 0, nil) }},
		{"flipped", flipped, []string{"query", "FIFO", "a"}, func(r result) { r.wantError(t, "checksum mismatch") }},
		{"skip-check", flipped, []string{"query", "-skip-check", "FIFO", "a"}, func(r result) { r.want(t, 0, ptr("a\tpresent\n")) }},
	} {
		fifo := filepath.Join(dir, tc.name)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			w.Write(tc.data)
			w.Close()
		}()
		args := append([]string(nil), tc.args...)
		for i, a := range args {
			if a == "FIFO" {
				args[i] = fifo
			}
		}
		tc.check(runBloom(t, "", args...))
	}
}
