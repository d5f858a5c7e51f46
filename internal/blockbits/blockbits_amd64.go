//go:build !purego

package blockbits

// Native reports whether Add and Test run the assembly: on CPUs with
// AVX-512F and AVX-512CD whose operating system saves the AVX-512 state.
// Tests may set it to false to take the callers' Go paths.
var Native = hasAVX512()

// hasAVX512 reports whether CPUID says AVX-512F and AVX-512CD and XGETBV
// says the OS saves the opmask and ZMM registers.
func hasAVX512() bool

// Add sets the positions of the key in blk (see the package doc) and
// reports whether they were all set before, in present, if its first 7+n1
// candidates are distinct; otherwise it changes nothing and returns
// ok = false. n1 must be 1 or 2. It needs Native.
//
//go:noescape
func Add(blk *[8]uint64, h2, n1 uint64) (present, ok bool)

// Test reports, for a key whose seven candidates from h2 are set in blk,
// whether its next n1 candidates are set too (n1 = 1 or 2): false when one
// is not (ok = true: the key is absent whether or not its candidates
// repeat); true, with ok = true, when they are and the first 7+n1
// candidates are distinct; ok = false when they are set but repeat. It
// needs Native.
//
//go:noescape
func Test(blk *[8]uint64, h2, n1 uint64) (present, ok bool)

// TestFields reports, for 2 <= k <= 7, whether blk holds the key whose
// hash has h2 as its second half, if its first k candidates, the fields of
// h2, are distinct (the usual key): false, with ok = true, when one of
// their bits is clear (the key is absent whether or not they repeat); true,
// with ok = true, when all are set and they are distinct; ok = false when
// all are set and they repeat. It needs Native.
//
//go:noescape
func TestFields(blk *[8]uint64, h2, k uint64) (present, ok bool)

// AddFields sets, for 2 <= k <= 7, the positions of the key whose hash has
// h2 as its second half in blk, and reports whether they were all set
// before, in present, if its first k candidates, the fields of h2, are
// distinct; otherwise it changes nothing and returns ok = false. It needs
// Native.
//
//go:noescape
func AddFields(blk *[8]uint64, h2, k uint64) (present, ok bool)

// TestAll reports whether blk holds the key whose hash has h2 as its second
// half, with 7+n1 positions (n1 = 1 or 2), if its first 7+n1 candidates
// are distinct: false, with ok = true, when one of their bits is clear (the
// key is absent whether or not they repeat); true, with ok = true, when
// all are set and they are distinct; ok = false when all are set and they
// repeat. Unlike Test, it tests the seven fields of h2 too. It needs Native.
//
//go:noescape
func TestAll(blk *[8]uint64, h2, n1 uint64) (present, ok bool)
