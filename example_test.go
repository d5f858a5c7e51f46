package bloom_test

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// Create a filter for the keys you expect, add some, and test membership.
// The quick start of README.md, as it stands there.
func Example_quickStart() {
	f, err := bloom.New(1_000_000, 0.01) // room for 10^6 keys at 1% false positives
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("https://example.com/")
	fmt.Println(f.TestString("https://example.com/"))  // true: added keys are always found
	fmt.Println(f.TestString("https://example.net/"))  // false: definitely never added (true ~1% of the time)
	seen := f.TestAndAddString("https://example.org/") // one hash pass: was it there? add it
	fmt.Println(seen)
	// Output:
	// true
	// false
	// false
}

func Example() {
	f, err := bloom.New(1_000_000, 0.01) // 1e6 keys, 1% false positives
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("https://example.com/")
	f.Add([]byte("https://example.org/"))

	fmt.Println(f.TestString("https://example.com/")) // added: always true
	fmt.Println(f.TestString("https://example.net/")) // not added: false, or true with probability ~1%
	fmt.Println(f.TestAndAddString("https://example.net/"))
	fmt.Println(f.TestString("https://example.net/"), f.Count())
	// Output:
	// true
	// false
	// false
	// true 3
}

// Choose capacity and error rate; the sizing functions say what they cost.
func ExampleNew_sizing() {
	for _, p := range []float64{0.01, 0.001, 1e-4} {
		f, err := bloom.New(1_000_000, p) // the layout by DefaultLayout
		if err != nil {
			log.Fatal(err)
		}
		rate := bloom.FalsePositiveRate(f.Bits(), f.Hashes(), 1_000_000)
		if f.Layout() == bloom.LayoutBlocked {
			rate = bloom.BlockedFalsePositiveRate(f.Bits(), f.Hashes(), 1_000_000)
		}
		fmt.Printf("p=%g: %v, %d bits (%.1f bits/key, %.1f MiB), k=%d, rate at capacity %.6f\n",
			p, f.Layout(), f.Bits(), float64(f.Bits())/1e6, float64(f.Bits())/8/(1<<20), f.Hashes(), rate)
	}
	c, _ := bloom.New(1_000_000, 0.01, bloom.Classic()) // the least memory
	fmt.Printf("p=0.01 with Classic: %d bits, k=%d\n", c.Bits(), c.Hashes())
	_, err := bloom.New(0, 0.01)
	fmt.Println(err)
	// Output:
	// p=0.01: blocked, 9890304 bits (9.9 bits/key, 1.2 MiB), k=6, rate at capacity 0.010000
	// p=0.001: blocked, 15480832 bits (15.5 bits/key, 1.8 MiB), k=9, rate at capacity 0.001000
	// p=0.0001: classic, 19172955 bits (19.2 bits/key, 2.3 MiB), k=13, rate at capacity 0.000100
	// p=0.01 with Classic: 9592955 bits, k=7
	// bloom: invalid parameter: capacity must be at least 1, got 0
}

// A scalable filter grows as keys arrive and keeps its promised error rate.
func ExampleNewScalable() {
	s, err := bloom.NewScalable(1000, 0.01) // starts with room for 1,000 keys
	if err != nil {
		log.Fatal(err)
	}
	for i := range 100_000 {
		s.AddString(fmt.Sprintf("https://example.com/page/%d", i))
	}
	fmt.Println(s.NumFilters(), "sub-filters")
	fmt.Println(s.TestString("https://example.com/page/42"))
	fmt.Println(s.EstimatedErrorRate() <= s.ErrorRate())
	// Output:
	// 10 sub-filters
	// true
	// true
}

