package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/bloomfilters/bloom"
)

// progress redraws one status line on a terminal and prints the summary line
// at the end, on a terminal or not. A nil *progress prints nothing (-q).
type progress struct {
	w        io.Writer
	terminal bool   // draw the status line as the work goes on
	verb     string // "read", for "12,345 lines read"
	start    time.Time
	last     time.Time
	drawn    bool // the status line is on the screen
}

// progressEvery is how many lines pass between looks at the clock.
const progressEvery = 1 << 16

// newProgress returns the progress of a command, nil if quiet.
func newProgress(e *env, verb string, quiet bool) *progress {
	if quiet {
		return nil
	}
	now := time.Now()
	return &progress{w: e.stderr, terminal: e.progress, verb: verb, start: now, last: now}
}

// update redraws the line on a terminal if a quarter of a second has
// passed; extra is appended to it.
func (p *progress) update(lines uint64, extra string) {
	if p == nil || !p.terminal {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 250*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(lines) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r%s lines %s%s, %s lines/s\x1b[K", thousands(lines), p.verb, extra, thousands(uint64(rate)))
	p.drawn = true
}

// finish prints summary as the last line, in place of the status line on a
// terminal; an empty summary only clears the status line, for an error
// message to follow.
func (p *progress) finish(summary string) {
	if p == nil {
		return
	}
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
	if summary != "" {
		fmt.Fprintln(p.w, summary)
	}
}

// thousands formats n with commas between groups of three digits.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// quantity formats n and noun, in the plural unless n is 1: "1 line",
// "12,345 lines".
func quantity(n uint64, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return thousands(n) + " " + noun
}

// distinctCount is how many distinct keys a filter holds, as far as it can
// tell: the estimate from its fill, which unlike Count does not stall once
// most bits are set, or, when every bit is set and the estimate is infinite,
// only a lower bound.
type distinctCount struct {
	n     uint64 // the estimate, or the lower bound if unknown
	known bool
}

// plainCount returns the distinct keys that f holds.
func plainCount(f *bloom.BloomFilter) distinctCount {
	return plainCountOf(f.EstimatedCount(), f.Count(), f.Bits(), f.Hashes())
}

// scalableCount returns the distinct keys that s holds.
func scalableCount(s *bloom.ScalableBloomFilter) distinctCount {
	return scalableCountOf(s.EstimatedCount(), s.Count())
}

// plainCountOf returns the distinct keys that a fixed-size filter holds, of
// the given size, count and EstimatedCount est. A filter with every bit set
// holds at least Bits/Hashes keys, since a key sets at most Hashes bits, and
// at least Count, which counts only keys that set a new bit.
func plainCountOf(est, count, bits uint64, hashes uint) distinctCount {
	if est != math.MaxUint64 {
		return distinctCount{max(est, count), true}
	}
	k := uint64(hashes)
	return distinctCount{max((bits+k-1)/k, count), false}
}

// scalableCountOf returns the distinct keys that a scalable filter holds, of
// EstimatedCount est and the given count, which for a scalable filter
// counts each key that tested absent when added.
func scalableCountOf(est, count uint64) distinctCount {
	if est != math.MaxUint64 {
		return distinctCount{max(est, count), true}
	}
	return distinctCount{count, false}
}

// describeCount formats c for a sentence, with noun: "about 1,234 distinct
// keys", or "an unknown number of distinct keys (every bit is set: at least
// 1,234)".
func describeCount(c distinctCount, noun string) string {
	if c.known {
		return "about " + quantity(c.n, "distinct "+noun)
	}
	return "an unknown number of distinct " + noun + "s (every bit is set: at least " + thousands(c.n) + ")"
}
