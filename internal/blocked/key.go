package blocked

import (
	"sync/atomic"
	"unsafe"

	"github.com/bloomfilters/bloom/internal/blockbits"
	"github.com/bloomfilters/bloom/internal/layout"

	// The compiler inlines sync.Mutex.Lock and Unlock into AddLocked only
	// if this package imports sync itself (go build -gcflags=-m).
	_ "sync"
)

// The single-key add and test of a blocked filter. The root package's
// BloomFilter.addKey and testKey, which Add and Test inline to, write them
// out from their parts (BlockAt, AddFields, AddWide, DistinctFields,
// SetBit, AddRepeat; BlockAt, TestFields, TestAll, Bit, Has,
// DistinctFields, Rest) rather than call Add and Test, one call per key
// less: see the notes beside Test and AddFast for what a call cost, and
// beside testKey for what the parts measured.

// Wide reports whether a filter of k hash functions takes the assembly of
// internal/blockbits: k = 8 or 9 (p near 1e-3) on a CPU with AVX-512.
func Wide(k uint) bool { return k-8 < 2 && blockbits.Native }

// Add sets the positions of the key hashed to (h1, h2) in b, which is not
// Concurrent, and reports whether all of them were already set; the caller
// counts the key when they were not. Keys whose first candidates repeat
// (about 3% at k = 6) take AddRepeat.
func Add(w []uint64, m uint64, k uint, h1, h2 uint64) (present bool) {
	blk := Block(w, m, h1)
	if Wide(k) {
		if present, ok := AddWide(blk, h2, k); ok {
			return present
		}
		return AddRepeat(blk, h2, k)
	}
	if _, _, present, ok := AddFast(w, k, h1, h2); ok {
		return present
	}
	return AddRepeat(blk, h2, k)
}

// AddWide is Add for k = 8 or 9 (p near 1e-3) where Wide, in the key's
// block blk: the assembly compares the key's nine candidates in one
// instruction (VPCONFLICTQ) and sets their bits, and reports in ok whether
// they were distinct; otherwise
// it changes nothing and the caller goes to AddRepeat. Against addFast,
// which compares them in Go (distinct7, laterDistinct2: about 70
// instructions), Add at 10^7 random 16-byte keys, p = 0.001, went from
// 1.13-1.51x blobloom's time (median 1.19 of 13 runs) to 0.93-1.05x (6
// runs; builds alternated). It inlines, so that BloomFilter.Add calls the
// assembly directly: through one more call Add cost 1.06-1.14x blobloom's
// time at 10^7 keys, p = 0.001 (six runs), and 1.01-1.09x without it
// (three; builds alternated).
func AddWide(blk *[8]uint64, h2 uint64, k uint) (present, ok bool) {
	return blockbits.Add(blk, h2, uint64(k-FieldsPerWord))
}