// Test and add many keys in one call: the same answers as a loop of
// TestAndAdd, faster on a large filter. Keep the results slice between calls
// and pass it back: with room for the answers, the call does not allocate.
func ExampleBloomFilter_TestAndAddMany() {
	f, err := bloom.New(1_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	var seen []bool
	for _, page := range [][]string{
		{"/a", "/b", "/a"}, // a repeat within a batch is seen from its second occurrence
		{"/b", "/c"},
	} {
		seen = f.TestAndAddManyStrings(page, seen)
		fmt.Println(page, seen)
	}
	fmt.Println(f.TestManyStrings([]string{"/c", "/d"}, seen))
	// Output:
	// [/a /b /a] [false false true]
	// [/b /c] [true false]
	// [true false]
}

// Filters of the same size, hash count and seed can be merged.
func ExampleBloomFilter_Union() {
	a, _ := bloom.New(1000, 0.01)
	b, _ := bloom.New(1000, 0.01)
	a.AddString("alice")
	b.AddString("bob")
	u, err := a.Union(b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.TestString("alice"), u.TestString("bob"), a.TestString("bob"))

	c, _ := bloom.New(5000, 0.01)
	_, err = a.Union(c)
	fmt.Println(err)
	// Output:
	// true true false
	// bloom: incompatible filters: 10240 bits vs 49664 bits
}

// Save a filter and load it back: the format is versioned and checksummed.
func ExampleBloomFilter_WriteTo() {
	f, _ := bloom.New(1000, 0.01)
	f.AddString("saved")

	var file bytes.Buffer // an *os.File in real programs
	if _, err := f.WriteTo(&file); err != nil {
		log.Fatal(err)
	}

	var g bloom.BloomFilter
	if _, err := g.ReadFrom(&file); err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.TestString("saved"), g.Equal(f))

	data, _ := f.MarshalBinary()
	data[100] ^= 1 // damage one bit of the filter
	fmt.Println(g.UnmarshalBinary(data))
	// Output:
	// true true
	// bloom: corrupt or invalid encoding: checksum mismatch in section 0 (bytes 0 to 1279 of the bit array)
}

// A Concurrent filter is safe for Add, Test and TestAndAdd from many
// goroutines: of those racing on one new key, exactly one hears it is new.
func ExampleConcurrent() {
	seen, err := bloom.New(10_000, 1e-6, bloom.Concurrent())
	if err != nil {
		log.Fatal(err)
	}
	urls := []string{"/a", "/b", "/c", "/a", "/b", "/a"}
	var fetched atomic.Int64
	var wg sync.WaitGroup
	for range 4 { // four crawlers meet the same links
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, u := range urls {
				if !seen.TestAndAddString(u) {
					fetched.Add(1) // only the first to see u fetches it
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println(fetched.Load(), "fetches,", seen.Count(), "keys")
	// Output:
	// 3 fetches, 3 keys
}

// Save a scalable filter and load it back, made concurrent with an option.
func ExampleReadScalable() {
	s, err := bloom.NewScalable(100, 1e-6)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 1000 {
		s.AddString(fmt.Sprint("key-", i))
	}
	var file bytes.Buffer // an *os.File in real programs
	if _, err := s.WriteTo(&file); err != nil {
		log.Fatal(err)
	}

	loaded, err := bloom.ReadScalable(&file, bloom.Concurrent())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaded.NumFilters(), "sub-filters,", loaded.Count(), "keys")
	fmt.Println(loaded.TestString("key-42"), loaded.Equal(s))

	_, err = bloom.ReadScalable(bytes.NewReader(nil))
	fmt.Println(err)
	// Output:
	// 5 sub-filters, 1000 keys
	// true true
	// EOF
}

// ReadAny reads either kind of filter, as its encoding says; a loop reads
// a stream of them until io.EOF.
func ExampleReadAny() {
	plain, _ := bloom.New(1000, 0.01)
	grown, _ := bloom.NewScalable(1000, 0.01)
	var stream bytes.Buffer
	plain.WriteTo(&stream)
	grown.WriteTo(&stream)
	for {
		f, err := bloom.ReadAny(&stream)
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		switch f := f.(type) {
		case *bloom.BloomFilter:
			fmt.Println("fixed-size,", f.Bits(), "bits")
		case *bloom.ScalableBloomFilter:
			fmt.Println("scalable,", f.NumFilters(), "sub-filter")
		}
	}

	// Options that contradict the encoding are errors.
	plain.WriteTo(&stream)
	_, err := bloom.Read(&stream, bloom.Seed(1))
	fmt.Println(err)
	// Output:
	// fixed-size, 10240 bits
	// scalable, 1 sub-filter
	// bloom: invalid parameter: Seed(0x1) contradicts the encoded seed 0x5bd1e995
}

// A filter in a struct survives encoding/json: it is written as a string,
// the base64 of its binary encoding.
func ExampleBloomFilter_MarshalText() {
	type crawl struct {
		Seen  *bloom.BloomFilter
		Pages int
	}
	seen, _ := bloom.NewWithSize(64, 2)
	seen.AddString("/")
	data, err := json.Marshal(crawl{Seen: seen, Pages: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))

	var back crawl
	if err := json.Unmarshal(data, &back); err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Seen.TestString("/"), back.Seen.Equal(seen))
	// Output:
	// {"Seen":"QkxNRgMAAACV6dFbAgAAAEAAAAAAAAAAFgAAAAAAAAA9FrO0uRHQPwEAAAAAAAAAAAAQAAAAAAAAAAAAMPbesggAAAAAAABA7Ktojw==","Pages":1}
	// true true
}

// Merge adds another filter's keys in place, without allocating.
func ExampleBloomFilter_Merge() {
	today, _ := bloom.New(1000, 0.01)
	yesterday, _ := bloom.New(1000, 0.01)
	today.AddString("alice")
	yesterday.AddString("bob")
	if err := today.Merge(yesterday); err != nil {
		log.Fatal(err)
	}
	fmt.Println(today.TestString("alice"), today.TestString("bob"), today.EstimatedCount())

	other, _ := bloom.New(1000, 0.01, bloom.Seed(1))
	fmt.Println(today.Merge(other))
	// Output:
	// true true 2
	// bloom: incompatible filters: seed 0x5bd1e995 vs seed 0x1
}

// Header, AppendWords and FromWords move a filter's bits to and from a
// store of your own, here a slice of words.
func ExampleFromWords() {
	f, _ := bloom.New(1000, 0.01)
	f.AddString("stored")

	h, words := f.Header(), f.AppendWords(nil) // Header first: see its doc
	fmt.Println(h.Bits, h.Hashes, h.Count, len(words), "words")

	g, err := bloom.FromWords(h, words, bloom.Concurrent())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.TestString("stored"), g.Equal(f))

	h.Count = 100 // more keys than set bits: refused
	_, err = bloom.FromWords(h, words)
	fmt.Println(err)
	// Output:
	// 10240 7 1 160 words
	// true true
	// bloom: invalid parameter: Count 100 exceeds the 7 set bits
}

