package collystorage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bloomfilters/bloom"
)

// The saved state of a Storage, version 1, is a 12-byte header followed by
// the filter's bloom.ScalableBloomFilter encoding (the bloom package doc
// gives its format; it ends with a CRC-32C of itself):
//
//	offset size field
//	0      8    magic "colly-bf"
//	8      1    version, 1
//	9      1    key encoding, 1: a request ID h is the filter's hashed key h
//	            (bloom's AddHash and TestHash), which is the key of h's 8
//	            bytes in little-endian order
//	10     2    zero
//
// Read refuses other magic, versions and key encodings, and nonzero bytes 10
// and 11, with an error wrapping bloom.ErrCorrupt.
const (
	fileMagic   = "colly-bf"
	fileVersion = 1
	headerSize  = 12
)

// Open returns the Storage saved in the file at path by Save, or, if there is
// no such file, an empty one as New(initialCapacity, errorRate, opts...)
// returns. Save then writes to path.
//
// A saved filter keeps its own parameters: Open returns an error wrapping
// bloom.ErrIncompatible if its initial capacity or error rate differ from
// those given; one wrapping bloom.ErrInvalidParameter if opts contradict it
// (another Seed, growth or Tightening; Blocked on a classic filter or the
// reverse) or, for a new file, if New would refuse the parameters; one wrapping
// bloom.ErrCorrupt if the file is not a saved Storage, is damaged or has
// bytes after the filter; io.ErrUnexpectedEOF if it is cut short; or the
// error of opening or reading it. Delete the file to start afresh.
func Open(path string, initialCapacity uint64, errorRate float64, opts ...bloom.Option) (*Storage, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s, err := New(initialCapacity, errorRate, opts...)
		if err != nil {
			return nil, err
		}
		s.path = path
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("collystorage: %w", err)
	}
	defer file.Close()
	s, err := Read(file, opts...)
	if err != nil {
		return nil, fmt.Errorf("collystorage: %s: %w", path, err)
	}
	var extra [1]byte
	if _, err := io.ReadFull(file, extra[:]); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("collystorage: %s: bytes after the filter: %w", path, bloom.ErrCorrupt)
		}
		return nil, fmt.Errorf("collystorage: %s: %w", path, err)
	}
	if got := s.f.InitialCapacity(); got != initialCapacity {
		return nil, fmt.Errorf("collystorage: %s holds a filter of initial capacity %d, not %d: %w", path, got, initialCapacity, bloom.ErrIncompatible)
	}
	if got := s.f.ErrorRate(); got != errorRate {
		return nil, fmt.Errorf("collystorage: %s holds a filter of error rate %v, not %v: %w", path, got, errorRate, bloom.ErrIncompatible)
	}
	s.path = path
	return s, nil
}

// Read reads a Storage written by WriteTo or Save from r. opts are checked
// against the encoded filter as bloom.ReadScalable checks them; Concurrent is
// always applied and must not be given. It reads no byte past the filter,
// allocates about the filter's size only once the input has supplied it or
// shown that it holds it, and never panics. It returns an error wrapping
// bloom.ErrCorrupt for input that is not a saved Storage or is damaged,
// io.ErrUnexpectedEOF for input cut short (an empty one included), one
// wrapping bloom.ErrInvalidParameter for options that contradict the
// filter, or the error of r.
func Read(r io.Reader, opts ...bloom.Option) (*Storage, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("collystorage: header: %w", err)
	}
	switch {
	case string(h[:8]) != fileMagic:
		return nil, fmt.Errorf("collystorage: not a saved Storage (magic %q): %w", h[:8], bloom.ErrCorrupt)
	case h[8] != fileVersion:
		return nil, fmt.Errorf("collystorage: unknown version %d (this release reads %d): %w", h[8], fileVersion, bloom.ErrCorrupt)
	case h[9] != keyRequestID8:
		return nil, fmt.Errorf("collystorage: unknown key encoding %d (this release reads %d): %w", h[9], keyRequestID8, bloom.ErrCorrupt)
	case h[10] != 0 || h[11] != 0:
		return nil, fmt.Errorf("collystorage: nonzero reserved header bytes: %w", bloom.ErrCorrupt)
	}
	f, err := bloom.ReadScalable(r, withConcurrent(opts)...)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("collystorage: %w", err)
	}
	return newStorage(f)
}

// WriteTo writes the Storage's visited request IDs to w in the format Read
// reads (io.WriterTo): a 12-byte header and the filter's encoding, about
// Bits()/8 bytes. It may run during a crawl (see Storage). It returns an
// error for a zero Storage, or the error of w.
func (s *Storage) WriteTo(w io.Writer) (int64, error) {
	if s.f == nil {
		return 0, errZero
	}
	h := [headerSize]byte{8: fileVersion, 9: keyRequestID8}
	copy(h[:], fileMagic)
	n, err := w.Write(h[:])
	if err != nil {
		return int64(n), err
	}
	m, err := s.f.WriteTo(w)
	return int64(n) + m, err
}

// Save writes the Storage to the file that Open was given, atomically: into
// a temporary file in the same directory, synced to disk, then renamed over
// the old one, so that a crash leaves either the old state or the new one,
// never a mix. A symbolic link at the path is followed and its target
// replaced. The file keeps the old one's permissions, or has mode 0600.
// Save may run during a crawl (see Storage); calls are serialized. It
// returns an error for a Storage not made by Open, or the error of writing,
// syncing or renaming, and then leaves the old file as it was. Only one
// process may save to a file.
func (s *Storage) Save() error {
	if s.f == nil {
		return errZero
	}
	if s.path == "" {
		return errors.New("collystorage: Save needs a Storage made by Open; use WriteTo")
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if err := saveFile(s.path, s.WriteTo); err != nil {
		return fmt.Errorf("collystorage: save %s: %w", s.path, err)
	}
	return nil
}

// saveFile writes path through write, atomically (see Save).
func saveFile(path string, write func(io.Writer) (int64, error)) (err error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if path, err = filepath.EvalSymlinks(path); err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the directory is synced.
	d, err := os.Open(dir)
	if err != nil {
		return nil // the new state is in place; only its durability is unknown
	}
	defer d.Close()
	d.Sync()
	return nil
}
