package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/bits-and-blooms/bitset"
	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/mmap"
	"github.com/bloomfilters/bloom/internal/murmur"
	"github.com/bloomfilters/bloom/internal/window"
)

// View is a read-only filter over the bytes of an encoding, of a
// BloomFilter or a ScalableBloomFilter, in any format version: a filter
// that a file mapping, an embedded string or any []byte already holds,
// answered where it lies, without decoding it into the heap. NewView and
// NewViewString make one over bytes in memory, Open over a file.
//
// A View answers Test, TestString, TestHash and their batch forms exactly as
// the filter decoded from the same bytes would, with the same meaning of
// true and false. It never writes the bytes, and is safe for any number of
// concurrent readers. It never copies the bits of a version-3 encoding
// (what MarshalBinary and WriteTo write) that starts on a multiple of 8
// bytes, as a file mapping, a go:embed []byte and large heap slices do:
// then its bits start on a cache line if the encoding starts on one. A
// misaligned encoding (a go:embed string can start at any address), and
// every encoding on a big-endian machine, costs one aligned copy of its
// bits; so do the sub-filters of a ScalableBloomFilter in version 1 or 2
// that do not lie on a multiple of 8 bytes. Copied reports whether there
// was a copy. Versions 1 and 2 put the bits at offset 48, so the blocks of
// a blocked filter in them straddle cache lines: saving it again writes
// version 3.
//
// Before its first answer a View checks the headers, the length and, unless
// SkipBodyCheck is given, every checksum of the bits (in parallel, for
// version 3): a corrupt or truncated encoding is an error wrapping ErrCorrupt
// or io.ErrUnexpectedEOF, never an answer. Unlike a decoder, it does not
// count the bits set, so Count is the count recorded.
//
// Close releases what Open mapped. A call after Close panics with a message
// that says so; Close must not run concurrently with other calls, and the
// bytes given to NewView must not change while the View is used. A View
// from Open reads its file until Close: replacing the file by rename is
// safe, truncating it makes the calls that read past its new end panic with
// an error wrapping ErrFileChanged (recover catches it), and rewriting it
// in place changes the answers silently (see Open).
type View struct {
	f       *BloomFilter         // the filter of a BloomFilter's encoding, or nil
	s       *ScalableBloomFilter // the filter of a ScalableBloomFilter's encoding, or nil
	closed  atomic.Bool
	file    *mmap.File // what Open mapped or read
	guarded bool       // file is a mapping whose reads are guarded (see endGuard)
	path    string     // the path given to Open
	copied  bool
	ver     int
}

// ErrFileChanged is wrapped by the error a View from Open panics with when
// a read of its file faults: the file has become shorter than when Open
// mapped it, or its pages can no longer be read (see Open). After recover,
// errors.Is(r.(error), ErrFileChanged) matches it. Open returns an error
// wrapping it for a fault during its checks.
var ErrFileChanged = errors.New("bloom: the file under a View changed")

// ViewOption configures NewView, NewViewString and Open.
type ViewOption struct{ skipBody, skipGuard bool }

// SkipBodyCheck makes a View check only the headers and the length of the
// encoding, not the checksums of its bits, so that opening a large file
// reads only its first page and the pages its answers touch (a 1.2 GB
// filter opens in milliseconds instead of about a second). The risk is the
// one the checksums guard against: a bit cleared by a damaged disk, a torn
// copy or a truncated write that kept the length makes the View answer
// "absent" for keys that were added (false negatives), and a bit set makes
// it answer "present" more often; nothing reports it. Use it for bytes
// whose integrity is known otherwise: embedded in the program, checked once
// after download, or on a file system that checksums its blocks.
func SkipBodyCheck() ViewOption { return ViewOption{skipBody: true} }

// skipBody reports whether opts hold SkipBodyCheck.
func skipBody(opts []ViewOption) bool {
	for _, o := range opts {
		if o.skipBody {
			return true
		}
	}
	return false
}

// SkipFaultGuard makes a View from Open read its file without turning a
// fault into a panic: a file truncated under the View then kills the
// process (SIGBUS), which recover cannot catch. In exchange a single Test,
// TestString or TestHash costs 4 to 10 ns less: the guard added 7-19% to
// a Test at 10^6 and 10^7 keys, and nothing measurable (under 0.3%) to
// TestMany in batches of 1024. Use it only for a file that is replaced by
// rename and never truncated or copied over in place. Views of bytes in
// memory (NewView) are never guarded, and a fault while Open checks the
// file is an error either way.
func SkipFaultGuard() ViewOption {
	// The figures: BenchmarkViewFault, guarded and not side by side.
	return ViewOption{skipGuard: true}
}

