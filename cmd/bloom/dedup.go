package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/bloomfilters/bloom"
)

const dedupDoc = `Writes each line of stdin to stdout the first time it is seen. A line's
"\n" or "\r\n" ending is not part of it; a last line without a newline gets
one. The lines seen are remembered in a scalable Bloom filter, which grows
with the number of distinct lines (4 to 8 bytes each at the default rate)
but not with their length. A repeated line is never written twice; a new
line is wrongly dropped with a probability of at most -error-rate, so
expect at most N x P of N new lines to go missing.

With -state FILE the filter is read from FILE first (if it exists) and
written back at the end, atomically: FILE always holds a whole filter. Then
-capacity and -error-rate only matter for a new FILE. An interrupt (Ctrl-C)
stops at the next line and saves, exiting with status 130; a second one
quits without saving.
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
	capacity := flags.Uint64("capacity", dedupCapacity, "distinct lines the filter holds before it first grows")
	errorRate := flags.Float64("error-rate", dedupErrorRate, "highest probability of dropping a new line, in (0, 1)")
	state := flags.String("state", "", "load the filter from `FILE` if it exists, save it there at the end")
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 0, 0); err != nil {
		return err
	}
	if err := checkSizing(*capacity, *errorRate); err != nil {
		return err
	}
	f, err := dedupFilter(*state, *capacity, *errorRate)
	if err != nil {
		return err
	}
	if *state != "" {
		if err := checkWritable(*state); err != nil {
			return err
		}
	}

	var stop atomic.Bool
	if e.signals {
		done := handleInterrupts(e, &stop)
		defer done()
	}
	p := newProgress(e, "read")
	n, err := dedup(e.stdin, e.stdout, f, &stop, p)
	p.done(n.read, fmt.Sprintf(", %s written", thousands(n.written)))
	if err != nil {
		return err // the old state stays as it was
	}
	if *state != "" {
		if err := writeFileAtomic(*state, func(w io.Writer) error {
			_, err := f.WriteTo(w)
			return err
		}); err != nil {
			return fmt.Errorf("saving state: %w (%s unchanged)", err, *state)
		}
	}
	if stop.Load() {
		return errInterrupted
	}
	return nil
}

// dedupFilter loads the filter from state, or makes a new one if state is
// empty or does not exist.
func dedupFilter(state string, capacity uint64, errorRate float64) (*bloom.ScalableBloomFilter, error) {
	if state != "" {
		loaded, err := loadFilter(state)
		if err == nil {
			f, ok := loaded.(*bloom.ScalableBloomFilter)
			if !ok {
				return nil, fmt.Errorf("%s: a fixed-size filter, not a dedup state (a scalable filter)", state)
			}
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	f, err := bloom.NewScalable(capacity, errorRate)
	if err != nil {
		return nil, fmt.Errorf("-capacity %d at -error-rate %g: %w", capacity, errorRate, err)
	}
	return f, nil
}

// errInterrupted makes run exit with status 130 after an interrupt.
var errInterrupted = errors.New("interrupted")

// handleInterrupts sets stop at the first SIGINT or SIGTERM and exits at the
// second, removing a half-written state file. The returned func stops it.
func handleInterrupts(e *env, stop *atomic.Bool) (done func()) {
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
		fmt.Fprintln(e.stderr, "bloom dedup: interrupted: stopping at the next line to save (interrupt again to quit without saving)")
		select {
		case <-c:
		case <-quit:
			return
		}
		removeTemp()
		os.Exit(exitInterrupted)
	}()
	return func() {
		signal.Stop(c)
		close(quit)
	}
}

type dedupCounts struct {
	read, written uint64
}

// dedup copies to w each line of r whose key f does not hold, adding the keys
// to f, until the input ends or stop is set. It reads the lines in blocks of
// up to blockLines, as many as are already read into its buffer, and tests
// and adds each block with one TestAndAddMany call. It buffers its output,
// flushing it whenever it has used up the input it has read, and before it
// returns.
func dedup(r io.Reader, w io.Writer, f *bloom.ScalableBloomFilter, stop *atomic.Bool, p *progress) (n dedupCounts, err error) {
	lr := newLineReader(r)
	bw := bufio.NewWriterSize(w, ioBufferSize)
	var block lineBlock
	var present []bool
	for done := false; !done && !stop.Load(); {
		if lr.r.Buffered() == 0 {
			// The next read may wait for more input: pass on what is
			// decided so far, so that a slow stream flows line by line.
			if err := bw.Flush(); err != nil {
				return n, fmt.Errorf("writing stdout: %w", err)
			}
		}
		block.reset()
		for len(block.ends) < blockLines && !stop.Load() {
			line, err := lr.next()
			if err == io.EOF {
				done = true
				break
			}
			if err != nil {
				return n, fmt.Errorf("reading stdin: %w", err)
			}
			block.add(line)
			if lr.r.Buffered() == 0 {
				break // do not wait for more input with lines in hand
			}
		}
		lines, keys := block.lines()
		present = f.TestAndAddMany(keys, present)
		for i, line := range lines {
			n.read++
			if !present[i] {
				n.written++
				if err := writeLine(bw, line); err != nil {
					return n, fmt.Errorf("writing stdout: %w", err)
				}
			}
			if n.read%progressEvery == 0 && p != nil {
				p.update(n.read, fmt.Sprintf(", %s written", thousands(n.written)))
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("writing stdout: %w", err)
	}
	return n, nil
}
