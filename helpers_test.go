package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/bloomfilters/bloom/internal/blocked"
	"github.com/spaolacci/murmur3"
)

// keyOf writes a distinct 16-byte key for i into buf: members use tag 0,
// absent keys tag 1, so the two sets never overlap.
func keyOf(buf []byte, tag, i uint64) []byte {
	binary.LittleEndian.PutUint64(buf[0:], i)
	binary.LittleEndian.PutUint64(buf[8:], tag)
	return buf[:16]
}

func mustNew(t testing.TB, n uint64, p float64, opts ...Option) *BloomFilter {
	t.Helper()
	f, err := New(n, p, opts...)
	if err != nil {
		t.Fatalf("New(%d, %v): %v", n, p, err)
	}
	return f
}

// zeroIs returns "" if got is 0 (or false), or a complaint.
func zeroIs[T comparable](got T) string {
	var zero T
	if got != zero {
		return fmt.Sprintf("got %v, want %v", got, zero)
	}
	return ""
}

// errIs returns "" if err is non-nil and matches target (any error if target
// is nil), or a complaint.
func errIs(err, target error) string {
	if err == nil || target != nil && !errors.Is(err, target) {
		return fmt.Sprintf("error %v, want one matching %v", err, target)
	}
	return ""
}

// ---- statistics ----

// measureFPR adds n member keys and tests absent keys, returning the
// measured rate and the rate predicted from the fill, FillRatio^k.
func measureFPR(f *BloomFilter, n, absent uint64) (measured, predicted float64) {
	buf := make([]byte, 16)
	for i := range n {
		f.Add(keyOf(buf, 0, i))
	}
	fp := 0
	for i := range absent {
		if f.Test(keyOf(buf, 1, i)) {
			fp++
		}
	}
	return float64(fp) / float64(absent), f.EstimatedErrorRate()
}

// averageRatio returns the measured false-positive rate of n-key filters at
// p, averaged over 40 seeds starting at seed0, divided by p.
func averageRatio(t *testing.T, n uint64, p float64, absent uint64, seed0 uint32) float64 {
	const seeds = 40
	var sum float64
	for s := range uint32(seeds) {
		f := mustNew(t, n, p, Seed(s*0x9E3779B1+seed0))
		got, _ := measureFPR(f, n, absent)
		sum += got
	}
	ratio := sum / seeds / p
	t.Logf("n=%d p=%g over %d seeds: measured/target = %.3f", n, p, seeds, ratio)
	return ratio
}

// runtimeMem reads the total bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (r *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.total = ms.TotalAlloc
}

// ---- allocations ----

// hotPath is the Add and Test family that BloomFilter and
// ScalableBloomFilter share.
type hotPath interface {
	Add(key []byte)
	AddString(key string)
	Test(key []byte) bool
	TestString(key string) bool
	TestAndAdd(key []byte) bool
	TestAndAddString(key string) bool
	AddHash(h uint64)
	TestHash(h uint64) bool
	TestAndAddHash(h uint64) bool
}

// checkHotPathAllocs fails t if a call of the hot path of f allocates. Add and
// TestAndAdd get the keys addKey returns, AddString addString, and the others
// long.
func checkHotPathAllocs(t *testing.T, f hotPath, addKey func() []byte, addString, long string) {
	t.Helper()
	key := []byte(long)
	for name, fn := range map[string]func(){
		"Add":              func() { f.Add(addKey()) },
		"AddString":        func() { f.AddString(addString) },
		"Test":             func() { f.Test(key) },
		"TestString":       func() { f.TestString(long) },
		"TestAndAdd":       func() { f.TestAndAdd(addKey()) },
		"TestAndAddString": func() { f.TestAndAddString(long) },
		"AddHash":          func() { f.AddHash(binary.LittleEndian.Uint64(addKey())) },
		"TestHash":         func() { f.TestHash(uint64(len(long))) },
		"TestAndAddHash":   func() { f.TestAndAddHash(binary.LittleEndian.Uint64(addKey())) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// freshKeys returns a function that returns a new 16-byte key at each call,
// in one buffer.
func freshKeys() func() []byte {
	buf := make([]byte, 16)
	var i uint64
	return func() []byte { i++; return keyOf(buf, 0, i) }
}

// ---- benchmarks ----

// refFilter is the minimal hand-written filter the issue measures us against:
// the same hash, position derivation and multiply-shift, and Count
// bookkeeping, on a plain []uint64 read without bounds checks.
type refFilter struct {
	m     uint64
	k     uint
	words []uint64
	count uint64
}

func (r *refFilter) word(i uint64) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.words)), i*8))
}