// skipGuard reports whether opts hold SkipFaultGuard.
func skipGuard(opts []ViewOption) bool {
	for _, o := range opts {
		if o.skipGuard {
			return true
		}
	}
	return false
}

const errClosedView = "bloom: use of a View after Close"

// littleEndian reports whether words can be read where they lie in an
// encoding, which is little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// NewView returns a View over data, the encoding of a BloomFilter or a
// ScalableBloomFilter, after checking it (see View). data must hold exactly
// one encoding; the View reads it for as long as it is used, so data must
// not change. It returns an error wrapping ErrCorrupt, or
// io.ErrUnexpectedEOF, for anything else, and never panics.
//
// A View answers at the speed of the memory that holds data. At 10^8 keys,
// bytes in 2 MiB pages answered Test and TestMany within 1.03x of the
// filter decoded with Read (which asks for such pages); a large []byte from
// make sits in 4 KiB pages where the system gives huge pages only on
// request (Linux's transparent_hugepage=madvise, the Go heap does not ask),
// and answered 1.3 to 1.5x slower. For a big filter queried at random,
// prefer Open on a file, or Read (docs/mapping.md).
func NewView(data []byte, opts ...ViewOption) (*View, error) {
	if len(data) >= len(window.Magic) && string(data[:len(window.Magic)]) == window.Magic {
		return nil, format.Corrupt("a WindowFilter's encoding: a View reads those of BloomFilter and ScalableBloomFilter; use ReadWindow")
	}
	e, err := format.Locate(data, !skipBody(opts))
	if err != nil {
		return nil, err
	}
	v := &View{ver: e.Version}
	filters := make([]*BloomFilter, len(e.Filters))
	for i, l := range e.Filters {
		words, copied := wordsAt(data, l.Words, l.Header.Words(), l.Blocked)
		v.copied = v.copied || copied
		filters[i] = &BloomFilter{
			m: l.M, k: l.K, seed: l.Seed, set: bitset.FromWithLength(uint(l.M), words), words: words,
			count: l.Count, capacity: l.Capacity, errorRate: l.ErrorRate, blocked: l.Blocked,
		}
	}
	if !e.Scalable {
		v.f = filters[0]
		return v, nil
	}
	var k scalableSink
	if err := k.Params(e.Params); err != nil {
		return nil, err
	}
	for i, f := range filters {
		if err := k.add(i, f); err != nil {
			return nil, err
		}
	}
	if err := k.done(nil); err != nil {
		return nil, err
	}
	v.s = k.d
	return v, nil
}

// wordsAt returns the n little-endian words at offset off of data: those
// bytes themselves if they lie on a multiple of 8 and the machine is
// little-endian, otherwise a copy (cache-line aligned for the blocked
// layout), and whether it copied.
func wordsAt(data []byte, off, n uint64, isBlocked bool) ([]uint64, bool) {
	b := data[off : off+8*n]
	if p := unsafe.Pointer(unsafe.SliceData(b)); littleEndian && uintptr(p)%8 == 0 {
		return unsafe.Slice((*uint64)(p), n), false
	}
	words := hugepage.Words(n)
	if isBlocked {
		words = hugepage.AlignedWords(n)
	}
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return words, true
}

// NewViewString is NewView over the bytes of data, such as a filter
// embedded with go:embed into a string variable, without copying them
// unless they are misaligned (see View).
func NewViewString(data string, opts ...ViewOption) (*View, error) {
	return NewView(bytesOf(data), opts...)
}

