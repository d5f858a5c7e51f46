package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/bloomfilters/bloom":  "github.com/bloomfilters/bloom",
		"github.com/PuerkitoBio/goquery": "github.com/!puerkito!bio/goquery",
		"v1.0.0-RC1":                     "v1.0.0-!r!c1",
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		path, v string
		ok      bool
	}{
		{"example.com/m", "v0.1.0", true},
		{"example.com/m", "v1.2.3", true},
		{"example.com/m", "v1.2.3-rc.1", true},
		{"example.com/m/v2", "v2.0.0", true},
		{"example.com/m", "v2.0.0", false},
		{"example.com/m/v2", "v1.0.0", false},
		{"example.com/m/v3", "v2.0.0", false},
		{"example.com/m", "v0.0.0-00010101000000-000000000000", false},
		{"example.com/m", "v0.1.1-0.20261206070000-eb9bebd12345", false},
		{"example.com/m", "0.1.0", false},
		{"example.com/m", "v0.1", false},
		{"example.com/m", "v01.1.0", false},
	} {
		err := checkVersion(c.path, c.v)
		if (err == nil) != c.ok {
			t.Errorf("checkVersion(%q, %q) = %v, want ok=%v", c.path, c.v, err, c.ok)
		}
	}
}

func req(path, v string) struct {
	Path     string
	Version  string
	Indirect bool
} {
	return struct {
		Path     string
		Version  string
		Indirect bool
	}{Path: path, Version: v}
}

func mod(dir, path string, requires ...struct {
	Path     string
	Version  string
	Indirect bool
}) module {
	m := module{dir: dir}
	m.mod.Module.Path = path
	m.mod.Require = requires
	return m
}

