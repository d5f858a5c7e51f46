// Command bloom removes duplicate lines from a stream and builds, queries and
// inspects Bloom filter files made with github.com/bloomfilters/bloom.
//
// Usage:
//
//	bloom dedup [-q] [-capacity N] [-error-rate P] [-classic] [-window N|DURATION [-overflow POLICY] [-refresh]] [-state FILE] [INPUT...] > first-seen lines
//	bloom build [-q] -capacity N [-error-rate P] -o FILE|- [INPUT]
//	bloom query [-skip-check] FILE [--] [KEY...]
//	bloom info [-json] [-skip-check] FILE
//	bloom faceoff
//	bloom version
//
// A line is a key: its trailing "\n" or "\r\n" is not part of it, and a last
// line without a newline counts. Lines may be of any length.
//
// dedup reads stdin, or its INPUT files one after another ("-" is stdin),
// and writes each line the first time it sees it, remembering the lines in
// a ScalableBloomFilter, so its memory grows with the number of distinct lines
// (6 to 9 bytes each at the default error rate, 4 to 6 with -classic) and
// not with their length. A Bloom filter has no false negatives, so a repeated line is never
// written twice; it has false positives, so a new line is dropped with a
// probability of at most -error-rate. With -state the filter is loaded before
// and saved after the run (to a temporary file in the same directory, synced
// and renamed over the old one), so a long job can stop and resume. An
// interrupt (SIGINT or SIGTERM) stops reading at once, even while dedup
// waits for input, and saves the lines read so far. A second one does not
// cut the save short: the old state lacks the lines this run has written, so
// abandoning the save would have the next run write them again; kill -9
// abandons it all the same, and leaves the old state file as it was. A run
// locks FILE.lock, a file left beside the state, from start to end, and a
// second run on the same state fails at once while it is held.
// Temporary files left by a run killed while saving are removed by the next
// dedup or build that writes the same file.
//
// A scalable filter that reaches the library's limits saturates: it can grow
// no more and no longer keep its error rate. dedup then stops after the line
// that saturated it, saves the state, and fails; it refuses a saturated state
// before reading any line. query warns about a saturated filter; info says so.
//
// build writes a fixed-size filter of the lines of INPUT (or stdin) to FILE,
// or with -o - to stdout; it refuses, before reading any input, a filter
// larger than the machine's memory. query reports each key, or each line of
// stdin, as "present" or "absent"; info prints a filter file's parameters,
// with -json as one JSON object. query and info read a filter file where it
// lies, mapped into memory (a bloom.View), after checking its checksums
// unless -skip-check, and refuse a damaged or truncated one. faceoff
// compares a filter's memory with a Go map's and walks through a 24-bit
// filter bit by bit; version prints the module version and the Go version
// bloom was built with. A count such as -capacity may be written 1e6.
//
// Progress goes to stderr when stderr is a terminal, and dedup and build end
// with one summary line on stderr, terminal or not (lines read and written,
// the distinct lines the filter holds, its size), unless -q.
//
// Exit status: 0 on success (for query: every key present), 1 when query
// finds a key absent, 2 on any error, such as an unknown flag, a parameter
// out of range or a missing or corrupt filter file, a state in use or a
// saturated filter, and 130 when dedup was interrupted (and saved its
// state). On error no file is written or replaced, except that dedup saves
// the state it has when the filter saturates (and may leave a new, empty
// FILE.lock).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Exit statuses.
const (
	exitOK     = 0
	exitAbsent = 1 // query: at least one key is absent
	exitError  = 2
	// exitInterrupted is dedup's status after an interrupt, with the state
	// saved: 128 + SIGINT, as a shell reports a process killed by SIGINT.
	exitInterrupted = 130
)

// errAbsent makes run exit with exitAbsent without printing anything.
var errAbsent = errors.New("absent")

// env is what a subcommand reads from and writes to, so that tests and
// benchmarks can run commands in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// progress says whether to draw progress on stderr: only when it is a
	// terminal, never into pipes or files.
	progress bool
	// stdoutTerminal says whether stdout is a terminal, where build -o -
	// must not write a binary filter.
	stdoutTerminal bool
	// signals says whether dedup may catch SIGINT and SIGTERM: only in the
	// real process, not in tests that run commands in-process.
	signals bool
}

type command struct {
	name    string
	args    string // synopsis after the name
	summary string
	run     func(e *env, args []string) error
}

// commands is set in init to break an initialization cycle: the commands'
// flag sets look up their synopses in it.
var commands []*command

