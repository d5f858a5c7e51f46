package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"time"
)

var nan = math.NaN()

var errorRates = []float64{0.01, 0.001}

// keyKinds are the kinds of keys the fixed-size filters are measured with.
var keyKinds = []keyKind{randomKeys, urlKeys}

// config is one fixed-size scenario.
type config struct {
	n    int
	kind keyKind
	p    float64
}

// fixedRun holds one implementation's measurements in one scenario, one
// entry per repetition.
type fixedRun struct {
	add, testPresent, testAbsent []float64 // ns/op
	bytes                        []float64 // live heap of the filter or map
	allocsAdd, allocsTest        []float64 // per op
	falsePos, absent             int       // of the last repetition
	falseNeg                     int       // present keys reported absent, all repetitions
}

type fixedResults struct {
	configs []config
	sample  int // absent keys, and present keys tested
	reps    int
	runs    map[config]map[string]*fixedRun
}

// runFixedAll measures every fixed-size implementation in every scenario.
// For each key kind and size it generates the keys once, then repeats:
// every implementation builds a filter of n keys at every error rate (the
// map once, as it has no error rate), then tests present and absent keys.
func runFixedAll(o options) *fixedResults {
	res := &fixedResults{sample: o.absent, reps: o.reps, runs: make(map[config]map[string]*fixedRun)}
	for _, n := range o.sizes {
		for _, kind := range keyKinds {
			t0 := time.Now()
			present := genKeys(kind, n, 1)
			absent := genKeys(kind, o.absent, 2)
			progress("keys: %s %s + %s absent in %s", count(n), kind, count(o.absent), time.Since(t0).Round(time.Millisecond))
			var jobs []*job
			for _, p := range errorRates {
				c := config{n, kind, p}
				res.configs = append(res.configs, c)
				res.runs[c] = make(map[string]*fixedRun)
				for _, impl := range fixedImpls {
					if (impl.isMap || (impl.costly && n > smallN)) && p != errorRates[0] {
						continue
					}
					r := &fixedRun{}
					jobs = append(jobs, &job{impl: impl, p: p, r: r})
					res.runs[c][impl.name] = r
				}
			}
			// Large filters do not fit in the caches whatever the order, so
			// their work is cut into blocks, visited round robin across the
			// implementations, so that whatever else the machine does hits
			// them alike. Small filters run whole, so that they run warm as
			// they would in a program that uses one (cutting them into
			// blocks measured every ratio closer to 1).
			blocks := 1
			if n > smallN {
				blocks = 10
			}
			for rep := range o.reps {
				t0 := time.Now()
				var run []*job
				for _, j := range jobs {
					if rep == 0 || !j.impl.costly || n <= smallN {
						run = append(run, j)
					}
				}
				// The false-positive rate does not change between repetitions:
				// the first one measures it on all absent keys, the others
				// time fewer.
				abs := absent
				if rep > 0 {
					abs = absent.sample(absent.len(), min(absent.len(), timingSample))
				}
				measureRep(rotate(run, rep), blocks, present, abs)
				progress("  n=%s %s rep %d/%d: %s", count(n), kind, rep+1, o.reps, time.Since(t0).Round(time.Millisecond))
			}
			// The map does not depend on p: show the same run at every rate.
			for _, impl := range fixedImpls {
				if impl.isMap {
					for _, p := range errorRates[1:] {
						res.runs[config{n, kind, p}][impl.name] = res.runs[config{n, kind, errorRates[0]}][impl.name]
					}
				}
			}
		}
	}
	return res
}

// timingSample is how many present and absent keys the repetitions after
// the first test.
const timingSample = 200_000

// smallN is the largest n whose filters are measured whole and by every
// implementation in every repetition.
const smallN = 1_000_000

// job is one implementation at one error rate, during one repetition.
type job struct {
	impl fixedImpl
	p    float64
	r    *fixedRun

	s                            set
	bytes                        float64
	add, testPresent, testAbsent time.Duration
	mallocsAdd, mallocsTest      uint64
	hits, falsePos               int
}