// AddFast is Add for the usual key, whose first k candidates are distinct
// (see firstDistinct), in a filter whose words are w, and reports in ok
// whether the key was one: otherwise it changes nothing and the caller goes
// to AddRepeat. It takes no m: a blocked filter's words are m/64.
//
// It is a leaf without a frame (go build -gcflags=-S: no call, no spill, no
// saved frame pointer), which is why it writes firstDistinct and Block out
// again. (With m as well, seven registers of arguments, it spilled and had
// a frame; taking the block from the caller instead kept it a leaf, but
// AddMany then cost 1.07-1.09x the time of the former code at 10^6 keys,
// against 1.00x as it is: the pair harness of the redesign's note.) Building a filter of 10^7 random 16-byte keys at p = 0.01, calling
// it from the key loop cost 58-68 ns per key against 74-101 for the former
// add, which had the same loops behind a frame of 176 bytes, two spills and
// a call to firstDistinct (one noisy 2-vCPU machine, runs interleaved). Why
// fewer instructions and stores per key weigh this much at sizes where
// every key misses the cache is not established (no performance counters on
// that machine): a full reorder buffer or store buffer, which bound the keys
// in flight, would explain it.
//
// It gives h1 and h2 back as r1 and r2, so that the caller, which goes on to
// AddRepeat when ok is false, does not spill them around the call (two
// stores per key; within the noise of the bench on its own).
//
// Each bit is set with one BTS and what it changed gathered with one XOR
// (setBit), the k bits one after the other without a loop: 10-11
// instructions per bit against 15 for a loop that read each bit into a
// running AND. At 10^7 16-byte keys, p = 0.001 (k = 9), blocked/blobloom
// for Add went from 1.14-1.29 (median 1.26) to 1.14-1.18 (three alternated
// bench runs of each build); before that, distinct7 and laterDistinct2 had
// cut the checks of the second word of candidates (Add 1.15-1.28 ->
// 1.14-1.20). Without those checks (wrong positions for 7% of keys, a
// measurement only) Add cost as much as blobloom's: at k = 9 they are what
// is left, and where the CPU has AVX-512 Add takes the assembly of
// internal/blockbits instead for k = 8, 9 (see AddWide).
func AddFast(w []uint64, k uint, h1, h2 uint64) (r1, r2 uint64, present, ok bool) {
	var w1 uint64
	if k <= FieldsPerWord {
		if !DistinctFields(h2&FieldBits, k) {
			return h1, h2, false, false
		}
	} else {
		// firstDistinct written out, as it cannot be inlined (nor can
		// laterDistinct, whose loop is here again).
		if k > 2*FieldsPerWord || !distinct7(h2&FieldBits) {
			return h1, h2, false, false
		}
		w1 = splitmix(h2 + golden)
		if n1 := k - FieldsPerWord; n1 <= 2 {
			if !laterDistinct2(h2, w1, n1) {
				return h1, h2, false, false
			}
		} else {
			var zero uint64
			for j := range n1 {
				zero |= zeroFields(h2^(w1>>(9*j)&(BlockBits-1))*fieldLows, fieldHighs)
			}
			if zero != 0 || !DistinctFields(w1&FieldBits, n1) {
				return h1, h2, false, false
			}
		}
	}
	// The block without the bounds checks of Block, whose calls to panic
	// would give the function a frame; a block out of range (never)
	// goes to AddRepeat, which panics.
	blocks := uint64(len(w)) / 8 // m/BlockBits
	i := blockOf(h1, blocks)
	if i >= blocks {
		return h1, h2, false, false
	}
	blk := (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(w)), i*64))
	// The k candidates' bits one after the other, from the last: no loop
	// counter, and no register moves around the shifts by a variable count
	// (the loop it replaces spent 15 instructions per bit, go build
	// -gcflags=-S, GOAMD64=v1).
	var fresh uint64
	switch k {
	case 14:
		fresh = setBit(blk, w1>>54, fresh)
		fallthrough
	case 13:
		fresh = setBit(blk, w1>>45, fresh)
		fallthrough
	case 12:
		fresh = setBit(blk, w1>>36, fresh)
		fallthrough
	case 11:
		fresh = setBit(blk, w1>>27, fresh)
		fallthrough
	case 10:
		fresh = setBit(blk, w1>>18, fresh)
		fallthrough
	case 9:
		fresh = setBit(blk, w1>>9, fresh)
		fallthrough
	case 8:
		fresh = setBit(blk, w1, fresh)
		fallthrough
	case 7:
		fresh = setBit(blk, h2>>54, fresh)
		fallthrough
	case 6:
		fresh = setBit(blk, h2>>45, fresh)
		fallthrough
	case 5:
		fresh = setBit(blk, h2>>36, fresh)
		fallthrough
	case 4:
		fresh = setBit(blk, h2>>27, fresh)
		fallthrough
	case 3:
		fresh = setBit(blk, h2>>18, fresh)
		fallthrough
	case 2:
		fresh = setBit(blk, h2>>9, fresh)
		fallthrough
	default:
		fresh = setBit(blk, h2, fresh)
	}
	return h1, h2, fresh == 0, true
}

