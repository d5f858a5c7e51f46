package collystorage_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
)

// fakeClock is a clock for bloom.Clock that moves only when the test says,
// safe for the goroutines of an asynchronous crawl.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := new(fakeClock)
	c.ns.Store(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time       { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time)      { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) option() bloom.Option { return bloom.Clock(c.now) }

// The window of the window tests: a week, in windowGens generations of a
// day, so that a page is forgotten at most week*windowGens/(windowGens-1)
// after it was marked (8 days); sized for windowPages pages a week at
// testRate. A crawl fetches the whole site at one instant of the fake
// clock: that must fit in one generation, windowPages/(windowGens-1) pages,
// or the window rotates early and forgets the first generation of the
// crawl a day early (as it did with windowPages = 1000, before the window
// kept its floor after bursts). It fits twice, for margin.
const (
	week        = 7 * 24 * time.Hour
	windowGens  = 8
	windowPages = 2 * sitePages * (windowGens - 1)
)

// forgetBy is the longest a window of windowGens generations and duration
// week keeps a page: a page marked at t is forgotten by t+forgetBy.
const forgetBy = week * windowGens / (windowGens - 1)

func windowOpts(c *fakeClock) []bloom.Option {
	return []bloom.Option{bloom.Every(week), bloom.Generations(windowGens), c.option()}
}

// allPages returns the URLs of every page of s.
func allPages(s *site) []string {
	start := make([]string, s.n)
	for i := range start {
		start[i] = s.page(i)
	}
	return start
}

// TestCrawlWindow crawls the site with a real colly collector on a
// WindowStorage of a week, on a fake clock: every page is fetched once;
// just before the week is up, a crawl that starts from every page fetches
// nothing (no page is forgotten within the window); once the window has
// passed for the first crawl's pages, a crawl fetches every page once more.
// The refused crawl in between met every page, 300 times as a start and
// thousands of times as a link, so a storage that marked a page again each
// time it met it (a TestAndAdd of the window) would still hold every page
// after the window and fetch nothing the third time.
func TestCrawlWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		async    bool
		parallel int
	}{{"sync", false, 0}, {"async/8", true, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			t0 := clock.now()
			s := newSite(t, sitePages, siteLinks(), 0, 0)
			store, err := collystorage.NewWindow(windowPages, testRate, windowOpts(clock)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := store.Duration(); got != week {
				t.Fatalf("Duration = %v, want %v", got, week)
			}
			c := &crawler{store: store, async: tc.async, parallel: tc.parallel}
			c.crawl(t, s, s.page(0))
			s.checkOnce(t, 0, sitePages-1)
			if got := store.Count(); got != sitePages {
				t.Errorf("Count = %d, want %d", got, sitePages)
			}

			clock.set(t0.Add(week - time.Nanosecond))
			c.crawl(t, s, allPages(s)...)
			s.checkOnce(t, 0, sitePages-1)
			refused := 0
			for _, n := range c.refused {
				refused += n
			}
			if want := sitePages; refused < want {
				t.Errorf("a crawl within the window refused %d visits, want at least the %d starts", refused, want)
			}
			if since := store.RetainedSince(); since.After(t0) {
				t.Errorf("RetainedSince = %v, after the first crawl at %v", since, t0)
			}

			clock.set(t0.Add(forgetBy + time.Nanosecond))
			c.crawl(t, s, s.page(0))
			s.checkTimes(t, 0, sitePages-1, 2)
			if got := store.Count(); got != sitePages {
				t.Errorf("Count after the window = %d, want %d (the second crawl's pages only)", got, sitePages)
			}
		})
	}
}

