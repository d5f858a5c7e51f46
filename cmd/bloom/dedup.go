package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomfilters/bloom"
)

const dedupDoc = `Writes each line of stdin, or of the INPUT files read one after another
("-" being stdin), to stdout the first time it is seen. A line's
"\n" or "\r\n" ending is not part of it; a last line without a newline gets
one. The lines seen are remembered in a scalable Bloom filter, which grows
with the number of distinct lines (6 to 9 bytes each at the default rate)
but not with their length. -classic makes a new filter in the classic
layout, which takes two thirds of that memory (4 to 6 bytes a line) and
about twice the time: a line then costs 20 or more random memory reads
instead of one per sub-filter. A repeated line is never written twice; a new
line is wrongly dropped with a probability of at most -error-rate, so
expect at most N x P of N new lines to go missing.

With -state FILE the filter is read from FILE first (if it exists) and
written back at the end, atomically: FILE always holds a whole filter. Then
-capacity and -error-rate only matter for a new FILE. An interrupt (Ctrl-C)
stops reading at once and saves what was read, exiting with status 130. A
second one does not cut the save short, since the old state lacks the lines
already written (kill -9 does, leaving the old FILE whole). A run holds a
lock on FILE.lock, which stays beside FILE, from start to end: a second run
on FILE meanwhile fails at once, through any name of FILE (symbolic
links are followed, even to a FILE not yet made). FILE must be a regular
file or not exist.

A filter that reaches the library's limits (MaxBits, 2^40 bits in all)
saturates: it can grow no more, so it can no longer keep its error rate. dedup then stops after the line that saturated
it, saves the state and fails, and refuses a saturated state; start anew
with a higher -error-rate or a larger -capacity.

With -window N the filter remembers only the last N distinct lines written
(a window filter): a line is written again once N other new lines have come
after it (at the latest after about N x r/(r-1), r being the filter's
generations, 7 or 8 at usual rates), even if it kept coming back in
between, and the filter's size is fixed, about 17 bits per line of the
window at 1%. With -window DURATION (such as 24h, 90m or 7d, at most
36.5 years) it remembers the lines written within that time instead,
sized for -capacity lines in it: a crawler's frontier that fetches a page
again a week after it last fetched it. With -refresh a line that comes
back while remembered is remembered from then on (last-seen), so that a
line that keeps coming back more often than the window is written only
once: alerts that keep firing; each such refresh takes the room of a new
line in a -window N. If more lines come within the time than -capacity,
-overflow says what gives: "rotate" (the default) forgets early rather than
drop more new lines than -error-rate says, but always keeps the last
-capacity lines of the DURATION; "grow" keeps both, every line of the
DURATION and the error rate, and takes more memory while the burst is
in the window (about 5 times the window's for 10 times -capacity lines in
one generation's time, back to its size once they have aged out); and
"saturate" keeps the time and drops more new lines than -error-rate, up
to 10 times -error-rate (at most 0.5), past which it forgets early. The
first time a run forgets early (or the window can grow no more), one line
on stderr says so, even with -q. The state keeps the window's clock: the
times of its generations, so a later run goes on where the last one
stopped, forgetting what has aged out in between; and its -overflow,
which later runs keep (-refresh is for each run to give).

At the end a summary line goes to stderr (lines read and written, distinct
lines in the filter, its size), unless -q.
`

// Defaults for dedup. A dropped line is lost data, so the default error rate
// is low; the scalable filter grows past -capacity, so it is only the size of
// the first step.
const (
	dedupCapacity  = 1 << 20
	dedupErrorRate = 1e-6
)

