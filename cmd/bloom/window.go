package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/bloomfilters/bloom"
)

// loadWindowFile returns the window filter in the file at path if it is a
// regular file that starts with a window's magic (a dedup -window state),
// and nil otherwise, for query and info: bloom.View reads only the other
// two kinds. A FIFO or other special file is left to openFilter unread.
func loadWindowFile(path string) (*bloom.WindowFilter, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil // openFilter reports it
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var head [4]byte
	n, _ := f.Read(head[:])
	f.Close()
	if n < 4 || string(head[:]) != magicWindow {
		return nil, nil
	}
	loaded, err := loadState(path)
	if err != nil {
		return nil, err
	}
	return loaded.(*bloom.WindowFilter), nil
}

// windowInfo is info for a window filter.
func windowInfo(e *env, path string, w *bloom.WindowFilter, asJSON bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	in := filterInfo{
		File: path, FileBytes: st.Size(), Kind: "window", Layout: layoutName(true),
		Bits: w.Bits(), Bytes: w.Bits() / 8, Hashes: ptrTo(w.Hashes()), Seed: w.Seed(),
		Capacity: w.Window(), ErrorRate: w.ErrorRate(), Count: w.Count(),
		EstimatedCount: ptrTo(w.EstimatedCount()), FillRatio: ptrTo(w.FillRatio()),
		EstimatedErrorRate: w.EstimatedErrorRate(), SubFilters: ptrTo(w.Generations()),
		FormatVersion: 3, Copied: true, BodyChecked: true,
	}
	if d := w.Duration(); d != 0 {
		in.WindowSeconds = ptrTo(d.Seconds())
		in.RetainedAfter = ptrTo(w.RetainedSince().UTC().Format(time.RFC3339Nano))
		in.Overflow = ptrTo(overflowName(w.Overflow()))
		if w.Overflow() == bloom.Grow {
			in.Extensions = ptrTo(w.Extensions())
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{name}, args...)...)
	}
	row("file", "%s (%s bytes)", path, thousands(uint64(in.FileBytes)))
	row("kind", "window filter (the recent past only)")
	row("generations", "%d", w.Generations())
	row("bits", "%s (%s bytes)", thousands(in.Bits), thousands(in.Bytes))
	row("hashes", "%d", w.Hashes())
	row("seed", "%#08x", in.Seed)
	if d := w.Duration(); d != 0 {
		row("window", "%v, sized for %s keys in it", d, thousands(w.Window()))
		row("keeps every key added after", "%s", w.RetainedSince().UTC().Format(time.RFC3339))
		if w.Overflow() == bloom.Grow {
			row("on overflow", "grow (%d extensions now)", w.Extensions())
		} else {
			row("on overflow", "%s", overflowName(w.Overflow()))
		}
	} else {
		row("window", "the last %s keys", thousands(w.Window()))
	}
	row("target error rate", "%.4g (at every moment)", in.ErrorRate)
	row("count", "%s keys (in the generations still in the window)", thousands(in.Count))
	row("estimated count", "%s keys", thousands(*in.EstimatedCount))
	row("fill ratio", "%.4f%%", 100**in.FillRatio)
	row("estimated error rate", "%.4g", in.EstimatedErrorRate)
	return tw.Flush()
}

// dedupWindow is a window filter as dedup keeps its lines in it:
// first-seen (TestAndAdd), or with -refresh last-seen (TestAndRefresh); the
// first time the window weakens a promise (an event: see
// bloom.WindowEvents), it says so in one line on stderr.
type dedupWindow struct {
	*bloom.WindowFilter
	refresh bool
	stderr  io.Writer
	told    bool
}

func (d *dedupWindow) TestAndAdd(key []byte) bool {
	var seen bool
	if d.refresh {
		seen = d.WindowFilter.TestAndRefresh(key)
	} else {
		seen = d.WindowFilter.TestAndAdd(key)
	}
	d.tell()
	return seen
}

func (d *dedupWindow) TestAndAddMany(keys [][]byte, results []bool) []bool {
	if d.refresh {
		results = d.WindowFilter.TestAndRefreshMany(keys, results)
	} else {
		results = d.WindowFilter.TestAndAddMany(keys, results)
	}
	d.tell()
	return results
}

// tell writes the line on stderr the first time the window has had an
// event in this run.
func (d *dedupWindow) tell() {
	if d.told {
		return
	}
	ev := d.Events()
	what := ""
	switch {
	case ev.RotatedEarly != 0:
		what = "more than -capacity new lines came within a generation's time, so the window forgets early"
	case ev.SaturatedPastLimit != 0:
		what = "the window reached its saturation limit (-overflow saturate), so it forgets early"
	case ev.GrowLimit != 0:
		what = "the window can grow no more (-overflow grow), so it forgets early"
	default:
		return
	}
	d.told = true
	fmt.Fprintf(d.stderr, "bloom dedup: warning: %s: it now remembers every line written since %s (the last %v), and at least the last %s lines of the last %v\n",
		what, d.RetainedSince().UTC().Format(time.RFC3339), time.Since(d.RetainedSince()).Round(time.Second), thousands(d.Window()), d.Duration().Round(time.Second))
}
