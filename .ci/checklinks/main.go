// Command checklinks reports every relative link in the Markdown files named
// on its command line whose file does not exist, or whose #anchor names no
// heading of the target file (GitHub's heading slugs). It exits 1 if any is
// broken. CI runs it on README.md, docs/*.md, bench/*.md and the nested
// modules' READMEs: go run ./.ci/checklinks FILE...
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug returns GitHub's anchor for a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces to '-'.
func slug(h string) string {
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

func anchors(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := fenceRE.ReplaceAllString(string(data), "")
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		h := strings.NewReplacer("`", "", "*", "").Replace(m[1])
		// Links inside a heading show their text.
		h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out, nil
}

func main() {
	broken := 0
	for _, file := range os.Args[1:] {
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		text := fenceRE.ReplaceAllString(string(data), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			full := file
			if path != "" {
				full = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(full); err != nil {
					fmt.Printf("%s: link %s: no such file\n", file, target)
					broken++
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(full, ".md") {
				continue
			}
			a, err := anchors(full)
			if err != nil || !a[anchor] {
				fmt.Printf("%s: link %s: no heading #%s in %s\n", file, target, anchor, full)
				broken++
			}
		}
	}
	if broken > 0 {
		fmt.Printf("%d broken links\n", broken)
		os.Exit(1)
	}
}
