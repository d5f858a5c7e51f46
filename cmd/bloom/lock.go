package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// The lock of a dedup state is a file beside it, STATE.lock, locked for the
// whole run: loading, reading stdin and saving. The state itself cannot be
// the lock: a save renames a new file over it, so a run that opened it before
// the rename and one that opened it after would lock different files; and a
// state that does not exist yet has no file to lock. The lock file is never
// removed: a run that had opened it just before the removal would lock the
// removed file while the next run locked a new one.
//
// The lock is advisory, on the whole file, and the system drops it when the
// process ends however it ends, so kill -9 leaves no stale lock: flock(2)
// where syscall has it (Linux, macOS, the BSDs, illumos), fcntl(2) record
// locks on AIX and Solaris, and on Windows a handle that shares the file for
// reading only. Elsewhere (plan9, js, wasip1) dedup runs without a lock
// (lockSupported is false).

// errLockHeld is what openLocked returns when another process holds the lock.
var errLockHeld = errors.New("lock held")

// lockState takes the lock of path, a dedup state or a build output, which must be resolved
// through symbolic links so that every name for a state shares its lock. It
// fails at once if another run holds it. unlock releases it.
func lockState(path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := openLocked(name)
	if errors.Is(err, errLockHeld) {
		holder := ""
		if pid := lockHolder(name); pid > 0 {
			holder = fmt.Sprintf(", process %d,", pid)
		}
		return nil, fmt.Errorf("%s is in use by another bloom run%s which holds %s: wait for it to finish, then run again", path, holder, name)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write lock file: %w", err)
	}
	// Record who holds it, for the error above; only a message depends on it.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		f.Truncate(0)
		f.Close()
	}, nil
}

// lockHolder returns the process ID recorded in the lock file name, or 0.
func lockHolder(name string) int {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return 0
	}
	return pid
}
