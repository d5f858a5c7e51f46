package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/bloomfilters/bloom"
)

const buildDoc = `Builds a fixed-size Bloom filter from the lines of INPUT (or stdin) and
writes it to FILE, atomically: on any error FILE is left as it was; -o -
writes it to stdout. FILE must be a regular file or not exist (for a pipe
or a device, use -o - and redirect). A filter larger than the machine's
memory, or an unwritable FILE, is refused before any input is read. A line's
"\n" or "\r\n" ending is not part of the key. The filter is sized for
-capacity distinct keys at -error-rate; with more keys its false-positive
rate rises, and build warns. For a stream of unknown size, use dedup -state,
which keeps a filter that grows. At the end a summary line goes to stderr
(lines read, distinct keys in the filter, its size), unless -q.
`

func runBuild(e *env, args []string) error {
	flags := newFlagSet(e, "build", buildDoc)
	capacity := countFlag(flags, "capacity", 0, "size the filter for `N` distinct keys (required; 1e6 notation works)")
	errorRate := flags.Float64("error-rate", 0.01, "false-positive rate at capacity, in (0, 1)")
	out := flags.String("o", "", "write the filter to `FILE` (required); - writes it to stdout")
	quiet := flags.Bool("q", false, "print no progress and no summary on stderr, only warnings and errors")
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 0, 1); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("-o FILE is required (run '%s -h' for usage)", flags.Name())
	}
	if err := checkSizing(*capacity, *errorRate); err != nil {
		return err
	}
	// Every check comes before the filter is allocated and the input read.
	sizing := fmt.Sprintf("-capacity %d at -error-rate %g", *capacity, *errorRate)
	bits, err := defaultBits(*capacity, *errorRate)
	if err != nil {
		return fmt.Errorf("%s: %w", sizing, err)
	}
	if err := checkMemory(sizing, bits); err != nil {
		return err
	}
	toStdout := *out == "-"
	outPath := "" // *out resolved
	if toStdout {
		if e.stdoutTerminal {
			return errors.New("-o - would write a binary filter to the terminal: redirect stdout to a file or a pipe")
		}
	} else {
		// As dedup does with its state: one lock for every name of the
		// output, under which any temporary of it is stale, and a regular
		// file or none, since the save renames its file over it (a FIFO
		// or a device is for -o -).
		path := resolvePath(*out)
		if err := checkRegular("-o "+*out, path); err != nil {
			return err
		}
		unlock, err := lockState(path)
		if err != nil {
			return err
		}
		defer unlock()
		removeTemps(path)
		if err := checkWritable(path); err != nil {
			return err
		}
		outPath = path
	}
	// Read as dedup reads its INPUTs, stdin being "-".
	name := "stdin"
	if flags.NArg() == 1 && flags.Arg(0) != "-" {
		name = flags.Arg(0)
	}
	in, err := openInputFiles([]string{cmp.Or(flags.Arg(0), "-")}, e.stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := bloom.New(*capacity, *errorRate)
	if err != nil {
		return fmt.Errorf("%s: %w", sizing, err)
	}
	p := newProgress(e, "read", *quiet)
	var lines uint64
	err = eachBatch(in, func(keys [][]byte) error {
		f.AddMany(keys)
		before := lines
		lines += uint64(len(keys))
		if lines/progressEvery != before/progressEvery {
			p.update(lines, "")
		}
		return nil
	})
	if err != nil {
		p.finish("")
		return fmt.Errorf("reading %s: %w", name, err)
	}
	n := plainCount(f)
	if n.n > f.Capacity() {
		p.finish("")
		if n.known {
			fmt.Fprintf(e.stderr, "bloom build: warning: %s exceed -capacity %s: the false-positive rate is about %.3g, not %g\n",
				describeCount(n, "key"), thousands(f.Capacity()), f.EstimatedErrorRate(), f.ErrorRate())
		} else {
			fmt.Fprintf(e.stderr, "bloom build: warning: every bit is set: at least %s distinct keys, more than -capacity %s, went in, and every key will test present\n",
				thousands(n.n), thousands(f.Capacity()))
		}
	}
	write := func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	}
	where := *out
	if toStdout {
		where = "stdout"
		bw := bufio.NewWriterSize(e.stdout, ioBufferSize)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			err = fmt.Errorf("writing stdout: %w", err)
		}
	} else {
		err = writeFileAtomic(outPath, write)
	}
	if err != nil {
		p.finish("")
		return err
	}
	p.finish(fmt.Sprintf("bloom build: %s read; the filter holds %s in %s, written to %s",
		quantity(lines, "line"), describeCount(n, "key"), byteSize(f.Bits()/8), where))
	return nil
}
