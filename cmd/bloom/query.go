package main

import (
	"bufio"
	"fmt"
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
then. A file must not be truncated or rewritten in place while query runs
(build and dedup replace a file by renaming a new one over it, which is
safe).

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
	var f interface{ Test(key []byte) bool }
	if win, err := loadWindowFile(flags.Arg(0)); err != nil {
		return err
	} else if win != nil {
		f = win // a dedup -window state: decoded, not viewed
	} else {
		v, err := openFilter(flags.Arg(0), *skipCheck)
		if err != nil {
			return err
		}
		defer v.Close()
		if v.Saturated() {
			fmt.Fprintf(e.stderr, "bloom query: warning: %s is saturated: \"present\" is wrong more often than its error rate %g (estimated %.3g)\n",
				flags.Arg(0), v.ErrorRate(), v.EstimatedErrorRate())
		}
		f = v
	}
	w := bufio.NewWriterSize(e.stdout, ioBufferSize)
	absent := false
	report := func(key []byte) error {
		answer := "present"
		if !f.Test(key) {
			answer, absent = "absent", true
		}
		w.Write(key)
		w.WriteByte('\t')
		_, err := w.WriteString(answer + "\n")
		return err
	}
	// A "--" after FILE ends the flags, as before FILE, so that keys that
	// start with "-" read alike in both places; the key "--" itself is
	// queried as "query FILE -- --".
	keys := flags.Args()[1:]
	if len(keys) > 0 && keys[0] == "--" {
		keys = keys[1:]
	}
	if len(keys) > 0 {
		for _, k := range keys {
			report([]byte(k))
		}
	} else if err := eachLine(e.stdin, report); err != nil {
		w.Flush()
		return fmt.Errorf("reading stdin: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing stdout: %w", err)
	}
	if absent {
		return errAbsent
	}
	return nil
}
