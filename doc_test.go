package bloom

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// packageDoc returns the package's documentation as go doc sees it.
func packageDoc(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for name, f := range pkgs["bloom"].Files {
		files[name] = f
	}
	p, err := doc.NewFromFiles(fset, mapValues(files), "github.com/bloomfilters/bloom")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mapValues(m map[string]*ast.File) []*ast.File {
	var out []*ast.File
	for _, f := range m {
		out = append(out, f)
	}
	return out
}

// TestFormatIsDocumented is issue 13 item 6: the binary format was in
// comments that go doc does not show. docs/format.md, which the package doc
// links, must give every layout: magic, version, fields, byte order and
// checksum.
func TestFormatIsDocumented(t *testing.T) {
	spec, err := os.ReadFile("docs/format.md")
	if err != nil {
		t.Fatal(err)
	}
	d := string(spec)
	for _, want := range []string{
		`magic "BLMF"`, `magic "BLMS"`, "version, 1", "little-endian", "CRC-32C (Castagnoli)",
		"seed (murmur3)", "m, bits", "k, hash functions", "count, at most the number of set bits",
		"N, the number of sub-filters", "tightening ratio r", "base64",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("docs/format.md does not say %q", want)
		}
	}
	if pkg := packageDoc(t).Doc; !strings.Contains(pkg, "docs/format.md") {
		t.Error("the package doc does not link docs/format.md")
	}
}

// TestPublicDocsSpeakToUsers: the docs of exported names mention no test or
// benchmark of the package, no unexported camelCase function (such as
// anyHolds) and no measured speed-up; those belong in comments inside the
// code. AppendLocations' doc had all three.
func TestPublicDocsSpeakToUsers(t *testing.T) {
	p := packageDoc(t)
	internal := map[string]bool{}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`^[a-z]+[A-Z]`)
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil {
					continue
				}
				n := fn.Name.Name
				if strings.HasSuffix(name, "_test.go") && (strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Benchmark")) ||
					!fn.Name.IsExported() && camel.MatchString(n) {
					internal[n] = true
				}
			}
		}
	}
	measured := regexp.MustCompile(`\d+(\.\d+)?% (slower|faster)`)
	check := func(name, text string) {
		if m := measured.FindString(text); m != "" {
			t.Errorf("doc of %s gives a measurement: %q", name, m)
		}
		for _, w := range regexp.MustCompile(`\w+`).FindAllString(text, -1) {
			if internal[w] {
				t.Errorf("doc of %s mentions %s", name, w)
			}
		}
	}
	for _, f := range p.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range p.Types {
		check(typ.Name, typ.Doc)
		for _, f := range append(typ.Funcs, typ.Methods...) {
			check(typ.Name+"."+f.Name, f.Doc)
		}
	}
}
