package bloom

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// windowBench is a window of 10^7 keys at 1% filled to its worst moment,
// beside a blocked BloomFilter sized for the same 10^7 keys and filled.
var windowBench struct {
	w *WindowFilter
	f *BloomFilter
}

func windowBenchSetup(b *testing.B) {
	if windowBench.w != nil {
		return
	}
	windowBench.w, windowBench.f = windowBenchFilters(b, 0)
}

// windowBenchFilters returns a window of 10^7 keys at 1% (of r generations,
// or as many as NewWindow chooses for 0) filled to its worst moment, every
// generation full, and a blocked BloomFilter sized for the same keys and
// holding them.
func windowBenchFilters(b *testing.B, r int) (*WindowFilter, *BloomFilter) {
	const n = 10_000_000
	var opts []Option
	if r != 0 {
		opts = append(opts, Generations(r))
	}
	w, err := NewWindow(n, 0.01, opts...)
	if err != nil {
		b.Fatal(err)
	}
	f, err := New(n, 0.01, Blocked())
	if err != nil {
		b.Fatal(err)
	}
	fillWindowBench(n, f, w)
	return w, f
}

// fillWindowBench adds keys 0..n-1 (16 bytes each) to f and to each of
// ws, in batches, then fills each window's newest generation but for one
// key (every generation full: the worst moment for a test).
func fillWindowBench(n uint64, f *BloomFilter, ws ...*WindowFilter) {
	keys := make([][]byte, 1000)
	for lo := uint64(0); lo < n; lo += 1000 {
		for i := range keys {
			keys[i] = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(keys[i][:0], 1), lo+uint64(i))
		}
		f.AddMany(keys)
		for _, w := range ws {
			w.AddMany(keys)
		}
	}
	for _, w := range ws {
		for i := w.Count(); i < uint64(w.Generations())*w.GenerationCapacity()-1; i++ {
			w.AddHash(i)
		}
	}
}

