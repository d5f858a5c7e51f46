package main

import (
	"strings"
	"testing"
)

func TestCheckMemory(t *testing.T) {
	have, source, ok := memoryLimit()
	if !ok {
		t.Skip("this system's memory is unknown")
	}
	t.Logf("%s: %s", source, byteSize(have))
	if err := checkMemory("small", 8<<20); err != nil {
		t.Errorf("1 MiB filter: %v", err)
	}
	err := checkMemory("-capacity X", 8*(have+1))
	if err == nil || !strings.Contains(err.Error(), "-capacity X needs a filter of") || !strings.Contains(err.Error(), source) {
		t.Errorf("filter one byte larger than memory: %v", err)
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 123 << 30: "123 GiB", 1 << 62: "4 EiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
