package bloom

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

// ---- concurrency ----

// concurrentWorkers and concurrentOps are the goroutines and the operations
// each of them runs in the concurrency tests.
const (
	concurrentWorkers = 16
	concurrentOps     = 100_000
)

// filterOps is what the concurrency tests need from BloomFilter and
// ScalableBloomFilter.
type filterOps interface {
	Add([]byte)
	AddString(string)
	Test([]byte) bool
	TestString(string) bool
	TestAndAdd([]byte) bool
	TestAndAddString(string) bool
	Count() uint64
}

// runWorkers runs work(g) for g in [0, workers) on their own goroutines,
// released together, and waits for all of them.
func runWorkers(workers int, work func(g int)) {
	start, done := make(chan struct{}), make(chan struct{}, workers)
	for g := range workers {
		go func() {
			<-start
			work(g)
			done <- struct{}{}
		}()
	}
	close(start)
	for range workers {
		<-done
	}
}

// mixedKey is the key a worker uses for its operation i: it shares half of
// its keys with the other workers, so that the same key is often added by
// several at once.
func mixedKey(buf []byte, g, i int) []byte {
	if i%2 == 0 {
		return keyOf(buf, 2, uint64(i/2))
	}
	return keyOf(buf, 3+uint64(g), uint64(i/2))
}

// hammer runs concurrentWorkers goroutines of concurrentOps operations each on
// f, mixing every Add, Test and TestAndAdd form on shared and private keys
// while side() runs, and returns the keys each worker added. A key a worker
// added must test present for it from then on.
func hammer(t *testing.T, f filterOps, side func()) (added [][]int) {
	t.Helper()
	added = make([][]int, concurrentWorkers)
	failures := make([]string, concurrentWorkers)
	stop := make(chan struct{})
	sideDone := make(chan struct{})
	go func() {
		defer close(sideDone)
		for {
			select {
			case <-stop:
				return
			default:
				side()
			}
		}
	}()
	runWorkers(concurrentWorkers, func(g int) {
		buf := make([]byte, 16)
		for i := range concurrentOps {
			k := mixedKey(buf, g, i)
			switch i % 6 {
			case 0:
				f.Add(k)
			case 1:
				f.AddString(string(k))
			case 2:
				f.TestAndAdd(k)
			case 3:
				f.TestAndAddString(string(k))
			case 4:
				f.Test(k)
				continue
			case 5:
				f.TestString(string(k))
				continue
			}
			added[g] = append(added[g], i)
			// Now and then check a key added a little earlier, which others
			// may have been adding at the same time.
			if i%8 != 0 {
				continue
			}
			if j := added[g][max(0, len(added[g])-5)]; !f.Test(mixedKey(buf, g, j)) {
				failures[g] = fmt.Sprintf("worker %d: false negative for its operation %d during the run", g, j)
				return
			}
		}
	})
	close(stop)
	<-sideDone
	for _, msg := range failures {
		if msg != "" {
			t.Fatal(msg)
		}
	}
	buf := make([]byte, 16)
	for g, ops := range added {
		for _, i := range ops {
			k := mixedKey(buf, g, i)
			if !f.Test(k) || i%8 == 0 && !f.TestString(string(k)) {
				t.Fatalf("false negative for worker %d's operation %d after the run", g, i)
			}
		}
	}
	return added
}

// TestConcurrentMixed runs every Add, Test and TestAndAdd form from 16
// goroutines at once, while another goroutine copies, combines and encodes
// the filter: with -race it finds unsynchronized access, and afterwards no
// added key may test absent.
func TestConcurrentMixed(t *testing.T) {
	const n = concurrentWorkers * concurrentOps // more than will be added
	f := mustNew(t, n, 0.01, Concurrent())
	other := mustNew(t, n, 0.01, Concurrent())
	other.AddString("other")
	var snapshots int
	hammer(t, f, func() {
		snapshots++
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Error(err)
			return
		}
		var dec BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
		if _, err := f.Union(other); err != nil {
			t.Error(err)
		}
		c := f.Clone()
		_ = c.Equal(f) || f.IsFull() || f.FillRatio() > 1 || f.EstimatedCount() == 0
	})
	t.Logf("Count %d, %d snapshots during the run", f.Count(), snapshots)
	if f.Count() == 0 || f.Count() > f.setBits() {
		t.Errorf("Count = %d with %d bits set", f.Count(), f.setBits())
	}
}

