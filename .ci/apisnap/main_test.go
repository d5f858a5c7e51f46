package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (path relative to dir: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

// A repository of two modules, example.com/m and example.com/m/sub, with a
// command, an internal package, a module of commands only and a go.mod under
// testdata, none of which may appear in a snapshot.
var tree = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.23\n",
	"p/p.go": `// Package p has one of each kind of API item.
package p

import (
	"io"
	"time"
)

// Deprecated: use Answer; a group doc covers every name in the group.
const (
	Old1 = 1
	Old2 = "two"
)

const (
	Answer         = 42
	Pi             = 3.25
	Third          = 1.0 / 3
	Typed  Level   = 2
	Period         = 2 * time.Second
	Rune           = 'x'
	hidden         = 0
)

// Level is a level.
type Level uint8

func (Level) String() string { return "" }

// Gone is deprecated.
//
// Deprecated: use Level.
type Gone int

var (
	// ErrX is an error.
	ErrX error
	// Table is a table.
	//
	// Deprecated: do not use.
	Table map[string][]byte
	hiddenVar int
)

// New makes a T. The word Deprecated: in the middle of a paragraph does not
// deprecate it.
func New(n uint64, keys ...string) (*T, error) { return nil, nil }

// Old is old.
//
// Deprecated: use New.
func Old() {}

func Map[K comparable, V any](m map[K]V, f func(K) V) []V { return nil }

type base struct{ Exported int }

// Promoted is promoted into T through base... not: base is unexported, so
// its method is part of T's API.
func (base) Promoted() {}

// Base is embedded, exported.
type Base struct{}

func (*Base) Shared() {}

// T has fields of every kind.
type T struct {
	base
	*Base
	// Name is a name.
	Name string
	// Data is data.
	//
	// Deprecated: use Name.
	Data    []byte
	C       chan<- int
	R       <-chan rune
	Fn      func(io.Reader) (int, error)
	Arr     [4]uint32
	Any     interface{}
	Anon    struct{ X int }
	private int
}

func (t T) Value() int                  { return 0 }
func (t *T) Pointer(p []byte) bool      { return false }
func (t *T) unexported()                {}
func (t *T) Multi() (a, b int, err error) { return 0, 0, nil }

// Deprecated: use Pointer.
func (t *T) Blocked() bool { return false }

// Face has methods, one of them deprecated, and embeds io.Reader.
type Face interface {
	io.Reader
	Close() error
	// Deprecated: use Close.
	Shut()
}

// Sealed has an unexported method: only p can implement it.
type Sealed interface {
	Open() bool
	seal()
}

type Empty interface{}

// Number is a constraint.
type Number interface{ ~int | ~int64 | float64 }

type Pair[K comparable, V Number] struct {
	Key K
	Val V
}

func (p Pair[K, V]) First() K { return p.Key }

type Alias = T
`,
	"p/p_windows.go":     "package p\n\nfunc WindowsOnly() {}\n",
	"p/p_test.go":        "package p\n\nfunc TestOnly() {}\n",
	"internal/q/q.go":    "package q\n\nfunc Internal() {}\n",
	"cmd/c/main.go":      "package main\n\nfunc Exported() {}\n\nfunc main() {}\n",
	"testonly/x_test.go": "package testonly\n",
	"sub/go.mod":         "module example.com/m/sub\n\ngo 1.23\n\nrequire example.com/m v0.1.0\n\nreplace example.com/m => ../\n",
	"sub/s.go": `package sub

import "example.com/m/p"

// Wrap returns a p.T.
func Wrap(l p.Level) *p.T { return nil }

type S struct{ *p.T }
`,
	"sub/internal/i/i.go": "package i\n\nfunc Hidden() {}\n",
	"tools/go.mod":        "module example.com/m/tools\n\ngo 1.23\n",
	"tools/main.go":       "package main\n\nfunc main() {}\n",
	"testdata/x/go.mod":   "module example.com/m/testdata/x\n\ngo 1.23\n",
	"testdata/x/x.go":     "package x\n\nfunc X() {}\n",
	".hidden/go.mod":      "module example.com/m/hidden\n\ngo 1.23\n",
	".hidden/h.go":        "package h\n\nfunc H() {}\n",
}

