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

// Advice tells the kernel how a mapping will be read (madvise, Linux), so
// that it reads ahead, maps pages and picks page sizes to suit. It never
// changes what Data holds. docs/mapping.md has what each measured.
type Advice int

const (
	// Normal is the kernel's default: a fault reads the pages around the
	// one touched (read-around) and maps those in memory around it.
	Normal Advice = iota

	// Sequential (MADV_SEQUENTIAL) reads ahead aggressively: for a pass
	// over the whole mapping, such as verifying its checksums.
	Sequential

	// Random (MADV_RANDOM) turns read-around off: a fault on a page not in
	// the page cache reads that page only, and maps only it. For random
	// queries on a file that is not cached, where each fault would wait
	// for the read of the pages around it (the first answer of a cold
	// 1.2 GB filter: 14.7 ms with read-around, 0.6 ms without, here).
	Random

	// WillNeed (MADV_WILLNEED) starts reading the whole mapping into the
	// page cache in the background, and returns at once.
	WillNeed

	// HugePages (MADV_HUGEPAGE) makes a fault on a page not in the page
	// cache read the 2 MiB around it as one folio, where the file system
	// has large folios (ext4 since Linux 6.16, XFS since 5.18), and the
	// mapping then maps it with one 2 MiB page: one TLB entry and one
	// fault per 2 MiB instead of per 4 KiB. Pages already cached keep the
	// folios they have.
	HugePages

	// Populate (MADV_POPULATE_READ, Linux 5.14) maps every page now,
	// reading those not in the page cache, and returns when done: faults
	// are taken at open instead of by the first queries.
	Populate
)

// Open returns the contents of the regular file at path, mapped where the
// system can, with the advice given applied in order (see Advise). An
// empty file is an error.
func Open(path string, advice ...Advice) (*File, error) {
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
		f := &File{Data: data, Mapped: true}
		for _, a := range advice {
			if err := f.Advise(a); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		return f, nil
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

// Advise applies a to the whole mapping with madvise, on Linux. It does
// nothing for bytes read, on other systems, and for HugePages or Populate
// where the kernel lacks them (no transparent huge pages; Linux before
// 5.14): advice only changes speed. An error is the kernel refusing advice
// it has, or Populate failing to read the file.
func (f *File) Advise(a Advice) error {
	if !f.Mapped || f.Data == nil {
		return nil
	}
	if a < Normal || a > Populate {
		return fmt.Errorf("mmap: unknown advice %d", a)
	}
	return advise(f.Data, a)
}

// DropCache asks the kernel to drop from the page cache the pages of the
// file at path that no process maps (posix_fadvise POSIX_FADV_DONTNEED, on
// Linux; elsewhere it does nothing), so that the next mapping reads the
// file from the disk. Dirty pages are written first. A file this machine
// has just written sits in the page cache in the folios its writes made,
// which on ext4 were too small to map with 2 MiB pages; read back from the
// disk with read-ahead, most of it comes in 2 MiB folios where the file
// system has large folios (ext4 since Linux 6.16, XFS since 5.18), which a
// mapping then maps with 2 MiB pages: queries over a 120 MB filter ran
// 1.8-3 times faster here (docs/mapping.md). On tmpfs it drops nothing.
func DropCache(path string) error {
	fd, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fd.Close()
	if err := fd.Sync(); err != nil {
		return err
	}
	return dropCache(fd)
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