func (r *refFilter) add(key []byte) {
	h1, h2 := murmur3.Sum128WithSeed(key, DefaultSeed)
	var fresh uint64
	x, y, c := h1, h2, uint64(0)
	for range r.k {
		p, _ := bits.Mul64((x^x>>32)*0x94D049BB133111EB, r.m)
		w := r.word(p >> 6)
		mask := uint64(1) << (p & 63)
		fresh |= mask &^ *w
		*w |= mask
		c += 0x9E3779B97F4A7C15
		x += y
		y += c
	}
	if fresh != 0 {
		r.count++
	}
}

func (r *refFilter) test(key []byte) bool {
	h1, h2 := murmur3.Sum128WithSeed(key, DefaultSeed)
	x, y, c := h1, h2, uint64(0)
	for range r.k {
		p, _ := bits.Mul64((x^x>>32)*0x94D049BB133111EB, r.m)
		if *r.word(p >> 6)&(1<<(p&63)) == 0 {
			return false
		}
		c += 0x9E3779B97F4A7C15
		x += y
		y += c
	}
	return true
}

// exactlyOnceScalable races TestAndAdd on new keys on a concurrent s.
func exactlyOnceScalable(t *testing.T, s *ScalableBloomFilter) {
	t.Helper()
	before := s.Count()
	const keys = 3000
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			if !s.TestAndAdd(keyOf(buf, 7, uint64(i))) {
				news[g][i]++
			}
		}
	})
	total := 0
	for i := range keys {
		n := timesNew(news, i)
		if n > 1 {
			t.Fatalf("key %d reported new %d times", i, n)
		}
		total += int(n)
	}
	if got := s.Count() - before; got != uint64(total) {
		t.Errorf("Count grew by %d, %d keys reported new", got, total)
	}
}

func mustNewScalable(t testing.TB, n uint64, p float64, opts ...Option) *ScalableBloomFilter {
	t.Helper()
	s, err := NewScalable(n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustScalable(t testing.TB, n uint64, p float64, opts ...Option) *ScalableBloomFilter {
	t.Helper()
	s, err := NewScalable(n, p, opts...)
	if err != nil {
		t.Fatalf("NewScalable(%d, %v): %v", n, p, err)
	}
	return s
}

// within reports whether a rate measured over trials stays at most target,
// allowing 4 standard deviations of sampling noise.
func within(measured, target float64, trials uint64) bool {
	return measured <= target+4*math.Sqrt(target*(1-target)/float64(trials))
}

// allocated returns the bytes allocated while fn ran, not counting the
// in-block rates of the blocked layout, which are filled beforehand.
//
// Those rates are a cache of the process, not of one input: the first call
// that needs the rates of a hash count computes and keeps them (at most
// 1.24 MB for all of them, internal/blocked TestInBlockRatesMemory), and a
// fuzzed 133-byte scalable encoding whose sizing tried the first hash counts
// allocated 1.2 MB in doing so, past allocBound.
func allocated(fn func()) uint64 {
	warmBlockedRates()
	var before, after runtimeMem
	before.read()
	fn()
	after.read()
	return after.total - before.total
}

// warmBlockedRates computes the in-block rates of every hash count, once.
var warmBlockedRates = sync.OnceFunc(func() {
	for k := uint(1); k <= MaxHashes; k++ {
		BlockedFalsePositiveRate(blocked.BlockBits, k, 1<<40)
	}
})

func mustNewWithSize(t testing.TB, bits uint64, hashes uint, opts ...Option) *BloomFilter {
	t.Helper()
	f, err := NewWithSize(bits, hashes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
