// Command apisnap prints the exported API of every module of the repository,
// one line per item, in the form of the Go repository's api/*.txt files:
//
//	pkg github.com/bloomfilters/bloom, func New(uint64, float64, ...Option) (*BloomFilter, error)
//	pkg github.com/bloomfilters/bloom, method (*BloomFilter) Blocked //deprecated
//	pkg github.com/bloomfilters/bloom, type Header struct, Blocked bool
//
// It lists, for every package of a module that is neither a command (package
// main) nor internal: functions, methods (of T and of *T, promoted ones
// included), types with their exported struct fields and interface methods,
// constants with their type and value, and variables with their type. A name
// whose doc comment has a paragraph starting with "Deprecated:" gets a second
// line ending in "//deprecated" (a method promoted from a type of another
// package is listed, but its deprecation is known only in that package's
// snapshot: imports are read from export data, which keeps no docs).
// Parameter names are left out (renaming one is
// no API change); byte and rune are written uint8 and int32, as the type
// checker knows them; other packages' types are qualified by package name.
// The lines of a module are sorted, so a snapshot changes only where the API
// does, and a diff of two snapshots is the API change.
//
// The snapshot of each module is api/<name>.txt at the repository root: bloom
// for the root module, the module path below it otherwise ("redisbloom" for
// github.com/bloomfilters/bloom/redisbloom). A module with no importable
// package (bench holds only commands) has no file. Run it from the root:
//
//	go run ./.ci/apisnap        print every module's API
//	go run ./.ci/apisnap -w     rewrite api/*.txt (and remove stale ones)
//	go run ./.ci/apisnap -o DIR write the files into DIR instead
//
// .ci/api-check writes them into a temporary directory and compares.
//
// Packages are type-checked from source for linux/amd64 (so that the snapshot
// is the same on every machine), their imports read from the export data that
// `go list -export` builds.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The platform the packages are type-checked for.
const goos, goarch = "linux", "amd64"

// goList runs `go list args...` in dir for linux/amd64 and decodes the JSON
// stream it prints into one value per package.
func goList[T any](dir string, args ...string) ([]T, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	var list []T
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var v T
		if err := dec.Decode(&v); err == io.EOF {
			return list, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list %s in %s: %v", strings.Join(args, " "), dir, err)
		}
		list = append(list, v)
	}
}

type listError struct{ Err string }

type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Error      *listError
	DepsErrors []*listError
}

// isInternal reports whether importPath has an element "internal": only the
// module itself can import such a package.
func isInternal(importPath string) bool {
	return slices.Contains(strings.Split(importPath, "/"), "internal")
}

// moduleAPI returns the sorted API lines of the module in dir (a directory
// holding a go.mod), or none if it has no importable package.
func moduleAPI(dir string) ([]string, error) {
	pkgs, err := goList[listedPackage](dir, "-e", "-json=ImportPath,Name,Dir,GoFiles,CgoFiles,Error,DepsErrors", "./...")
	if err != nil {
		return nil, err
	}
	var api []*listedPackage
	for _, p := range pkgs {
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Name == "main" || isInternal(p.ImportPath) || len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		api = append(api, &p)
	}
	if len(api) == 0 {
		return nil, nil
	}

	// The export data of everything they import, built by the go command.
	args := []string{"-e", "-export", "-deps", "-json=ImportPath,Export,Error"}
	for _, p := range api {
		args = append(args, p.ImportPath)
	}
	deps, err := goList[listedPackage](dir, args...)
	if err != nil {
		return nil, err
	}
	export := make(map[string]string)
	for _, d := range deps {
		if d.Error != nil {
			return nil, fmt.Errorf("package %s: %s", d.ImportPath, d.Error.Err)
		}
		export[d.ImportPath] = d.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})

	features := make(map[string]bool)
	for _, p := range api {
		var files []*ast.File
		for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		conf := types.Config{
			Importer:         imp,
			Sizes:            types.SizesFor("gc", goarch),
			IgnoreFuncBodies: true,
			FakeImportC:      true,
		}
		tpkg, err := conf.Check(p.ImportPath, fset, files, nil)
		if err != nil {
			return nil, fmt.Errorf("type-checking %s: %v", p.ImportPath, err)
		}
		w := &walker{pkg: tpkg, deprecated: deprecatedPositions(files), features: features}
		w.walk()
	}
	lines := make([]string, 0, len(features))
	for f := range features {
		lines = append(lines, f)
	}
	sort.Strings(lines)
	return lines, nil
}

// isDeprecated reports whether a doc comment has a paragraph that starts
// with "Deprecated:", the convention go/doc, gopls and staticcheck follow.
func isDeprecated(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, p := range strings.Split(doc.Text(), "\n\n") {
		if strings.HasPrefix(strings.TrimSpace(p), "Deprecated:") {
			return true
		}
	}
	return false
}