// A filter embedded in the program with go:embed, here one of 1,000 keys
// "embed-0" to "embed-999" that grew to several sub-filters.
//
//go:embed testdata/v3/embed-scalable-n100-p0.01.bin
var embeddedFilter string

// NewViewString answers from a filter embedded in the program, where it
// lies: it checks every checksum once and copies nothing (unless the string
// is misaligned: see View).
func ExampleNewViewString() {
	v, err := bloom.NewViewString(embeddedFilter)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.TestString("embed-999"), v.TestString("embed-1000"), v.NumFilters(), "sub-filters")
	// Output:
	// true false 5 sub-filters
}

// Open maps a filter file read-only: it reads the pages that its checks
// and its answers touch, and processes that open the same file share them.
// SkipBodyCheck opens even a 1 GB file in milliseconds, at a risk (see it).
func ExampleOpen() {
	v, err := bloom.Open("testdata/v3/embed-blocked-n1000-p0.01.bin")
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	fmt.Println(v.TestString("embed-1"), v.TestString("embed-5000"), v.Version(), v.Layout())
	// Output:
	// true false 3 blocked
}

// TestNoAllocsFromOtherPackage checks, from another package as users call
// them, that the single-key, hashed and batch calls of every filter type
// allocate nothing, even for keys on the caller's stack: a call to a generic
// function inlined into the caller made such keys escape (1 allocation per
// Add or Test of a stack array, 2 per batch), which the tests inside the
// package could not see.
func TestNoAllocsFromOtherPackage(t *testing.T) {
	var sink bool
	for _, layout := range []bloom.Option{bloom.Classic(), bloom.Blocked()} {
		f, err := bloom.New(1000, 0.01, layout)
		if err != nil {
			t.Fatal(err)
		}
		s, err := bloom.NewScalable(1000, 0.01, layout)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		v, err := bloom.NewView(enc)
		if err != nil {
			t.Fatal(err)
		}
		b := []byte("a stack key")
		results := make([]bool, 2)
		for name, call := range map[string]func(){
			"Test":                   func() { var k [8]byte; sink = f.Test(k[:]) },
			"TestString":             func() { sink = f.TestString(string(b)) },
			"Add":                    func() { var k [8]byte; f.Add(k[:]) },
			"AddString":              func() { f.AddString(string(b)) },
			"TestAndAdd":             func() { var k [8]byte; sink = f.TestAndAdd(k[:]) },
			"TestHash":               func() { sink = f.TestHash(1) },
			"AddHash":                func() { f.AddHash(2) },
			"TestMany":               func() { var k [8]byte; f.TestMany([][]byte{k[:], b}, results) },
			"AddMany":                func() { var k [8]byte; f.AddMany([][]byte{k[:], b}) },
			"TestAndAddManyStrings":  func() { f.TestAndAddManyStrings([]string{"x", string(b)}, results) },
			"TestManyHashes":         func() { f.TestManyHashes([]uint64{1, 2}, results) },
			"Scalable.Test":          func() { var k [8]byte; sink = s.Test(k[:]) },
			"Scalable.TestAndAdd":    func() { var k [8]byte; sink = s.TestAndAdd(k[:]) },
			"Scalable.TestHash":      func() { sink = s.TestHash(3) },
			"Scalable.TestMany":      func() { var k [8]byte; s.TestMany([][]byte{k[:], b}, results) },
			"Scalable.AddManyHashes": func() { s.AddManyHashes([]uint64{4, 5}) },
			"View.Test":              func() { var k [8]byte; sink = v.Test(k[:]) },
			"View.TestHash":          func() { sink = v.TestHash(6) },
			"View.TestMany":          func() { var k [8]byte; v.TestMany([][]byte{k[:], b}, results) },
		} {
			if n := testing.AllocsPerRun(100, call); n != 0 {
				t.Errorf("%v %s: %v allocations per call, want 0", f.Layout(), name, n)
			}
		}
	}
	_ = sink
}