// TestCrawlWindowRestart crawls in three runs with a state file: pages 0-99
// on day 0, the rest on day 3 (a run that resumes the saved window and
// refuses pages 0-99 thousands of times), and on day 8, past the window of
// the first run's pages but not of the second's, a run from page 0 that
// fetches pages 0-99 again and none of the others. A reload that did not
// keep when each generation started (or restarted the window at the time
// of loading) would keep pages 0-99 on day 8.
func TestCrawlWindowRestart(t *testing.T) {
	s := newSite(t, sitePages, siteLinks(), 0, 0)
	path := filepath.Join(t.TempDir(), "visited.bw")
	clock := newFakeClock()
	t0 := clock.now()

	run := func(only string, start int) *crawler {
		t.Helper()
		store, err := collystorage.OpenWindow(path, windowPages, testRate, windowOpts(clock)...)
		if err != nil {
			t.Fatal(err)
		}
		c := &crawler{store: store, async: true, parallel: 4, only: only}
		c.crawl(t, s, s.page(start))
		if err := store.Save(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	run(`/p/[0-9]{1,2}$`, 0)
	s.checkOnce(t, 0, 99)

	clock.set(t0.Add(3 * 24 * time.Hour))
	c := run("", 100)
	s.checkOnce(t, 0, sitePages-1)
	refusedOld := 0
	for i := range 100 {
		refusedOld += c.refused["/p/"+strconv.Itoa(i)]
	}
	if refusedOld < 300 {
		t.Errorf("the second run met links to pages 0-99 only %d times: the test proves little", refusedOld)
	}

	clock.set(t0.Add(forgetBy + time.Nanosecond))
	run("", 0)
	hits, _ := s.counts()
	for i := range sitePages {
		want := 1
		if i < 100 {
			want = 2
		}
		if got := hits["/p/"+strconv.Itoa(i)]; got != want {
			t.Errorf("/p/%d fetched %d times in three runs, want %d", i, got, want)
		}
	}
}

// TestCrawlWindowGrow crawls the whole site at one instant into a window
// sized for 1,000 pages a week (143 a day, a generation's share) with
// bloom.OnOverflow(bloom.Grow), which extends the generation for the burst
// of 300: saved with its extensions, resumed on day 7 less a nanosecond, a
// crawl from every page fetches nothing (under the default RotateEarly the
// window forgot 143 of them on day 6); resumed after the window, a crawl
// fetches every page once more.
func TestCrawlWindowGrow(t *testing.T) {
	const pages = 1000
	s := newSite(t, sitePages, siteLinks(), 0, 0)
	path := filepath.Join(t.TempDir(), "visited.bw")
	clock := newFakeClock()
	t0 := clock.now()
	opts := append(windowOpts(clock), bloom.OnOverflow(bloom.Grow))
	ring, err := collystorage.NewWindow(pages, testRate, opts...)
	if err != nil {
		t.Fatal(err)
	}
	run := func(start ...string) *collystorage.WindowStorage {
		t.Helper()
		store, err := collystorage.OpenWindow(path, pages, testRate, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c := &crawler{store: store, async: true, parallel: 4}
		c.crawl(t, s, start...)
		if err := store.Save(); err != nil {
			t.Fatal(err)
		}
		return store
	}
	store := run(s.page(0))
	s.checkOnce(t, 0, sitePages-1)
	if store.Bits() <= ring.Bits() {
		t.Errorf("Bits = %d after a burst of %d pages, no more than the ring's %d: no extension", store.Bits(), sitePages, ring.Bits())
	}

	clock.set(t0.Add(week - time.Nanosecond))
	run(allPages(s)...)
	s.checkOnce(t, 0, sitePages-1)

	clock.set(t0.Add(forgetBy + time.Nanosecond))
	run(s.page(0))
	s.checkTimes(t, 0, sitePages-1, 2)
}

// TestWindowIsVisitedConcurrent asks about the same 5,000 new IDs from 8
// goroutines at once: each ID is heard as not visited exactly once, and
// asking again changes nothing.
func TestWindowIsVisitedConcurrent(t *testing.T) {
	const ids, workers = 5000, 8
	clock := newFakeClock()
	// All in one generation, with room: a test-and-add of an ID that
	// another goroutine has just added, when that made the generation
	// full, rotates and counts the ID again in the new one.
	store, err := collystorage.NewWindow(2*ids*(windowGens-1), testRate, windowOpts(clock)...)
	if err != nil {
		t.Fatal(err)
	}
	var fresh atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := requestID((i + w*ids/workers) % ids)
				v, err := store.IsVisited(id)
				if err != nil {
					t.Error(err)
					return
				}
				if !v {
					fresh.Add(1)
					if err := store.Visited(id); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if got := fresh.Load(); got != ids {
		t.Fatalf("%d IsVisited calls answered false for %d IDs, want one per ID", got, ids)
	}
	if got := store.Count(); got != ids {
		t.Fatalf("Count = %d, want %d", got, ids)
	}
}

// TestWindowNoAllocs checks that IsVisited and Visited allocate nothing.
func TestWindowNoAllocs(t *testing.T) {
	store, err := collystorage.NewWindow(1000, 0.01, bloom.Every(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		id++
		store.IsVisited(id)
		store.IsVisited(id)
		store.Visited(id)
	}); a != 0 {
		t.Fatalf("IsVisited and Visited: %v allocations per call", a)
	}
}

// TestWindowWriteToRead round-trips a window through WriteTo and
// ReadWindow on the same clock: the same IDs are visited, Count and Bits
// agree, and the read window forgets them when the original would.
func TestWindowWriteToRead(t *testing.T) {
	clock := newFakeClock()
	a, err := collystorage.NewWindow(windowPages, 0.001, windowOpts(clock)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		a.IsVisited(requestID(i))
	}
	var buf bytes.Buffer
	n, err := a.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d bytes", n, err, buf.Len())
	}
	if bits := a.Bits(); uint64(n) < bits/8 || uint64(n) > bits/8+1024 {
		t.Errorf("WriteTo wrote %d bytes for %d bits", n, bits)
	}
	b, err := collystorage.ReadWindow(bytes.NewReader(buf.Bytes()), clock.option())
	if err != nil {
		t.Fatal(err)
	}
	if a.Count() != b.Count() || a.Bits() != b.Bits() || a.Duration() != b.Duration() {
		t.Fatalf("read back: Count %d, Bits %d, Duration %v; want %d, %d, %v", b.Count(), b.Bits(), b.Duration(), a.Count(), a.Bits(), a.Duration())
	}
	for i := range 500 {
		if v, _ := b.IsVisited(requestID(i)); !v {
			t.Fatalf("ID %d not visited after ReadWindow", i)
		}
	}
	clock.ns.Add(int64(forgetBy))
	for i := range 500 {
		if v, _ := b.IsVisited(requestID(i)); v {
			t.Fatalf("ID %d still visited after the window", i)
		}
	}
}

// TestOpenWindowErrors checks what OpenWindow refuses: a file saved with
// other parameters or options, a Storage's file, damaged and cut-short
// files, and that Open refuses a WindowStorage's file.
func TestOpenWindowErrors(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	path := filepath.Join(dir, "w.bw")
	w, err := collystorage.OpenWindow(path, windowPages, 0.001, windowOpts(clock)...)
	if err != nil {
		t.Fatal(err)
	}
	w.IsVisited(1)
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	clk := clock.option()
	for _, tc := range []struct {
		name   string
		window uint64
		rate   float64
		opts   []bloom.Option
		want   error
	}{
		{"same", windowPages, 0.001, windowOpts(clock), nil},
		{"window", windowPages + 1, 0.001, windowOpts(clock), bloom.ErrIncompatible},
		{"rate", windowPages, 0.01, windowOpts(clock), bloom.ErrIncompatible},
		{"every", windowPages, 0.001, []bloom.Option{bloom.Every(2 * week), bloom.Generations(windowGens), clk}, bloom.ErrInvalidParameter},
		{"no every", windowPages, 0.001, []bloom.Option{bloom.Generations(windowGens)}, bloom.ErrInvalidParameter},
		{"generations", windowPages, 0.001, []bloom.Option{bloom.Every(week), bloom.Generations(windowGens + 1), clk}, bloom.ErrInvalidParameter},
		{"seed", windowPages, 0.001, append(windowOpts(clock), bloom.Seed(99)), bloom.ErrInvalidParameter},
		{"overflow", windowPages, 0.001, append(windowOpts(clock), bloom.OnOverflow(bloom.Saturate)), bloom.ErrInvalidParameter},
		{"concurrent", windowPages, 0.001, append(windowOpts(clock), bloom.Concurrent()), bloom.ErrInvalidParameter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collystorage.OpenWindow(path, tc.window, tc.rate, tc.opts...)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if v, _ := got.IsVisited(1); !v {
					t.Fatal("ID 1 not visited after OpenWindow")
				}
				return
			}
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("OpenWindow = %v, %v; want an error wrapping %v", got, err, tc.want)
			}
		})
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	storagePath := filepath.Join(dir, "s.bf")
	s, err := collystorage.Open(storagePath, 100, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := bytes.Clone(data)
	flip[len(flip)/2] ^= 1
	for _, tc := range []struct {
		name, path string
		want       error
		msg        string
	}{
		{"storage file", storagePath, bloom.ErrCorrupt, "use Open"},
		{"magic", write("magic", append([]byte("colly-xx"), data[8:]...)), bloom.ErrCorrupt, "magic"},
		{"version", write("version", append(append([]byte{}, data[:8]...), append([]byte{2}, data[9:]...)...)), bloom.ErrCorrupt, "version"},
		{"flipped bit", write("flip", flip), bloom.ErrCorrupt, ""},
		{"cut", write("cut", data[:len(data)-1]), io.ErrUnexpectedEOF, ""},
		{"header only", write("header", data[:12]), io.ErrUnexpectedEOF, ""},
		{"trailing", write("trailing", append(bytes.Clone(data), 0)), bloom.ErrCorrupt, "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collystorage.OpenWindow(tc.path, windowPages, 0.001, windowOpts(clock)...)
			if !errors.Is(err, tc.want) || got != nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("OpenWindow = %v, %v; want an error wrapping %v that says %q", got, err, tc.want, tc.msg)
			}
		})
	}
	if _, err := collystorage.Open(path, 100, 0.001); !errors.Is(err, bloom.ErrCorrupt) {
		t.Fatalf("Open of a WindowStorage's file: %v, want an error wrapping ErrCorrupt", err)
	}
	if _, err := collystorage.ReadWindow(bytes.NewReader(nil)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadWindow of nothing: %v, want io.ErrUnexpectedEOF", err)
	}
	// A new window: NewWindow's errors.
	if _, err := collystorage.OpenWindow(filepath.Join(dir, "new.bw"), 0, 0.01); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Fatalf("OpenWindow of a window of 0: %v, want ErrInvalidParameter", err)
	}
	if err := (&collystorage.WindowStorage{}).Save(); err == nil {
		t.Fatal("Save of a zero WindowStorage succeeded")
	}
	if w, _ := collystorage.NewWindow(10, 0.01); w.Save() == nil {
		t.Fatal("Save of a WindowStorage not made by OpenWindow succeeded")
	}
}

