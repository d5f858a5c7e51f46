//go:build linux || darwin

package mmap

import (
	"os"
	"syscall"
)

// mapFile maps the size bytes of fd read-only and shared.
func mapFile(fd *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmap(data []byte) error { return syscall.Munmap(data) }
