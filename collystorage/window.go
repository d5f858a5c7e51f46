package collystorage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/gocolly/colly/v2/storage"
)

// WindowStorage is a colly storage.Storage that remembers the requests of
// the recent past only, in a concurrent bloom.WindowFilter in memory. With
// bloom.Every(d) a page fetched is refused for at least d, and fetched again
// once it is forgotten, at most d*r/(r-1) after it was fetched, r being the
// window's number of generations: 7 to 11 for 10^6 pages a week at error
// rates from 1% to 10^-9, so a page comes back 7 to 7.7-8.2 days after it
// was fetched. A crawler that runs every day and must fetch each page again
// after a week keeps one, saved to a file between runs (OpenWindow, Save,
// WriteTo, ReadWindow). Its memory is fixed when it is made: it does not
// grow, however long the crawler runs. Cookies are kept in memory by
// colly's storage.InMemoryStorage and are not saved.
//
// A page is remembered from the time it was first found not visited, not
// from the last time a link to it was met: IsVisited marks only requests
// that were not visited (see IsVisited), so a home page linked from every
// page is still fetched again after the window.
//
// Its promises are the window's, as long as at most window/(r-1) pages come
// in a generation's time, d/(r-1) (window being NewWindow's first argument):
// no page fetched within the last d is fetched again, and a page not
// fetched within the window is taken for a fetched one, and skipped, with
// a probability of at most the error rate. When more pages come in a
// generation's time than it was sized for, the default policy,
// bloom.RotateEarly, keeps the error rate and may forget pages sooner than
// d; bloom.OnOverflow(bloom.Grow) keeps both promises and extends the
// generation for the burst (Bits grows, and shrinks back once the burst has
// left the window); bloom.OnOverflow(bloom.Saturate) keeps every page for d
// and lets the error rate rise. A crawl that comes in bursts (the whole
// site in an hour, once a week) wants Grow.
//
// A WindowStorage is safe for concurrent use, as Storage is. A zero
// WindowStorage is not usable: Init, IsVisited, Visited, Save and WriteTo
// return an error (so Collector.SetStorage refuses it), Cookies returns "",
// SetCookies does nothing and the accessors return zero values.
type WindowStorage struct {
	f       *bloom.WindowFilter
	cookies storage.InMemoryStorage
	path    string     // the file OpenWindow was given, or "" (NewWindow, ReadWindow)
	saveMu  sync.Mutex // one Save at a time
}

var errZeroWindow = errors.New("collystorage: use of a zero WindowStorage (create one with NewWindow, OpenWindow or ReadWindow)")

// NewWindow returns an empty WindowStorage whose filter is
// bloom.NewWindow(window, errorRate, opts...) made Concurrent. With
// bloom.Every(d) it remembers the pages fetched within the last d, and
// window is the number of pages the crawler fetches within d at most,
// spread over it: at most window/(r-1) within each d/(r-1) (see
// WindowStorage); without Every it remembers the last window pages
// fetched. errorRate is the largest false-positive rate allowed, in (0, 1).
// opts are bloom's options for a WindowFilter (Every, OnOverflow,
// Generations, Seed, Clock); Concurrent is always applied and must not be
// given. It takes the memory of a window of window keys (17 bits per page at
// 1%, 24.3 at 0.1%; Bits reports it) at once. It returns the errors of
// bloom.NewWindow.
func NewWindow(window uint64, errorRate float64, opts ...bloom.Option) (*WindowStorage, error) {
	f, err := bloom.NewWindow(window, errorRate, withConcurrent(opts)...)
	if err != nil {
		return nil, err
	}
	return newWindowStorage(f)
}

func newWindowStorage(f *bloom.WindowFilter) (*WindowStorage, error) {
	s := &WindowStorage{f: f}
	// Cookies work before Collector.SetStorage calls Init.
	if err := s.cookies.Init(); err != nil {
		return nil, fmt.Errorf("collystorage: cookies: %w", err)
	}
	return s, nil
}

