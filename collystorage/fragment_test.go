package collystorage_test

import (
	"strings"
	"testing"

	"github.com/bloomfilters/bloom/collystorage"
	"github.com/gocolly/colly/v2"
	"github.com/gocolly/colly/v2/storage"
)

// TestCrawlFragment crawls the site with every page also linking to the
// next as "/p/j#top", with real colly collectors, and pins what the
// README's "Links with a #fragment" says: colly hashes the URL with its
// fragment, so without the fix each page is fetched twice, whatever the
// storage (colly's own map too), and also when OnRequest drops the
// fragment (colly has marked the URL by then); with the README's line
// (strings.Cut at "#" before Visit) each page is fetched once.
func TestCrawlFragment(t *testing.T) {
	dropFragment := func(href string) string {
		link, _, _ := strings.Cut(href, "#") // the README's line
		return link
	}
	for _, tc := range []struct {
		name      string
		link      func(string) string
		onRequest func(*colly.Request)
		times     int
	}{
		{"as is", nil, nil, 2},
		{"OnRequest drops the fragment", nil, func(r *colly.Request) { r.URL.Fragment = "" }, 2},
		{"fragment cut before Visit", dropFragment, nil, 1},
	} {
		for _, st := range []string{"colly's InMemoryStorage", "Storage"} {
			t.Run(tc.name+"/"+st, func(t *testing.T) {
				var store storage.Storage = &storage.InMemoryStorage{}
				if st == "Storage" {
					var err error
					if store, err = collystorage.New(testCapacity, testRate); err != nil {
						t.Fatal(err)
					}
				}
				s := newSite(t, 100, 2, 0, 0) // few pages and links: the fragment is the point
				s.linkFragments()
				c := &crawler{store: store, link: tc.link, onRequest: tc.onRequest}
				c.crawl(t, s, s.page(0))
				s.checkTimes(t, 0, 99, tc.times)
			})
		}
	}
}