// BenchmarkWindow compares a window of 10^7 keys at 1% with a blocked
// BloomFilter of 10^7 keys, side by side, on 16-byte keys never seen before
// (so that neither filter finds them in the caches): go test -run '^$'
// -bench 'Window' -count 5. Add keeps adding new keys (the window rotates;
// the BloomFilter's rate degrades, which does not change its speed); the
// tests are of absent keys.
func BenchmarkWindow(b *testing.B) {
	windowBenchSetup(b)
	w, f := windowBench.w, windowBench.f
	var buf [16]byte
	next := uint64(0)
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = make([]byte, 16)
	}
	res := make([]bool, len(batch))
	fill := func() [][]byte {
		for _, k := range batch {
			next++
			binary.LittleEndian.PutUint64(k, 2)
			binary.LittleEndian.PutUint64(k[8:], next)
		}
		return batch
	}
	for _, c := range []struct {
		name string
		fn   func(b *testing.B)
	}{
		{"Add/bloom", func(b *testing.B) {
			for range b.N {
				next++
				f.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Add/window", func(b *testing.B) {
			for range b.N {
				next++
				w.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Test/bloom", func(b *testing.B) {
			for range b.N {
				next++
				f.Test(windowKey(&buf, 2, next))
			}
		}},
		{"Test/window", func(b *testing.B) {
			for range b.N {
				next++
				w.Test(windowKey(&buf, 2, next))
			}
		}},
		{"TestMany/bloom", func(b *testing.B) {
			for i := 0; i < b.N; i += len(batch) {
				f.TestMany(fill(), res)
			}
		}},
		{"TestMany/window", func(b *testing.B) {
			for i := 0; i < b.N; i += len(batch) {
				w.TestMany(fill(), res)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c.fn(b)
		})
	}
}

// BenchmarkWindowRatio measures the targets of the window filter as ratios
// of time to the blocked BloomFilter of BenchmarkWindow, interleaving the two
// in chunks of 20,000 keys so that a shared machine's load, which moves
// single timings several-fold, moves both sides alike: it reports the
// median over the chunks of window time / BloomFilter time, per operation.
// go test -run '^$' -bench WindowRatio -benchtime 1x.
func BenchmarkWindowRatio(b *testing.B) {
	windowBenchSetup(b)
	windowRatio(b, windowBench.w, windowBench.f)
}

// BenchmarkWindowGenerations is BenchmarkWindowRatio for windows of 2 to 8
// generations (Generations(r)), each beside its own BloomFilter, and reports
// their bits per window key: the trade between memory and the cache lines a
// test of an absent key reads, one per generation.
// go test -run '^$' -bench WindowGenerations -benchtime 1x.
func BenchmarkWindowGenerations(b *testing.B) {
	for r := 2; r <= 8; r++ {
		b.Run(fmt.Sprintf("r=%d", r), func(b *testing.B) {
			w, f := windowBenchFilters(b, r)
			windowRatio(b, w, f)
		})
	}
}

// windowRatio runs the side-by-side timings of BenchmarkWindowRatio on w
// and f.
func windowRatio(b *testing.B, w *WindowFilter, f *BloomFilter) {
	const chunk, rounds = 20_000, 41
	var buf [16]byte
	next := uint64(1 << 40)
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = make([]byte, 16)
	}
	res := make([]bool, len(batch))
	fill := func(tag uint64) [][]byte {
		for _, k := range batch {
			next++
			binary.LittleEndian.PutUint64(k, tag)
			binary.LittleEndian.PutUint64(k[8:], next)
		}
		return batch
	}
	timeIt := func(fn func()) float64 {
		start := time.Now()
		fn()
		return float64(time.Since(start))
	}
	for _, op := range []struct {
		name          string
		bloom, window func()
	}{
		{"Add", func() {
			for range chunk {
				next++
				f.Add(windowKey(&buf, 3, next))
			}
		}, func() {
			for range chunk {
				next++
				w.Add(windowKey(&buf, 3, next))
			}
		}},
		{"Test", func() {
			for range chunk {
				next++
				f.Test(windowKey(&buf, 2, next))
			}
		}, func() {
			for range chunk {
				next++
				w.Test(windowKey(&buf, 2, next))
			}
		}},
		{"TestMany", func() {
			for range chunk / len(batch) {
				f.TestMany(fill(2), res)
			}
		}, func() {
			for range chunk / len(batch) {
				w.TestMany(fill(2), res)
			}
		}},
	} {
		b.Run(op.name, func(b *testing.B) {
			for range b.N {
				ratios := make([]float64, rounds)
				var tb, tw float64
				for i := range ratios {
					x, y := timeIt(op.bloom), timeIt(op.window)
					if i%2 == 1 { // alternate which goes first
						y, x = timeIt(op.window), timeIt(op.bloom)
					}
					ratios[i] = y / x
					tb, tw = tb+x, tw+y
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[rounds/2], "window/bloom")
				b.ReportMetric(tb/rounds/chunk, "bloom-ns/key")
				b.ReportMetric(tw/rounds/chunk, "window-ns/key")
				b.ReportMetric(float64(w.Bits())/float64(w.Window()), "bits/key")
			}
		})
	}
}

// windowConcBench is a Concurrent window of 10^7 keys at 1%, filled as
// windowBenchFilters fills its window, beside a Concurrent blocked
// BloomFilter holding the same keys, and a plain window holding them too,
// which rwTest tests under the read lock of mu: the read path of the
// Concurrent window before its tests took no lock (a sync.RWMutex, tests
// as readers), kept for comparison.
var windowConcBench struct {
	w, plain *WindowFilter
	f        *BloomFilter
	mu       sync.RWMutex
}

func windowConcBenchSetup(b *testing.B) {
	if windowConcBench.w != nil {
		return
	}
	const n = 10_000_000
	w := mustWindow(b, n, 0.01, Concurrent())
	plain := mustWindow(b, n, 0.01)
	f, err := New(n, 0.01, Blocked(), Concurrent())
	if err != nil {
		b.Fatal(err)
	}
	fillWindowBench(n, f, w, plain)
	windowConcBench.w, windowConcBench.plain, windowConcBench.f = w, plain, f
}

// rwTest is TestString on windowConcBench's plain window under the read
// lock, as the Concurrent window's was.
func rwTest(key string) bool {
	windowConcBench.mu.RLock()
	defer windowConcBench.mu.RUnlock()
	return windowConcBench.plain.TestString(key)
}

// BenchmarkWindowConcurrent measures TestString of absent 16-byte keys from
// b.RunParallel goroutines on windowConcBench's window and BloomFilter:
// go test -run '^$' -bench WindowConcurrent -cpu 1,2 -count 3. The window's
// tests take no lock, as the BloomFilter's do not: with more cores, tests
// that share a lock bounce its cache line between them.
func BenchmarkWindowConcurrent(b *testing.B) {
	windowConcBenchSetup(b)
	var seq atomic.Uint64
	// The calls are written out, not through a func value, through which
	// string(buf[:]) would escape and allocate.
	b.Run("window", func(b *testing.B) {
		b.ReportAllocs()
		w := windowConcBench.w
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				w.TestString(string(buf[:]))
			}
		})
	})
	b.Run("rwmutex", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				rwTest(string(buf[:]))
			}
		})
	})
	b.Run("bloom", func(b *testing.B) {
		b.ReportAllocs()
		f := windowConcBench.f
		b.RunParallel(func(pb *testing.PB) {
			var buf [16]byte
			binary.LittleEndian.PutUint64(buf[:8], 5)
			for i := seq.Add(1) << 40; pb.Next(); i++ {
				binary.LittleEndian.PutUint64(buf[8:], i)
				f.TestString(string(buf[:]))
			}
		})
	})
}