func init() {
	commands = []*command{
		{"dedup", "[-q] [-capacity N] [-error-rate P] [-classic] [-window N|DURATION [-overflow POLICY] [-refresh]] [-state FILE] [INPUT...]", "write each line of stdin or INPUTs the first time it is seen", runDedup},
		{"build", "[-q] -capacity N [-error-rate P] -o FILE|- [INPUT]", "build a filter file from lines of INPUT or stdin", runBuild},
		{"query", "[-skip-check] FILE [--] [KEY...]", "report each KEY, or each line of stdin, as present or absent", runQuery},
		{"info", "[-json] [-skip-check] FILE", "print the parameters and fill of a filter file", runInfo},
		{"faceoff", "", "compare a filter's memory with a Go map's; walk through a tiny filter", runFaceoff},
		{"version", "", "print the version of bloom and of the Go it was built with", runVersion},
	}
}

func main() {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		progress: isTerminal(os.Stderr), stdoutTerminal: isTerminal(os.Stdout), signals: true}
	os.Exit(run(e, os.Args[1:]))
}

// isTerminal reports whether f is a character device such as a terminal.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// run runs the command line args (without the program name) and returns the
// exit status.
func run(e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitError
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(e, args[1:])
		switch {
		case err == nil || errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errAbsent):
			return exitAbsent
		case errors.Is(err, errInterrupted):
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "bloom %s: %s\n", c.name, oneLine(err))
		return exitError
	}
	fmt.Fprintf(e.stderr, "bloom: unknown command %q (run 'bloom -h' for the list)\n", args[0])
	return exitError
}

// oneLine formats err for a one-line message, dropping the library's "bloom: "
// prefixes that would repeat the program name.
func oneLine(err error) string {
	s := strings.TrimPrefix(err.Error(), "bloom: ")
	s = strings.ReplaceAll(s, ": bloom: ", ": ")
	return strings.ReplaceAll(s, "\n", " ")
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: bloom COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'bloom COMMAND -h' for a command's flags. Exit status: 0 success,\n"+
		"1 query found a key absent, 2 error.\n")
}

// flagSet is a subcommand's flag set and its usage text.
type flagSet struct {
	*flag.FlagSet
	usage func()
}

// newFlagSet returns a flag set for subcommand c whose errors come back to
// the caller, to be printed as one line, and whose -h prints the synopsis,
// doc and flags to stdout.
func newFlagSet(e *env, c string, doc string) *flagSet {
	fs := flag.NewFlagSet("bloom "+c, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // Parse calls it on errors too; parse prints for -h only
	usage := func() {
		for _, cmd := range commands {
			if cmd.name == c {
				fmt.Fprintf(e.stdout, "Usage: bloom %s %s\n\n", cmd.name, cmd.args)
			}
		}
		fmt.Fprint(e.stdout, doc)
		var flags strings.Builder
		fs.SetOutput(&flags)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if flags.Len() > 0 {
			fmt.Fprintf(e.stdout, "\nFlags:\n%s", flags.String())
		}
	}
	return &flagSet{fs, usage}
}

// parse parses args. For -h it prints the usage and returns flag.ErrHelp,
// which run turns into exit status 0.
func (fs *flagSet) parse(args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.usage()
		return flag.ErrHelp
	}
	if err != nil {
		return fmt.Errorf("%v (run '%s -h' for usage)", err, fs.Name())
	}
	return nil
}

// checkArgs returns an error unless fs has between min and max positional
// arguments (max < 0: no limit).
func checkArgs(fs *flagSet, min, max int) error {
	n := fs.NArg()
	switch {
	case n < min:
		return fmt.Errorf("missing argument (run '%s -h' for usage)", fs.Name())
	case max >= 0 && n > max:
		return fmt.Errorf("unexpected argument %q (flags go before arguments; run '%s -h' for usage)", fs.Arg(max), fs.Name())
	}
	return nil
}

// countValue is a flag.Value for a count of keys, such as -capacity, that
// takes an integer or, for large counts, an exact float: "1000000", "1e6",
// "2.5e6".
type countValue uint64

func countFlag(fs *flagSet, name string, value uint64, usage string) *uint64 {
	p := new(uint64)
	*p = value
	fs.Var((*countValue)(p), name, usage)
	return p
}

func (c *countValue) String() string { return strconv.FormatUint(uint64(*c), 10) }

func (c *countValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err == nil {
		*c = countValue(n)
		return nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	switch {
	case ferr != nil || strings.HasPrefix(s, "-") || f != f:
		return errors.New("not a count: want a whole number, such as 1000000 or 1e6")
	case f != math.Trunc(f) || f < 0:
		return errors.New("not a whole number")
	case f >= math.MaxUint64:
		return errors.New("too large")
	}
	*c = countValue(f)
	return nil
}

// checkSizing validates -capacity and -error-rate with messages that name the
// flags, before the library's own checks (which catch filters too large).
func checkSizing(capacity uint64, errorRate float64) error {
	if capacity == 0 {
		return errors.New("-capacity must be at least 1")
	}
	if !(errorRate > 0 && errorRate < 1) {
		return fmt.Errorf("-error-rate must be in (0, 1), got %v", errorRate)
	}
	return nil
}