func runDedup(e *env, args []string) error {
	flags := newFlagSet(e, "dedup", dedupDoc)
	capacity := countFlag(flags, "capacity", dedupCapacity, "`N` distinct lines fill the filter before it first grows (1e6 notation works)")
	errorRate := flags.Float64("error-rate", dedupErrorRate, "highest probability of dropping a new line, in (0, 1)")
	state := flags.String("state", "", "load the filter from `FILE` if it exists, save it there at the end")
	windowFlag := flags.String("window", "", "remember only the last `N` new lines, or those of the last DURATION (24h, 7d), in a window filter")
	refresh := flags.Bool("refresh", false, "with a window, last-seen: a line that comes back while remembered is remembered from then on, so it is written again only once it has been away for the window")
	overflowFlag := flags.String("overflow", "", "with -window DURATION, what more than -capacity lines in the window do: `POLICY` rotate (forget early; the default), grow (take more memory) or saturate (drop more new lines)")
	classic := flags.Bool("classic", false, "make a new filter in the classic layout: two thirds of the memory, twice the time")
	quiet := flags.Bool("q", false, "print no progress and no summary on stderr, only warnings and errors")
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkSizing(*capacity, *errorRate); err != nil {
		return err
	}
	win, err := parseWindow(*windowFlag)
	if err != nil {
		return fmt.Errorf("-window: %w", err)
	}
	if *classic && win != (windowSpec{}) {
		return errors.New("-classic does not apply to -window: a window filter is blocked")
	}
	if *overflowFlag != "" {
		if win.every == 0 {
			return errors.New("-overflow needs -window DURATION (a time window)")
		}
		if win.overflow, err = parseOverflow(*overflowFlag); err != nil {
			return fmt.Errorf("-overflow: %w", err)
		}
		win.overflowSet = true
	}
	// Stdin alone is read as the INPUT "-", so that the same bytes make the
	// same lines whichever way they arrive.
	names, inName := flags.Args(), "input"
	if len(names) == 0 {
		names, inName = []string{"-"}, "stdin"
	}
	files, err := openInputFiles(names, e.stdin)
	if err != nil {
		return err
	}
	defer files.Close()
	var in io.Reader = files
	statePath := "" // *state resolved
	if *state != "" {
		// Every name of the state, through symbolic links (dangling ones
		// too), shares one lock; the state is read and saved by the
		// resolved name, so a link stays a link.
		path := resolvePath(*state)
		if err := checkRegular(*state, path); err != nil {
			return err
		}
		unlock, err := lockState(path)
		if err != nil {
			return err
		}
		defer unlock()
		removeTemps(path)
		statePath = path
	}
	f, err := dedupFilter(statePath, *capacity, *errorRate, *classic, win)
	if err != nil {
		return err
	}
	if w, ok := f.(*bloom.WindowFilter); ok {
		f = &dedupWindow{WindowFilter: w, refresh: *refresh, stderr: e.stderr}
	} else if *refresh {
		return errors.New("-refresh needs a window: -window, or a -state that holds one")
	}
	if s, ok := f.(*bloom.ScalableBloomFilter); ok && s.Saturated() {
		// Every new line would raise the rate further: refuse them all.
		return fmt.Errorf("%s: %s; no line read; %s", *state, saturatedWhy(s), saturatedWhatToDo(true))
	}
	if *state != "" {
		if err := checkWritable(statePath); err != nil {
			return err
		}
	}

	var stop atomic.Bool
	if e.signals {
		stopped := make(chan struct{})
		done := handleInterrupts(e, &stop, stopped, *state)
		defer done()
		// An interrupt stops a read waiting for input at once.
		in = newStopReader(in, stopped)
	}
	p := newProgress(e, "read", *quiet)
	n, err := dedup(in, e.stdout, f, &stop, p)
	if err != nil {
		p.finish("")
		return err // the old state stays as it was
	}
	if *state != "" {
		if err := writeFileAtomic(statePath, func(w io.Writer) error {
			_, err := f.WriteTo(w)
			return err
		}); err != nil {
			p.finish("")
			return fmt.Errorf("saving state: %w (%s unchanged)", err, *state)
		}
	}
	if n.saturated {
		p.finish("")
		saved := ""
		if *state != "" {
			saved = "; state saved in " + *state
		}
		return fmt.Errorf("%s; stopped reading %s after %s lines%s; %s",
			saturatedWhy(f.(*bloom.ScalableBloomFilter)), inName, thousands(n.read), saved, saturatedWhatToDo(*state != ""))
	}
	summary := "bloom dedup: "
	if stop.Load() {
		summary += "interrupted: "
	}
	summary += fmt.Sprintf("%s read, %s written; the filter holds %s in %s",
		quantity(n.read, "line"), thousands(n.written), describeCount(dedupCount(f), "line"), byteSize(f.Bits()/8))
	if *state != "" {
		summary += "; state saved in " + *state
	}
	p.finish(summary)
	if stop.Load() {
		return errInterrupted
	}
	return nil
}

