//go:build !linux

package hugepage

// advise does nothing: only Linux has transparent huge pages that a process
// can ask for per range.
func advise([]uint64) {}
