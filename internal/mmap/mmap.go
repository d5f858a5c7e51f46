// Package mmap gives the bytes of a file for reading: a read-only shared
// mapping where the system has one (Linux and macOS, through package
// syscall), so that the file's pages are read only when touched and shared
// with every other process that maps it, or elsewhere the file read into
// memory.
package mmap

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"
)

// File is the contents of a file, mapped or read.
type File struct {
	// Data is the file's bytes. A mapping starts on a page; bytes read
	// start on a multiple of 8. Writing to a mapping faults.
	Data []byte

	// Mapped reports whether Data is a mapping (and Close unmaps it).
	Mapped bool
}

// Open returns the contents of the regular file at path, mapped where the
// system can. An empty file is an error.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close() // a mapping outlives its descriptor
	fi, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	switch size := fi.Size(); {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case size == 0:
		return nil, fmt.Errorf("%s: empty file", path)
	case uint64(size) > math.MaxInt:
		return nil, fmt.Errorf("%s: %d bytes, more than this platform can address", path, size)
	}
	if data, err := mapFile(fd, int(fi.Size())); err == nil {
		return &File{Data: data, Mapped: true}, nil
	} else if !errors.Is(err, errNoMapping) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return read(fd, int(fi.Size()))
}

// read reads size bytes of fd into a buffer that starts on a multiple of 8,
// so that words read from it need not be copied again.
func read(fd *os.File, size int) (*File, error) {
	words := make([]uint64, (size+7)/8)
	data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	if _, err := fd.ReadAt(data, 0); err != nil {
		return nil, err
	}
	return &File{Data: data}, nil
}

// Close unmaps a mapping; it does nothing for bytes read. Data must not be
// used after it.
func (f *File) Close() error {
	if !f.Mapped || f.Data == nil {
		f.Data = nil
		return nil
	}
	err := unmap(f.Data)
	f.Data = nil
	return err
}

// errNoMapping is mapFile's error where the system has no mapping.
var errNoMapping = errors.New("mmap: no file mappings on this system")
