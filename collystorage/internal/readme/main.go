// Command readme is the program in collystorage's README (readme_test.go
// checks that the two agree; main_test.go runs it on a local site).
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"strings"

	"github.com/bloomfilters/bloom/collystorage"
	"github.com/gocolly/colly/v2"
)

// Usage: go run . STATE-FILE URL...
// fetches every page reachable from the URLs (on their hosts) that no earlier
// run with the same STATE-FILE fetched, and prints its URL.
func main() {
	if len(os.Args) < 3 {
		log.Fatal("usage: readme STATE-FILE URL...")
	}
	if err := crawl(os.Stdout, os.Args[1], os.Args[2:]...); err != nil {
		log.Fatal(err)
	}
}

func crawl(out io.Writer, state string, start ...string) error {
	// The filter holds 100,000 URLs before it first grows, and takes at
	// most 1 new URL in 100,000 for a visited one.
	visited, err := collystorage.Open(state, 100_000, 1e-5)
	if err != nil {
		return err
	}
	var hosts []string
	for _, u := range start {
		p, err := url.Parse(u)
		if err != nil {
			return err
		}
		hosts = append(hosts, p.Hostname())
	}
	c := colly.NewCollector(colly.AllowedDomains(hosts...))
	if err := c.SetStorage(visited); err != nil {
		return err
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		link, _, _ := strings.Cut(e.Attr("href"), "#") // page#top is page
		e.Request.Visit(link)
	})
	c.OnResponse(func(r *colly.Response) { fmt.Fprintln(out, r.Request.URL) })
	for _, u := range start {
		var already *colly.AlreadyVisitedError
		if err := c.Visit(u); err != nil && !errors.As(err, &already) {
			return err
		}
	}
	c.Wait()
	return visited.Save() // atomic: a crash leaves the last saved state
}
