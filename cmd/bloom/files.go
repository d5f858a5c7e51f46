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
	"strings"
	"sync"
	"time"

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
	path = resolvePath(path)
	dir, base := splitPath(path)
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
	path = resolvePath(path)
	dir, base := splitPath(path)
	f, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	removeTemp()
	return nil
}

// resolvePath returns the file that path names, following symbolic links, so
// that a save replaces the file a link points to, not the link. A path that
// does not resolve, as a file yet to be made, is returned as it is.
func resolvePath(path string) string {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		return target
	}
	return path
}

// splitPath splits path into its directory, "." if it has none, and its base.
func splitPath(path string) (dir, base string) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// A temporary file for BASE is named ".BASE.tmp-PID-N": the process writing it
// and a random number. The process ID tells a later run whether the file is
// still being written or left by a process that died while saving (kill -9,
// a power cut), which removeStaleTemps removes. Versions before it named
// them ".BASE.tmp-N".
const tempMarker = ".tmp-"

// createTemp creates a new file named like ".BASE.tmp-PID-N" in dir, with
// mode 0666 less the umask (os.CreateTemp would make it 0600), and records
// it in saving.
func createTemp(dir, base string) (*os.File, error) {
	saving.Lock()
	defer saving.Unlock()
	prefix := "." + base + tempMarker + strconv.Itoa(os.Getpid()) + "-"
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64()%1e9, 10))
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

// legacyTempAge is how long a temporary file of the old naming, which does
// not say which process writes it, must have been left unmodified before
// removeStaleTemps takes it for stale. A save writes its file without pause
// and renames it at once, so an hour is ample.
const legacyTempAge = time.Hour

// removeStaleTemps removes the temporary files for path (resolved) that runs
// which died while saving left: those named ".BASE.tmp-PID-N" whose process
// is gone or is this one (which has none yet), and those of the old naming,
// ".BASE.tmp-N", unmodified for legacyTempAge. It removes nothing else, not
// even other files of the same prefix, and gives up quietly on errors: a
// stale file costs disk space, not correctness.
func removeStaleTemps(path string) {
	dir, base := splitPath(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + tempMarker
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		pid, n, named := strings.Cut(rest, "-")
		switch {
		case !isDigits(pid) || named && !isDigits(n):
			continue // not ours
		case named:
			id, err := strconv.Atoi(pid)
			if err != nil || id != os.Getpid() && !processGone(id) {
				continue
			}
			saving.Lock()
			busy := name == saving.tmp
			saving.Unlock()
			if busy {
				continue
			}
		default:
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < legacyTempAge {
				continue
			}
		}
		os.Remove(name)
	}
}

// isDigits reports whether s is one or more decimal digits.
func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