// measureRep builds every job's filter, adds the present keys, then tests
// as many present keys as there are absent keys, then the absent keys.
// Each phase is cut into blocks; block b visits the jobs round robin,
// starting at job b, so that whatever else the machine does hits all of
// them alike.
func measureRep(jobs []*job, blocks int, present, absent *keySet) {
	n := present.len()
	np := min(n, absent.len())
	for _, j := range jobs {
		heap0, _ := memStats(true)
		j.s = j.impl.build(uint64(n), j.p)
		heap1, _ := memStats(true)
		j.bytes = float64(heap1) - float64(heap0)
	}
	heapBuilt, _ := memStats(true)
	phase := func(total int, op func(j *job, lo, hi int)) {
		for b := range blocks {
			lo, hi := b*total/blocks, (b+1)*total/blocks
			for _, j := range rotate(jobs, b) {
				op(j, lo, hi)
			}
		}
	}
	phase(n, func(j *job, lo, hi int) {
		_, m0 := memStats(false)
		t := now()
		j.s.addRange(present, lo, hi)
		j.add += now() - t
		_, m1 := memStats(false)
		j.mallocsAdd += m1 - m0
	})
	// Filters allocate everything when they are built; only the map grows
	// while keys are added.
	heapFilled, _ := memStats(true)
	for _, j := range jobs {
		if j.impl.isMap {
			j.bytes += float64(heapFilled) - float64(heapBuilt)
		}
	}
	phase(np, func(j *job, lo, hi int) {
		_, m0 := memStats(false)
		t := now()
		j.hits += j.s.testRange(present, lo, hi)
		j.testPresent += now() - t
		_, m1 := memStats(false)
		j.mallocsTest += m1 - m0
	})
	phase(absent.len(), func(j *job, lo, hi int) {
		_, m0 := memStats(false)
		t := now()
		j.falsePos += j.s.testRange(absent, lo, hi)
		j.testAbsent += now() - t
		_, m1 := memStats(false)
		j.mallocsTest += m1 - m0
	})
	for _, j := range jobs {
		r := j.r
		r.add = append(r.add, float64(j.add.Nanoseconds())/float64(n))
		r.testPresent = append(r.testPresent, float64(j.testPresent.Nanoseconds())/float64(np))
		r.testAbsent = append(r.testAbsent, float64(j.testAbsent.Nanoseconds())/float64(absent.len()))
		r.bytes = append(r.bytes, j.bytes)
		r.allocsAdd = append(r.allocsAdd, float64(j.mallocsAdd)/float64(n))
		r.allocsTest = append(r.allocsTest, float64(j.mallocsTest)/float64(np+absent.len()))
		r.falseNeg += np - j.hits
		if absent.len() > r.absent {
			r.falsePos, r.absent = j.falsePos, absent.len()
		}
		*j = job{impl: j.impl, p: j.p, r: j.r} // drop the filter
	}
	runtime.GC()
}

// pairedRatio returns the median over repetitions of a[i]/b[i].
func pairedRatio(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return nan
	}
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = a[i] / b[i]
	}
	return median(rs)
}