// Init implements storage.Storage; Collector.SetStorage calls it. It returns
// an error for a zero WindowStorage and does nothing else.
func (s *WindowStorage) Init() error {
	if s.f == nil {
		return errZeroWindow
	}
	return nil
}

// IsVisited implements storage.Storage. It reports whether the request ID
// is in the window, and if it is not, marks it, atomically: of several
// goroutines that ask about the same ID at once while it is not in the
// window, exactly one gets false (none does if the ID is a false positive).
// An ID in the window is left as it is: meeting a link to a page again does
// not make the window keep it longer. It is the window's first-seen
// TestAndAddHash: a test of r cache lines, and an add for an ID not in the
// window; it allocates nothing.
func (s *WindowStorage) IsVisited(requestID uint64) (bool, error) {
	if s.f == nil {
		return false, errZeroWindow
	}
	return s.f.TestAndAddHash(requestID), nil
}

// Visited implements storage.Storage: it marks the request ID as visited
// unless it is in the window, as IsVisited does (colly calls it right after
// an IsVisited that answered false, which marked it already: then it only
// tests). It allocates nothing.
func (s *WindowStorage) Visited(requestID uint64) error {
	if s.f == nil {
		return errZeroWindow
	}
	// Not AddHash: adding an ID already in the newest generation when that
	// generation is full rotates the window, and counts the ID again in
	// the new one (TestCrawlWindow's Count was 301 and 314 for 300 pages).
	s.f.TestAndAddHash(requestID)
	return nil
}

// Cookies implements storage.Storage: the cookies for u, kept in memory.
func (s *WindowStorage) Cookies(u *url.URL) string {
	if s.f == nil {
		return ""
	}
	return s.cookies.Cookies(u)
}

// SetCookies implements storage.Storage: it keeps cookies for u in memory.
func (s *WindowStorage) SetCookies(u *url.URL, cookies string) {
	if s.f == nil {
		return
	}
	s.cookies.SetCookies(u, cookies)
}

// Count returns the number of request IDs marked in the generations still in
// the window (bloom.WindowFilter.Count): about the pages fetched within the
// window, false positives not counted. It is 0 for a zero WindowStorage.
// O(r).
func (s *WindowStorage) Count() uint64 {
	if s.f == nil {
		return 0
	}
	return s.f.Count()
}

// Bits returns the size of the window in bits, fixed when it was made: its
// memory, and the size of what Save writes, give or take a few hundred
// bytes of headers. It is 0 for a zero WindowStorage.
func (s *WindowStorage) Bits() uint64 {
	if s.f == nil {
		return 0
	}
	return s.f.Bits()
}

// Duration returns how long a page is at least remembered after it was
// marked: Every's d (rounded up to a whole number of generations' periods),
// or 0 without Every or for a zero WindowStorage.
func (s *WindowStorage) Duration() time.Duration {
	if s.f == nil {
		return 0
	}
	return s.f.Duration()
}

// RetainedSince returns a time after which every request visited is
// remembered, on the window's clock (bloom.WindowFilter.RetainedSince): the
// start of the oldest generation still in the window, up to
// Duration*r/(r-1) ago for r generations, later after a burst rotated the
// window early. It returns the zero Time without Every or for a zero
// WindowStorage.
func (s *WindowStorage) RetainedSince() time.Time {
	if s.f == nil {
		return time.Time{}
	}
	return s.f.RetainedSince()
}

// The saved state of a WindowStorage, version 1, is a 12-byte header
// followed by the window's bloom.WindowFilter encoding (its doc gives the
// format: the generations and when each started, with CRC-32C checksums):
//
//	offset size field
//	0      8    magic "colly-bw"
//	8      1    version, 1
//	9      1    key encoding, 1: a request ID h is the window's hashed key h
//	            (bloom's AddHash and TestHash), which is the key of h's 8
//	            bytes in little-endian order
//	10     2    zero
//
// ReadWindow refuses other magic (a Storage's "colly-bf" with a message that
// says so), versions and key encodings, and nonzero bytes 10 and 11, with an
// error wrapping bloom.ErrCorrupt.
const windowFileMagic = "colly-bw"