// BenchmarkWindowConcurrentRatio is BenchmarkWindowConcurrent's window
// against its rwmutex, interleaved as BenchmarkWindowRatio interleaves
// its two sides, so that a shared machine's load moves both alike: phases
// of GOMAXPROCS goroutines each testing 20,000 absent keys, alternately
// lock-free and under the read lock; it reports the median over 41 pairs
// of phases of each side's wall time per test and of rwmutex/lockfree.
// go test -run '^$' -bench WindowConcurrentRatio -benchtime 1x -cpu 1,2.
func BenchmarkWindowConcurrentRatio(b *testing.B) {
	windowConcBenchSetup(b)
	const chunk, rounds = 20_000, 41
	w := windowConcBench.w
	procs := runtime.GOMAXPROCS(0)
	next := uint64(1 << 40)
	phase := func(lockFree bool) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for g := range procs {
			lo := next + uint64(g)*chunk
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf [16]byte
				binary.LittleEndian.PutUint64(buf[:8], 6)
				for i := lo; i < lo+chunk; i++ {
					binary.LittleEndian.PutUint64(buf[8:], i)
					if lockFree {
						w.TestString(string(buf[:]))
					} else {
						rwTest(string(buf[:]))
					}
				}
			}()
		}
		wg.Wait()
		next += uint64(procs) * chunk
		return float64(time.Since(start)) / float64(procs*chunk)
	}
	for range b.N {
		free, locked, ratios := make([]float64, rounds), make([]float64, rounds), make([]float64, rounds)
		for r := range rounds {
			free[r], locked[r] = phase(true), phase(false)
			ratios[r] = locked[r] / free[r]
		}
		slices.Sort(free)
		slices.Sort(locked)
		slices.Sort(ratios)
		b.ReportMetric(free[rounds/2], "lockfree-ns/test")
		b.ReportMetric(locked[rounds/2], "rwmutex-ns/test")
		b.ReportMetric(ratios[rounds/2], "rwmutex/lockfree")
	}
}

// BenchmarkWindowTestAndAdd measures first-seen TestAndAdd against
// TestAndRefresh, which is what TestAndAdd did before it became first-seen
// (test, then add whatever the answer), side by side in one run: two
// windows of 10^7 keys at 1% filled alike (windowBenchFilters' worst
// moment), the two calls interleaved in chunks of 20,000 keys, alternating
// which goes first; it reports the median over 41 chunks of TestAndAdd's
// time over TestAndRefresh's, and each one's ns per key. "new": keys never
// seen (both test and add each); "half-seen": every other key was met in
// the chunk before (first-seen skips their add).
// go test -run '^$' -bench WindowTestAndAdd -benchtime 1x.
func BenchmarkWindowTestAndAdd(b *testing.B) {
	const n, chunk, rounds = 10_000_000, 20_000, 41
	first, err := NewWindow(n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	last, err := NewWindow(n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	f, err := New(n, 0.01, Blocked())
	if err != nil {
		b.Fatal(err)
	}
	fillWindowBench(n, f, first, last)
	next := uint64(1 << 40)
	for _, mix := range []string{"new", "half-seen"} {
		b.Run(mix, func(b *testing.B) {
			var buf [16]byte
			// keys of the chunk before and this one: chunk keys each.
			keys := func(i uint64) []byte {
				k := next + i
				if mix == "half-seen" && i%2 == 1 {
					k -= chunk // the same key as in the chunk before
				}
				return windowKey(&buf, 9, k)
			}
			timeIt := func(fn func()) float64 {
				start := time.Now()
				fn()
				return float64(time.Since(start))
			}
			runFirst := func() {
				for i := range uint64(chunk) {
					first.TestAndAdd(keys(i))
				}
			}
			runLast := func() {
				for i := range uint64(chunk) {
					last.TestAndRefresh(keys(i))
				}
			}
			for range b.N {
				ratios := make([]float64, rounds)
				var tf, tl float64
				for i := range ratios {
					var x, y float64
					if i%2 == 0 {
						x, y = timeIt(runFirst), timeIt(runLast)
					} else {
						y, x = timeIt(runLast), timeIt(runFirst)
					}
					next += chunk
					ratios[i] = x / y
					tf, tl = tf+x, tl+y
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[rounds/2], "first/refresh")
				b.ReportMetric(tf/rounds/chunk, "first-ns/key")
				b.ReportMetric(tl/rounds/chunk, "refresh-ns/key")
			}
		})
	}
}
