package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Quick start":                        "quick-start",
		"How it compares":                    "how-it-compares",
		"A growing filter: `ScalableFilter`": "a-growing-filter-scalablefilter",
		"2026-12-04: classic and blocked layouts against the peers (the README's comparison table)": "2026-12-04-classic-and-blocked-layouts-against-the-peers-the-readmes-comparison-table",
		"Batch calls (issue 12): a partial run":                                                     "batch-calls-issue-12-a-partial-run",
		"See [the docs](docs/x.md) now":                                                             "see-the-docs-now",
		"n = 10^6, p = 0.01":                                                                        "n--106-p--001",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	text := "# Title\n\n## Part\n\n## Part\n\nSetext heading\n--------------\n\n" +
		"```\n## Not a heading\n```\n\n<a id=\"custom\"></a>\n\n| a |\n|---|\n\n- item\n---\n"
	got := anchors(text)
	for _, a := range []string{"title", "part", "part-1", "setext-heading", "custom"} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	for _, a := range []string{"not-a-heading", "a", "item"} {
		if got[a] {
			t.Errorf("anchor %q found; it is no heading", a)
		}
	}
}

func TestLinks(t *testing.T) {
	text := "[a](docs/a.md) and ![img](pic.png \"title\") and [b](<docs/b c.md>)\n" +
		"`[code](not/a/link.md)` and ``[x](y.md) ` `` and [c](https://example.com/) [m](mailto:x@y)\n" +
		"```go\n[in](fence.md)\n```\n" +
		"[ref]: docs/ref.md#part\n" +
		"<a href=\"html.md\">h</a> [self](#title) [t](x.md 'single') [p](y.md (paren))\n"
	var got []string
	for _, l := range links(text) {
		got = append(got, l.target)
	}
	want := []string{"docs/a.md", "pic.png", "docs/b c.md", "docs/ref.md#part", "#title", "x.md", "y.md", "html.md"}
	if !slices.Equal(got, want) {
		t.Errorf("links = %q\nwant      %q", got, want)
	}
}

// TestCheck builds a small repository and checks that every kind of broken
// link is reported, with its line, and that good links are not.
func TestCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n"+
		"[ok](docs/guide.md#the-part) [ok dir](docs) [ok self](#top) [ok code](main.go)\n"+
		"[missing file](docs/nope.md)\n"+
		"[missing anchor](docs/guide.md#nope)\n"+
		"[untracked](notes.md)\n"+
		"[bad self](#nope)\n"+
		"[titled missing](docs/gone.md \"a title\")\n"+
		"[ref]: docs/guide.md#also-nope\n")
	write("docs/guide.md", "# Guide\n\n## The part\n\n[up](../README.md#top)\n")
	write("main.go", "package main\n")
	write("notes.md", "untracked\n")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	run("add", "README.md", "docs/guide.md", "main.go")

	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	r := openRepo()
	if r.tracked == nil {
		t.Fatal("openRepo did not read git's file list")
	}

	var out strings.Builder
	broken, total, err := check(&out, r, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if total != 10 {
		t.Errorf("found %d links, want 10", total)
	}
	report := out.String()
	for _, want := range []string{
		"README.md:4: link docs/nope.md: no such file",
		"README.md:5: link docs/guide.md#nope: no heading or anchor #nope",
		"README.md:6: link notes.md: no such file",
		"README.md:7: link #nope: no heading or anchor #nope",
		"README.md:8: link docs/gone.md: no such file",
		"README.md:9: link docs/guide.md#also-nope: no heading",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if broken != 6 {
		t.Errorf("%d broken links reported, want 6:\n%s", broken, report)
	}
	out.Reset()
	if broken, _, err := check(&out, r, "docs/guide.md"); err != nil || broken != 0 {
		t.Errorf("docs/guide.md: %d broken, %v:\n%s", broken, err, out.String())
	}
}
