//go:build (!amd64 || purego) && !race

package prefetch

import "unsafe"

// words loads base[i] for every i in idx and returns their OR, which the
// caller may ignore: since words is not inlined, the loads stay.
//
//go:noinline
func words(base *uint64, idx []uint64) uint64 {
	var or uint64
	for _, i := range idx {
		or |= *(*uint64)(unsafe.Add(unsafe.Pointer(base), i*8))
	}
	return or
}

// pointers loads *p for every p in ps and returns their OR, like words.
//
//go:noinline
func pointers(ps []*uint64) uint64 {
	var or uint64
	for _, p := range ps {
		or |= *p
	}
	return or
}
