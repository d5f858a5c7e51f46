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

	"github.com/bloomfilters/bloom"
)

// The first four bytes of the two encodings: readFilter dispatches on them,
// openFilter names them when a file has neither.
const (
	magicPlain    = "BLMF"
	magicScalable = "BLMS"
	magicWindow   = "BLMW"
)

// loadState reads the dedup state at path, written by dedup -state, by build
// or by the library's WriteTo, into memory (dedup adds to it): a
// *bloom.BloomFilter, *bloom.ScalableBloomFilter or *bloom.WindowFilter. The file must hold
// exactly one encoding, and be a regular file or not exist: it opens path
// without waiting (a FIFO would wait for a writer while the run holds the
// state's lock) and refuses any other kind of file.
// runDedup has refused one already; this catches a file replaced since.
func loadState(path string) (any, error) {
	f, err := openNoWait(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkMode(path, fi.Mode()); err != nil {
		return nil, err
	}
	return readFilter(f, path)
}

// readFilter reads the filter file f, named path.
func readFilter(f *os.File, path string) (any, error) {
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
	case magicWindow:
		filter = new(bloom.WindowFilter)
	default:
		return nil, fmt.Errorf("%s: not a filter file (it starts with %q, not %q, %q or %q)", path, head, magicPlain, magicScalable, magicWindow)
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

// saving holds the names of the temporary files this process is writing,
// which removeTemps must leave alone. The command makes one at a time; tests
// that run commands in-process may make several at once.
var saving struct {
	sync.Mutex
	tmp map[string]bool
}

// doneTemp forgets the temporary file name, removing it unless it was
// renamed (renamed true).
func doneTemp(name string, renamed bool) {
	saving.Lock()
	defer saving.Unlock()
	if !renamed {
		os.Remove(name)
	}
	delete(saving.tmp, name)
}

// writeFileAtomic replaces path by what write writes, so that path holds
// either its old contents or all of the new ones, even after a crash: it
// writes a temporary file in the same directory, syncs it to disk, renames it
// over path and syncs the directory. On error path is untouched and the
// temporary file removed. A new file gets mode 0666 less the umask; a
// replaced file keeps its mode. path must come from resolvePath, so that it
// is the file whose lock the caller holds, and must be a regular file or not
// exist: anything else there at the rename (a FIFO, a device, a symbolic link
// or a directory put in its place since) is refused and left as it is.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := splitPath(path)
	f, err := createTemp(dir, base)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
		doneTemp(f.Name(), err == nil)
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
	// A rename replaces whatever has the name: a device (as root, /dev/null
	// itself) or a link. Something put there between this check and the
	// rename is still replaced: no portable rename refuses to.
	if fi, err := os.Lstat(path); err == nil {
		if err := checkMode(path, fi.Mode()); err != nil {
			return err
		}
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable. Not every file system can sync a
	// directory; the data is safe either way.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// checkWritable reports an error if writeFileAtomic would fail to create
// its temporary file for path (resolved), so that a long run fails at its
// start rather than at its end.
func checkWritable(path string) error {
	dir, base := splitPath(path)
	f, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	doneTemp(f.Name(), false)
	return nil
}

// checkRegular reports an error unless path (name, resolved) is a regular
// file or does not exist, for a dedup state or a build output: reading a FIFO
// would wait for a writer, a device never holds a filter, and a save renames
// its file over whatever has the name (as root, a device node itself).
func checkRegular(name, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // does not exist yet, or opening it reports why
	}
	return checkMode(name, fi.Mode())
}

// checkMode reports an error unless mode is a regular file's.
func checkMode(name string, mode fs.FileMode) error {
	if mode.IsRegular() {
		return nil
	}
	if mode.IsDir() {
		return fmt.Errorf("%s: is a directory", name)
	}
	kind := "a special file"
	switch t := mode.Type(); {
	case t&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeCharDevice != 0:
		kind = "a character device"
	case t&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%s: not a regular file (%s): it must be a regular file or not exist", name, kind)
}

// resolvePath returns the file that path names, following symbolic links,
// dangling ones included, so that every name of a file, even one yet to be
// made, resolves to the same path: the lock and the temporaries derive from
// it, and a save replaces the file a link points to, never the link. A path
// whose directory does not exist, or a loop of links, is returned as far as
// it resolved; opening it then fails with the system's error.
func resolvePath(path string) string {
	for range 40 { // as many links as Linux follows
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		target, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's directory as it really is: ".." in
			// target must not be cleaned against a link's name.
			dir := filepath.Dir(path)
			if d, err := filepath.EvalSymlinks(dir); err == nil {
				dir = d
			}
			target = filepath.Join(dir, target)
		}
		path = target
	}
	// The last name is not a link (or could not be followed); its directory
	// may be reached through links.
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(d, base)
	}
	return filepath.Clean(path)
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
// and a random number (versions before named them ".BASE.tmp-N"). Only a run
// that holds the lock of BASE (see lockState) writes one, so a run that holds
// the lock knows that every temporary of BASE but its own was left by a run
// that died while saving (kill -9, a power cut): removeTemps removes them. The
// process ID is only a hint for a person reading the directory: IDs lie (a
// zombie keeps its ID, and containers or hosts sharing a volume each have
// their own).
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
			if saving.tmp == nil {
				saving.tmp = make(map[string]bool)
			}
			saving.tmp[name] = true
		}
		return f, err
	}
}

// removeTemps removes the temporary files of path (resolved) that runs which
// died while saving left: every file named ".BASE.tmp-PID-N" or, of the old
// naming, ".BASE.tmp-N", but the one this process is writing. The caller must
// hold the lock of path, which is what makes them stale; where there are no
// locks (lockSupported false) nothing tells a stale temporary from one being
// written, and it removes none. It removes nothing else, not even other files
// of the same prefix, and gives up quietly on errors: a stale file costs disk
// space, not correctness.
func removeTemps(path string) {
	if !lockSupported {
		return
	}
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
		pid, n, named := strings.Cut(rest, "-")
		if !isDigits(pid) || named && !isDigits(n) {
			continue // not ours
		}
		name := filepath.Join(dir, e.Name())
		saving.Lock()
		if !saving.tmp[name] {
			os.Remove(name)
		}
		saving.Unlock()
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
