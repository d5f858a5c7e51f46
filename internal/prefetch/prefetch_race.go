//go:build (!amd64 || purego) && race

package prefetch

import (
	"sync/atomic"
	"unsafe"
)

// With the race detector, the pure-Go loads are atomic: the words they read
// may be set at the same time by a Concurrent filter's atomic ORs, and a plain
// load beside them is a data race the detector reports, in the programs of
// users on arm64 who run their tests with -race (the value is thrown away, so
// the plain load of prefetch_other.go is harmless without the detector).

// words loads base[i] for every i in idx, atomically, and returns their OR,
// like the words of prefetch_other.go.
//
//go:noinline
func words(base *uint64, idx []uint64) uint64 {
	var or uint64
	for _, i := range idx {
		or |= atomic.LoadUint64((*uint64)(unsafe.Add(unsafe.Pointer(base), i*8)))
	}
	return or
}

// pointers loads *p for every p in ps, atomically, and returns their OR.
//
//go:noinline
func pointers(ps []*uint64) uint64 {
	var or uint64
	for _, p := range ps {
		or |= atomic.LoadUint64(p)
	}
	return or
}