// exactlyOnce has concurrentWorkers goroutines call TestAndAdd on the same
// keys, in the same order so that they race on each, and checks that exactly
// one of them reports each key new (absent) and that Count agrees.
func exactlyOnce(t *testing.T, f filterOps, keys int) {
	t.Helper()
	news := make([][]int32, concurrentWorkers)
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			k := keyOf(buf, 0, uint64(i))
			var present bool
			if g%2 == 0 {
				present = f.TestAndAdd(k)
			} else {
				present = f.TestAndAddString(string(k))
			}
			if !present {
				news[g][i]++
			}
		}
	})
	checkNewOnce(t, news, keys, f.Count())
}

// timesNew returns how many goroutines heard key i reported new; news[g][i]
// counts goroutine g's.
func timesNew(news [][]int32, i int) (n int32) {
	for g := range news {
		n += news[g][i]
	}
	return n
}

// checkNewOnce checks that each of keys keys was reported new exactly once
// across news, and that the filter counts keys keys.
func checkNewOnce(t *testing.T, news [][]int32, keys int, count uint64) {
	t.Helper()
	var bad int
	for i := range keys {
		if n := timesNew(news, i); n != 1 {
			if bad++; bad <= 5 {
				t.Errorf("key %d reported new %d times", i, n)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d keys not reported new exactly once", bad, keys)
	}
	if count != uint64(keys) {
		t.Errorf("Count = %d, want %d", count, keys)
	}
}

// TestConcurrentTestAndAddExactlyOnce races TestAndAdd on the same 10^4 keys.
// The error rate is tiny so that false positives do not blur the count.
func TestConcurrentTestAndAddExactlyOnce(t *testing.T) {
	for round := range 5 {
		exactlyOnce(t, mustNew(t, 10_000, 1e-9, Concurrent(), Seed(uint32(round))), 10_000)
		if t.Failed() {
			break
		}
	}
}

// TestConcurrentMode checks that the option is accepted, that the mode
// survives copying, combining and decoding, and that it changes neither the
// encoding nor what Equal compares.
func TestConcurrentMode(t *testing.T) {
	f, err := NewWithSize(100, 3, Seed(7), Concurrent())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cat", "dog", "fox"} {
		f.AddString(k)
	}
	enc, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(enc); got != goldenEncodingV3 {
		t.Errorf("a concurrent filter encodes differently:\n got %s\nwant %s", got, goldenEncodingV3)
	}
	var w bytes.Buffer
	if _, err := f.WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), enc) {
		t.Errorf("WriteTo differs from MarshalBinary: %v", err)
	}
	plain := goldenFilter(t)
	if !f.Equal(plain) || !plain.Equal(f) {
		t.Error("a concurrent filter is not Equal to the same plain one")
	}
	u, err := f.Union(plain)
	if err != nil {
		t.Fatal(err)
	}
	in, err := plain.Intersection(f)
	if err != nil {
		t.Fatal(err)
	}
	var decoded, read, zero BloomFilter
	if err := zero.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	decoded = *mustNew(t, 10, 0.1, Concurrent())
	if err := decoded.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	read = *mustNew(t, 10, 0.1, Concurrent())
	if _, err := read.ReadFrom(bytes.NewReader(enc)); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		g          *BloomFilter
		concurrent bool
	}{
		"clone": {f.Clone(), true}, "union": {u, true}, "intersection of plain": {in, false},
		"decoded into concurrent": {&decoded, true}, "read into concurrent": {&read, true},
		"decoded into zero": {&zero, false}, "plain clone": {plain.Clone(), false},
	} {
		if (tc.g.conc != nil) != tc.concurrent || tc.g.conc != nil && tc.g.conc.Locks == nil {
			t.Errorf("%s: concurrent = %v, want %v", name, tc.g.conc != nil, tc.concurrent)
		}
		if !tc.g.Equal(plain) || !tc.g.TestString("cat") {
			t.Errorf("%s: differs from the original", name)
		}
	}
	// A clone has its own bits and count.
	c := f.Clone()
	c.AddString("emu")
	if f.Count() != 3 || c.Count() != 4 || f.Equal(c) {
		t.Errorf("clone shares state: counts %d and %d", f.Count(), c.Count())
	}
	f.Clear()
	if f.Count() != 0 || f.FillRatio() != 0 || f.TestString("cat") {
		t.Error("Clear left keys behind")
	}
	if _, err := New(10, 0.1, Concurrent(), Linear(2)); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("Concurrent with a scalable-only option: %v", err)
	}
}

