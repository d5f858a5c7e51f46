package main

import (
	"encoding/json"
	"fmt"
	"math"
	"text/tabwriter"

	"github.com/bloomfilters/bloom"
)

const infoDoc = `Prints the parameters and the fill of a filter file written by build or
dedup -state: a fixed-size or a scalable Bloom filter.

With -json it prints one JSON object instead, with these fields (null where
one does not apply to the kind of filter or is unknown):
  file, file_bytes      the file's name and size
  kind                  "fixed", "scalable" or "window" (a dedup -window
                        state, decoded rather than read where it lies:
                        the fields below that a window has)
  layout                "classic" or "blocked" (every key's bits in one
                        512-bit block; scalable: of every sub-filter)
  bits, bytes           the size of the bit arrays in memory
  hashes                bit positions per key (fixed only)
  seed                  the hash seed
  capacity              keys the filter is sized for (scalable: so far)
  initial_capacity      keys of the first sub-filter (scalable only)
  error_rate            the target false-positive rate
  count                 keys added that tested absent
  estimated_count       distinct keys it most likely holds (null when
                        every bit is set, and then saturated is true)
  fill_ratio            the fraction of bits set
  estimated_error_rate  the false-positive rate estimated from the fill
  sub_filters           the number of sub-filters (scalable only)
  saturated             scalable: it can grow no more; fixed: every bit
                        is set, so every key tests present
  format_version        the version of the file's format, 1 to 3
  copied                whether the bits were copied into memory rather
                        than read where they lie in the file: on a
                        big-endian machine, or for sub-filters that lie
                        misaligned in a scalable file of version 1 or 2
  checksums_checked     whether the checksums of the bits were checked
                        (false with -skip-check)

info reads FILE where it lies, mapped into memory read-only, without
copying it; it checks the file as query does (see bloom query -h), then
reads every bit once to count the bits set. -skip-check skips the checksums.
`

// filterInfo is what info prints, in text or as JSON.
type filterInfo struct {
	File               string   `json:"file"`
	FileBytes          int64    `json:"file_bytes"`
	Kind               string   `json:"kind"`
	Layout             string   `json:"layout"`
	Bits               uint64   `json:"bits"`
	Bytes              uint64   `json:"bytes"`
	Hashes             *uint    `json:"hashes"`
	Seed               uint32   `json:"seed"`
	Capacity           uint64   `json:"capacity"`
	InitialCapacity    *uint64  `json:"initial_capacity"`
	ErrorRate          float64  `json:"error_rate"`
	Count              uint64   `json:"count"`
	EstimatedCount     *uint64  `json:"estimated_count"`
	FillRatio          *float64 `json:"fill_ratio"`
	EstimatedErrorRate float64  `json:"estimated_error_rate"`
	SubFilters         *int     `json:"sub_filters"`
	Saturated          bool     `json:"saturated"`
	FormatVersion      int      `json:"format_version"`
	Copied             bool     `json:"copied"`
	BodyChecked        bool     `json:"checksums_checked"`

	// Windows only.
	WindowSeconds *float64 `json:"window_seconds,omitempty"` // a time window's duration
	RetainedAfter *string  `json:"retained_after,omitempty"` // RFC 3339: every key added after it is kept
	Overflow      *string  `json:"overflow,omitempty"`       // a time window's policy: rotate, grow or saturate
	Extensions    *int     `json:"extensions,omitempty"`     // under grow: extensions now

	countLowerBound uint64 // when EstimatedCount is unknown
	full            bool   // a fixed-size filter over capacity
}

func ptrTo[T any](v T) *T { return &v }

// layoutName names the layout of a filter for info.
func layoutName(blocked bool) string {
	if blocked {
		return "blocked"
	}
	return "classic"
}