// setBit sets bit p&511 of blk and returns fresh with that bit (in its
// word) added if it was clear.
func setBit(blk *[8]uint64, p, fresh uint64) uint64 {
	w := &blk[p>>6&7]
	old := *w
	x := old | 1<<(p&63)
	*w = x
	return fresh | (x ^ old)
}

// AddRepeat is Add, in the key's block blk, for a key that AddFast or
// AddWide turned away, whose first k candidates repeat: it goes to
// repeatMask without checking them again.
func AddRepeat(blk *[8]uint64, h2 uint64, k uint) (present bool) {
	mask := repeatMask(h2, k)
	var fresh uint64
	for i := range blk {
		fresh |= mask[i] &^ blk[i]
		blk[i] |= mask[i]
	}
	return fresh == 0
}

// Test reports whether the filter of words w, m bits and k hash functions,
// not Concurrent, holds the key hashed to (h1, h2). BloomFilter.testKey,
// which Test and TestString inline to, writes it out again from the same
// parts, which inline into it (all but Rest, which few keys take). At 10^7
// random 16-byte keys, p = 0.01, absent keys cost 1.2-1.5x blobloom's time
// through a call to the whole test and 1.0-1.2x with it written out (one
// quiet 2-vCPU machine, variants interleaved). When the layouts became
// packages, a call after FirstTwo to the rest of the test, a leaf without a
// frame, made present keys at 10^6 cost 1.039-1.047x the former code, and
// the parts written out 1.013-1.014x (three runs each of the pair harness of
// the redesign's note). Why one call per key weighs this much is not
// established (no performance counters on that machine).
// TestBlockedTestMatchesMask keeps the copies equal.
//
// It tests the first min(k, 7) candidates, the fields of h2, which are
// positions of the key even when some repeat: the first two with a branch,
// which sends about three absent keys in four away (FirstTwo), then the
// rest without one (Later3, Later6). For keys that pass, DistinctFields (or
// Rest, k > 7, in assembly for k = 8, 9 where the CPU has AVX-512) says
// whether those candidates, and the next k-7 when k > 7, are the key's
// positions; the rare rest goes through repeatMask.
//
// The branch after two bits mispredicts for about half the absent keys, yet
// it beat a test of all candidates without a branch: in the bench at 10^7
// keys (p = 0.01 and 0.001, binaries alternated), blocked/blobloom for
// absent keys went from 1.35-1.54 to 0.94-1.07, present keys within the
// noise (0.93-1.15 before, 0.98-1.38 after). A branch at every candidate
// was as fast for absent keys and slower for present ones; a guess at why
// (no performance counters here): loads on a mispredicted path still bring
// their lines in, while without a branch every load's dependents wait in
// the scheduler, which fills before many keys are in flight.
func Test(w []uint64, m uint64, k uint, h1, h2 uint64) bool {
	blk := Block(w, m, h1)
	if !FirstTwo(blk, h2, k) {
		return false
	}
	if Later3(blk, h2, k)&Later6(blk, h2, k)&1 == 0 {
		return false
	}
	return k <= FieldsPerWord && DistinctFields(h2&FieldBits, k) || Rest(blk, h2, k)
}

// FirstTwo reports whether blk holds the first two candidates of h2 (the
// first alone when k = 1), which are positions of the key whatever the
// others are.
func FirstTwo(blk *[8]uint64, h2 uint64, k uint) bool {
	q := h2 >> 9 // the second candidate, the first again when k = 1
	if k == 1 {
		q = h2
	}
	return blk[h2>>6&7]>>(h2&63)&(blk[q>>6&7]>>(q&63))&1 != 0
}

// Later tests the third to the min(k, 7)th candidates of h2 in blk, which
// are positions of the key whatever they are, for a key that FirstTwo let
// through: bit 0 of Later3(blk, h2, k) & Later6(blk, h2, k) is set if all
// are set. They are written out without a loop (a loop over them cost 12
// instructions per bit; testTail has it), in two parts so that each inlines
// into BloomFilter.testKey, and without a branch between them.
func Later3(blk *[8]uint64, h2 uint64, k uint) uint64 {
	all := uint64(1)
	switch min(k, 5) {
	case 5:
		all &= blk[h2>>42&7] >> (h2 >> 36 & 63)
		fallthrough
	case 4:
		all &= blk[h2>>33&7] >> (h2 >> 27 & 63)
		fallthrough
	case 3:
		all &= blk[h2>>24&7] >> (h2 >> 18 & 63)
	}
	return all
}

