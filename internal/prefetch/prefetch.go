// Package prefetch asks the memory system for words of a slice before they
// are read, so that the cache misses of many independent reads overlap.
//
// On amd64 Words issues one PREFETCHT0 per word, in assembly: Go has no
// prefetch intrinsic, and a prefetch, unlike a load, does not hold a slot of
// the load queue until its data arrives. Elsewhere, and with the purego build
// tag, it loads the words with plain loads instead, which overlap just as
// well as long as the load queue has room (atomic loads with the race
// detector, since Concurrent filters set those words atomically meanwhile).
package prefetch

// Words hints that w[i] will soon be read, for every i in idx. Every i must be
// less than len(w): on amd64 Words does not check, and a prefetch of an
// address outside w is harmless but useless. It never changes memory.
//
// The result means nothing: it is there so that the compiler cannot drop the
// loads of the pure-Go version.
func Words(w []uint64, idx []uint64) uint64 {
	if len(idx) == 0 || len(w) == 0 {
		return 0
	}
	return words(&w[0], idx)
}

// Pointers hints that *p will soon be read, for every p in ps; every p must
// be non-nil. It is Words for loads from several slices at once: one call
// instead of one per slice.
//
// The result means nothing, as for Words.
func Pointers(ps []*uint64) uint64 {
	if len(ps) == 0 {
		return 0
	}
	return pointers(ps)
}
