package redisbloom

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippet checks that the Go program in the "Quick start" section
// of this module's README.md is internal/readme/main.go without its doc
// comment, so the snippet compiles (go vet and go test build that package).
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "## Quick start")
	if i < 0 {
		t.Fatal("README.md has no Quick start section")
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the Redis section has no Go snippet")
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
		t.Errorf("README's Redis snippet differs from internal/readme/main.go:\n%s", snippet)
	}
}
