package collystorage_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom/collystorage"
)

// The test site: 300 pages, each with 193 links to up to 25 others (65
// links to up to 9 others with -short, which the race detector runs: colly
// parses every page, and the race detector slows that 5-10 times).
const sitePages = 300

func siteLinks() int {
	if testing.Short() {
		return 8
	}
	return 24
}

// The crawl tests use an error rate of 1e-9, so that no page of the site is
// skipped as a false positive (at most 300 * 1e-9 = 3e-7 of the runs), and a
// small first sub-filter, so that the filter grows during the crawl.
const (
	testCapacity = 50
	testRate     = 1e-9
)

// TestCrawlEachPageOnce crawls the site with a real colly collector, one
// goroutine and eight, and checks that every page was fetched exactly once.
func TestCrawlEachPageOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		async    bool
		parallel int
	}{{"sync", false, 0}, {"async/8", true, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, sitePages, siteLinks(), 0, 0)
			store, err := collystorage.New(testCapacity, testRate)
			if err != nil {
				t.Fatal(err)
			}
			c := &crawler{store: store, async: tc.async, parallel: tc.parallel}
			c.crawl(t, s, s.page(0))
			s.checkOnce(t, 0, sitePages-1)
			refused := 0
			for _, n := range c.refused {
				refused += n
			}
			// Every page has 1+8*siteLinks() links: all the visits (those
			// links and the start) but the first of each URL must have
			// been refused.
			if want := sitePages*(1+8*siteLinks()) + 1; refused+sitePages != want {
				t.Errorf("%d visits refused + %d fetched = %d, want %d (links and start)", refused, sitePages, refused+sitePages, want)
			}
			if got := store.Count(); got != sitePages {
				t.Errorf("Count = %d, want %d", got, sitePages)
			}
			if store.Bits() == 0 {
				t.Error("Bits = 0")
			}
		})
	}
}

// TestCrawlRestart crawls the first 100 pages, saves the state, and crawls
// the rest in a second run that loads it: every page is fetched once over
// both runs, although the second run meets links to the first 100 pages
// thousands of times.
func TestCrawlRestart(t *testing.T) {
	s := newSite(t, sitePages, siteLinks(), 0, 0)
	path := filepath.Join(t.TempDir(), "visited.bf")

	first, err := collystorage.Open(path, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	c := &crawler{store: first, async: true, parallel: 4, only: `/p/[0-9]{1,2}$`}
	c.crawl(t, s, s.page(0))
	s.checkOnce(t, 0, 99)
	if err := first.Save(); err != nil {
		t.Fatal(err)
	}

	second, err := collystorage.Open(path, testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Count(); got != 100 {
		t.Fatalf("the reloaded state counts %d pages, want 100", got)
	}
	c = &crawler{store: second, async: true, parallel: 4}
	c.crawl(t, s, s.page(100))
	s.checkOnce(t, 0, sitePages-1)
	refusedOld := 0
	for i := range 100 {
		refusedOld += c.refused["/p/"+strconv.Itoa(i)]
	}
	if refusedOld < 1000 {
		t.Errorf("the second run met links to pages 0-99 only %d times: the test proves little", refusedOld)
	}
	t.Logf("second run: links to the first run's pages refused %d times", refusedOld)
}