// saturatedWhy says that f is saturated and what that means.
func saturatedWhy(f *bloom.ScalableBloomFilter) string {
	return fmt.Sprintf("the filter is saturated: it cannot grow any more, so it can no longer keep its error rate %g, and new lines would be dropped more and more often", f.ErrorRate())
}

// saturatedWhatToDo says the way out of a saturated filter: a higher rate, or
// a larger first sub-filter and so fewer, less tightened sub-filters, take
// fewer bits and hash functions for the same lines.
func saturatedWhatToDo(state bool) string {
	if state {
		return "start a new -state with a higher -error-rate or a larger -capacity"
	}
	return "run again with a higher -error-rate or a larger -capacity"
}

// dedupSet is the filter dedup keeps its lines in: a
// *bloom.ScalableBloomFilter, or with -window a *bloom.WindowFilter.
type dedupSet interface {
	TestAndAdd(key []byte) bool
	TestAndAddMany(keys [][]byte, results []bool) []bool
	Count() uint64
	Capacity() uint64
	Bits() uint64
	WriteTo(w io.Writer) (int64, error)
}

// windowSpec is -window: none, a count of lines, or a duration, and
// -overflow for a duration.
type windowSpec struct {
	lines       uint64
	every       time.Duration
	overflow    bloom.Overflow
	overflowSet bool
}

// overflowNames are the values of -overflow.
var overflowNames = map[string]bloom.Overflow{"rotate": bloom.RotateEarly, "saturate": bloom.Saturate, "grow": bloom.Grow}

// parseOverflow parses -overflow.
func parseOverflow(s string) (bloom.Overflow, error) {
	p, ok := overflowNames[s]
	if !ok {
		return 0, fmt.Errorf("want rotate, grow or saturate, got %q", s)
	}
	return p, nil
}

// overflowName is the -overflow value of p.
func overflowName(p bloom.Overflow) string {
	for name, q := range overflowNames {
		if q == p {
			return name
		}
	}
	return p.String()
}

