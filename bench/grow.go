package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"
)

// slowSample is how many keys the slow implementations (thousands of
// sub-filters, each hashed separately) are tested on.
var slowSample = 10_000

const (
	growInitial = 1000
	growP       = 0.01
)

// growPoint describes a scalable filter after some number of keys.
type growPoint struct {
	keys       int
	subFilters int
	bits       uint64
	falsePos   int
	absent     int
	err        error
}

type growRun struct {
	points                       []growPoint // from the first repetition
	timedKeys                    int
	add, testPresent, testAbsent []float64 // ns/op, one per repetition
	falseNeg                     int
}

type growResults struct {
	growTo int
	impls  []scalableImpl // scalableImpls, then the reference
	runs   map[string]*growRun
}

func checkpoints(growTo int) []int {
	var cps []int
	for cp := 10 * growInitial; cp <= growTo; cp *= 10 {
		cps = append(cps, cp)
	}
	return cps
}

// sample returns count keys spread evenly over the first n keys of ks, so
// that every sub-filter of a grown filter holds its share of them.
func (ks *keySet) sample(n, count int) *keySet {
	count = min(count, n)
	s := &keySet{off: make([]uint32, 1, count+1)}
	for i := range count {
		s.buf = append(s.buf, ks.key(int(uint64(i)*uint64(n)/uint64(count)))...)
		s.off = append(s.off, uint32(len(s.buf)))
	}
	return s
}

// runScalableAll grows every scalable implementation from growInitial keys
// to o.growTo keys at p = growP, o.reps times. The growth is cut into
// segments visited round robin across the implementations. The first
// repetition also records size and false-positive rate at every checkpoint,
// outside the timings, and grows the implementations whose timed runs stop
// early (maxTimed) on to o.growTo, untimed.
func runScalableAll(o options) *growResults {
	res := &growResults{growTo: o.growTo, runs: make(map[string]*growRun)}
	present := genKeys(randomKeys, o.growTo, 3)
	absent := genKeys(randomKeys, o.absent, 4)
	slowAbsent := absent.sample(absent.len(), slowSample)
	// The reference, one BloomFilter sized for the final count, is grown
	// and timed with the others, on the same keys.
	res.impls = append(slices.Clone(scalableImpls), scalableImpl{
		name:  nameSingleReference,
		build: func(_ uint64, p float64) growable { return newOursSingle(o.growTo, p) },
	})
	for _, impl := range res.impls {
		res.runs[impl.name] = &growRun{}
	}
	cps := checkpoints(o.growTo)
	// Segment ends: the checkpoints, with the last decade cut in ten.
	var ends []int
	for i, cp := range cps {
		if i == len(cps)-1 && i > 0 {
			for k := 2; k < 10; k++ {
				ends = append(ends, k*cps[i-1])
			}
		}
		ends = append(ends, cp)
	}
	type state struct {
		impl    scalableImpl
		r       *growRun
		g       growable
		timed   int
		added   int
		addTime time.Duration
		err     error
	}
	for rep := range o.reps {
		t0 := time.Now()
		var sts []*state
		for _, impl := range rotate(res.impls, rep) {
			timed := o.growTo
			if impl.maxTimed > 0 {
				timed = min(timed, impl.maxTimed)
			}
			r := res.runs[impl.name]
			r.timedKeys = timed
			sts = append(sts, &state{impl: impl, r: r, g: impl.build(growInitial, growP), timed: timed})
		}
		for si, end := range ends {
			for _, st := range rotate(sts, si) {
				if st.err != nil || st.added >= end || (end > st.timed && rep > 0) {
					continue
				}
				t := now()
				st.err = st.g.addRange(present, st.added, end)
				if end <= st.timed {
					st.addTime += now() - t
				}
				st.added = end
				if end == st.timed && st.err == nil {
					abs, nSample := absent, absent.len()
					if rep > 0 {
						abs = absent.sample(absent.len(), min(absent.len(), timingSample))
						nSample = abs.len()
					}
					if st.impl.slow {
						abs, nSample = slowAbsent, slowSample
					}
					ps := present.sample(end, nSample)
					t = now()
					hits := st.g.testAll(ps, ps.len())
					st.r.testPresent = append(st.r.testPresent, float64((now()-t).Nanoseconds())/float64(ps.len()))
					st.r.falseNeg += ps.len() - hits
					t = now()
					st.g.testAll(abs, abs.len())
					st.r.testAbsent = append(st.r.testAbsent, float64((now()-t).Nanoseconds())/float64(abs.len()))
					st.r.add = append(st.r.add, float64(st.addTime.Nanoseconds())/float64(end))
				}
				if rep == 0 && (slices.Contains(cps, end) || st.err != nil) {
					pt := growPoint{keys: end, err: st.err}
					if st.err == nil {
						abs := absent
						if st.impl.slow {
							abs = slowAbsent
						}
						pt.subFilters, pt.bits = st.g.subFilters(), st.g.bits()
						pt.falsePos, pt.absent = st.g.testAll(abs, abs.len()), abs.len()
					}
					st.r.points = append(st.r.points, pt)
				}
			}
		}
		sts = nil
		runtime.GC()
		progress("scalable rep %d/%d: %s", rep+1, o.reps, time.Since(t0).Round(time.Millisecond))
	}
	return res
}