// NewWindow keeps the recent past only: here the last 3 keys added, and
// with Every the keys of the last week, read from a clock that a test
// (or a log replay) can set.
func ExampleNewWindow() {
	w, _ := bloom.NewWindow(3, 0.01, bloom.Generations(4))
	for _, url := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		w.AddString(url)
	}
	fmt.Println(w.TestString("e"), w.TestString("f"), w.TestString("g"), w.TestString("a"))

	// A crawler that fetches a page again after a week: TestAndAdd is
	// first-seen (it adds only a URL not in the window), so a URL met
	// every day is fetched again once its first sighting has left the week.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	week, _ := bloom.NewWindow(1e6, 0.01, bloom.Every(7*24*time.Hour), bloom.Clock(func() time.Time { return now }))
	var fetched []int
	for day := range 20 {
		if !week.TestAndAddString("https://example.com/") {
			fetched = append(fetched, day) // not fetched in the last week: fetch it
		}
		now = now.Add(24 * time.Hour)
	}
	fmt.Println("fetched on days", fetched)

	// An alert that keeps firing stays suppressed: TestAndRefresh is
	// last-seen (it puts a present key back in the newest generation).
	alerts, _ := bloom.NewWindow(1e6, 0.01, bloom.Every(7*24*time.Hour), bloom.Clock(func() time.Time { return now }))
	var raised []int
	for day := range 20 {
		if !alerts.TestAndRefreshString("disk full on db-3") {
			raised = append(raised, day)
		}
		now = now.Add(24 * time.Hour)
	}
	fmt.Println("raised on days", raised)
	// Output:
	// true true true false
	// fetched on days [0 9 17]
	// raised on days [0]
}

// A time window under Grow keeps every key of its duration and its rate
// through a burst: the burst's generation takes extensions, which Bits and
// Extensions report, and drops them when it leaves the window.
func ExampleGrow() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day, _ := bloom.NewWindow(1000, 0.01, bloom.Every(24*time.Hour), bloom.OnOverflow(bloom.Grow),
		bloom.Clock(func() time.Time { return now }))
	ring := day.Bits()
	for i := range 10_000 { // ten days' keys in one instant
		day.AddString("event-" + strconv.Itoa(i))
	}
	kept := true
	for i := range 10_000 {
		kept = kept && day.TestString("event-"+strconv.Itoa(i))
	}
	fmt.Println(kept, day.Extensions() > 0, day.Bits() > ring, day.EstimatedErrorRate() <= 0.01)
	now = now.Add(48 * time.Hour) // the burst has left the window
	day.AddString("later")        // an add drops what has left it
	fmt.Println(day.TestString("event-1"), day.Extensions(), day.Bits() == ring)
	// Output:
	// true true true true
	// false 0 true
}