// OpenWindow returns the WindowStorage saved in the file at path by Save,
// or, if there is no such file, an empty one as NewWindow(window, errorRate,
// opts...) returns. Save then writes to path. A saved window resumes as it
// was saved, on the clock of opts (bloom.Clock, or time.Now): the pages
// marked before it was saved are forgotten when they would have been had
// the crawler run on, so a crawler that stops for a day fetches again after
// a week what it fetched a week ago.
//
// The saved window must have the parameters opts and the arguments make:
// OpenWindow returns an error wrapping bloom.ErrIncompatible if its window
// or error rate differ from those given, and one wrapping
// bloom.ErrInvalidParameter if opts make another window (another Every,
// OnOverflow, Generations or Seed) or, for a new file, if NewWindow would
// refuse the parameters. To learn what the options make, it builds the
// empty window they make and reads the file into it, so it briefly holds
// the memory of two windows. Otherwise its errors are those of Open.
func OpenWindow(path string, window uint64, errorRate float64, opts ...bloom.Option) (*WindowStorage, error) {
	s, err := NewWindow(window, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	s.path = path
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("collystorage: %w", err)
	}
	defer file.Close()
	want := windowParamsOf(s.f)
	if err := readWindowHeader(file); err != nil {
		return nil, fmt.Errorf("collystorage: %s: %w", path, err)
	}
	// ReadFrom replaces the window's generations and keeps its clock and
	// lock (Concurrent).
	if _, err := s.f.ReadFrom(file); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("collystorage: %s: %w", path, err)
	}
	var extra [1]byte
	if _, err := io.ReadFull(file, extra[:]); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("collystorage: %s: bytes after the window: %w", path, bloom.ErrCorrupt)
		}
		return nil, fmt.Errorf("collystorage: %s: %w", path, err)
	}
	if err := windowParamsOf(s.f).match(want); err != nil {
		return nil, fmt.Errorf("collystorage: %s holds %w", path, err)
	}
	return s, nil
}

// windowParams is what makes a window: the arguments and the options of
// NewWindow, and the sizes they give (not Bits, which under bloom.Grow
// includes the extensions of a burst).
type windowParams struct {
	window    uint64
	errorRate float64
	gens      int
	genCap    uint64
	k         uint
	duration  time.Duration
	seed      uint32
	policy    bloom.Overflow
}

// windowParamsOf returns the parameters of f.
func windowParamsOf(f *bloom.WindowFilter) windowParams {
	return windowParams{
		window: f.Window(), errorRate: f.ErrorRate(), gens: f.Generations(), genCap: f.GenerationCapacity(),
		k: f.Hashes(), duration: f.Duration(), seed: f.Seed(), policy: f.Overflow(),
	}
}

// match returns an error saying how p, a saved window's, differs from
// want, the window asked for.
func (p windowParams) match(want windowParams) error {
	switch {
	case p.window != want.window:
		return fmt.Errorf("a window of %d pages, not %d: %w", p.window, want.window, bloom.ErrIncompatible)
	case p.errorRate != want.errorRate:
		return fmt.Errorf("a window of error rate %v, not %v: %w", p.errorRate, want.errorRate, bloom.ErrIncompatible)
	case p.duration != want.duration:
		return fmt.Errorf("a window of duration %v, not %v (Every): %w", p.duration, want.duration, bloom.ErrInvalidParameter)
	case p.gens != want.gens:
		return fmt.Errorf("a window of %d generations, not %d (Generations): %w", p.gens, want.gens, bloom.ErrInvalidParameter)
	case p.seed != want.seed:
		return fmt.Errorf("a window of seed %#x, not %#x (Seed): %w", p.seed, want.seed, bloom.ErrInvalidParameter)
	case p.policy != want.policy:
		return fmt.Errorf("a window of overflow policy %v, not %v (OnOverflow): %w", p.policy, want.policy, bloom.ErrInvalidParameter)
	case p != want:
		return fmt.Errorf("a window of other sizes (%d keys per generation, %d hashes), not %d, %d: %w",
			p.genCap, p.k, want.genCap, want.k, bloom.ErrCorrupt)
	}
	return nil
}

