package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStreaming feeds dedup and query a line at a time through a pipe, as
// `tail -f log | bloom dedup` does, and wants each line's output before the
// next line is written: the batches must not wait for more input to fill
// up. The input comes from a shell loop (a real process writing to a real
// pipe) that writes the next line only once the test has seen the output of
// the previous one, so a command that held its output back would never get
// its next line, and the test would time out. Repeats come in between: they
// write nothing, and the next new line must still come out.
func TestStreaming(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	filter := filepath.Join(dir, "f.bf")
	runBloom(t, "k0\nk2\n", "build", "-q", "-capacity", "1000", "-o", filter).want(t, 0, nil)
	for _, tc := range []struct {
		name string
		args []string
		want func(i int) string // the output of line i, "" for none
	}{
		{"dedup", []string{"dedup"}, func(i int) string {
			if i%3 == 2 {
				return "" // a repeat of line i-1
			}
			return fmt.Sprintf("k%d\n", i)
		}},
		{"dedup-window", []string{"dedup", "-window", "1000"}, func(i int) string {
			if i%3 == 2 {
				return ""
			}
			return fmt.Sprintf("k%d\n", i)
		}},
		{"query", []string{"query", filter}, func(i int) string {
			key := fmt.Sprintf("k%d", i)
			if i%3 == 2 {
				key = fmt.Sprintf("k%d", i-1)
			}
			if key == "k0" || key == "k2" {
				return key + "\tpresent\n"
			}
			return key + "\tabsent\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The shell writes line i when the test sends "go" on the
			// shell's stdin.
			const lines = 12
			script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do read go || exit 1; if [ $((i %% 3)) -eq 2 ]; then echo k$((i - 1)); else echo k$i; fi; i=$((i + 1)); done; read go`, lines)
			cmd := exec.Command("sh", "-c", "{ "+script+"; } | "+shellQuote(bloomBin)+" "+strings.Join(quoteAll(tc.args), " "))
			ctl, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			got := make(chan string)
			go func() {
				r := bufio.NewReader(out)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						close(got)
						return
					}
					got <- l
				}
			}()
			for i := range lines {
				io.WriteString(ctl, "go\n")
				want := tc.want(i)
				if want == "" {
					continue // a repeat: nothing to wait for
				}
				select {
				case l := <-got:
					if l != want {
						t.Fatalf("line %d: output %q, want %q", i, l, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("line %d: no output %q within 10 s of writing it", i, want)
				}
			}
			ctl.Close()
			if l, ok := <-got; ok {
				t.Errorf("more output at the end: %q", l)
			}
		})
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return q
}

// TestDedupInterruptedMidStream interrupts dedup -state while lines pour in
// through a pipe, with batches in every stage of its pipeline, and then
// runs it again on the whole input: every line the first run wrote is in
// the state it saved, so the second run writes exactly the distinct lines
// the first did not, and no line is written twice across the two runs.
func TestDedupInterruptedMidStream(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT")
	}
	const lines = 400_000
	var input strings.Builder
	distinct := map[string]bool{}
	for i := range lines {
		l := fmt.Sprintf("https://example.com/%d\n", i*7919%(lines*3/4))
		input.WriteString(l)
		distinct[l] = true
	}
	state := filepath.Join(t.TempDir(), "seen.bf")
	cmd := exec.Command(bloomBin, "dedup", "-q", "-state", state)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Half the input at once, the rest a few thousand lines at a time, so
	// that the interrupt comes while lines are still coming.
	go func() {
		in := input.String()
		half := len(in) / 2
		io.WriteString(stdin, in[:half])
		for rest := in[half:]; len(rest) > 0; {
			n := min(len(rest), 100_000)
			if _, err := io.WriteString(stdin, rest[:n]); err != nil {
				break // dedup has stopped reading
			}
			rest = rest[n:]
			time.Sleep(5 * time.Millisecond)
		}
		stdin.Close()
	}()
	var first strings.Builder
	out := bufio.NewReader(stdout)
	for first.Len() < len(input.String())/4 {
		l, err := out.ReadString('\n')
		first.WriteString(l)
		if err != nil {
			t.Fatalf("first run's output ended early: %v (stderr %q)", err, stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(out)
	first.Write(rest)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("first run: %v, want exit status %d (stderr %q)", err, exitInterrupted, stderr.String())
	}
	second := runBloom(t, input.String(), "dedup", "-q", "-state", state)
	second.want(t, 0, nil)

	seen := map[string]bool{}
	for _, out := range []string{first.String(), second.stdout} {
		for _, l := range strings.SplitAfter(out, "\n") {
			if l == "" {
				continue
			}
			if seen[l] {
				t.Fatalf("%q written twice", l)
			}
			if !distinct[l] {
				t.Fatalf("%q written, not in the input", l)
			}
			seen[l] = true
		}
	}
	// A false positive of either run at 1e-6 over 300,000 lines: 0.3 of a line.
	if missing := len(distinct) - len(seen); missing > 2 {
		t.Errorf("%d of %d distinct lines never written", missing, len(distinct))
	}
	t.Logf("first run wrote %d lines, the second %d", strings.Count(first.String(), "\n"), strings.Count(second.stdout, "\n"))
}
