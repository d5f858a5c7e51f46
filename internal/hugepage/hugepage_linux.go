package hugepage

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs Go on with them (x86-64, arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// advise applies MADV_HUGEPAGE to the whole 2 MiB pages inside w, which
// must be zero and referenced nowhere else, and then MADV_DONTNEED: the Go
// runtime zeroes reused heap memory by writing it, which faults in 4 KiB
// pages before advise runs, and the kernel would only merge those into huge
// pages slowly, in the background; discarded, they fault in again as huge
// pages, and zero, as anonymous memory does. An error (a kernel without
// transparent huge pages, say) leaves 4 KiB pages, which only costs speed,
// so it is ignored.
func advise(w []uint64) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(w)))
	end := start + uintptr(len(w))*8
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := end &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)
	if syscall.Madvise(b[lo-start:hi-start], syscall.MADV_HUGEPAGE) == nil {
		_ = syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED)
	}
}
