package collystorage

import (
	"fmt"
	"net/url"
	"sync"

	"github.com/bloomfilters/bloom"
	"github.com/gocolly/colly/v2/storage"
)

// Storage is a colly storage.Storage that keeps the visited request IDs in a
// concurrent bloom.ScalableBloomFilter, in memory, and can save them to a
// file and load them again in a later run (Open, Save, WriteTo, Read).
// Cookies are kept in memory by colly's storage.InMemoryStorage and are not
// saved.
//
// The filter grows as the crawl does, keeping its false-positive rate at most
// the error rate given: a new URL is taken for a visited one, and skipped,
// with at most that probability. At 10^6 visited URLs it takes 2.0 to 2.7
// bytes per URL at an error rate of 0.01 and 4.3 to 5.2 at 10^-6 (sized for
// them from the start, or grown from 10^4), whatever the URLs' length.
//
// A Storage is safe for concurrent use: IsVisited, Visited, Cookies,
// SetCookies, Count, Bits, Save and WriteTo may run from any number of
// goroutines at once. Save and WriteTo during a crawl write every ID marked
// before they started and perhaps some marked meanwhile.
//
// A zero Storage is not usable: Init, IsVisited, Visited, Save and WriteTo
// return an error (so Collector.SetStorage refuses it), Cookies returns ""
// and SetCookies does nothing.
type Storage struct {
	f       *bloom.ScalableBloomFilter
	cookies storage.InMemoryStorage
	path    string     // the file Open read, or "" (New, Read)
	saveMu  sync.Mutex // one Save at a time
}

// New returns an empty Storage whose filter is bloom.NewScalable(
// initialCapacity, errorRate, opts...) made Concurrent: initialCapacity is
// the number of URLs the first sub-filter holds (the filter grows past it),
// errorRate the largest false-positive rate allowed, in (0, 1). opts are
// bloom's options for a ScalableBloomFilter (Seed, Linear, Exponential,
// Tightening, Blocked); Concurrent is always applied and must not be given.
// It returns the errors of bloom.NewScalable.
func New(initialCapacity uint64, errorRate float64, opts ...bloom.Option) (*Storage, error) {
	f, err := bloom.NewScalable(initialCapacity, errorRate, withConcurrent(opts)...)
	if err != nil {
		return nil, err
	}
	return newStorage(f)
}

func newStorage(f *bloom.ScalableBloomFilter) (*Storage, error) {
	s := &Storage{f: f}
	// Cookies work before Collector.SetStorage calls Init.
	if err := s.cookies.Init(); err != nil {
		return nil, fmt.Errorf("collystorage: cookies: %w", err)
	}
	return s, nil
}

// Init implements storage.Storage; Collector.SetStorage calls it. It returns
// an error for a zero Storage and does nothing else.
func (s *Storage) Init() error {
	if s.f == nil {
		return errZero
	}
	return nil
}

// IsVisited implements storage.Storage. It reports whether the request ID
// was marked visited before the call, and marks it, atomically: of several
// goroutines that ask about the same new ID at once, exactly one gets false
// (none does if the ID is a false positive). See the package doc for why
// IsVisited marks, and what that means for Collector.HasVisited. It takes
// O(k) time per sub-filter (k hashes) and allocates nothing.
func (s *Storage) IsVisited(requestID uint64) (bool, error) {
	if s.f == nil {
		return false, errZero
	}
	return s.call(opTestAndAdd, requestID), nil
}

// Visited implements storage.Storage: it marks the request ID as visited.
// Marking an ID twice changes nothing. It allocates nothing.
func (s *Storage) Visited(requestID uint64) error {
	if s.f == nil {
		return errZero
	}
	s.call(opAdd, requestID)
	return nil
}

// Cookies implements storage.Storage: the cookies for u, kept in memory.
func (s *Storage) Cookies(u *url.URL) string {
	if s.f == nil {
		return ""
	}
	return s.cookies.Cookies(u)
}

// SetCookies implements storage.Storage: it keeps cookies for u in memory.
func (s *Storage) SetCookies(u *url.URL, cookies string) {
	if s.f == nil {
		return
	}
	s.cookies.SetCookies(u, cookies)
}

// Count returns the number of request IDs marked as visited: the IDs that
// tested absent when marked (false positives are not counted). It is 0 for a
// zero Storage.
func (s *Storage) Count() uint64 {
	if s.f == nil {
		return 0
	}
	return s.f.Count()
}

// Bits returns the size of the filter in bits: its memory, and the size of
// what Save writes, give or take a few hundred bytes of headers. It is 0 for
// a zero Storage.
func (s *Storage) Bits() uint64 {
	if s.f == nil {
		return 0
	}
	return s.f.Bits()
}

// call does op with requestID in the filter, and reports the filter's
// answer (false for opAdd). Every filter call of Storage goes through it.
//
// hashed-calls: requestID is already a 64-bit hash (FNV-64a of the URL and
// body), so it goes to the filter's hashed calls, which mix it once with
// murmur3 and the filter's seed. Those set and read the bits that Add and
// TestAndAdd of its 8 little-endian bytes did before them (bloom's doc of
// the hashed keys promises it), so the key encoding of saved files,
// keyRequestID8, is unchanged: TestReadByteKeyGolden reads a file written
// by the byte-key calls and fails if that ever stops holding.
func (s *Storage) call(o op, requestID uint64) bool {
	if o == opAdd {
		s.f.AddHash(requestID)
		return false
	}
	return s.f.TestAndAddHash(requestID)
}
