package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCrawl runs the README's program twice on a local site of 50 pages with
// the same state file: the first run from page 0 fetches pages 0-29 (they
// link to the next one and to page 0, also as /0#top, which is the same
// page; page 29 links nowhere), the second from page 0 and page 30 fetches
// only 30-49.
func TestCrawl(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d", &i); err != nil {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "<a href=\"/0\">home</a> <a href=\"/0#top\">top of home</a>\n")
		if i != 29 && i < 49 {
			fmt.Fprintf(w, "<a href=\"/%d\">next</a>\n", i+1)
		}
	}))
	defer site.Close()
	state := filepath.Join(t.TempDir(), "visited.bf")
	run := func(start ...string) []string {
		var out strings.Builder
		if err := crawl(&out, state, start...); err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(out.String())
		sort.Strings(got)
		return got
	}
	want := func(from, to int) []string {
		var w []string
		for i := from; i <= to; i++ {
			w = append(w, fmt.Sprintf("%s/%d", site.URL, i))
		}
		sort.Strings(w)
		return w
	}
	if got, w := run(site.URL+"/0"), want(0, 29); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("first run fetched %v, want %v", got, w)
	}
	if got, w := run(site.URL+"/0", site.URL+"/30"), want(30, 49); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("second run fetched %v, want %v", got, w)
	}
	if got := run(site.URL + "/0"); len(got) != 0 {
		t.Fatalf("third run fetched %v, want nothing", got)
	}
}
