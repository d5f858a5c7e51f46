package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/bloomfilters/bloom"
)

const infoDoc = `Prints the parameters and the fill of a filter file written by build or
dedup -state: a fixed-size or a scalable Bloom filter.
`

func runInfo(e *env, args []string) error {
	flags := newFlagSet(e, "info", infoDoc)
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 1, 1); err != nil {
		return err
	}
	path := flags.Arg(0)
	loaded, err := loadFilter(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{name}, args...)...)
	}
	row("file", "%s (%s bytes)", path, thousands(uint64(st.Size())))
	switch f := loaded.(type) {
	case *bloom.BloomFilter:
		row("kind", "fixed-size Bloom filter")
		row("bits", "%s (%s bytes)", thousands(f.Bits()), thousands((f.Bits()+63)/64*8))
		row("hashes", "%d", f.Hashes())
		row("seed", "%#08x", f.Seed())
		row("capacity", "%s keys", thousands(f.Capacity()))
		row("target error rate", "%.4g (at capacity)", f.ErrorRate())
		row("count", "%s keys", thousands(f.Count()))
		row("estimated count", "%s keys", thousands(f.EstimatedCount()))
		row("fill ratio", "%.4f%%", 100*f.FillRatio())
		row("estimated error rate", "%.4g", f.EstimatedErrorRate())
		if f.IsFull() {
			row("note", "over capacity: false positives are more frequent than the target")
		}
	case *bloom.ScalableBloomFilter:
		row("kind", "scalable Bloom filter")
		row("sub-filters", "%d", f.NumFilters())
		row("bits", "%s (%s bytes)", thousands(f.Bits()), thousands(f.Bits()/8))
		row("seed", "%#08x", f.Seed())
		row("initial capacity", "%s keys", thousands(f.InitialCapacity()))
		row("capacity", "%s keys (the sub-filters so far; it grows past that)", thousands(f.Capacity()))
		row("target error rate", "%.4g (overall)", f.ErrorRate())
		row("count", "%s keys", thousands(f.Count()))
		// Shown if the library offers them for scalable filters.
		if g, ok := loaded.(interface{ EstimatedCount() uint64 }); ok {
			row("estimated count", "%s keys", thousands(g.EstimatedCount()))
		}
		if g, ok := loaded.(interface{ FillRatio() float64 }); ok {
			row("fill ratio", "%.4f%%", 100*g.FillRatio())
		}
		row("estimated error rate", "%.4g", f.EstimatedErrorRate())
		if f.Saturated() {
			row("note", "saturated: it can grow no more, and false positives rise above the target")
		}
	}
	return tw.Flush()
}