// TestWindowZero checks that a zero WindowStorage fails loudly, never
// answering "visited", and that colly's SetStorage refuses it through Init.
func TestWindowZero(t *testing.T) {
	var s collystorage.WindowStorage
	if s.Init() == nil {
		t.Error("Init of a zero WindowStorage succeeded")
	}
	if v, err := s.IsVisited(1); v || err == nil {
		t.Errorf("IsVisited = %v, %v; want false and an error", v, err)
	}
	if s.Visited(1) == nil {
		t.Error("Visited of a zero WindowStorage succeeded")
	}
	if _, err := s.WriteTo(io.Discard); err == nil {
		t.Error("WriteTo of a zero WindowStorage succeeded")
	}
	if s.Count() != 0 || s.Bits() != 0 || s.Duration() != 0 || !s.RetainedSince().IsZero() {
		t.Error("accessors of a zero WindowStorage are not zero")
	}
	s.SetCookies(nil, "a=b")
	if s.Cookies(nil) != "" {
		t.Error("Cookies of a zero WindowStorage")
	}
}

// FuzzReadWindow checks that ReadWindow never panics, that an error comes
// with no WindowStorage, and that what it accepts saves to bytes it reads
// back alike. (Not the same bytes: the window's decoder accepts checksum
// sections of any power of two, its encoder writes 2^20.)
func FuzzReadWindow(f *testing.F) {
	clock := newFakeClock()
	w, err := collystorage.NewWindow(100, 0.01, windowOpts(clock)...)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 50 {
		w.IsVisited(requestID(i))
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("colly-bw\x01\x01\x00\x00"))
	f.Add([]byte("colly-bw\x01\x01\x00\x00BLMW"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := collystorage.ReadWindow(bytes.NewReader(data), clock.option())
		if err != nil {
			if s != nil {
				t.Fatal("a WindowStorage with an error")
			}
			return
		}
		var out bytes.Buffer
		if _, err := s.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		again, err := collystorage.ReadWindow(bytes.NewReader(out.Bytes()), clock.option())
		if err != nil {
			t.Fatalf("ReadWindow of what a read window wrote: %v", err)
		}
		if again.Count() != s.Count() || again.Bits() != s.Bits() || again.Duration() != s.Duration() {
			t.Fatal("a WindowStorage read back differs")
		}
	})
}
