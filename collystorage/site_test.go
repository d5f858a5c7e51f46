package collystorage_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/gocolly/colly/v2/storage"
)

// site is a local web site of pages /p/0 ... /p/(n-1) that link to each
// other many times, counting every request it serves by path and by
// User-Agent.
type site struct {
	t     testing.TB
	url   string           // http://127.0.0.1:port
	srv   *httptest.Server // nil in a crawler process
	n     int
	links int           // random links per page (each written 8 times)
	delay time.Duration // before each page is served
	// fragments makes each page link to the next also as "/p/j#top"
	// (guarded by mu; set with linkFragments).
	fragments bool

	mu      sync.Mutex
	hits    map[string]int // path -> requests
	byAgent map[string]int // User-Agent -> page requests
	barrier chan struct{}  // closed when `waiting` reaches 0
	waiting int
}

// newSite starts a site of n pages that each link to the next and to links
// random others (by 8 links, twice each in four forms that colly resolves to
// one URL), served after delay; a request for /barrier blocks until barrier
// requests have arrived.
func newSite(t testing.TB, n, links int, delay time.Duration, barrier int) *site {
	s := &site{t: t, n: n, links: links, delay: delay, hits: map[string]int{}, byAgent: map[string]int{},
		barrier: make(chan struct{}), waiting: barrier}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.url = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// page returns the absolute URL of page i.
func (s *site) page(i int) string { return s.url + "/p/" + strconv.Itoa(i) }

// host returns the site's host name, for colly.AllowedDomains.
func (s *site) host() string {
	u, err := url.Parse(s.url)
	if err != nil {
		s.t.Fatal(err)
	}
	return u.Hostname()
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/barrier" {
		s.mu.Lock()
		s.waiting--
		if s.waiting == 0 {
			close(s.barrier)
		}
		s.mu.Unlock()
		select {
		case <-s.barrier:
		case <-time.After(time.Minute):
			http.Error(w, "barrier timed out", http.StatusGatewayTimeout)
		}
		return
	}
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.byAgent[r.UserAgent()]++
	fragments := s.fragments
	s.mu.Unlock()
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
	if !strings.HasPrefix(r.URL.Path, "/p/") || err != nil || i < 0 || i >= s.n || r.URL.Path != "/p/"+strconv.Itoa(i) {
		http.NotFound(w, r)
		return
	}
	time.Sleep(s.delay)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	fmt.Fprintf(&b, "<html><body><h1>page %d</h1>\n", i)
	// The next page, so every page is reachable from /p/0, then random
	// others (fixed by i), each twice and in four forms. (Not "/p/j#top"
	// unless fragments: colly keeps the fragment in the URL it hashes, so
	// that is another request ID, fetched once more; see TestCrawlFragment.)
	fmt.Fprintf(&b, "<a href=\"/p/%d\">next</a>\n", (i+1)%s.n)
	if fragments {
		fmt.Fprintf(&b, "<a href=\"/p/%d#top\">next, at the top</a>\n", (i+1)%s.n)
	}
	rng := rand.New(rand.NewPCG(uint64(i), 25))
	for range s.links {
		j := rng.IntN(s.n)
		for range 2 {
			fmt.Fprintf(&b, "<a href=\"/p/%d\">a</a> <a href=\"%s/p/%d\">b</a> <a href=\"%d\">c</a> <a href=\"../p/%d\">d</a>\n",
				j, "http://"+r.Host, j, j, j)
		}
	}
	b.WriteString("</body></html>\n")
	w.Write([]byte(b.String()))
}

// linkFragments makes every page link to the next page also with the
// fragment #top.
func (s *site) linkFragments() {
	s.mu.Lock()
	s.fragments = true
	s.mu.Unlock()
}

// counts returns copies of the request counts by path and by User-Agent.
func (s *site) counts() (hits, byAgent map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits, byAgent = map[string]int{}, map[string]int{}
	for k, v := range s.hits {
		hits[k] = v
	}
	for k, v := range s.byAgent {
		byAgent[k] = v
	}
	return hits, byAgent
}

// checkOnce fails the test unless the pages first..last (inclusive) were each
// requested exactly once and nothing else was requested.
func (s *site) checkOnce(t testing.TB, first, last int) {
	t.Helper()
	s.checkTimes(t, first, last, 1)
}

// checkTimes fails the test unless the pages first..last (inclusive) were
// each requested exactly times times and nothing else was requested.
func (s *site) checkTimes(t testing.TB, first, last, times int) {
	t.Helper()
	hits, _ := s.counts()
	bad := 0
	for i := first; i <= last; i++ {
		path := "/p/" + strconv.Itoa(i)
		if n := hits[path]; n != times {
			if bad++; bad <= 10 {
				t.Errorf("%s fetched %d times, want %d", path, n, times)
			}
		}
		delete(hits, path)
	}
	for path, n := range hits {
		if bad++; bad <= 10 {
			t.Errorf("%s fetched %d times, want 0", path, n)
		}
	}
	if bad > 10 {
		t.Errorf("... %d paths wrong in all", bad)
	}
}

// crawler configures a crawl of s.
type crawler struct {
	store    storage.Storage
	async    bool
	parallel int    // with async
	agent    string // User-Agent
	only     string // a URL filter: only URLs matching it are visited
	// link, if not nil, is applied to each href before Visit.
	link func(string) string
	// onRequest, if not nil, is the collector's OnRequest callback.
	onRequest func(*colly.Request)
	// refused counts the links colly refused as already visited, by path.
	refused map[string]int
}

// crawl runs a colly collector over s from the start URLs, following every
// link, until it is done. It fails the test on any fetch error or storage
// error.
func (c *crawler) crawl(t testing.TB, s *site, start ...string) {
	t.Helper()
	opts := []colly.CollectorOption{colly.AllowedDomains(s.host()), colly.Async(c.async)}
	if c.agent != "" {
		opts = append(opts, colly.UserAgent(c.agent))
	}
	if c.only != "" {
		opts = append(opts, colly.URLFilters(regexp.MustCompile(c.only)))
	}
	col := colly.NewCollector(opts...)
	if c.async {
		if err := col.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: c.parallel}); err != nil {
			t.Fatal(err)
		}
	}
	if err := col.SetStorage(c.store); err != nil {
		t.Fatal(err)
	}
	c.refused = map[string]int{}
	var mu sync.Mutex
	var errs []error
	visit := func(link string, visit func(string) error) {
		err := visit(link)
		var already *colly.AlreadyVisitedError
		switch {
		case err == nil, errors.Is(err, colly.ErrNoURLFiltersMatch):
		case errors.As(err, &already):
			mu.Lock()
			c.refused[already.Destination.Path]++
			mu.Unlock()
		default:
			mu.Lock()
			errs = append(errs, fmt.Errorf("visit %s: %w", link, err))
			mu.Unlock()
		}
	}
	col.OnHTML("a[href]", func(e *colly.HTMLElement) {
		href := e.Attr("href")
		if c.link != nil {
			href = c.link(href)
		}
		visit(href, e.Request.Visit)
	})
	if c.onRequest != nil {
		col.OnRequest(c.onRequest)
	}
	col.OnError(func(r *colly.Response, err error) {
		mu.Lock()
		errs = append(errs, fmt.Errorf("fetch %s: %w", r.Request.URL, err))
		mu.Unlock()
	})
	for _, u := range start {
		visit(u, col.Visit)
	}
	col.Wait()
	for i, err := range errs {
		if i == 10 {
			t.Errorf("... %d errors in all", len(errs))
			break
		}
		t.Error(err)
	}
}
