package bloom_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/bloomfilters/bloom"
)

// Create a filter for the keys you expect, add some, and test membership.
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
	for _, p := range []float64{0.01, 0.001} {
		f, err := bloom.New(1_000_000, p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("p=%g: %d bits (%.1f bits/key, %.1f MiB), k=%d, rate at capacity %.5f\n",
			p, f.Bits(), float64(f.Bits())/1e6, float64(f.Bits())/8/(1<<20), f.Hashes(),
			bloom.FalsePositiveRate(f.Bits(), f.Hashes(), 1_000_000))
	}
	_, err := bloom.New(0, 0.01)
	fmt.Println(err)
	// Output:
	// p=0.01: 9592955 bits (9.6 bits/key, 1.1 MiB), k=7, rate at capacity 0.01000
	// p=0.001: 14377640 bits (14.4 bits/key, 1.7 MiB), k=10, rate at capacity 0.00100
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
	// bloom: incompatible filters: 9593 bits vs 47965 bits
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
	data[60] ^= 1 // damage one bit
	fmt.Println(g.UnmarshalBinary(data))
	// Output:
	// true true
	// bloom: corrupt or invalid encoding: checksum mismatch
}
