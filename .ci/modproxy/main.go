// Command modproxy writes a file-based Go module proxy that serves the modules
// of this repository from the tree, each at the one version a release would
// tag, so that a module outside the repository can be built against them as
// after `go get` (GOPROXY=file://DIR; .ci/consumer-check does that):
//
//	go run ./.ci/modproxy -o DIR [-version vX.Y.Z] MODDIR...
//
// Each MODDIR holds a go.mod; the module it declares is written in the
// proxy's layout (https://go.dev/ref/mod#goproxy-protocol):
//
//	DIR/<module>/@v/list          the version, one line
//	DIR/<module>/@v/<v>.info      {"Version": v, "Time": the HEAD commit's time}
//	DIR/<module>/@v/<v>.mod       the module's go.mod
//	DIR/<module>/@v/<v>.zip       its files, each named "<module>@<v>/<path>"
//
// with upper-case letters of paths written "!" and the lower-case letter. The
// zip holds what a tag of the current tree would publish: the files git
// tracks or would track (git ls-files --cached --others --exclude-standard),
// minus those of nested modules (a directory with a go.mod of its own), of
// vendor directories, and anything that is not a regular file.
//
// The version is the one the modules require of one another: a release tags
// every module at one commit with one version, and sets the nested go.mod
// files' requires to it. modproxy fails if they name different versions, or a
// pseudo-version, which no tag makes; -version overrides it (then a require of
// any other version fails where the go command resolves it). It prints the
// version on standard output.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// goMod is what `go mod edit -json` reports of a go.mod.
type goMod struct {
	Module  struct{ Path string }
	Require []struct {
		Path     string
		Version  string
		Indirect bool
	}
}

// A module to publish: its directory and go.mod.
type module struct {
	dir string
	mod goMod
}

func readModule(dir string) (module, error) {
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return module{}, fmt.Errorf("go mod edit -json in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	m := module{dir: dir}
	if err := json.Unmarshal(out, &m.mod); err != nil {
		return module{}, fmt.Errorf("%s/go.mod: %v", dir, err)
	}
	return m, nil
}

var (
	semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	pseudoRE = regexp.MustCompile(`[-.]?[0-9]{14}-[0-9a-f]{12}$`)
	majorRE  = regexp.MustCompile(`/v([2-9]|[1-9][0-9]+)$`)
)

// checkVersion reports why v cannot be the tag of modPath, if it cannot.
func checkVersion(modPath, v string) error {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return fmt.Errorf("%s: %q is no semantic version tag (vX.Y.Z)", modPath, v)
	}
	if pseudoRE.MatchString(v) {
		return fmt.Errorf("%s: %s is a pseudo-version, which no tag makes", modPath, v)
	}
	major, _ := strconv.Atoi(m[1])
	want := 0
	if s := majorRE.FindStringSubmatch(modPath); s != nil {
		want, _ = strconv.Atoi(s[1])
	}
	if major >= 2 && major != want || major < 2 && want != 0 {
		return fmt.Errorf("%s: version %s needs the module path to end in /v%d", modPath, v, major)
	}
	return nil
}

// releaseVersion returns the one version the modules require of one
// another.
func releaseVersion(mods []module) (string, error) {
	ours := make(map[string]bool)
	for _, m := range mods {
		ours[m.mod.Module.Path] = true
	}
	var uses []string
	versions := make(map[string]bool)
	for _, m := range mods {
		for _, r := range m.mod.Require {
			if ours[r.Path] {
				uses = append(uses, fmt.Sprintf("%s/go.mod requires %s %s", m.dir, r.Path, r.Version))
				versions[r.Version] = true
			}
		}
	}
	switch len(versions) {
	case 0:
		return "", errors.New("no module requires another: give the version with -version")
	case 1:
		for v := range versions {
			return v, nil
		}
	}
	sort.Strings(uses)
	return "", fmt.Errorf("the modules require each other at different versions; a release tags all of them with one version and sets every require to it:\n\t%s", strings.Join(uses, "\n\t"))
}

// escape writes a module path or version as the proxy protocol does: each
// upper-case letter as "!" and its lower-case form.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// files returns the files (slash-separated, relative to dir) of the module
// in dir, as a tag of the tree would publish it.
func files(dir string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	nested := make(map[string]bool) // directory (relative, slash) -> holds a go.mod
	inNested := func(rel string) bool {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			has, ok := nested[d]
			if !ok {
				_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d), "go.mod"))
				has = err == nil
				nested[d] = has
			}
			if has {
				return true
			}
		}
		return false
	}
	var list []string
	seen := make(map[string]bool)
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" || seen[rel] {
			continue // git lists a file twice while a merge is unresolved
		}
		seen[rel] = true
		if inNested(rel) || rel == "vendor" || strings.HasPrefix(rel, "vendor/") || strings.Contains(rel, "/vendor/") {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		} else if err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			list = append(list, rel)
		}
	}
	sort.Strings(list)
	return list, nil
}

// publish writes module m at version v into the proxy directory out.
func publish(out string, m module, v string, when time.Time) error {
	modPath := m.mod.Module.Path
	dir := filepath.Join(out, filepath.FromSlash(escape(modPath)), "@v")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	list, err := files(m.dir)
	if err != nil {
		return err
	}
	if len(list) == 0 || !contains(list, "go.mod") {
		return fmt.Errorf("%s: git knows no go.mod in %s", modPath, m.dir)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, rel := range list {
		data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: modPath + "@" + v + "/" + rel, Method: zip.Deflate, Modified: when})
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v, when})
	if err != nil {
		return err
	}
	ev := escape(v)
	for name, data := range map[string][]byte{
		"list":       []byte(v + "\n"),
		ev + ".info": info,
		ev + ".mod":  gomod,
		ev + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o666); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}

// commitTime returns the committer time of HEAD in dir, the time a tag of it
// would report.
func commitTime(dir string) (time.Time, error) {
	cmd := exec.Command("git", "log", "-1", "--format=%cI")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("git log in %s: %v", dir, err)
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	return t.UTC(), err
}

func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("modproxy", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("o", "", "write the proxy into `dir` (required)")
	version := fl.String("version", "", "publish every module at `vX.Y.Z` (default: the version they require of one another)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || fl.NArg() == 0 {
		return errors.New("usage: modproxy -o DIR [-version vX.Y.Z] MODDIR [MODDIR ...]")
	}
	var mods []module
	seen := make(map[string]string)
	for _, dir := range fl.Args() {
		m, err := readModule(dir)
		if err != nil {
			return err
		}
		if other, dup := seen[m.mod.Module.Path]; dup {
			return fmt.Errorf("%s and %s both declare %s", other, dir, m.mod.Module.Path)
		}
		seen[m.mod.Module.Path] = dir
		mods = append(mods, m)
	}
	v := *version
	if v == "" {
		var err error
		if v, err = releaseVersion(mods); err != nil {
			return err
		}
	}
	when, err := commitTime(mods[0].dir)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := checkVersion(m.mod.Module.Path, v); err != nil {
			return err
		}
		if err := publish(*out, m, v, when); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, v)
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "modproxy:", err)
		}
		os.Exit(1)
	}
}