// readWindowHeader reads and checks the 12-byte header of a saved
// WindowStorage.
func readWindowHeader(r io.Reader) error {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("header: %w", err)
	}
	switch {
	case string(h[:8]) == fileMagic:
		return fmt.Errorf("a saved Storage, not a WindowStorage (use Open): %w", bloom.ErrCorrupt)
	case string(h[:8]) != windowFileMagic:
		return fmt.Errorf("not a saved WindowStorage (magic %q): %w", h[:8], bloom.ErrCorrupt)
	case h[8] != fileVersion:
		return fmt.Errorf("unknown version %d (this release reads %d): %w", h[8], fileVersion, bloom.ErrCorrupt)
	case h[9] != keyRequestID8:
		return fmt.Errorf("unknown key encoding %d (this release reads %d): %w", h[9], keyRequestID8, bloom.ErrCorrupt)
	case h[10] != 0 || h[11] != 0:
		return fmt.Errorf("nonzero reserved header bytes: %w", bloom.ErrCorrupt)
	}
	return nil
}

// ReadWindow reads a WindowStorage written by WriteTo or Save from r. opts
// are those bloom.ReadWindow takes: Clock, and Seed if it agrees with the
// saved one; Concurrent is always applied and must not be given. It reads
// no byte past the window, allocates about the window's size only once the
// input has supplied it or shown that it holds it, and never panics. It
// returns an error wrapping bloom.ErrCorrupt for input that is not a saved
// WindowStorage or is damaged, io.ErrUnexpectedEOF for input cut short (an
// empty one included), one wrapping bloom.ErrInvalidParameter for options
// that contradict the window, or the error of r.
func ReadWindow(r io.Reader, opts ...bloom.Option) (*WindowStorage, error) {
	if err := readWindowHeader(r); err != nil {
		return nil, fmt.Errorf("collystorage: %w", err)
	}
	f, err := bloom.ReadWindow(r, withConcurrent(opts)...)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("collystorage: %w", err)
	}
	return newWindowStorage(f)
}

// WriteTo writes the WindowStorage's window to w in the format ReadWindow
// reads (io.WriterTo): a 12-byte header and the window's encoding, about
// Bits()/8 bytes. It may run during a crawl, with the guarantees of
// Storage.WriteTo. It returns an error for a zero WindowStorage, or the
// error of w.
func (s *WindowStorage) WriteTo(w io.Writer) (int64, error) {
	if s.f == nil {
		return 0, errZeroWindow
	}
	h := [headerSize]byte{8: fileVersion, 9: keyRequestID8}
	copy(h[:], windowFileMagic)
	n, err := w.Write(h[:])
	if err != nil {
		return int64(n), err
	}
	m, err := s.f.WriteTo(w)
	return int64(n) + m, err
}

// Save writes the WindowStorage to the file that OpenWindow was given,
// atomically, as Storage.Save does, with its guarantees and errors.
func (s *WindowStorage) Save() error {
	if s.f == nil {
		return errZeroWindow
	}
	if s.path == "" {
		return errors.New("collystorage: Save needs a WindowStorage made by OpenWindow; use WriteTo")
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if err := saveFile(s.path, s.WriteTo); err != nil {
		return fmt.Errorf("collystorage: save %s: %w", s.path, err)
	}
	return nil
}