// Open returns a View over the file at path, which holds one encoding. On
// Linux and macOS it maps the file read-only and shared: opening reads the
// pages the checks read (the first one only, with SkipBodyCheck), an answer
// the pages it touches, and processes that open the same file share its
// pages in the page cache. Elsewhere it reads the file into memory. Close
// unmaps it.
//
// A mapped View reads the file for as long as it is open, so what happens
// to the file matters:
//   - Replacing it by rename (as bloom build -o does, or mv of a new file
//     over it) is safe: the View keeps reading the file it opened.
//   - Truncating it (> file, a cp or a write that truncates first) makes a
//     read past its new end fault: the call of the View panics with an
//     error wrapping ErrFileChanged, which recover catches; the process
//     survives (unless SkipFaultGuard was given). The bytes past the new
//     end in its last page read as zeros, so answers may also change before
//     a read faults.
//   - Rewriting it in place at the same length changes the answers
//     silently: the checks ran at Open only.
//
// A fault while Open checks the file is an error wrapping ErrFileChanged.
// A file read into memory (not Linux or macOS) is immune to all three.
//
// Queries cost what the pages that hold the file cost: on Linux a file the
// kernel caches in 2 MiB pages (ext4 does for a file read back from disk,
// tmpfs mounted with huge=always) answers as fast as a filter loaded with
// Read, one this machine has just written, cached in small pages, about 2
// to 4 times slower per query until it is read back (docs/mapping.md has the
// measurements and what to do). With SkipBodyCheck, Open asks for 2 MiB
// pages (MADV_HUGEPAGE): the first answer from a cold 1.2 GB file then took
// 1.6 ms instead of 14.7 ms.
func Open(path string, opts ...ViewOption) (*View, error) {
	var advice []mmap.Advice
	if skipBody(opts) {
		// Not with the body check: huge pages made a cold check slower
		// (675 ms instead of 295 ms, bench's BenchmarkOpenFirstQuery).
		advice = append(advice, mmap.HugePages)
	}
	file, err := mmap.Open(path, advice...)
	if err != nil {
		return nil, err
	}
	v, err := newFileView(file, path, opts)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// newFileView is NewView over file, which Open mapped or read, with a fault
// reading a mapping (the file truncated during the checks) returned as an
// error instead of a panic.
func newFileView(file *mmap.File, path string, opts []ViewOption) (v *View, err error) {
	if file.Mapped {
		defer func(old bool) {
			debug.SetPanicOnFault(old)
			if r := recover(); r != nil {
				v, err = nil, faultError(r, file.Data, path)
				if err == nil {
					panic(r)
				}
			}
		}(debug.SetPanicOnFault(true))
	}
	v, err = NewView(file.Data, opts...)
	if err != nil {
		return nil, err
	}
	v.file, v.guarded, v.path = file, file.Mapped && !skipGuard(opts), path
	return v, nil
}

// A guarded read.
//
// A read of a page of a shared file mapping that lies past the end of the
// file raises SIGBUS, which kills a Go process unless the goroutine has
// asked for faults to be panics (runtime/debug.SetPanicOnFault). That
// setting is per goroutine and belongs to the caller, so each method of a
// mapped View that reads the bits turns it on for the length of the call
// and restores it in a deferred endGuard, which also turns a fault inside
// the mapping into a panic with an error wrapping ErrFileChanged. Only
// views from Open pay for it: BenchmarkViewFault measures the cost, side by
// side with the same mapping unguarded.

// endGuard restores the goroutine's panic-on-fault setting to old and, if
// the call is panicking with a fault inside v's mapping, panics with an
// error wrapping ErrFileChanged instead. It must be called directly by a
// deferred call, so that recover works.
func (v *View) endGuard(old bool) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	if v.closed.Load() {
		panic(errClosedView) // unmapped by a Close that raced the call
	}
	if err := faultError(r, v.file.Data, v.path); err != nil {
		panic(err)
	}
	panic(r)
}