// ExampleWindowSize: the memory of a day-long window of 10^8 keys, known
// before it is built: the ring, and what the first extension of a burst
// adds under Grow.
func ExampleWindowSize() {
	z, err := bloom.WindowSize(100_000_000, 0.01, bloom.Every(24*time.Hour), bloom.OnOverflow(bloom.Grow))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d generations of %v, %d MiB\n", z.Generations, z.Period, z.Bits()/8>>20)
	fmt.Printf("a burst's first extension adds %d MiB for %d keys\n", z.Extensions[0].Bits/8>>20, z.Extensions[0].Capacity)
	// Output:
	// 7 generations of 4h0m0s, 207 MiB
	// a burst's first extension adds 44 MiB for 16666667 keys
}

// TestWindowNoAllocsFromOtherPackage is TestNoAllocsFromOtherPackage for
// WindowFilter: its single-key, hashed and batch calls allocate nothing
// from another package, even for keys on the caller's stack.
func TestWindowNoAllocsFromOtherPackage(t *testing.T) {
	var sink bool
	now := time.Unix(0, 0)
	for _, opts := range [][]bloom.Option{nil, {bloom.Concurrent()}, {bloom.Every(time.Hour), bloom.Clock(func() time.Time { return now })},
		{bloom.Every(time.Hour), bloom.Clock(func() time.Time { return now }), bloom.OnOverflow(bloom.Grow)},
		{bloom.Concurrent(), bloom.Every(time.Hour), bloom.Clock(func() time.Time { return now }), bloom.OnOverflow(bloom.Grow)}} {
		w, err := bloom.NewWindow(1000, 0.01, opts...)
		if err != nil {
			t.Fatal(err)
		}
		b := []byte("a stack key")
		results := make([]bool, 2)
		for name, call := range map[string]func(){
			"Test":                     func() { var k [8]byte; sink = w.Test(k[:]) },
			"TestString":               func() { sink = w.TestString(string(b)) },
			"Add":                      func() { var k [8]byte; w.Add(k[:]) },
			"AddString":                func() { w.AddString(string(b)) },
			"TestAndAdd":               func() { var k [8]byte; sink = w.TestAndAdd(k[:]) },
			"TestHash":                 func() { sink = w.TestHash(1) },
			"AddHash":                  func() { w.AddHash(2) },
			"TestAndAddHash":           func() { sink = w.TestAndAddHash(2) },
			"TestMany":                 func() { var k [8]byte; w.TestMany([][]byte{k[:], b}, results) },
			"AddMany":                  func() { var k [8]byte; w.AddMany([][]byte{k[:], b}) },
			"TestAndAddMany":           func() { var k [8]byte; w.TestAndAddMany([][]byte{k[:], b}, results) },
			"TestManyStrings":          func() { w.TestManyStrings([]string{"x", string(b)}, results) },
			"AddManyHashes":            func() { w.AddManyHashes([]uint64{4, 5}) },
			"TestAndAddManyHashes":     func() { w.TestAndAddManyHashes([]uint64{4, 5}, results) },
			"TestAndRefresh":           func() { var k [8]byte; sink = w.TestAndRefresh(k[:]) },
			"TestAndRefreshString":     func() { sink = w.TestAndRefreshString(string(b)) },
			"TestAndRefreshHash":       func() { sink = w.TestAndRefreshHash(3) },
			"TestAndRefreshMany":       func() { var k [8]byte; w.TestAndRefreshMany([][]byte{k[:], b}, results) },
			"TestAndRefreshManyHashes": func() { w.TestAndRefreshManyHashes([]uint64{4, 5}, results) },
		} {
			if n := testing.AllocsPerRun(100, call); n != 0 {
				t.Errorf("%d options, %s: %v allocations per call, want 0", len(opts), name, n)
			}
		}
	}
	_ = sink
}
