package main

import (
	"fmt"
	"io"
	"os"

	"github.com/bloomfilters/bloom"
)

const buildDoc = `Builds a fixed-size Bloom filter from the lines of INPUT (or stdin) and
writes it to FILE, atomically: on any error FILE is left as it was. A line's
"\n" or "\r\n" ending is not part of the key. The filter is sized for
-capacity distinct keys at -error-rate; with more keys its false-positive
rate rises, and build warns. For a stream of unknown size, use dedup -state,
which keeps a filter that grows.
`

func runBuild(e *env, args []string) error {
	flags := newFlagSet(e, "build", buildDoc)
	capacity := flags.Uint64("capacity", 0, "distinct keys the filter is sized for (required)")
	errorRate := flags.Float64("error-rate", 0.01, "false-positive rate at capacity, in (0, 1)")
	out := flags.String("o", "", "write the filter to `FILE` (required)")
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
	f, err := bloom.New(*capacity, *errorRate)
	if err != nil {
		return fmt.Errorf("-capacity %d at -error-rate %g: %w", *capacity, *errorRate, err)
	}
	if err := checkWritable(*out); err != nil {
		return err
	}
	in, name := e.stdin, "stdin"
	if flags.NArg() == 1 {
		name = flags.Arg(0)
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		in = file
	}
	p := newProgress(e, "read")
	var lines uint64
	err = eachBlock(in, func(keys [][]byte) error {
		f.AddMany(keys)
		before := lines
		lines += uint64(len(keys))
		if lines/progressEvery != before/progressEvery {
			p.update(lines, "")
		}
		return nil
	})
	p.done(lines, "")
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if f.Count() > f.Capacity() {
		fmt.Fprintf(e.stderr, "bloom build: warning: %s distinct keys exceed -capacity %s: the false-positive rate is about %.3g, not %g\n",
			thousands(f.Count()), thousands(f.Capacity()), f.EstimatedErrorRate(), f.ErrorRate())
	}
	return writeFileAtomic(*out, func(w io.Writer) error {
		_, err := f.WriteTo(w)
		return err
	})
}