// faultError returns the error for r, a value recovered from a panic, if r
// is a fault at an address inside data, the mapping of the file at path;
// otherwise nil.
func faultError(r any, data []byte, path string) error {
	re, ok := r.(runtime.Error)
	if !ok {
		return nil
	}
	fault, ok := re.(interface{ Addr() uintptr })
	if !ok || len(data) == 0 {
		return nil
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	addr := fault.Addr()
	if addr < start || addr-start >= uintptr(len(data)) {
		return nil
	}
	off, size := addr-start, len(data)
	if fi, err := os.Stat(path); err == nil && fi.Size() < int64(size) {
		return fmt.Errorf("%w: %s was truncated to %d bytes under it (%d when opened; a read at byte %d faulted); replace the file by rename, not in place: %w",
			ErrFileChanged, path, fi.Size(), size, off, re)
	}
	return fmt.Errorf("%w: a read at byte %d of %s (%d bytes when opened) faulted: the file was truncated under it, or could not be read: %w",
		ErrFileChanged, off, path, size, re)
}

// Close releases the View: it unmaps the file that Open mapped. Any call
// after it, Close included, panics. It must not run concurrently with other
// calls of the View.
func (v *View) Close() error {
	if v.closed.Swap(true) {
		panic(errClosedView)
	}
	if v.file != nil {
		return v.file.Close()
	}
	return nil
}

// check panics if v is closed.
func (v *View) check() {
	if v.closed.Load() {
		panic(errClosedView)
	}
}

// Test reports whether key may be in the filter, with the meaning of
// BloomFilter.Test: false means key was definitely never added.
func (v *View) Test(key []byte) bool {
	v.check()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	if v.f != nil {
		return testKey(v.f, key)
	}
	return v.s.test(murmur.Sum128(key, v.s.seed))
}

// TestString is Test for a string key, without copying or allocating.
func (v *View) TestString(key string) bool { return v.Test(bytesOf(key)) }

// TestHash is Test for a key given as its 64-bit hash, as
// BloomFilter.TestHash.
func (v *View) TestHash(h uint64) bool {
	v.check()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	if v.f != nil {
		return testKey(v.f, layout.HashBytes(&h))
	}
	return v.s.test(murmur.Sum128(layout.KeyBytes(&h), v.s.seed))
}

// TestMany reports for every key of keys whether it may be in the filter:
// results[i] is Test(keys[i]). It fills and returns results like
// BloomFilter.TestMany, and overlaps the cache misses of several keys.
//
//go:noinline
func (v *View) TestMany(keys [][]byte, results []bool) []bool { return viewTestMany(v, keys, results) }

// TestManyStrings is TestMany for string keys, without copying them.
//
//go:noinline
func (v *View) TestManyStrings(keys []string, results []bool) []bool {
	return viewTestMany(v, keys, results)
}

// TestManyHashes is TestMany for keys given as 64-bit hashes.
//
//go:noinline
func (v *View) TestManyHashes(hashes []uint64, results []bool) []bool {
	return viewTestMany(v, hashes, results)
}

func viewTestMany[K layout.Key](v *View, keys []K, results []bool) []bool {
	v.check()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	if v.f != nil {
		return testMany(v.f, keys, results)
	}
	return scalableTestMany(v.s, keys, results)
}

// Scalable reports whether the View is over a ScalableBloomFilter's
// encoding.
func (v *View) Scalable() bool { return v.s != nil }

// Version returns the format version of the encoding, 1 to 3.
func (v *View) Version() int { return v.ver }

// Copied reports whether the View copied the bits, or some of them, because
// they were misaligned or the machine is big-endian (see View).
func (v *View) Copied() bool { return v.copied }

// filter returns the filter the View answers with. It panics after Close,
// like every method of View.
func (v *View) filter() Filter {
	v.check()
	if v.f != nil {
		return v.f
	}
	return v.s
}

// Layout returns the filter's layout, LayoutClassic or LayoutBlocked.
func (v *View) Layout() Layout { return v.filter().Layout() }

// Seed returns the filter's murmur3 seed.
func (v *View) Seed() uint32 { return v.filter().Seed() }

// Bits returns the size of the filter in bits, all sub-filters together for
// a ScalableBloomFilter.
func (v *View) Bits() uint64 { return v.filter().Bits() }

// Hashes returns the number of hash functions of a BloomFilter's encoding,
// and of the newest sub-filter of a ScalableBloomFilter's.
func (v *View) Hashes() uint {
	if v.filter(); v.f != nil {
		return v.f.k
	}
	return v.s.filters[len(v.s.filters)-1].k
}

// Count returns the number of keys the encoding records as added.
func (v *View) Count() uint64 { return v.filter().Count() }

// Capacity returns the filter's capacity in keys: that of the BloomFilter,
// or of all sub-filters together for a ScalableBloomFilter.
func (v *View) Capacity() uint64 { return v.filter().Capacity() }

// InitialCapacity returns the capacity of a ScalableBloomFilter's first
// sub-filter, and a BloomFilter's capacity.
func (v *View) InitialCapacity() uint64 {
	if v.filter(); v.f != nil {
		return v.f.capacity
	}
	return v.s.initialCapacity
}

// ErrorRate returns the filter's target false-positive rate.
func (v *View) ErrorRate() float64 { return v.filter().ErrorRate() }

// Saturated reports whether the encoding is of a ScalableBloomFilter that
// can grow no more (see ScalableBloomFilter.Saturated).
func (v *View) Saturated() bool {
	v.check()
	return v.s != nil && v.s.Saturated()
}

// FillRatio returns the fraction of the bits that are set, as the filter
// decoded from the same bytes does. It reads every word, O(m/64), and so
// every page of a mapped file.
func (v *View) FillRatio() float64 {
	f := v.filter()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	return f.FillRatio()
}

// EstimatedCount returns the number of distinct keys the filter most likely
// holds, as the decoded filter does. O(m/64), like FillRatio.
func (v *View) EstimatedCount() uint64 {
	f := v.filter()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	return f.EstimatedCount()
}

// EstimatedErrorRate returns the false-positive rate at the filter's
// current fill, as the decoded filter does. O(m/64), like FillRatio.
func (v *View) EstimatedErrorRate() float64 {
	f := v.filter()
	if v.guarded {
		defer v.endGuard(debug.SetPanicOnFault(true))
	}
	return f.EstimatedErrorRate()
}

// NumFilters returns the number of sub-filters of a ScalableBloomFilter's
// encoding, and 1 for a BloomFilter's.
func (v *View) NumFilters() int {
	if v.filter(); v.f != nil {
		return 1
	}
	return len(v.s.filters)
}