// Later6 is the sixth and seventh candidates of Later3's test.
func Later6(blk *[8]uint64, h2 uint64, k uint) uint64 {
	all := uint64(1)
	switch min(k, FieldsPerWord) {
	case 7:
		all &= blk[h2>>60&7] >> (h2 >> 54 & 63)
		fallthrough
	case 6:
		all &= blk[h2>>51&7] >> (h2 >> 45 & 63)
	}
	return all
}

// For a key whose first min(k, 7) candidates FirstTwo, Later3 and Later6
// found set, the key is present if they are its positions: k <= 7 and
// DistinctFields(h2&FieldBits, k), written out by the callers, as a function
// around it would not inline (DistinctFields is at the inlining budget).
// Otherwise Rest decides.

// testTail is the rest of Test for a key whose first two candidates are set
// in blk: the third to min(k, 7)th, then whether those are the key's
// positions (DistinctFields) or the rest (Rest). TestMany takes it too,
// after its own first two.
func testTail(blk *[8]uint64, h2 uint64, k uint) bool {
	all := uint64(1)
	for p, n := h2>>18, min(k, FieldsPerWord)-2; int(n) > 0; n-- {
		all &= blk[p>>6&7] >> (p & 63)
		p >>= 9
	}
	if all&1 == 0 {
		return false
	}
	return k <= FieldsPerWord && DistinctFields(h2&FieldBits, k) || Rest(blk, h2, k)
}

// Rest is the rest of a test for a key whose first min(k, 7) candidates are
// set in blk and, when k <= 7, repeat: it tests the candidates after the
// seventh (k > 7), or the whole mask when the first k candidates repeat.
func Rest(blk *[8]uint64, h2 uint64, k uint) bool {
	if Wide(k) {
		// As AddWide: the nine candidates compared in one instruction
		// (present keys at 10^7, p = 0.001: 1.04-1.65x blobloom's time,
		// median 1.11 of 13 runs, through firstDistinct; 0.94-1.04x, 9
		// runs, here; builds alternated).
		if present, ok := blockbits.Test(blk, h2, uint64(k-FieldsPerWord)); ok {
			return present
		}
	} else if w1, ok := firstDistinct(h2, k); ok {
		all := uint64(1)
		for p := w1; k > FieldsPerWord; k-- {
			all &= blk[p>>6&7] >> (p & 63)
			p >>= 9
		}
		return all&1 != 0
	}
	mask := repeatMask(h2, k)
	return holdsMask(blk, &mask)
}

// TestAtomic is Test with atomic loads, for Concurrent filters.
func TestAtomic(w []uint64, m uint64, k uint, h1, h2 uint64) bool {
	mask := Mask(h2, k)
	return holdsMaskAtomic(Block(w, m, h1), &mask)
}

// Unset returns, for a Concurrent filter, a mask of the words of the key's
// block that lack some of the key's bits: bit i for word i.
func Unset(w []uint64, m uint64, k uint, h1, h2 uint64) (unset uint64) {
	blk := Block(w, m, h1)
	mask := Mask(h2, k)
	for i := range blk {
		if mask[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			unset |= 1 << i
		}
	}
	return unset
}

// Set sets with atomic ORs the bits of the key hashed to (h1, h2) in the
// words that unset, from Unset, marks, and reports whether it set a bit that
// was clear. It skips the OR, and so taking the cache line from other cores,
// where the bits have been set since.
func Set(w []uint64, m uint64, k uint, h1, h2, unset uint64) (fresh bool) {
	blk := Block(w, m, h1)
	mask := Mask(h2, k)
	var flipped uint64
	for i := range blk {
		if unset>>i&1 != 0 && mask[i]&^atomic.LoadUint64(&blk[i]) != 0 {
			flipped |= mask[i] &^ atomic.OrUint64(&blk[i], mask[i])
		}
	}
	return flipped != 0
}

