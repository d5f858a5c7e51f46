package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/bloomfilters/bloom"
)

// The first four bytes of the two encodings, which loadFilter dispatches on.
const (
	magicPlain    = "BLMF"
	magicScalable = "BLMS"
)

// loadFilter reads a filter file written by build, by dedup -state or by the
// library's WriteTo: a *bloom.BloomFilter or a *bloom.ScalableBloomFilter.
// The file must hold exactly one encoding.
func loadFilter(path string) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, ioBufferSize)
	head, err := r.Peek(4)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(head) == 0 {
		return nil, fmt.Errorf("%s: empty file, not a filter", path)
	}
	var filter io.ReaderFrom
	switch string(head) {
	case magicPlain:
		filter = new(bloom.BloomFilter)
	case magicScalable:
		filter = new(bloom.ScalableBloomFilter)
	default:
		return nil, fmt.Errorf("%s: not a filter file (it starts with %q, not %q or %q)", path, head, magicPlain, magicScalable)
	}
	if _, err := filter.ReadFrom(r); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("truncated: the file ends inside the filter")
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the filter")
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return filter, nil
}

// saving holds the name of the temporary file writeFileAtomic is writing, so
// that a forced exit can remove it.
var saving struct {
	sync.Mutex
	tmp string
}

// removeTemp removes the temporary file being written, if any.
func removeTemp() {
	saving.Lock()
	defer saving.Unlock()
	if saving.tmp != "" {
		os.Remove(saving.tmp)
		saving.tmp = ""
	}
}

// writeFileAtomic replaces path by what write writes, so that path holds
// either its old contents or all of the new ones, even after a crash: it
// writes a temporary file in the same directory, syncs it to disk, renames it
// over path and syncs the directory. On error path is untouched and the
// temporary file removed. A new file gets mode 0666 less the umask; a
// replaced file keeps its mode. If path is a symbolic link, the file it
// points to is replaced.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target // replace the file a symbolic link points to, not the link
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			removeTemp()
		}
	}()
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			return err
		}
	}
	w := bufio.NewWriterSize(f, ioBufferSize)
	if err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	saving.Lock()
	saving.tmp = ""
	saving.Unlock()
	// Make the rename itself durable. Not every file system can sync a
	// directory; the data is safe either way.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// checkWritable reports an error if writeFileAtomic would fail to create
// its temporary file for path, so that a long run fails at its start rather
// than at its end.
func checkWritable(path string) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	removeTemp()
	return nil
}

// createTemp creates a new file named like ".BASE.tmp-123456" in dir, with
// mode 0666 less the umask (os.CreateTemp would make it 0600), and records
// it in saving.
func createTemp(dir, base string) (*os.File, error) {
	saving.Lock()
	defer saving.Unlock()
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64()%1e9, 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err == nil {
			saving.tmp = name
		}
		return f, err
	}
}
