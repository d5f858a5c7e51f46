// Package hugepage allocates the word arrays of large filters so that the
// operating system can back them with huge pages.
//
// A filter far larger than the caches is read at random: with 4 KiB pages
// nearly every access also misses the TLB, and the page walk adds to the
// cache miss. On Linux, Words asks the kernel (madvise MADV_HUGEPAGE, which
// takes effect where transparent huge pages are "always" or "madvise", the
// common default) to back the 2 MiB-aligned interior of a large slice with
// 2 MiB pages before its memory is first touched, so that a few hundred TLB
// entries cover a filter of several hundred MiB. Elsewhere, and where the
// kernel declines, Words is make.
package hugepage

import "unsafe"

// MinBytes is the size from which Words advises huge pages: below it the
// pages of a random-access array fit the TLB anyway, and an array with less
// than one 2 MiB page in its interior cannot use one.
const MinBytes = 8 << 20

// Words returns n zero words, like make([]uint64, n). If they take MinBytes
// or more, it asks the OS to back them with huge pages (see the package
// doc); the answer never changes what the slice holds.
func Words(n uint64) []uint64 {
	w := make([]uint64, n)
	if n*8 >= MinBytes {
		advise(w)
	}
	return w
}

// CacheLine is the alignment of AlignedWords, in bytes: one cache line.
const CacheLine = 64

// AlignedWords returns n zero words, like Words, whose first one starts a
// cache line: a blocked filter's words, so that each 512-bit block is one
// line. Large allocations are page-aligned anyway; small ones get up to 7
// words of slack in front.
func AlignedWords(n uint64) []uint64 {
	w := Words(n + CacheLine/8 - 1)
	off := (CacheLine - uintptr(unsafe.Pointer(&w[0]))%CacheLine) % CacheLine / 8
	return w[off : off+uintptr(n) : off+uintptr(n)]
}

// IsAligned reports whether w starts a cache line.
func IsAligned(w []uint64) bool {
	return len(w) == 0 || uintptr(unsafe.Pointer(&w[0]))%CacheLine == 0
}