func TestConcurrentHotPathDoesNotAllocate(t *testing.T) {
	f := mustNew(t, 10000, 0.01, Concurrent())
	long := strings.Repeat("https://example.com/some/long/path?query=1&", 4)
	checkHotPathAllocs(t, f, freshKeys(), long, long)
}

// TestConcurrentMergeExactlyOnce merges filters into a Concurrent filter
// while goroutines race TestAndAdd on the same keys: each key that no merged
// filter holds is still reported new exactly once, and no key is lost.
func TestConcurrentMergeExactlyOnce(t *testing.T) {
	const keys, others = 5000, 8
	f := mustNew(t, 100_000, 1e-9, Concurrent())
	var srcs []*BloomFilter
	for j := range others {
		g := mustNew(t, 100_000, 1e-9)
		buf := make([]byte, 16)
		for i := range uint64(keys) {
			g.Add(keyOf(buf, uint64(100+j), i))
		}
		srcs = append(srcs, g)
	}
	news := make([][]int32, concurrentWorkers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, g := range srcs {
			if err := f.Merge(g); err != nil {
				t.Error(err)
			}
		}
	}()
	runWorkers(concurrentWorkers, func(g int) {
		news[g] = make([]int32, keys)
		buf := make([]byte, 16)
		for i := range keys {
			if !f.TestAndAdd(keyOf(buf, 0, uint64(i))) {
				news[g][i]++
			}
		}
	})
	wg.Wait()
	bad := 0
	for i := range keys {
		n := timesNew(news, i)
		if n != 1 {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d keys not reported new exactly once", bad, keys)
	}
	buf := make([]byte, 16)
	for j := range others {
		for i := range uint64(keys) {
			if !f.Test(keyOf(buf, uint64(100+j), i)) || !f.Test(keyOf(buf, 0, i)) {
				t.Fatalf("false negative after concurrent Merge")
			}
		}
	}
	if c, e := f.Count(), f.EstimatedCount(); c > f.setBits() || math.Abs(float64(c)-float64(e)) > 0.01*float64(e)+keys {
		t.Errorf("Count %d, EstimatedCount %d", c, e)
	}
}

func TestBlockedConcurrent(t *testing.T) {
	for round := range 3 {
		exactlyOnce(t, mustNew(t, 10_000, 1e-9, Concurrent(), Blocked(), Seed(uint32(round))), 10_000)
		exactlyOnce(t, mustScalable(t, 100, 1e-9, Concurrent(), Blocked(), Seed(uint32(round))), 10_000)
		if t.Failed() {
			break
		}
	}
	f := mustNew(t, concurrentWorkers*concurrentOps, 0.01, Concurrent(), Blocked())
	hammer(t, f, func() {
		enc, _ := f.MarshalBinary()
		var dec BloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
		_ = f.Clone().Equal(f) || f.EstimatedCount() == 0
	})
	s := mustScalable(t, 1000, 0.01, Concurrent(), Blocked())
	hammer(t, s, func() {
		enc, _ := s.MarshalBinary()
		var dec ScalableBloomFilter
		if err := dec.UnmarshalBinary(enc); err != nil {
			t.Errorf("encoding made during writes does not decode: %v", err)
		}
	})
}
