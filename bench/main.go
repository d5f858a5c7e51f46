// Command bench compares github.com/bloomfilters/bloom with the Bloom filter
// libraries Go users would otherwise pick, the design it replaces, a
// hand-written lower bound and a map, and prints markdown tables.
//
// Run it from the repository root with
//
//	go run -C bench . -quick
//
// or from this directory with go run . [-quick]. The quick mode measures
// n = 10^6 and finishes in under a minute; the full run adds n = 10^7 and a
// scalable growth to 10^7 keys and takes under ten minutes on two cores.
//
// Larger filters, up to 2*10^8 keys, take -n; at 10^8 keys (-n 1e8 -keys
// random) the 16-byte keys take 2 GiB and each filter 120-210 MiB, and a
// repetition of blocked, blockedbatch, ours and blobloom takes minutes.
//
// Every number is a median over -reps repetitions. Within a repetition the
// implementations run one after the other (round robin, starting at a
// different one each time), so slow drifts of the machine hit all of them
// alike; ratios are medians of the per-repetition ratios.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	quick  bool
	reps   int
	absent int // absent keys per false-positive measurement
	sizes  []int
	kinds  []keyKind // keys of the fixed-size filters
	growTo int       // scalable growth: final number of keys
	floor  float64   // ns per random load, for the batch rows of printSingle
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "n = 10^6 only, growth to 10^6, 3 repetitions, 2*10^5 absent keys, 2000 for the slow scalable filters (under a minute)")
	flag.IntVar(&o.reps, "reps", 0, "repetitions; every figure is their median (default 5, quick 3)")
	flag.IntVar(&o.absent, "absent", 0, "absent keys tested for the false-positive rate (default 10^6, quick 2*10^5)")
	var shorts []string
	for _, f := range fixedImpls {
		shorts = append(shorts, f.short)
	}
	implList := flag.String("impls", "", "comma-separated fixed-size implementations to run (default all): "+strings.Join(shorts, ","))
	sizeList := flag.String("n", "", "comma-separated numbers of keys for the fixed-size filters (default 1e6,1e7; quick 1e6)")
	rateList := flag.String("p", "", "comma-separated error rates for the fixed-size filters (default 0.01,0.001)")
	keyList := flag.String("keys", "", "comma-separated kinds of keys for the fixed-size filters (default random,url; url only up to 5e7 keys, whose ~60 bytes each must fit 4 GiB)")
	scalable := flag.Bool("scalable", true, "measure the scalable filters")
	flag.Float64Var(&o.floor, "floor", 0, "ns per random load (go test -run X -bench RandomLoads ./internal/hugepage), to set the blocked batch calls against (0: no such table)")
	flag.Parse()
	if o.reps == 0 {
		o.reps = 5
		if o.quick {
			o.reps = 3
		}
	}
	if o.absent == 0 {
		o.absent = 1_000_000
		if o.quick {
			o.absent = 200_000
		}
	}
	if o.reps < 1 || o.absent < 1 {
		fmt.Fprintln(os.Stderr, "bench: -reps and -absent must be at least 1")
		os.Exit(2)
	}
	o.sizes, o.growTo = []int{1_000_000, 10_000_000}, 10_000_000
	if o.quick {
		o.sizes, o.growTo = []int{1_000_000}, 1_000_000
		slowSample = 2000
	}
	if err := selectRuns(&o, *implList, *sizeList, *rateList, *keyList); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	start := time.Now()
	fixed := runFixedAll(o)
	var grow *growResults
	if *scalable {
		grow = runScalableAll(o)
	}
	report(os.Stdout, o, fixed, grow, time.Since(start))
}

// selectRuns narrows the run to the implementations, sizes, error rates and
// kinds of keys given as comma-separated lists; empty lists keep the
// defaults.
func selectRuns(o *options, impls, sizes, rates, kinds string) error {
	o.kinds = []keyKind{randomKeys, urlKeys}
	if kinds != "" {
		o.kinds = nil
		for _, s := range strings.Split(kinds, ",") {
			switch strings.TrimSpace(s) {
			case "random":
				o.kinds = append(o.kinds, randomKeys)
			case "url":
				o.kinds = append(o.kinds, urlKeys)
			default:
				return fmt.Errorf("unknown kind of keys %q: want random or url", s)
			}
		}
	}
	if impls != "" {
		var keep []fixedImpl
		for _, name := range strings.Split(impls, ",") {
			i := slices.IndexFunc(fixedImpls, func(f fixedImpl) bool { return f.short == strings.TrimSpace(name) })
			if i < 0 {
				return fmt.Errorf("unknown implementation %q", name)
			}
			keep = append(keep, fixedImpls[i])
		}
		fixedImpls = keep
	}
	if sizes != "" {
		o.sizes = nil
		for _, s := range strings.Split(sizes, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || f < 1 || f > 2e8 {
				return fmt.Errorf("bad size %q: want a number of keys in [1, 2e8]", s)
			}
			o.sizes = append(o.sizes, int(f))
		}
	}
	if rates != "" {
		errorRates = nil
		for _, s := range strings.Split(rates, ",") {
			p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(p > 0 && p < 1) {
				return fmt.Errorf("bad error rate %q: want a number in (0, 1)", s)
			}
			errorRates = append(errorRates, p)
		}
	}
	return nil
}

// progress reports on stderr, so that stdout holds only the tables.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rotate returns xs rotated left by r, so that repetition r starts with a
// different implementation.
func rotate[T any](xs []T, r int) []T {
	r %= len(xs)
	return append(slices.Clone(xs[r:]), xs[:r]...)
}

// memStats returns the live heap in bytes and the number of allocations so
// far; with gc it collects garbage first so the live heap is exact.
func memStats(gc bool) (heap, mallocs uint64) {
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.Mallocs
}

// cpuModel returns the processor name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimLeft(name, " \t:"))
		}
	}
	return runtime.GOARCH
}

func report(w io.Writer, o options, fixed *fixedResults, grow *growResults, took time.Duration) {
	cmd := "go run -C bench ."
	if len(os.Args) > 1 {
		cmd += " " + strings.Join(os.Args[1:], " ")
	}
	fmt.Fprintf(w, "CPU: %s (%d logical CPUs, GOMAXPROCS %d), %s %s/%s.  \n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "Command: `%s` (from the repository root). Medians of %d interleaved repetitions; %s absent keys per false-positive rate; run took %s.\n\n",
		cmd, o.reps, count(o.absent), took.Round(time.Second))
	fmt.Fprintf(w, "Times are %s.\n\n", clockName)
	fixed.print(w)
	printBlocked(w, fixed, grow)
	printSingle(w, fixed, o.floor)
	if grow != nil {
		grow.print(w)
	}
	printBatch(w, fixed, grow)
}
