package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

const versionDoc = `Prints the version of the module bloom was built from (a release such as
v1.2.0 with go install ...@v1.2.0; a pseudo-version or "(devel)" when built
from a clone, with the commit if the build recorded it) and the Go version
and platform it was built with.
`

func runVersion(e *env, args []string) error {
	flags := newFlagSet(e, "version", versionDoc)
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 0, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, versionString())
	return err
}

// versionString returns "bloom VERSION [(commit REV[, modified])] PATH, GO OS/ARCH".
func versionString() string {
	version, path, commit := "unknown", "github.com/bloomfilters/bloom", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.Main.Path != "" {
			path = info.Main.Path
		}
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			commit = " (commit " + rev[:min(len(rev), 12)]
			if modified == "true" {
				commit += ", modified"
			}
			commit += ")"
		}
	}
	return fmt.Sprintf("bloom %s%s %s, %s %s/%s", version, commit, path, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
