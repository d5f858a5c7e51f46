package bloom

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkBatchFloor sets the batch calls of the default filter (blocked at
// these rates) of 10^8 keys, 16-byte keys in batches of benchBatch, against
// the random-load floor of the machine measured on the filter's own words at
// the same moments: chunks of benchBatch keys alternate with chunks of
// benchBatch independent loads of random words of the filter (the loop of
// go test -run X -bench RandomLoads ./internal/hugepage), and for Add with
// as many random words of its filter updated (a bit set in each: the floor
// of an add, whose lines go back to memory dirty). It reports the medians
// over chunks of batch ns per key, of the floors, and of batch time over
// load floor ("x-floor"; issue 33's target: at most 2) and over update
// floor ("x-update-floor"). It takes a minute or two per rate to fill the filter:
//
//	go test -run X -bench BatchFloor -benchtime 2000000x .
func BenchmarkBatchFloor(b *testing.B) {
	const n, keySet = 1e8, 1 << 20
	for _, p := range []float64{0.01, 0.001} {
		b.Run(fmt.Sprintf("n=1e8/p=%g", p), func(b *testing.B) {
			f := mustNew(b, n, p)
			all := benchKeys(0, keySet)
			for i := uint64(0); i < n; i += keySet {
				for j := range min(keySet, n-i) {
					keyOf(all[j], 0, (i+j)*0x9E3779B97F4A7C15)
				}
				f.AddMany(all[:min(keySet, n-i)])
			}
			present := benchKeys(0, keySet)
			absent := benchKeys(1, keySet)
			results := make([]bool, benchBatch)
			// Add's filter, which the update floor writes random bits into.
			g := mustNew(b, n, p)
			copy(g.words, f.words) // its pages touched, as f's
			b.Run("TestAbsent", func(b *testing.B) {
				benchFloor(b, f.words, absent, false, func(keys [][]byte) { f.TestMany(keys, results) })
			})
			b.Run("TestPresent", func(b *testing.B) {
				benchFloor(b, f.words, present, false, func(keys [][]byte) { f.TestMany(keys, results) })
			})
			b.Run("Add", func(b *testing.B) {
				benchFloor(b, g.words, absent, true, func(keys [][]byte) { g.AddMany(keys) })
			})
		})
	}
}

// floorSink keeps the floor's loads.
var floorSink uint64

// benchFloor times batch on chunks of benchBatch keys of keys, alternating
// with as many random loads of words and, if update, as many random updates
// (see BenchmarkBatchFloor). b.N counts keys.
func benchFloor(b *testing.B, words []uint64, keys [][]byte, update bool, batch func(chunk [][]byte)) {
	b.Helper()
	chunks := len(keys) / benchBatch
	nw := uint64(len(words))
	x := uint64(88172645463325252)
	loads := func() {
		var sum uint64
		for range benchBatch {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			sum += words[x%nw]
		}
		floorSink += sum
	}
	updates := func() {
		for range benchBatch {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			words[x%nw] |= 1 << (x >> 58)
		}
	}
	var tBatch, tLoad, tUpdate, rLoad, rUpdate []float64
	b.ResetTimer()
	for i, n := 0, 0; n < b.N; i, n = i+1, n+benchBatch {
		c := i % chunks
		t0 := time.Now()
		batch(keys[c*benchBatch : (c+1)*benchBatch])
		t1 := time.Now()
		loads()
		t2 := time.Now()
		db, dl := t1.Sub(t0), t2.Sub(t1)
		tBatch = append(tBatch, float64(db.Nanoseconds())/benchBatch)
		tLoad = append(tLoad, float64(dl.Nanoseconds())/benchBatch)
		rLoad = append(rLoad, float64(db)/float64(dl))
		if update {
			updates()
			du := time.Since(t2)
			tUpdate = append(tUpdate, float64(du.Nanoseconds())/benchBatch)
			rUpdate = append(rUpdate, float64(db)/float64(du))
		}
	}
	b.StopTimer()
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(tBatch), "batch-ns/key")
	b.ReportMetric(med(tLoad), "floor-ns/load")
	b.ReportMetric(med(rLoad), "x-floor")
	if update {
		b.ReportMetric(med(tUpdate), "floor-ns/update")
		b.ReportMetric(med(rUpdate), "x-update-floor")
	}
}