// embeddedIdent returns the identifier that names an embedded field of type
// x (T, *T, pkg.T, T[A]): the position go/types gives the field.
func embeddedIdent(x ast.Expr) *ast.Ident {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.SelectorExpr:
			return e.Sel
		case *ast.Ident:
			return e
		default:
			return nil
		}
	}
}

// deprecatedPositions returns the positions of the names declared with a
// "Deprecated:" doc: functions, methods, types, constants, variables, struct
// fields and interface methods. A doc on a parenthesized group (type ( ... ))
// covers every name in it.
func deprecatedPositions(files []*ast.File) map[token.Pos]bool {
	dep := make(map[token.Pos]bool)
	mark := func(id *ast.Ident) {
		if id != nil {
			dep[id.Pos()] = true
		}
	}
	var fields func(list *ast.FieldList)
	fields = func(list *ast.FieldList) {
		if list == nil {
			return
		}
		for _, f := range list.List {
			if isDeprecated(f.Doc) {
				for _, id := range f.Names {
					mark(id)
				}
				if len(f.Names) == 0 {
					mark(embeddedIdent(f.Type))
				}
			}
			typeFields(f.Type, fields)
		}
	}
	for _, file := range files {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if isDeprecated(d.Doc) {
					mark(d.Name)
				}
			case *ast.GenDecl:
				group := isDeprecated(d.Doc)
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if group || isDeprecated(s.Doc) {
							mark(s.Name)
						}
						typeFields(s.Type, fields)
					case *ast.ValueSpec:
						if group || isDeprecated(s.Doc) {
							for _, id := range s.Names {
								mark(id)
							}
						}
					}
				}
			}
		}
	}
	return dep
}

// typeFields calls fields on the field list of a struct or interface type
// expression (its fields' or methods' docs).
func typeFields(x ast.Expr, fields func(*ast.FieldList)) {
	switch t := x.(type) {
	case *ast.StructType:
		fields(t.Fields)
	case *ast.InterfaceType:
		fields(t.Methods)
	}
}

// A walker collects the API lines of one type-checked package.
type walker struct {
	pkg        *types.Package
	deprecated map[token.Pos]bool
	features   map[string]bool
}

func (w *walker) emit(format string, args ...any) {
	w.features["pkg "+w.pkg.Path()+", "+fmt.Sprintf(format, args...)] = true
}

func (w *walker) isDeprecated(obj types.Object) bool { return w.deprecated[obj.Pos()] }

func (w *walker) walk() {
	scope := w.pkg.Scope()
	for _, name := range scope.Names() {
		if !token.IsExported(name) {
			continue
		}
		switch obj := scope.Lookup(name).(type) {
		case *types.Const:
			if w.isDeprecated(obj) {
				w.emit("const %s //deprecated", name)
			}
			w.emit("const %s %s", name, w.typeString(obj.Type()))
			if short, exact := obj.Val().String(), obj.Val().ExactString(); short == exact {
				w.emit("const %s = %s", name, short)
			} else {
				w.emit("const %s = %s  // %s", name, short, exact)
			}
		case *types.Var:
			if w.isDeprecated(obj) {
				w.emit("var %s //deprecated", name)
			}
			w.emit("var %s %s", name, w.typeString(obj.Type()))
		case *types.Func:
			if w.isDeprecated(obj) {
				w.emit("func %s //deprecated", name)
			}
			w.emit("func %s%s", name, w.signature(obj.Type().(*types.Signature)))
		case *types.TypeName:
			w.walkType(obj)
		}
	}
}

func (w *walker) walkType(obj *types.TypeName) {
	name := obj.Name()
	if w.isDeprecated(obj) {
		w.emit("type %s //deprecated", name)
	}
	if obj.IsAlias() {
		w.emit("type %s = %s", name, w.typeString(types.Unalias(obj.Type())))
		return
	}
	named := obj.Type().(*types.Named)
	decl := name
	if tp := named.TypeParams(); tp != nil {
		decl += w.typeParams(tp, true)
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("type %s struct", decl)
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			// "F T", or "embedded T"; deprecated: "F //deprecated",
			// "embedded T //deprecated".
			name, item := f.Name(), f.Name()+" "+w.typeString(f.Type())
			if f.Embedded() {
				name = "embedded " + w.typeString(f.Type())
				item = name
			}
			if w.isDeprecated(f) {
				w.emit("type %s struct, %s //deprecated", decl, name)
			}
			w.emit("type %s struct, %s", decl, item)
		}
	case *types.Interface:
		w.walkInterface(decl, u)
		return // its methods are the interface's
	default:
		w.emit("type %s %s", decl, w.typeString(u))
	}

	// The methods of T, then those only *T has; promoted methods of
	// embedded fields are part of T's API and listed too.
	recv := name
	if tp := named.TypeParams(); tp != nil {
		recv += w.typeParams(tp, false)
	}
	value := make(map[string]bool)
	for _, ptr := range []bool{false, true} {
		var t types.Type = named
		r := recv
		if ptr {
			t, r = types.NewPointer(named), "*"+recv
		}
		mset := types.NewMethodSet(t)
		for i := range mset.Len() {
			m := mset.At(i).Obj().(*types.Func)
			if !m.Exported() || value[m.Name()] {
				continue
			}
			if !ptr {
				value[m.Name()] = true
			}
			if w.isDeprecated(m) {
				w.emit("method (%s) %s //deprecated", r, m.Name())
			}
			w.emit("method (%s) %s%s", r, m.Name(), w.signature(m.Type().(*types.Signature)))
		}
	}
}

