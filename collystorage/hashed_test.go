package collystorage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
	"github.com/bloomfilters/bloom/redisbloom"
)

// requestID returns a request ID as colly makes them, the FNV-64a hash of a
// URL, for page i of example.com.
func requestID(i int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "https://example.com/p/%d", i)
	return h.Sum64()
}

// filterOf returns the filter of what s saves.
func filterOf(t testing.TB, s *collystorage.Storage) *bloom.ScalableBloomFilter {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	buf.Next(12) // the header
	f, err := bloom.ReadScalable(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestStorageUsesHashedCalls checks that Storage marks a request ID as the
// filter's hashed key: after IsVisited and Visited of 5,000 IDs its filter
// is Equal to a bloom.ScalableBloomFilter of the same parameters given the
// same IDs by AddHash and answers TestHash(id) true for each; then Storage
// answers IsVisited for 20,000 other IDs as that filter's TestAndAddHash
// does, false positives included, and the two stay Equal. The hashed calls set the bits of the byte calls
// on an ID's 8 little-endian bytes, so this cannot tell those two apart (the
// file format relies on it: TestReadByteKeyGolden); it fails if an ID is
// marked as any other key.
func TestStorageUsesHashedCalls(t *testing.T) {
	const initial, p = 1000, 0.01
	s, err := collystorage.New(initial, p)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bloom.NewScalable(initial, p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		id := requestID(i)
		if i%2 == 0 {
			if err := s.Visited(id); err != nil {
				t.Fatal(err)
			}
		} else if _, err := s.IsVisited(id); err != nil {
			t.Fatal(err)
		}
		mem.AddHash(id)
	}
	f := filterOf(t, s)
	if !f.Equal(mem) {
		t.Fatalf("the Storage's filter (%d sub-filters, count %d) is not the one AddHash builds (%d, count %d)",
			f.NumFilters(), f.Count(), mem.NumFilters(), mem.Count())
	}
	for i := range 5000 {
		if !f.TestHash(requestID(i)) {
			t.Fatalf("TestHash of visited request ID %d is false", i)
		}
	}
	fp := 0
	for i := 5000; i < 25_000; i++ {
		id := requestID(i)
		want := mem.TestAndAddHash(id)
		got, err := s.IsVisited(id)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("IsVisited(request ID %d) = %v, TestAndAddHash %v", i, got, want)
		}
		if got {
			fp++
		}
	}
	if f := filterOf(t, s); !f.Equal(mem) {
		t.Fatalf("after the new IDs the Storage's filter (%d sub-filters, count %d) is not the one TestAndAddHash builds (%d, count %d)",
			f.NumFilters(), f.Count(), mem.NumFilters(), mem.Count())
	}
	t.Logf("%d false positives in 20,000 new IDs (%d sub-filters)", fp, mem.NumFilters())
	if fp > 20_000*2*p {
		t.Errorf("%d false positives in 20,000 new IDs, more than twice the rate %v", fp, p)
	}
}

// golden is a Storage saved by the release before the hashed calls, which
// marked a request ID with Add and TestAndAdd of its 8 little-endian bytes:
// written at commit 3e93453 by New(1000, 0.01), then for i in [0, 3000)
// Visited(requestID(i)) when i%3 == 0 and IsVisited(requestID(i)) otherwise,
// then WriteTo. It holds 2,995 IDs (5 were false positives) in 69,627 bits.
const golden = "testdata/le64-v1.bf"

// goldenStorage marks what golden's writer marked, with this release.
func goldenStorage(t testing.TB) *collystorage.Storage {
	t.Helper()
	s, err := collystorage.New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if i%3 == 0 {
			err = s.Visited(requestID(i))
		} else {
			_, err = s.IsVisited(requestID(i))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestReadByteKeyGolden checks that a file saved before the hashed calls
// keeps its meaning: this release reads it with every ID visited and Count
// and Bits unchanged, saves the same IDs to the same bytes, and answers new
// IDs as the storage it writes itself does. It fails if the hashed calls
// ever set other bits than the byte calls did: keyRequestID8 must then get a
// new value, and files of the old one another path or an error.
func TestReadByteKeyGolden(t *testing.T) {
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	fresh := goldenStorage(t)
	var buf bytes.Buffer
	if _, err := fresh.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("this release saves the IDs of %s to other bytes (%d bytes, Count %d; the file %d bytes)", golden, buf.Len(), fresh.Count(), len(want))
	}

	// Through Open, as a crawler resumes.
	path := filepath.Join(t.TempDir(), "state.bf")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := collystorage.Open(path, 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if s.Count() != 2995 || s.Bits() != 69627 {
		t.Fatalf("%s: Count %d, Bits %d, want 2995 and 69627", golden, s.Count(), s.Bits())
	}
	for i := range 3000 {
		if v, err := s.IsVisited(requestID(i)); err != nil || !v {
			t.Fatalf("%s: IsVisited(request ID %d) = %v, %v, want true", golden, i, v, err)
		}
	}
	if s.Count() != 2995 {
		t.Fatalf("Count %d after IsVisited of the saved IDs, want 2995", s.Count())
	}
	fp := 0
	for i := 3000; i < 13_000; i++ {
		got, err := s.IsVisited(requestID(i))
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := fresh.IsVisited(requestID(i)); got != want {
			t.Fatalf("IsVisited(request ID %d) = %v on %s, %v on the storage this release wrote", i, got, golden, want)
		}
		if got {
			fp++
		}
	}
	if fp > 200 {
		t.Errorf("%d false positives in 10,000 new IDs, target rate 0.01", fp)
	}
}

// TestRedisByteKeyState checks that a RedisStorage shares its filter with a
// process of the release before the hashed calls, which marked a request ID
// with the filter's Add and TestAndAdd of its 8 little-endian bytes under the
// same {name}:collystorage value: the IDs that process marked are visited
// here, the IDs marked here are present to its calls, and the filter's
// hashed calls (TestHash, in Redis and after Export) find both.
func TestRedisByteKeyState(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	name := filterName(t)
	s := newRedisStorage(t, rdb, name) // sets {name}:collystorage
	old, err := redisbloom.OpenScalable(ctx, rdb, name)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		// The old call, on even pages.
		if _, err := old.TestAndAdd(ctx, binary.LittleEndian.AppendUint64(nil, requestID(2*i))); err != nil {
			t.Fatal(err)
		}
	}
	again, err := collystorage.NewRedis(ctx, rdb, name, testCapacity, testRate)
	if err != nil {
		t.Fatalf("NewRedis on the filter of the byte-key calls: %v", err)
	}
	for i := range n {
		if v, err := again.IsVisited(requestID(2 * i)); err != nil || !v {
			t.Fatalf("IsVisited(request ID %d) marked by the byte-key call = %v, %v, want true", 2*i, v, err)
		}
		// Odd pages: new here.
		if v, err := s.IsVisited(requestID(2*i + 1)); err != nil || v {
			t.Fatalf("IsVisited(new request ID %d) = %v, %v, want false", 2*i+1, v, err)
		}
		if err := s.Visited(requestID(2*i + 1)); err != nil {
			t.Fatal(err)
		}
	}
	if cnt, err := s.Count(ctx); err != nil || cnt != 2*n {
		t.Fatalf("Count = %d, %v, want %d", cnt, err, 2*n)
	}
	mem, err := old.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * n {
		id := requestID(i)
		v, err := old.Test(ctx, binary.LittleEndian.AppendUint64(nil, id))
		if err != nil || !v {
			t.Fatalf("Test of request ID %d's bytes = %v, %v, want true", i, v, err)
		}
		if v, err := old.TestHash(ctx, id); err != nil || !v {
			t.Fatalf("TestHash(request ID %d) = %v, %v, want true", i, v, err)
		}
		if !mem.TestHash(id) {
			t.Fatalf("exported filter: TestHash(request ID %d) false", i)
		}
	}
}

// BenchmarkHashedCalls compares, on one filter (Storage's: concurrent,
// grown from 10^4 at p = 0.001 to 10^6 request IDs), the calls Storage
// makes with a request ID, the hashed ones, with the byte calls on its 8
// little-endian bytes that it made before them, for visited IDs (most links
// a crawler meets) and new ones (Test only, so that the filter stays the
// same):
//
//	go test -run '^$' -bench BenchmarkHashedCalls -count 8
//
// The loops are written out, with b.N: a key array passed through a func
// value, or to a call in a b.Loop loop (which keeps arguments alive), moves
// to the heap, which Storage's own calls do not do. The hashed form of each
// pair always runs second: to compare a pair closely, run its two
// sub-benchmarks in alternating processes (go test -c, then -test.bench
// 'BenchmarkHashedCalls/visited/TestAndAdd$' and '...TestAndAddHash$').
func BenchmarkHashedCalls(b *testing.B) {
	f, err := bloom.NewScalable(10_000, 0.001, bloom.Concurrent())
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]uint64, 0, 2*memoryURLs)
	requestIDs(2*memoryURLs, func(id uint64) { ids = append(ids, id) })
	visited, fresh := ids[:memoryURLs], ids[memoryURLs:]
	f.AddManyHashes(visited)
	const mask = 1<<19 - 1 // 2^19 IDs of each kind, spread over the filter
	b.Run("visited/TestAndAdd", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			var key [8]byte
			binary.LittleEndian.PutUint64(key[:], visited[i&mask])
			sinkBool = f.TestAndAdd(key[:])
		}
	})
	b.Run("visited/TestAndAddHash", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			sinkBool = f.TestAndAddHash(visited[i&mask])
		}
	})
	b.Run("visited/Test", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			var key [8]byte
			binary.LittleEndian.PutUint64(key[:], visited[i&mask])
			sinkBool = f.Test(key[:])
		}
	})
	b.Run("visited/TestHash", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			sinkBool = f.TestHash(visited[i&mask])
		}
	})
	b.Run("new/Test", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			var key [8]byte
			binary.LittleEndian.PutUint64(key[:], fresh[i&mask])
			sinkBool = f.Test(key[:])
		}
	})
	b.Run("new/TestHash", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			sinkBool = f.TestHash(fresh[i&mask])
		}
	})
}

var sinkBool bool
