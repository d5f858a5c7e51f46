//go:build !purego

package prefetch

// words issues PREFETCHT0 for base[i] for every i in idx.
//
//go:noescape
func words(base *uint64, idx []uint64) uint64

// pointers issues PREFETCHT0 for *p for every p in ps.
//
//go:noescape
func pointers(ps []*uint64) uint64