func TestReleaseVersion(t *testing.T) {
	root := mod(".", "example.com/m", req("example.com/other", "v1.0.0"))
	a := mod("a", "example.com/m/a", req("example.com/m", "v0.1.0"), req("example.com/other", "v1.2.0"))
	b := mod("b", "example.com/m/b", req("example.com/m", "v0.1.0"), req("example.com/m/a", "v0.1.0"))
	if v, err := releaseVersion([]module{root, a, b}); err != nil || v != "v0.1.0" {
		t.Errorf("releaseVersion = %q, %v; want v0.1.0", v, err)
	}
	bad := mod("b", "example.com/m/b", req("example.com/m", "v0.1.0"), req("example.com/m/a", "v0.0.0-00010101000000-000000000000"))
	_, err := releaseVersion([]module{root, a, bad})
	if err == nil || !strings.Contains(err.Error(), "b/go.mod requires example.com/m/a v0.0.0-00010101000000-000000000000") {
		t.Errorf("releaseVersion with two versions: err = %v, want one naming the odd require", err)
	}
	if _, err := releaseVersion([]module{root}); err == nil {
		t.Errorf("releaseVersion of modules that require none of each other succeeded")
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
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

// repo makes a git repository of two modules, example.com/r and
// example.com/r/n (which requires the root at nestedRequires and replaces it
// with ../ for development), and returns its directory.
func repo(t *testing.T, nestedRequires string) string {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".gitignore":       "*.out\n",
		"go.mod":           "module example.com/r\n\ngo 1.23\n",
		"r.go":             "package r\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n",
		"testdata/golden":  "bytes\n",
		"vendor/x/x.go":    "package x\n",
		"n/go.mod":         "module example.com/r/n\n\ngo 1.23\n\nrequire example.com/r " + nestedRequires + "\n\nreplace example.com/r => ../\n",
		"n/n.go":           "package n\n\nimport \"example.com/r\"\n\n// Hello greets twice.\nfunc Hello() string { return r.Hello() + \" \" + r.Hello() }\n",
		"n/sub/s.go":       "package sub\n",
		"internal/i/i.go":  "package i\n",
		"ignored.out":      "not published\n",
		"deleted.go":       "package r\n",
		"untracked_new.go": "package r\n\n// New is not committed yet.\nconst New = 1\n",
	})
	if err := os.Symlink("r.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".gitignore", "go.mod", "r.go", "testdata", "vendor", "n", "internal", "deleted.go", "link.go")
	git(t, dir, "commit", "-q", "-m", "init")
	if err := os.Remove(filepath.Join(dir, "deleted.go")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func zipNames(t *testing.T, file string) []string {
	t.Helper()
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names
}

// TestLayout checks the files of the proxy, and what the zips hold: the
// tracked and untracked files of each module, without the nested module,
// ignored, deleted and vendored files, or symbolic links.
func TestLayout(t *testing.T) {
	dir := repo(t, "v0.3.0")
	proxy := filepath.Join(t.TempDir(), "proxy")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", proxy, dir, filepath.Join(dir, "n")}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	if stdout.String() != "v0.3.0\n" {
		t.Errorf("printed %q, want the version v0.3.0", stdout.String())
	}
	for _, f := range []string{"example.com/r/@v/list", "example.com/r/@v/v0.3.0.info", "example.com/r/@v/v0.3.0.mod", "example.com/r/n/@v/v0.3.0.zip"} {
		if _, err := os.Stat(filepath.Join(proxy, f)); err != nil {
			t.Error(err)
		}
	}
	if got := zipNames(t, filepath.Join(proxy, "example.com/r/@v/v0.3.0.zip")); !slices.Equal(got, []string{
		"example.com/r@v0.3.0/.gitignore",
		"example.com/r@v0.3.0/go.mod",
		"example.com/r@v0.3.0/internal/i/i.go",
		"example.com/r@v0.3.0/r.go",
		"example.com/r@v0.3.0/testdata/golden",
		"example.com/r@v0.3.0/untracked_new.go",
	}) {
		t.Errorf("root zip holds %q", got)
	}
	if got := zipNames(t, filepath.Join(proxy, "example.com/r/n/@v/v0.3.0.zip")); !slices.Equal(got, []string{
		"example.com/r/n@v0.3.0/go.mod",
		"example.com/r/n@v0.3.0/n.go",
		"example.com/r/n@v0.3.0/sub/s.go",
	}) {
		t.Errorf("nested zip holds %q", got)
	}
	var info struct{ Version, Time string }
	data, _ := os.ReadFile(filepath.Join(proxy, "example.com/r/@v/v0.3.0.info"))
	if err := json.Unmarshal(data, &info); err != nil || info.Version != "v0.3.0" || info.Time == "" {
		t.Errorf("info %s: %+v, %v", data, info, err)
	}
	if got, _ := os.ReadFile(filepath.Join(proxy, "example.com/r/n/@v/v0.3.0.mod")); !strings.Contains(string(got), "require example.com/r v0.3.0") {
		t.Errorf("n's .mod is not its go.mod:\n%s", got)
	}
}

// consumer builds and runs, in a new module with no replace directive, a
// program that uses example.com/r/n at v0.3.0 from the proxy only (no
// network, an empty module cache), and returns its output and the error.
func consumer(t *testing.T, proxy string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.23\n\nrequire example.com/r/n v0.3.0\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/r/n\"\n)\n\nfunc main() { fmt.Println(n.Hello()) }\n",
	})
	cmd := exec.Command("go", "run", "-mod=mod", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOENV=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-modcacherw",
		"GOPROXY=file://"+filepath.ToSlash(proxy), // and nothing else: no network
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"),
		"GONOSUMDB=example.com", "GOPRIVATE=", "GONOPROXY=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// TestConsumer checks that the go command accepts the proxy: a module
// outside the repository builds against the published modules.
func TestConsumer(t *testing.T) {
	dir := repo(t, "v0.3.0")
	proxy := filepath.Join(t.TempDir(), "proxy")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", proxy, dir, filepath.Join(dir, "n")}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	out, err := consumer(t, proxy)
	if err != nil || out != "hello hello\n" {
		t.Fatalf("consumer: %v\n%s", err, out)
	}
}

// TestConsumerMissingVersion: every module published at v0.3.0 while the
// nested module requires the root at v0.4.0, which nobody published: the
// consumer's build fails on the missing version.
func TestConsumerMissingVersion(t *testing.T) {
	dir := repo(t, "v0.4.0")
	proxy := filepath.Join(t.TempDir(), "proxy")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", proxy, "-version", "v0.3.0", dir, filepath.Join(dir, "n")}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	out, err := consumer(t, proxy)
	if err == nil || !strings.Contains(out, "example.com/r@v0.4.0") {
		t.Fatalf("consumer of a module requiring a version nobody published: err = %v, output:\n%s", err, out)
	}
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{}, {"-o", t.TempDir()}, {t.TempDir()}, {"-nosuchflag"}} {
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
