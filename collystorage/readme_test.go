package collystorage_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippet checks that the Go program in the README's quick start is
// internal/readme/main.go from its package clause on, so the snippet compiles
// (go vet and go test build that package, and its test runs it).
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "## Quick start")
	if i < 0 {
		t.Fatal("README has no Quick start section")
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the Quick start has no Go snippet")
	}
	snippet := section[start+len("```go\n"):]
	snippet = snippet[:strings.Index(snippet, "```\n")]
	src, err := os.ReadFile("internal/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	program := string(src)
	program = program[strings.Index(program, "package main"):]
	if snippet != program {
		t.Errorf("README's Quick start snippet differs from internal/readme/main.go:\n%s", snippet)
	}
}

// TestReadmeWindowSnippet checks that the Go snippet of the README's
// "Re-crawl after a week" is ExampleOpenWindow's code with lines left out:
// its lines, trimmed, appear in that order in the example, which compiles
// and runs.
func TestReadmeWindowSnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "## Re-crawl after a week")
	if i < 0 {
		t.Fatal("README has no Re-crawl after a week section")
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the Re-crawl section has no Go snippet")
	}
	snippet := section[start+len("```go\n"):]
	snippet = snippet[:strings.Index(snippet, "```\n")]
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	example := string(src)
	i = strings.Index(example, "func ExampleOpenWindow()")
	if i < 0 {
		t.Fatal("example_test.go has no ExampleOpenWindow")
	}
	example = example[i:]
	example = example[:strings.Index(example, "\n}\n")]
	lines := strings.Split(example, "\n")
	n := 0
	for _, want := range strings.Split(snippet, "\n") {
		want = strings.TrimSpace(want)
		if want == "" {
			continue
		}
		for n < len(lines) && strings.TrimSpace(lines[n]) != want {
			n++
		}
		if n == len(lines) {
			t.Fatalf("README's Re-crawl snippet line %q is not in ExampleOpenWindow (in that order)", want)
		}
		n++
	}
}

// TestReadmeFragmentSnippet checks that the Go snippet of the README's
// "Links with a #fragment" is in the quick start's program,
// internal/readme/main.go, which compiles and whose test crawls a site
// with #top links: its lines, trimmed, appear there in that order.
func TestReadmeFragmentSnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "## Links with a #fragment")
	if i < 0 {
		t.Fatal("README has no Links with a #fragment section")
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the fragment section has no Go snippet")
	}
	snippet := section[start+len("```go\n"):]
	snippet = snippet[:strings.Index(snippet, "```\n")]
	src, err := os.ReadFile("internal/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	n := 0
	for _, want := range strings.Split(snippet, "\n") {
		want = strings.TrimSpace(want)
		if want == "" {
			continue
		}
		for n < len(lines) && strings.TrimSpace(lines[n]) != want {
			n++
		}
		if n == len(lines) {
			t.Fatalf("README's fragment snippet line %q is not in internal/readme/main.go (in that order)", want)
		}
		n++
	}
}