// walkInterface lists an interface's methods, and the set of their names
// unless it has unexported ones (then only this package can implement it,
// and adding a method is no breaking change: "unexported methods" says so).
func (w *walker) walkInterface(decl string, t *types.Interface) {
	var names []string
	complete := true
	mset := types.NewMethodSet(t)
	for i := range mset.Len() {
		m := mset.At(i).Obj().(*types.Func)
		if !m.Exported() {
			complete = false
			continue
		}
		names = append(names, m.Name())
		if w.isDeprecated(m) {
			w.emit("type %s interface, %s //deprecated", decl, m.Name())
		}
		w.emit("type %s interface, %s%s", decl, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
	if emb := w.embeddedTerms(t); len(emb) > 0 {
		// A constraint: its type set is part of its API.
		names = append(names, emb...)
	}
	if !complete {
		w.emit("type %s interface, unexported methods", decl)
		return
	}
	sort.Strings(names)
	if len(names) == 0 {
		w.emit("type %s interface {}", decl)
		return
	}
	w.emit("type %s interface { %s }", decl, strings.Join(names, ", "))
}

// embeddedTerms returns the type-set terms (~int | string) of a constraint
// interface, sorted; embedded interfaces contribute their methods elsewhere.
func (w *walker) embeddedTerms(t *types.Interface) []string {
	var terms []string
	for i := range t.NumEmbeddeds() {
		switch e := t.EmbeddedType(i).(type) {
		case *types.Union:
			var b strings.Builder
			for j := range e.Len() {
				if j > 0 {
					b.WriteString(" | ")
				}
				if e.Term(j).Tilde() {
					b.WriteByte('~')
				}
				b.WriteString(w.typeString(e.Term(j).Type()))
			}
			terms = append(terms, b.String())
		case *types.Interface:
			terms = append(terms, w.embeddedTerms(e)...)
		default:
			if _, ok := e.Underlying().(*types.Interface); !ok {
				terms = append(terms, w.typeString(e))
			}
		}
	}
	sort.Strings(terms)
	return terms
}

func (w *walker) typeString(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *walker) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		s := t.Name()
		switch t.Kind() {
		case types.UnsafePointer:
			s = "unsafe.Pointer"
		case types.UntypedBool:
			s = "ideal-bool"
		case types.UntypedInt:
			s = "ideal-int"
		case types.UntypedRune:
			s = "ideal-char"
		case types.UntypedFloat:
			s = "ideal-float"
		case types.UntypedComplex:
			s = "ideal-complex"
		case types.UntypedString:
			s = "ideal-string"
		case types.Byte:
			s = "uint8"
		case types.Rune:
			s = "int32"
		}
		b.WriteString(s)
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Struct:
		b.WriteString("struct")
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Interface:
		var names []string
		for i := range t.NumMethods() {
			names = append(names, t.Method(i).Name())
		}
		sort.Strings(names)
		names = append(names, w.embeddedTerms(t)...)
		if len(names) == 0 {
			b.WriteString("interface{}")
		} else {
			b.WriteString("interface{ " + strings.Join(names, ", ") + " }")
		}
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			b.WriteString("chan<- ")
		case types.RecvOnly:
			b.WriteString("<-chan ")
		default:
			b.WriteString("chan ")
		}
		w.writeType(b, t.Elem())
	case *types.Alias:
		// any is interface{}: spelling a type through an alias or
		// not is no API change.
		w.writeType(b, types.Unalias(t))
	case *types.Named:
		w.writeTypeName(b, t.Obj(), t.TypeArgs())
	case *types.TypeParam:
		// Renaming a type parameter changes nothing for callers.
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Tuple:
		b.WriteString(w.tuple(t, false))
	default:
		panic(fmt.Sprintf("apisnap: unexpected type %T (%v)", t, t))
	}
}