var wantM = `pkg example.com/m/p, const Answer = 42
pkg example.com/m/p, const Answer ideal-int
pkg example.com/m/p, const Old1 //deprecated
pkg example.com/m/p, const Old1 = 1
pkg example.com/m/p, const Old1 ideal-int
pkg example.com/m/p, const Old2 //deprecated
pkg example.com/m/p, const Old2 = "two"
pkg example.com/m/p, const Old2 ideal-string
pkg example.com/m/p, const Period = 2000000000
pkg example.com/m/p, const Period time.Duration
pkg example.com/m/p, const Pi = 3.25  // 13/4
pkg example.com/m/p, const Pi ideal-float
pkg example.com/m/p, const Rune = 120
pkg example.com/m/p, const Rune ideal-char
pkg example.com/m/p, const Third = 0.333333  // 1/3
pkg example.com/m/p, const Third ideal-float
pkg example.com/m/p, const Typed = 2
pkg example.com/m/p, const Typed Level
pkg example.com/m/p, func Map[$0 comparable, $1 interface{}](map[$0]$1, func($0) $1) []$1
pkg example.com/m/p, func New(uint64, ...string) (*T, error)
pkg example.com/m/p, func Old //deprecated
pkg example.com/m/p, func Old()
pkg example.com/m/p, method (*Base) Shared()
pkg example.com/m/p, method (*T) Blocked //deprecated
pkg example.com/m/p, method (*T) Blocked() bool
pkg example.com/m/p, method (*T) Multi() (int, int, error)
pkg example.com/m/p, method (*T) Pointer([]uint8) bool
pkg example.com/m/p, method (Level) String() string
pkg example.com/m/p, method (Pair[$0, $1]) First() $0
pkg example.com/m/p, method (T) Promoted()
pkg example.com/m/p, method (T) Shared()
pkg example.com/m/p, method (T) Value() int
pkg example.com/m/p, type Alias = T
pkg example.com/m/p, type Base struct
pkg example.com/m/p, type Empty interface {}
pkg example.com/m/p, type Face interface { Close, Read, Shut }
pkg example.com/m/p, type Face interface, Close() error
pkg example.com/m/p, type Face interface, Read([]uint8) (int, error)
pkg example.com/m/p, type Face interface, Shut //deprecated
pkg example.com/m/p, type Face interface, Shut()
pkg example.com/m/p, type Gone //deprecated
pkg example.com/m/p, type Gone int
pkg example.com/m/p, type Level uint8
pkg example.com/m/p, type Number interface { ~int | ~int64 | float64 }
pkg example.com/m/p, type Pair[$0 comparable, $1 Number] struct
pkg example.com/m/p, type Pair[$0 comparable, $1 Number] struct, Key $0
pkg example.com/m/p, type Pair[$0 comparable, $1 Number] struct, Val $1
pkg example.com/m/p, type Sealed interface, Open() bool
pkg example.com/m/p, type Sealed interface, unexported methods
pkg example.com/m/p, type T struct
pkg example.com/m/p, type T struct, Anon struct
pkg example.com/m/p, type T struct, Any interface{}
pkg example.com/m/p, type T struct, Arr [4]uint32
pkg example.com/m/p, type T struct, C chan<- int
pkg example.com/m/p, type T struct, Data //deprecated
pkg example.com/m/p, type T struct, Data []uint8
pkg example.com/m/p, type T struct, Fn func(io.Reader) (int, error)
pkg example.com/m/p, type T struct, Name string
pkg example.com/m/p, type T struct, R <-chan int32
pkg example.com/m/p, type T struct, embedded *Base
pkg example.com/m/p, var ErrX error
pkg example.com/m/p, var Table //deprecated
pkg example.com/m/p, var Table map[string][]uint8
`

var wantSub = `pkg example.com/m/sub, func Wrap(p.Level) *p.T
pkg example.com/m/sub, method (S) Blocked() bool
pkg example.com/m/sub, method (S) Multi() (int, int, error)
pkg example.com/m/sub, method (S) Pointer([]uint8) bool
pkg example.com/m/sub, method (S) Promoted()
pkg example.com/m/sub, method (S) Shared()
pkg example.com/m/sub, method (S) Value() int
pkg example.com/m/sub, type S struct
pkg example.com/m/sub, type S struct, embedded *p.T
`

