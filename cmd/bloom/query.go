package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/bloomfilters/bloom"
)

const queryDoc = `Reports each KEY, or without KEYs each line of stdin, as "present" or
"absent", one per line: the key, a tab, the answer. A "--" before the first
KEY is not a key, so "query FILE -- -x" queries "-x". "absent" is certain;
"present" is wrong with a probability of about the filter's estimated error
rate (see bloom info), and it warns on stderr when a scalable filter is
saturated. FILE is a filter written by build or dedup -state, of any format
version.

query answers from FILE where it lies, mapped into memory read-only: it
reads only the pages its answers touch, copies nothing into memory, and
processes that query the same file share its pages. Before the first
answer it checks the headers, the length and every checksum of the bits,
which reads the whole file once, and refuses a damaged or truncated file.
-skip-check skips the checksums, so that even a 1 GB filter opens in
milliseconds. The risk: a bit damaged on disk or in a copy goes unnoticed,
and a cleared bit makes keys that were added answer "absent". Use it for
files whose integrity is known otherwise. A truncated file is refused even
then. A file must not be truncated or rewritten in place while query runs:
truncated, it makes query stop with an error; rewritten in place, it can
change answers unnoticed. build and dedup replace a file by renaming a new
one over it, which is safe.

query answers the keys, or the lines of stdin, in batches, and answers each
line of a slow stream as soon as it comes.

Exit status: 0 if every key is present, 1 if any is absent, 2 on error.
`

func runQuery(e *env, args []string) error {
	flags := newFlagSet(e, "query", queryDoc)
	skipCheck := flags.Bool("skip-check", false, skipCheckDoc)
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 1, -1); err != nil {
		return err
	}
	path := flags.Arg(0)
	var f interface {
		TestMany(keys [][]byte, results []bool) []bool
	}
	var view *filterFile // f, unless f is a window
	if win, err := loadWindowFile(path); err != nil {
		return err
	} else if win != nil {
		f = win // a dedup -window state: decoded, not viewed
	} else {
		v, err := openFilter(path, *skipCheck)
		if err != nil {
			return err
		}
		defer v.Close()
		view, f = v, v
	}
	w := bufio.NewWriterSize(e.stdout, ioBufferSize)
	absent := false
	var present []bool
	report := func(keys [][]byte) error {
		present = f.TestMany(keys, present)
		for i, k := range keys {
			answer := "present\n"
			if !present[i] {
				answer, absent = "absent\n", true
			}
			w.Write(k)
			w.WriteByte('\t')
			w.WriteString(answer)
		}
		return nil
	}
	// A "--" after FILE ends the flags, as before FILE, so that keys that
	// start with "-" read alike in both places; the key "--" itself is
	// queried as "query FILE -- --".
	args = flags.Args()[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	// The view is read here, in this goroutine: a fault while reading it
	// (the file truncated under it) becomes an error.
	err := guardFaults(path, func() error {
		if view != nil && view.Saturated() {
			fmt.Fprintf(e.stderr, "bloom query: warning: %s is saturated: \"present\" is wrong more often than its error rate %g (estimated %.3g)\n",
				path, view.ErrorRate(), view.EstimatedErrorRate())
		}
		if len(args) > 0 {
			keys := make([][]byte, len(args))
			for i, k := range args {
				keys[i] = []byte(k)
			}
			return report(keys)
		}
		return eachBatchFlushing(e.stdin, w, report)
	})
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing stdout: %w", ferr)
	}
	if err != nil {
		return err
	}
	if absent {
		return errAbsent
	}
	return nil
}

// eachBatchFlushing is eachBatch for a command that answers each line on w:
// it flushes w whenever the next batch is not read yet, so that answers to a
// slow stream come as its lines do.
func eachBatchFlushing(r io.Reader, w *bufio.Writer, fn func(keys [][]byte) error) error {
	br := readBatches(r)
	defer br.close()
	for {
		if !br.ready() {
			if err := w.Flush(); err != nil {
				return fmt.Errorf("writing stdout: %w", err)
			}
		}
		lb := br.next()
		if len(lb.keys) > 0 {
			if err := fn(lb.keys); err != nil {
				return err
			}
		}
		if lb.err == io.EOF {
			return nil
		}
		if lb.err != nil {
			return fmt.Errorf("reading stdin: %w", lb.err)
		}
		br.recycle(lb)
	}
}

// guardFaults runs fn, which reads the filter file at path where it lies,
// mapped into memory, and turns a fault of those reads into an error: the
// file truncated under the mapping (SIGBUS), which would otherwise crash
// the process with a stack trace. SetPanicOnFault makes the fault a panic
// in the goroutine that faulted, this one, which recovers it here; a View
// from Open turns it into a panic with an error wrapping
// bloom.ErrFileChanged, which is recovered the same way.
func guardFaults(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var fault interface{ Addr() uintptr }
		e, ok := r.(error)
		if !ok || !errors.Is(e, bloom.ErrFileChanged) && !errors.As(e, &fault) {
			panic(r)
		}
		how := "truncated, or rewritten in place"
		if fi, serr := os.Stat(path); serr == nil {
			how = fmt.Sprintf("%d bytes long now", fi.Size())
		}
		err = fmt.Errorf("%s: the file changed while bloom read it (%s); replace a filter file by renaming a new one over it", path, how)
	}()
	return fn()
}
