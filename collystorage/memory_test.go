package collystorage_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
	"github.com/gocolly/colly/v2/storage"
)

// memoryURLs is the number of visited URLs TestMemoryPerURL measures at.
const memoryURLs = 1_000_000

// heapInUse returns the bytes of heap spans in use after a full collection:
// live objects plus the fragmentation of their spans.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// requestIDs calls f with n random request IDs (colly's are FNV-64a hashes,
// as good as random here).
func requestIDs(n int, f func(uint64)) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		f(rng.Uint64())
	}
}

// TestMemoryPerURL measures the heap that 10^6 visited URLs take in colly's
// default storage (storage.InMemoryStorage, a map) and in Storage at several
// error rates, growing from a small first sub-filter and sized for 10^6 from
// the start (at p = 0.01 in both layouts), and checks that Storage takes
// less than a third of the map's.
// Run it with -v to see the figures:
//
//	go test -run TestMemoryPerURL -v
func TestMemoryPerURL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 10^6 URLs in every storage")
	}
	measure := func(fill func() (keep any)) float64 {
		before := heapInUse()
		keep := fill()
		after := heapInUse()
		runtime.KeepAlive(keep)
		return float64(int64(after)-int64(before)) / memoryURLs
	}
	mapBytes := measure(func() any {
		s := &storage.InMemoryStorage{}
		if err := s.Init(); err != nil {
			t.Fatal(err)
		}
		requestIDs(memoryURLs, func(id uint64) { s.Visited(id) })
		return s
	})
	t.Logf("colly InMemoryStorage: %5.2f bytes/URL of heap in use", mapBytes)
	for _, tc := range []struct {
		initial uint64
		rate    float64
		classic bool // bloom.Classic(): at p = 0.01 the default is blocked
	}{
		{10_000, 0.01, false}, {10_000, 0.001, false}, {10_000, 1e-6, false},
		{memoryURLs, 0.01, false}, {memoryURLs, 0.001, false}, {memoryURLs, 1e-6, false},
		{10_000, 0.01, true}, {memoryURLs, 0.01, true},
	} {
		name := fmt.Sprintf("initial=%d/p=%g", tc.initial, tc.rate)
		var opts []bloom.Option
		if tc.classic {
			name += "/classic"
			opts = append(opts, bloom.Classic())
		}
		t.Run(name, func(t *testing.T) {
			var filterBytes float64
			var count uint64
			bytes := measure(func() any {
				s, err := collystorage.New(tc.initial, tc.rate, opts...)
				if err != nil {
					t.Fatal(err)
				}
				requestIDs(memoryURLs, func(id uint64) { s.IsVisited(id) })
				filterBytes = float64(s.Bits()) / 8 / memoryURLs
				count = s.Count()
				return s
			})
			t.Logf("Storage: %5.2f bytes/URL of heap in use (%.2f of bits), %.3f of the map; %d of %d URLs new",
				bytes, filterBytes, bytes/mapBytes, count, memoryURLs)
			if bytes >= mapBytes/3 {
				t.Errorf("Storage takes %.2f bytes/URL, colly's map %.2f: want less than a third", bytes, mapBytes)
			}
			if bytes < filterBytes {
				t.Errorf("measured %.2f bytes/URL, less than the filter's %.2f: the measurement is wrong", bytes, filterBytes)
			}
		})
	}
}

// BenchmarkIsVisited measures IsVisited of a URL already visited (most links
// a crawler meets), with 10^6 visited, in colly's map, in Storage and in a
// WindowStorage of a week sized for 10^6 pages.
func BenchmarkIsVisited(b *testing.B) {
	ids := make([]uint64, 0, memoryURLs)
	requestIDs(memoryURLs, func(id uint64) { ids = append(ids, id) })
	m := &storage.InMemoryStorage{}
	if err := m.Init(); err != nil {
		b.Fatal(err)
	}
	s, err := collystorage.New(10_000, 0.001)
	if err != nil {
		b.Fatal(err)
	}
	w, err := collystorage.NewWindow(memoryURLs, 0.001, bloom.Every(7*24*time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		m.Visited(id)
		s.IsVisited(id)
		w.IsVisited(id)
	}
	for _, st := range []struct {
		name string
		s    storage.Storage
	}{{"map", m}, {"Storage/p=0.001", s}, {"WindowStorage/p=0.001", w}} {
		b.Run(st.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				st.s.IsVisited(ids[i])
				if i++; i == len(ids) {
					i = 0
				}
			}
		})
	}
}