func TestSnapshot(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, tree)
	files, skipped, err := snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(mapKeys(files)); !slices.Equal(got, []string{"m.txt", "sub.txt"}) {
		t.Fatalf("snapshot files %v, want [m.txt sub.txt]", got)
	}
	for name, want := range map[string]string{"m.txt": wantM, "sub.txt": wantSub} {
		got := strings.Join(files[name], "\n") + "\n"
		if got != want {
			t.Errorf("%s:\n%s\nwant:\n%s\ndiff:\n%s", name, got, want, lineDiff(want, got))
		}
	}
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "example.com/m/tools:") {
		t.Errorf("skipped %q, want the commands-only module example.com/m/tools", skipped)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

func TestSnapshotName(t *testing.T) {
	for _, c := range []struct{ root, mod, want string }{
		{"github.com/bloomfilters/bloom", "github.com/bloomfilters/bloom", "bloom.txt"},
		{"github.com/bloomfilters/bloom", "github.com/bloomfilters/bloom/redisbloom", "redisbloom.txt"},
		{"github.com/bloomfilters/bloom", "github.com/bloomfilters/bloom/a/b", "a-b.txt"},
	} {
		if got := snapshotName(c.root, c.mod); got != c.want {
			t.Errorf("snapshotName(%q, %q) = %q, want %q", c.root, c.mod, got, c.want)
		}
	}
}

func TestIsDeprecated(t *testing.T) {
	src := `package p

// A is fine.
func A() {}

// B is old.
//
// Deprecated: use A.
func B() {}

// C mentions Deprecated: mid-paragraph, which is no deprecation.
func C() {}

// Deprecated: use A.
func D() {}

/*
E is old.

Deprecated: use A.
*/
func E() {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"A": false, "B": true, "C": false, "D": true, "E": true}
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		if got := isDeprecated(fd.Doc); got != want[fd.Name.Name] {
			t.Errorf("isDeprecated(doc of %s) = %v, want %v", fd.Name.Name, got, want[fd.Name.Name])
		}
	}
}

// TestWrite checks -w (rewrite api/, remove stale snapshots, leave other
// files) and -o (write elsewhere, api/ untouched).
func TestWrite(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, tree)
	writeTree(t, root, map[string]string{
		"api/gone.txt":  "pkg example.com/m/gone, func F()\n",
		"api/m.txt":     "stale\n",
		"api/README.md": "kept\n",
	})
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-C", root, "-w"}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	entries, err := os.ReadDir(filepath.Join(root, "api"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"README.md", "m.txt", "sub.txt"}; !slices.Equal(names, want) {
		t.Errorf("api/ holds %v after -w, want %v", names, want)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "api", "m.txt")); string(got) != wantM {
		t.Errorf("api/m.txt after -w:\n%s", got)
	}
	if !strings.Contains(stderr.String(), "example.com/m/tools") {
		t.Errorf("stderr %q does not name the module left out", stderr.String())
	}

	out := filepath.Join(t.TempDir(), "o")
	writeTree(t, root, map[string]string{"p/more.go": "package p\n\nfunc More() {}\n"})
	if err := run([]string{"-C", root, "-o", out}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	got, _ := os.ReadFile(filepath.Join(out, "m.txt"))
	if want := "pkg example.com/m/p, func More()\n"; !strings.Contains(string(got), want) {
		t.Errorf("-o wrote m.txt without %q:\n%s", want, got)
	}
	if old, _ := os.ReadFile(filepath.Join(root, "api", "m.txt")); string(old) != wantM {
		t.Errorf("-o changed api/m.txt")
	}

	stdout.Reset()
	if err := run([]string{"-C", root}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "pkg example.com/m/p, const Answer = 42\n") ||
		!strings.HasSuffix(stdout.String(), wantSub) {
		t.Errorf("printed snapshot:\n%s", stdout.String())
	}
}

// A package that does not type-check fails the run, naming it: a snapshot
// never silently leaves out a package.
func TestTypeError(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, tree)
	writeTree(t, root, map[string]string{"p/bad.go": "package p\n\nfunc Bad() Undefined { return nil }\n"})
	_, _, err := snapshot(root)
	if err == nil || !strings.Contains(err.Error(), "example.com/m/p") {
		t.Fatalf("snapshot of a package that does not compile: err = %v, want one naming example.com/m/p", err)
	}
}

func TestFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"-w", "-o", "x"}, {"extra"}, {"-nosuchflag"}} {
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