// describe gathers the info of f, read from path.
func describe(path string, size int64, f *filterFile) filterInfo {
	in := filterInfo{File: path, FileBytes: size, FormatVersion: f.Version(), Copied: f.Copied(), BodyChecked: f.checked}
	in.Layout = layoutName(f.Layout() == bloom.LayoutBlocked)
	in.Bits, in.Seed = f.Bits(), f.Seed()
	in.Capacity, in.ErrorRate, in.Count = f.Capacity(), f.ErrorRate(), f.Count()
	estimated := f.EstimatedCount()
	in.FillRatio = ptrTo(f.FillRatio())
	in.EstimatedErrorRate = f.EstimatedErrorRate()
	var count distinctCount
	if !f.Scalable() {
		in.Kind = "fixed"
		in.Bytes = (in.Bits + 63) / 64 * 8
		in.Hashes = ptrTo(f.Hashes())
		count = plainCountOf(estimated, f.Count(), f.Bits(), f.Hashes())
		in.Saturated = !count.known
		in.full = f.Count() >= f.Capacity()
	} else {
		in.Kind = "scalable"
		in.Bytes = (in.Bits + 7) / 8
		in.InitialCapacity = ptrTo(f.InitialCapacity())
		in.SubFilters = ptrTo(f.NumFilters())
		in.Saturated = f.Saturated()
		count = scalableCountOf(estimated, f.Count())
	}
	if count.known {
		in.EstimatedCount = ptrTo(count.n)
	} else {
		in.countLowerBound = count.n
	}
	if math.IsNaN(in.EstimatedErrorRate) {
		in.EstimatedErrorRate = 1 // JSON has no NaN; a filter that cannot tell says every key may be present
	}
	return in
}

// describeGuarded is describe, which reads every bit of f, with a fault
// of those reads (the file truncated under the view) turned into an error.
func describeGuarded(path string, f *filterFile) (in filterInfo, err error) {
	err = guardFaults(path, func() error {
		in = describe(path, f.size, f)
		return nil
	})
	return in, err
}

func runInfo(e *env, args []string) error {
	flags := newFlagSet(e, "info", infoDoc)
	asJSON := flags.Bool("json", false, "print one JSON object")
	skipCheck := flags.Bool("skip-check", false, skipCheckDoc)
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 1, 1); err != nil {
		return err
	}
	path := flags.Arg(0)
	if win, err := loadWindowFile(path); err != nil {
		return err
	} else if win != nil {
		return windowInfo(e, path, win, *asJSON)
	}
	f, err := openFilter(path, *skipCheck)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := describeGuarded(path, f)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}

	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{name}, args...)...)
	}
	row("file", "%s (%s bytes)", path, thousands(uint64(in.FileBytes)))
	version := "version %d"
	if in.FormatVersion < 3 {
		version += " (an older release's; build and dedup -state write version 3)"
	}
	row("format", version, in.FormatVersion)
	switch {
	case in.Copied:
		row("view", "copied the bits into memory (misaligned in the file, or a big-endian machine)")
	case !in.BodyChecked:
		row("view", "checksums of the bits not checked (-skip-check)")
	}
	estimated := func() {
		if in.EstimatedCount != nil {
			row("estimated count", "%s keys", thousands(*in.EstimatedCount))
		} else {
			row("estimated count", "unknown: every bit is set, so at least %s keys", thousands(in.countLowerBound))
		}
	}
	switch in.Kind {
	case "fixed":
		row("kind", "fixed-size Bloom filter")
		row("layout", "%s", in.Layout)
		row("bits", "%s (%s bytes)", thousands(in.Bits), thousands(in.Bytes))
		row("hashes", "%d", *in.Hashes)
		row("seed", "%#08x", in.Seed)
		row("capacity", "%s keys", thousands(in.Capacity))
		row("target error rate", "%.4g (at capacity)", in.ErrorRate)
		row("count", "%s keys", thousands(in.Count))
		estimated()
		row("fill ratio", "%.4f%%", 100**in.FillRatio)
		row("estimated error rate", "%.4g", in.EstimatedErrorRate)
		switch {
		case in.Saturated:
			row("note", "saturated: every bit is set, so every key tests present")
		case in.full:
			row("note", "over capacity: false positives are more frequent than the target")
		}
	case "scalable":
		row("kind", "scalable Bloom filter")
		row("layout", "%s", in.Layout)
		row("sub-filters", "%d", *in.SubFilters)
		row("bits", "%s (%s bytes)", thousands(in.Bits), thousands(in.Bytes))
		row("seed", "%#08x", in.Seed)
		row("initial capacity", "%s keys", thousands(*in.InitialCapacity))
		row("capacity", "%s keys (the sub-filters so far; it grows past that)", thousands(in.Capacity))
		row("target error rate", "%.4g (overall)", in.ErrorRate)
		row("count", "%s keys", thousands(in.Count))
		estimated()
		if in.FillRatio != nil {
			row("fill ratio", "%.4f%%", 100**in.FillRatio)
		}
		row("estimated error rate", "%.4g", in.EstimatedErrorRate)
		if in.Saturated {
			row("note", "saturated: it can grow no more, and false positives rise above the target")
		}
	}
	return tw.Flush()
}
