package main

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// progress redraws one status line on a terminal. A nil *progress draws
// nothing, so that pipes and files never see it.
type progress struct {
	w     io.Writer
	verb  string // "read", for "12,345 lines read"
	start time.Time
	last  time.Time
}

// progressEvery is how many lines pass between looks at the clock.
const progressEvery = 1 << 16

func newProgress(e *env, verb string) *progress {
	if !e.progress {
		return nil
	}
	now := time.Now()
	return &progress{w: e.stderr, verb: verb, start: now, last: now}
}

// update redraws the line if a quarter of a second has passed; extra is
// appended to it.
func (p *progress) update(lines uint64, extra string) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 250*time.Millisecond {
		return
	}
	p.last = now
	p.draw(lines, extra, now)
}

func (p *progress) draw(lines uint64, extra string, now time.Time) {
	rate := float64(lines) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r%s lines %s%s, %s lines/s\x1b[K", thousands(lines), p.verb, extra, thousands(uint64(rate)))
}

// done draws the final figures and ends the line.
func (p *progress) done(lines uint64, extra string) {
	if p == nil {
		return
	}
	p.draw(lines, extra, time.Now())
	fmt.Fprintln(p.w)
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
