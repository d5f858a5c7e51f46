package mmap

import (
	"errors"
	"os"
	"syscall"
)

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14), which package syscall
// predates.
const madvPopulateRead = 22

// madvFlags are the values of madvise's advice
// (include/uapi/asm-generic/mman-common.h).
var madvFlags = [...]int{
	Normal:     syscall.MADV_NORMAL,
	Sequential: syscall.MADV_SEQUENTIAL,
	Random:     syscall.MADV_RANDOM,
	WillNeed:   syscall.MADV_WILLNEED,
	HugePages:  syscall.MADV_HUGEPAGE,
	Populate:   madvPopulateRead,
}

// advise applies a to data with madvise. EINVAL for HugePages (a kernel
// without transparent huge pages) or Populate (a kernel before 5.14) means
// the kernel lacks the advice, which then does nothing.
func advise(data []byte, a Advice) error {
	err := syscall.Madvise(data, madvFlags[a])
	if errors.Is(err, syscall.EINVAL) && (a == Populate || a == HugePages) {
		return nil
	}
	return err
}

// dropCache drops fd's unmapped clean pages from the page cache.
func dropCache(fd *os.File) error {
	const fadvDontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, fd.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
