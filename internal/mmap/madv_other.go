//go:build !linux

package mmap

import "os"

// advise does nothing: the advice is Linux's here. (macOS has madvise, but
// package syscall does not offer it there, and of the advice only Random
// and WillNeed would apply.)
func advise([]byte, Advice) error { return nil }

// dropCache does nothing: posix_fadvise is Linux's here.
func dropCache(*os.File) error { return nil }