// withinTarget reports whether a measured rate is consistent with being at
// most p: at most p plus three standard deviations of the measurement.
func withinTarget(falsePos, absent int, p float64) bool {
	return float64(falsePos) <= float64(absent)*p+3*math.Sqrt(float64(absent)*p*(1-p))
}

func (res *growResults) print(w io.Writer) {
	fmt.Fprintf(w, "### Scalable filters: growth from %s to %s keys at p = %g (16-byte random keys)\n\n",
		count(growInitial), count(res.growTo), growP)
	fmt.Fprintf(w, "FPR over the absent keys (%s for the BoomFilters rows, whose lookups cost up to 0.2 ms). "+
		"\"Within target\" allows three standard deviations of the measurement.\n\n", count(slowSample))
	fmt.Fprintln(w, "| implementation | keys | sub-filters | bits/key | FPR | x target | within target |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|")
	for _, impl := range scalableImpls {
		for _, pt := range res.runs[impl.name].points {
			if pt.err != nil {
				fmt.Fprintf(w, "| %s | %s | - | - | - | - | **failed**: %v |\n", impl.name, count(pt.keys), pt.err)
				continue
			}
			fpr := float64(pt.falsePos) / float64(pt.absent)
			ok := "yes"
			if !withinTarget(pt.falsePos, pt.absent, growP) {
				ok = "**no**"
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.1f | %s | %.2f | %s |\n", impl.name, count(pt.keys),
				pt.subFilters, float64(pt.bits)/float64(pt.keys), fprString(fpr), fpr/growP, ok)
		}
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "| implementation | within target at every checkpoint | worst FPR / target |")
	fmt.Fprintln(w, "|---|---|--:|")
	for _, impl := range scalableImpls {
		stays, worst := "yes", 0.0
		for _, pt := range res.runs[impl.name].points {
			if pt.err != nil {
				stays = "**no** (fails)"
				continue
			}
			worst = max(worst, float64(pt.falsePos)/float64(pt.absent)/growP)
			if !withinTarget(pt.falsePos, pt.absent, growP) && stays == "yes" {
				stays = "**no**"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %.2f |\n", impl.name, stays, worst)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "Time per operation in ns: Add amortised over the whole growth, Test on keys spread over all sub-filters.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| implementation | grown to | Add | Test present | Test absent |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	for _, impl := range res.impls {
		r := res.runs[impl.name]
		name := impl.name
		if r.falseNeg > 0 {
			name += fmt.Sprintf(" (**%d false negatives**)", r.falseNeg)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f |\n", name, count(r.timedKeys),
			median(r.add), median(r.testPresent), median(r.testAbsent))
	}
	fmt.Fprintln(w)

	single := res.runs[nameSingleReference]
	for _, name := range []string{nameOursScalable, nameOursScalable4} {
		r := res.runs[name]
		fmt.Fprintf(w, "%s against the reference, measured side by side (issue 3 targets for the default: "+
			"Test absent <= 3x, Add <= 1.5x): Test absent %.2fx, Test present %.2fx, Add %.2fx.\n\n", name,
			median(r.testAbsent)/median(single.testAbsent),
			median(r.testPresent)/median(single.testPresent),
			median(r.add)/median(single.add))
	}
}