func (res *fixedResults) print(w io.Writer) {
	fmt.Fprintf(w, "### Fixed-size filters\n\n")
	fmt.Fprintf(w, "Time per operation in ns (Add: building the filter of n keys; Test: as many present keys as absent keys, %s in the first repetition and at most %s in the others). "+
		"Bits per key and bytes are the live heap after the build (runtime.MemStats), so the map's include its copies of the keys. "+
		"FPR is measured on all %s absent keys; \"x target\" is FPR / p.\n\n", count(res.sample), count(min(res.sample, timingSample)), count(res.sample))
	for _, c := range res.configs {
		runs := res.runs[c]
		fmt.Fprintf(w, "#### n = %s, p = %g, %s keys\n\n", count(c.n), c.p, c.kind)
		fmt.Fprintln(w, "| implementation | Add | Test present | Test absent | bits/key | bytes | allocs/op Add | allocs/op Test | FPR | x target |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, impl := range fixedImpls {
			r := runs[impl.name]
			if r == nil {
				fmt.Fprintf(w, "| %s | not run at this size and rate (see p = %g) | | | | | | | | |\n", impl.name, errorRates[0])
				continue
			}
			bytes := median(r.bytes)
			fpr := float64(r.falsePos) / float64(r.absent)
			name := impl.name
			if len(r.add) < res.reps {
				name += fmt.Sprintf(" (%d of %d runs)", len(r.add), res.reps)
			}
			if r.falseNeg > 0 {
				name += fmt.Sprintf(" (**%d false negatives**)", r.falseNeg)
			}
			fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.2f | %s | %s | %s | %s | %s |\n", name,
				median(r.add), median(r.testPresent), median(r.testAbsent),
				8*bytes/float64(c.n), mib(bytes),
				allocs(median(r.allocsAdd)), allocs(median(r.allocsTest)),
				fprString(fpr), xTarget(fpr, c.p, impl.isMap))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "### Ratios (same run, median of per-repetition ratios; lower is better for ours)\n\n")
	fmt.Fprintln(w, "Targets: ours / lower bound <= 1.15; ours / bits-and-blooms <= 0.6 at n = 10^6 and <= 0.7 at n = 10^7. "+
		"The last two columns show how far the lower bound itself, which has our hash, is from bits-and-blooms.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| n | p | keys | ours/lower Add | ours/lower Test present | ours/lower Test absent | ours/bits-and-blooms Add | Test present | Test absent | ours/blobloom Add | Test present | Test absent | lower bound/bits-and-blooms Add | Test absent |")
	fmt.Fprintln(w, "|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range res.configs {
		runs := res.runs[c]
		o, lb, bab, blob := runs[nameOurs], runs[nameLower], runs[nameBAB], runs[nameBlobloom]
		babTarget := 0.6
		if c.n > 1_000_000 {
			babTarget = 0.7
		}
		add := func(r *fixedRun) []float64 { return r.add }
		tp := func(r *fixedRun) []float64 { return r.testPresent }
		ta := func(r *fixedRun) []float64 { return r.testAbsent }
		fmt.Fprintf(w, "| %s | %g | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", count(c.n), c.p, c.kind,
			verdict(o, lb, add, 1.15), verdict(o, lb, tp, 1.15), verdict(o, lb, ta, 1.15),
			verdict(o, bab, add, babTarget), verdict(o, bab, tp, babTarget), verdict(o, bab, ta, babTarget),
			verdict(o, blob, add, 0), verdict(o, blob, tp, 0), verdict(o, blob, ta, 0),
			verdict(lb, bab, add, 0), verdict(lb, bab, ta, 0))
	}
	fmt.Fprintln(w)
}

// verdict formats the median over repetitions of a's time / b's time,
// marked when it misses target (0: no target), or "-" if either did not run.
func verdict(a, b *fixedRun, times func(*fixedRun) []float64, target float64) string {
	if a == nil || b == nil {
		return "-"
	}
	r := pairedRatio(times(a), times(b))
	if target > 0 && r > target {
		return fmt.Sprintf("**%.3f** (miss)", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// count formats 1000000 as 10^6 and other numbers with thousands separators.
func count(n int) string {
	for e, p := 3, 1000; p <= n; e, p = e+1, p*10 {
		if p == n {
			return fmt.Sprintf("10^%d", e)
		}
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func mib(bytes float64) string {
	return fmt.Sprintf("%.1f MiB", bytes/(1<<20))
}

func allocs(a float64) string {
	if a < 0.005 {
		return "0"
	}
	return fmt.Sprintf("%.2f", a)
}

func fprString(f float64) string {
	if f == 0 {
		return "0"
	}
	return fmt.Sprintf("%.5f", f)
}

func xTarget(fpr, p float64, exact bool) string {
	if exact {
		return "exact"
	}
	return fmt.Sprintf("%.2f", fpr/p)
}
