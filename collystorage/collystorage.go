// Package collystorage keeps the visited requests of a colly crawler
// (github.com/gocolly/colly/v2) in a Bloom filter instead of colly's default
// map: 2 to 5 bytes per URL instead of the map's 44 at 10^6 URLs (the README
// has the figures), saved to a file and reloaded across runs (Storage), or
// shared by crawlers on many machines through Redis (RedisStorage). For a
// crawler that must fetch each page again after a while (a week, with
// bloom.Every), WindowStorage and RedisWindowStorage keep a window filter
// instead, which forgets what was fetched before the window. All implement
// colly's storage.Storage; pass one to Collector.SetStorage.
//
// colly identifies a request by a 64-bit ID, the FNV-64a hash of its URL and
// body. A Bloom filter answers "visited" for every ID it was given and, with
// a probability of at most the error rate chosen, for an ID it was not: such
// a page is skipped as if it had been fetched. A crawl of 10^6 pages at an
// error rate of 0.001 skips on average at most 1,000 pages it had not seen
// (of 10^6 random IDs, 466 were taken for visited ones by a filter grown
// from 10^4, and 10 by one sized for 10^6); at 10^-6, at most one.
//
// # Exactly once
//
// colly asks IsVisited and, if the answer is false, calls Visited: two calls,
// with nothing held between them. With colly's map two goroutines of an
// asynchronous crawler, or two crawler processes sharing a store, can both
// hear false for the same URL and both fetch it. Here IsVisited itself marks
// the ID as visited, atomically (a test-and-add: in memory under the
// filter's lock for that key, in Redis inside one script), so of all the
// goroutines and processes that ask about a new URL at once exactly one hears
// false and fetches it. Visited then only makes sure the ID is in the filter.
//
// colly calls IsVisited in three places: before each request (followed at
// once by Visited when the answer is false), before following a redirect
// (likewise), and in Collector.HasVisited and Collector.HasPosted. So those
// two methods mark the URL as visited too: a URL asked about with HasVisited
// is refused by a later Visit (AlreadyVisitedError). A crawl that only calls
// Visit, Request and Post behaves as with colly's own storage, minus the
// duplicate fetches.
//
// As with colly's own storages, a request is marked before it is sent: a
// request that fails is not retried by a later Visit of the same URL.
//
// # Cookies
//
// The storages keep cookies in memory, in colly's storage.InMemoryStorage:
// per process, not saved by Save and not shared through Redis. Crawlers on
// several machines that need one session must share it some other way.
package collystorage

import (
	"errors"

	"github.com/bloomfilters/bloom"
)

// op is what a storage does with a request ID in its filter.
type op uint8

const (
	opAdd        op = iota // make sure the ID is present
	opTestAndAdd           // report whether it was present, and add it
)

// keyRequestID8 is the only key encoding there is: a request ID goes to the
// filter's hashed calls (AddHash, TestAndAddHash), which hash its 8 bytes in
// little-endian order with murmur3 and the filter's seed, as Add of those
// bytes does (see call in storage.go and redis.go). Releases before the
// hashed calls made those Add calls themselves, with the same bits, under
// the same value.
const keyRequestID8 = 1

var errZero = errors.New("collystorage: use of a zero Storage (create one with New, Open or Read)")

// withConcurrent returns opts with bloom.Concurrent added, in a new slice.
func withConcurrent(opts []bloom.Option) []bloom.Option {
	return append(append(make([]bloom.Option, 0, len(opts)+1), opts...), bloom.Concurrent())
}
