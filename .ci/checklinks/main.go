// Command checklinks reports every relative link in the Markdown files named
// on its command line whose target is not a file or folder of the repository
// (tracked by git, so that it exists in a clean clone), or whose #anchor names
// no heading of the target Markdown file (GitHub's heading anchors) and no
// <a id> or <a name> in it. It checks inline links and images, with or
// without a title, and reference definitions ([name]: target), outside code
// blocks and code spans; links with a scheme (https:, mailto:) are not
// fetched. It exits 1 if any link is broken. CI runs it on README.md,
// docs/*.md, bench/*.md and the nested modules' READMEs:
//
//	go run ./.ci/checklinks FILE...
package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	// An inline link or image: [text](target) or [text](target "title"),
	// the target possibly in angle brackets.
	inlineRE = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	// A reference definition: [name]: target.
	refDefRE = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// HTML links and anchors.
	hrefRE     = regexp.MustCompile(`(?i)<a\s[^>]*href\s*=\s*"([^"]*)"`)
	htmlIDRE   = regexp.MustCompile(`(?i)<a\s[^>]*(?:id|name)\s*=\s*"([^"]*)"`)
	atxRE      = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	setextRE   = regexp.MustCompile(`^ {0,3}(=+|-+)\s*$`)
	fenceRE    = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	headLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose returns the lines of a Markdown text with fenced code blocks blanked
// (so line numbers stay right), and whether each line is inside one.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		if fence != "" {
			if m := fenceRE.FindStringSubmatch(l); m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(l[len(m[0]):]) == "" {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			fence = m[1]
			lines[i] = ""
		}
	}
	return lines
}

// slug returns GitHub's anchor for a heading's text: lower case, characters
// other than letters, digits, spaces, '-' and '_' dropped, spaces to '-'.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	h = headLinkRE.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a Markdown text defines: GitHub's heading
// anchors (a repeated heading gets -1, -2, ...) and HTML ids and names.
func anchors(text string) map[string]bool {
	lines := prose(text)
	out := map[string]bool{}
	seen := map[string]int{}
	add := func(h string) {
		s := slug(strings.TrimSpace(h))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for i, l := range lines {
		if m := atxRE.FindStringSubmatch(l); m != nil {
			add(m[2])
			continue
		}
		// A setext heading: a paragraph line underlined with = or -.
		if i > 0 && setextRE.MatchString(l) && strings.TrimSpace(lines[i-1]) != "" &&
			!atxRE.MatchString(lines[i-1]) && !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "|") &&
			!strings.HasPrefix(strings.TrimSpace(lines[i-1]), "- ") {
			add(lines[i-1])
		}
	}
	for _, m := range htmlIDRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// A link is one relative link found in a Markdown file.
type link struct {
	line   int
	target string
}

// links returns the links of a Markdown text that point into the
// repository, outside code blocks and code spans.
func links(text string) []link {
	var out []link
	for i, l := range prose(text) {
		l = stripCodeSpans(l)
		var targets []string
		for _, m := range inlineRE.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range refDefRE.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range hrefRE.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			t = strings.TrimSuffix(strings.TrimPrefix(t, "<"), ">")
			if t == "" || schemeRE.MatchString(t) || strings.HasPrefix(t, "//") {
				continue
			}
			out = append(out, link{i + 1, t})
		}
	}
	return out
}

// stripCodeSpans returns a line without its code spans: a run of backticks
// up to the next run of as many.
func stripCodeSpans(l string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(l, '`')
		if i < 0 {
			b.WriteString(l)
			return b.String()
		}
		b.WriteString(l[:i])
		n := i
		for n < len(l) && l[n] == '`' {
			n++
		}
		ticks := l[i:n]
		rest := l[n:]
		end := -1
		for j := 0; j < len(rest); {
			k := strings.Index(rest[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			m := k + len(ticks)
			if m == len(rest) || rest[m] != '`' {
				if k == 0 || rest[k-1] != '`' {
					end = m
					break
				}
			}
			for m < len(rest) && rest[m] == '`' {
				m++
			}
			j = m
		}
		if end < 0 { // no closing run: the backticks are literal
			b.WriteString(ticks)
			l = rest
			continue
		}
		l = rest[end:]
	}
}

// A repo answers whether a path is a file or folder of the repository.
type repo struct {
	root    string          // absolute path of the work tree
	tracked map[string]bool // files and folders git tracks, relative to root; nil: use the file system
}

func openRepo() repo {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return repo{}
	}
	r := repo{root: strings.TrimSpace(string(top)), tracked: map[string]bool{".": true}}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = r.root
	out, err := cmd.Output()
	if err != nil {
		return repo{}
	}
	for _, f := range strings.Split(string(out), "\x00") {
		for f != "" && f != "." && !r.tracked[f] {
			r.tracked[f] = true
			f = filepath.Dir(f)
		}
	}
	return r
}

func (r repo) exists(path string) bool {
	if r.tracked == nil {
		_, err := os.Stat(path)
		return err == nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(r.root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	if !r.tracked[filepath.ToSlash(rel)] {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}

// check writes a line to w for each broken link of the Markdown file and
// returns how many there are, and how many relative links it has.
func check(w io.Writer, r repo, file string) (broken, total int, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	found := links(string(data))
	for _, l := range found {
		target, anchor, _ := strings.Cut(l.target, "#")
		if p, err := url.PathUnescape(target); err == nil {
			target = p
		}
		full := file
		if target != "" {
			full = filepath.Join(filepath.Dir(file), target)
			if !r.exists(full) {
				fmt.Fprintf(w, "%s:%d: link %s: no such file in the repository\n", file, l.line, l.target)
				broken++
				continue
			}
		}
		if anchor == "" || !strings.HasSuffix(full, ".md") {
			continue
		}
		text, err := os.ReadFile(full)
		if err != nil || !anchors(string(text))[anchor] {
			fmt.Fprintf(w, "%s:%d: link %s: no heading or anchor #%s in %s\n", file, l.line, l.target, anchor, full)
			broken++
		}
	}
	return broken, len(found), nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: checklinks FILE.md...")
		os.Exit(2)
	}
	r := openRepo()
	w := bufio.NewWriter(os.Stdout)
	broken, total := 0, 0
	for _, file := range os.Args[1:] {
		n, all, err := check(w, r, file)
		if err != nil {
			w.Flush()
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		broken += n
		total += all
	}
	fmt.Fprintf(w, "%d relative links in %d files, %d broken\n", total, len(os.Args)-1, broken)
	w.Flush()
	if broken > 0 {
		os.Exit(1)
	}
}