func (w *walker) writeTypeName(b *strings.Builder, obj *types.TypeName, args *types.TypeList) {
	if pkg := obj.Pkg(); pkg != nil && pkg.Path() != w.pkg.Path() {
		b.WriteString(pkg.Name() + ".")
	}
	b.WriteString(obj.Name())
	if args.Len() > 0 {
		b.WriteByte('[')
		for i := range args.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			w.writeType(b, args.At(i))
		}
		b.WriteByte(']')
	}
}

func (w *walker) typeParams(list *types.TypeParamList, constraints bool) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range list.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.writeType(&b, list.At(i))
		if constraints {
			b.WriteByte(' ')
			w.writeType(&b, list.At(i).Constraint())
		}
	}
	b.WriteByte(']')
	return b.String()
}

// signature writes a function's type parameters, parameter types and result
// types: "(uint64, float64, ...Option) (*BloomFilter, error)".
func (w *walker) signature(sig *types.Signature) string {
	s := ""
	if tp := sig.TypeParams(); tp != nil {
		s = w.typeParams(tp, true)
	}
	s += w.tuple(sig.Params(), sig.Variadic())
	switch r := sig.Results(); r.Len() {
	case 0:
	case 1:
		s += " " + w.typeString(r.At(0).Type())
	default:
		s += " " + w.tuple(r, false)
	}
	return s
}

func (w *walker) tuple(t *types.Tuple, variadic bool) string {
	var b strings.Builder
	b.WriteByte('(')
	for i := range t.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			b.WriteString("...")
			typ = typ.(*types.Slice).Elem()
		}
		w.writeType(&b, typ)
	}
	b.WriteByte(')')
	return b.String()
}

// modulePath returns the module path declared by dir/go.mod.
func modulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`+"`"), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
}

// modules returns the directories below root (root included) that hold a
// go.mod, skipping testdata, vendor and directories whose name starts with
// "." or "_", as the go command does for ./...
func modules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); p != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			dirs = append(dirs, p)
		}
		return nil
	})
	return dirs, err
}

// snapshotName returns the file name of a module's snapshot: the last element
// of the root module's path for the root, the path below it otherwise, with
// "/" written "-".
func snapshotName(rootPath, modPath string) string {
	if modPath == rootPath {
		return path.Base(rootPath) + ".txt"
	}
	rel := strings.TrimPrefix(modPath, rootPath+"/")
	return strings.ReplaceAll(rel, "/", "-") + ".txt"
}

// snapshot returns the snapshot of every module under root with an
// importable package, keyed by file name, and notes on the modules left out.
func snapshot(root string) (files map[string][]string, skipped []string, err error) {
	dirs, err := modules(root)
	if err != nil {
		return nil, nil, err
	}
	rootPath, err := modulePath(root)
	if err != nil {
		return nil, nil, err
	}
	files = make(map[string][]string)
	for _, dir := range dirs {
		modPath, err := modulePath(dir)
		if err != nil {
			return nil, nil, err
		}
		lines, err := moduleAPI(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("module %s: %v", modPath, err)
		}
		if len(lines) == 0 {
			skipped = append(skipped, modPath+": no package to import (only commands and internal packages), no snapshot")
			continue
		}
		name := snapshotName(rootPath, modPath)
		if _, dup := files[name]; dup {
			return nil, nil, fmt.Errorf("two modules would write %s", name)
		}
		files[name] = lines
	}
	return files, skipped, nil
}

// write writes the snapshot files into dir; with prune, it removes the
// *.txt files of dir that are no snapshot any more.
func write(dir string, files map[string][]string, prune bool) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if prune {
		old, err := filepath.Glob(filepath.Join(dir, "*.txt"))
		if err != nil {
			return err
		}
		for _, f := range old {
			if _, ok := files[filepath.Base(f)]; !ok {
				if err := os.Remove(f); err != nil {
					return err
				}
			}
		}
	}
	for name, lines := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o666); err != nil {
			return err
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("apisnap", flag.ContinueOnError)
	fl.SetOutput(stderr)
	rewrite := fl.Bool("w", false, "rewrite the snapshots in api/ at the repository root")
	outDir := fl.String("o", "", "write the snapshots into `dir`")
	root := fl.String("C", ".", "the repository root: the `dir` of the root module's go.mod")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("apisnap takes no arguments (got %q)", fl.Args())
	}
	if *rewrite && *outDir != "" {
		return errors.New("apisnap: -w and -o exclude each other")
	}
	files, skipped, err := snapshot(*root)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintln(stderr, "apisnap:", s)
	}
	switch {
	case *rewrite:
		return write(filepath.Join(*root, "api"), files, true)
	case *outDir != "":
		return write(*outDir, files, false)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, l := range files[name] {
			fmt.Fprintln(stdout, l)
		}
	}
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
}