// AddLocked is Add for a Concurrent filter with the locks l: a key that
// tests present needs no lock; otherwise the lock of the key serializes it
// with callers adding the same key, so exactly one of them sets a clear bit
// and counts it, in its stripe.
func AddLocked(w []uint64, m uint64, k uint, h1, h2 uint64, l *layout.Locks) (present bool) {
	unset := Unset(w, m, k, h1, h2)
	if unset == 0 {
		return true
	}
	st := l.Of(h2)
	st.Mu.Lock()
	fresh := Set(w, m, k, h1, h2, unset)
	if fresh {
		st.Count.Add(1)
	}
	st.Mu.Unlock()
	return !fresh
}

// Has reports whether blk has bit p&511 set.
func Has(blk *[8]uint64, p uint64) bool {
	return blk[p>>6&7]&(1<<(p&63)) != 0
}

// Bit returns bit p&511 of blk, as 0 or 1.
func Bit(blk *[8]uint64, p uint64) uint64 {
	if blk[p>>6&7]&(1<<(p&63)) != 0 {
		return 1
	}
	return 0
}

// BlockAt is Block for a filter whose words are w, m/64 of them: the block
// of the key whose hash has h1 as its first half. It has no bounds check:
// the index, the high word of h1 * (len(w)/8), is below len(w)/8 for every
// h1.
func BlockAt(w []uint64, h1 uint64) *[8]uint64 {
	i := blockOf(h1, uint64(len(w))/8)
	return (*[8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(w)), i*64))
}

// SetBit is setBit, for BloomFilter.addKey.
func SetBit(blk *[8]uint64, p, fresh uint64) uint64 { return setBit(blk, p, fresh) }

// Native reports whether TestFields runs the assembly of internal/blockbits
// (AVX-512); BloomFilter.testKey takes its Go path otherwise.
func Native() bool { return blockbits.Native }

// TestFields is the test of a key's first k candidates, for 2 <= k <= 7,
// in one call to the assembly of internal/blockbits where Native: false,
// with ok, when one of their bits is clear in blk; true, with ok, when all
// are set and they are distinct; ok = false when they are set and repeat,
// and the caller goes on to Rest.
func TestFields(blk *[8]uint64, h2 uint64, k uint) (present, ok bool) {
	return blockbits.TestFields(blk, h2, uint64(k))
}

// AddFields is the add of a key whose first k candidates, for
// 2 <= k <= 7, are distinct, in one call to the assembly of
// internal/blockbits where Native: it sets them in blk and reports whether
// they were all set before; it changes nothing and returns ok = false when
// they repeat, and the caller goes on to AddRepeat.
func AddFields(blk *[8]uint64, h2 uint64, k uint) (present, ok bool) {
	return blockbits.AddFields(blk, h2, uint64(k))
}

// TestAll is the test of a key for k = 8 or 9 where Wide, in one call to
// the assembly of internal/blockbits, with TestFields' answers: the k
// candidates (the seven fields of h2 and the first k-7 of w1) all tested,
// and compared.
func TestAll(blk *[8]uint64, h2 uint64, k uint) (present, ok bool) {
	return blockbits.TestAll(blk, h2, uint64(k-FieldsPerWord))
}

// testNative is Test, in the key's block blk, for 2 <= k <= 7 where Native
// and k = 8 or 9 where Wide: TestFields or TestAll, then Rest for the keys
// whose candidates repeat.
func testNative(blk *[8]uint64, h2 uint64, k uint) bool {
	var present, ok bool
	if k > FieldsPerWord {
		present, ok = TestAll(blk, h2, k)
	} else {
		present, ok = TestFields(blk, h2, k)
	}
	if ok {
		return present
	}
	return Rest(blk, h2, k)
}