// parseWindow parses -window: a count (1e6 notation works) or a duration
// of time.ParseDuration, or whole days such as "7d".
func parseWindow(s string) (windowSpec, error) {
	if s == "" {
		return windowSpec{}, nil
	}
	var n countValue
	if err := n.Set(s); err == nil {
		if n == 0 {
			return windowSpec{}, errors.New("a window of 0 lines")
		}
		return windowSpec{lines: uint64(n)}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseUint(days, 10, 16); err == nil && n > 0 {
			return windowEvery(time.Duration(n) * 24 * time.Hour)
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return windowSpec{}, fmt.Errorf("want a count of lines (such as 1000000 or 1e6) or a positive duration (such as 24h or 7d), got %q", s)
	}
	return windowEvery(d)
}

// windowEvery is the windowSpec of a duration, at most bloom.MaxEvery.
func windowEvery(d time.Duration) (windowSpec, error) {
	if d > bloom.MaxEvery {
		return windowSpec{}, fmt.Errorf("a duration of at most %v (36.5 years), got %v", bloom.MaxEvery, d)
	}
	return windowSpec{every: d}, nil
}

// dedupFilter loads the filter from state, or makes a new one if state is
// empty or does not exist: a scalable filter, blocked unless classic, or
// with win a window filter.
// A state of the other kind than the flags ask for is an error; a window
// state is taken with its own window, whatever -window says.
func dedupFilter(state string, capacity uint64, errorRate float64, classic bool, win windowSpec) (dedupSet, error) {
	if state != "" {
		loaded, err := loadState(state)
		if err == nil {
			switch f := loaded.(type) {
			case *bloom.ScalableBloomFilter:
				if win != (windowSpec{}) {
					return nil, fmt.Errorf("%s: a scalable filter, not a window: drop -window to go on with it, or start a new -state", state)
				}
				return f, nil
			case *bloom.WindowFilter:
				if win.overflowSet && (f.Duration() == 0 || f.Overflow() != win.overflow) {
					return nil, fmt.Errorf("%s: a window with -overflow %s, not %s: drop -overflow to go on with it, or start a new -state", state, overflowName(f.Overflow()), overflowName(win.overflow))
				}
				return f, nil
			}
			return nil, fmt.Errorf("%s: a fixed-size filter, not a dedup state (a scalable or window filter)", state)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if win != (windowSpec{}) {
		keys, opts, sizing := win.lines, []bloom.Option(nil), fmt.Sprintf("-window %d at -error-rate %g", win.lines, errorRate)
		if win.every != 0 {
			keys, opts = capacity, []bloom.Option{bloom.Every(win.every), bloom.OnOverflow(win.overflow)}
			sizing = fmt.Sprintf("-window %v with -capacity %d at -error-rate %g", win.every, capacity, errorRate)
		}
		// About 17 bits per key at 1%, 25 at 0.1%: the sizing of a
		// fixed filter at a tenth of the rate, with a margin.
		if bits, err := defaultBits(keys, errorRate/10); err == nil {
			if err := checkMemory(sizing, bits*6/5); err != nil {
				return nil, err
			}
		}
		f, err := bloom.NewWindow(keys, errorRate, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sizing, err)
		}
		return f, nil
	}
	sizing := fmt.Sprintf("-capacity %d at -error-rate %g", capacity, errorRate)
	// The blocked layout, whatever the rate: at the default rate it takes
	// about half the time of the classic one, at 1.5 times its memory
	// (bench/RESULTS.md, "bloom dedup at batch speed"). Where the growth
	// cannot build a blocked chain (a rate too low for the tightening) or
	// it would be too large, the classic one.
	layouts := []struct {
		opt  bloom.Option
		size func(uint64, float64) (uint64, uint, error)
	}{{bloom.Blocked(), bloom.BlockedSize}, {bloom.Classic(), bloom.Size}}
	if classic {
		layouts = layouts[1:]
	}
	var err error
	for _, l := range layouts {
		// The first sub-filter, at error rate P(1-r), is allocated at once.
		if bits, _, err := l.size(capacity, errorRate*(1-bloom.DefaultTightening)); err == nil {
			if err := checkMemory(sizing, bits); err != nil {
				return nil, err
			}
		}
		var f *bloom.ScalableBloomFilter
		if f, err = bloom.NewScalable(capacity, errorRate, l.opt); err == nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", sizing, err)
}

// dedupCount is the distinct lines f holds, for the summary.
func dedupCount(f dedupSet) distinctCount {
	if s, ok := f.(*bloom.ScalableBloomFilter); ok {
		return scalableCount(s)
	}
	w := f.(*dedupWindow)
	return distinctCount{min(w.EstimatedCount(), w.Window()), true}
}

// errInterrupted makes run exit with status 130 after an interrupt.
var errInterrupted = errors.New("interrupted")

// handleInterrupts sets stop and closes stopped at the first SIGINT or
// SIGTERM, which makes dedup stop reading at once, keep the lines it has
// read and save the state. Later interrupts do not cut the save short: an
// abandoned save would leave the old state, which lacks the lines this run
// has already written, and the next run would write them again. They only
// say so (once); kill -9 still quits at once, leaving the old state whole.
// Without a state, a second interrupt quits at once. The returned func stops
// the handler.
func handleInterrupts(e *env, stop *atomic.Bool, stopped chan struct{}, state string) (done func()) {
	c := make(chan os.Signal, 2)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case <-c:
		case <-quit:
			return
		}
		stop.Store(true)
		close(stopped)
		if state == "" {
			fmt.Fprintln(e.stderr, "bloom dedup: interrupted (interrupt again to quit at once)")
		} else {
			fmt.Fprintf(e.stderr, "bloom dedup: interrupted: saving the lines read in %s\n", state)
		}
		select {
		case <-c:
		case <-quit:
			return
		}
		if state == "" {
			os.Exit(exitInterrupted)
		}
		fmt.Fprintf(e.stderr, "bloom dedup: still saving %s; it keeps its old contents until the new ones are complete (kill -9 abandons the save)\n", state)
		for {
			select {
			case <-c:
			case <-quit:
				return
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(quit)
	}
}

type dedupCounts struct {
	read, written uint64
	// saturated says that the filter saturated, which stopped the run.
	saturated bool
}

// dedup copies to w each line of r whose key f does not hold, adding the keys
// to f, until the input ends, stop is set or f saturates. It is a pipeline of
// three goroutines: a batchReader reads the lines in batches, dedup tests and
// adds each batch with TestAndAddMany calls, which answer as the loop of
// TestAndAdd would, a repeat within a batch included, and a writer writes
// the new lines of each batch. On a scalable filter a batch call takes only
// as many lines as the newest sub-filter has room for, so that the filter
// cannot grow (or saturate) within it; the line that fills it goes alone,
// through TestAndAdd: once saturated, f cannot keep its error rate, so the
// line whose key saturated it, tested before its key went in, is the last
// one read. The writer buffers the output and flushes it whenever the next
// batch is not ready for it, so that a slow stream flows line by line, and
// at the end.
func dedup(r io.Reader, w io.Writer, f dedupSet, stop *atomic.Bool, p *progress) (n dedupCounts, err error) {
	// A window filter never saturates (under Grow it grows within a batch
	// as it would line by line): every batch goes in one call.
	scalable, _ := f.(*bloom.ScalableBloomFilter)
	br := readBatches(r)
	defer br.close()
	out := startWriter(w, br)
	for !stop.Load() && !n.saturated && out.failed.Load() == nil {
		lb := br.next()
		keys, done := lb.keys, 0
		for done < len(keys) && !n.saturated {
			// Each key adds at most one to Count, and the filter grows only
			// when a key finds the newest sub-filter full: with more room
			// than keys a batch cannot make it grow. TestDedupSaturates
			// guards the line-by-line path.
			batch := len(keys) - done
			if scalable != nil {
				batch = 0
				if capacity, count := f.Capacity(), f.Count(); capacity > count+1 {
					batch = int(min(capacity-count-1, uint64(len(keys)-done)))
				}
			}
			if batch > 0 {
				f.TestAndAddMany(keys[done:done+batch], lb.present[done:done+batch])
			} else {
				batch, lb.present[done] = 1, f.TestAndAdd(keys[done])
			}
			for _, seen := range lb.present[done : done+batch] {
				if !seen {
					n.written++
				}
			}
			before := n.read
			n.read += uint64(batch)
			done += batch
			if n.read/progressEvery != before/progressEvery && p != nil {
				p.update(n.read, fmt.Sprintf(", %s written", thousands(n.written)))
			}
			if scalable != nil && scalable.Saturated() {
				n.saturated = true
			}
		}
		lb.keys = keys[:done] // the lines read
		end := lb.err
		out.batches <- lb
		if end == io.EOF || errors.Is(end, errStopped) {
			break
		}
		if end != nil {
			err = fmt.Errorf("reading input: %w", end)
			break
		}
	}
	if werr := out.close(); werr != nil {
		return n, fmt.Errorf("writing stdout: %w", werr)
	}
	return n, err
}

// batchWriter writes the lines of batches that dedup has decided on, the
// new ones, in a goroutine of its own, and gives the batches back to their
// reader.
type batchWriter struct {
	batches chan *lineBatch
	failed  atomic.Pointer[error] // the first write error
	done    chan struct{}
}

// startWriter starts writing the new lines of the batches sent to it to w:
// the lines whose lb.present is false.
func startWriter(w io.Writer, br *batchReader) *batchWriter {
	out := &batchWriter{batches: make(chan *lineBatch, batchesInFlight), done: make(chan struct{})}
	go func() {
		defer close(out.done)
		bw := bufio.NewWriterSize(w, ioBufferSize)
		var err error
		for lb := range out.batches {
			for i, k := range lb.keys {
				if err == nil && !lb.present[i] {
					err = writeLine(bw, lineOf(k))
				}
			}
			br.recycle(lb)
			if err == nil && len(out.batches) == 0 {
				// The next batch may wait for more input: pass on what
				// is decided so far.
				err = bw.Flush()
			}
			if err != nil && out.failed.Load() == nil {
				out.failed.Store(&err)
			}
		}
		if err == nil {
			if err = bw.Flush(); err != nil {
				out.failed.Store(&err)
			}
		}
	}()
	return out
}

// close waits until every batch sent is written and flushed and returns the
// first write error.
func (out *batchWriter) close() error {
	close(out.batches)
	<-out.done
	if err := out.failed.Load(); err != nil {
		return *err
	}
	return nil
}
