package bfdump

import (
	"fmt"
	"unsafe"
)

// The batch calls are loops of the single-key calls done in rounds: the
// keys of a round are hashed first, then looked up. A key's two
// MurmurHash64A passes depend on each other, but the keys of a round do
// not, so their hashing overlaps; TestMany then reads the first position of
// every key of the round in one pass, whose cache misses overlap, before
// testing the rest of the positions of the keys whose first bit is set.
// Answers, bits and growth are those of the loop of single calls
// (TestBatchMatchesSingle).

// round is the number of keys hashed together.
const round = 16

type keyType interface{ []byte | string }

// keyBytes returns the bytes of k without copying; the hash only reads them.
func keyBytes[K keyType](k K) []byte {
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&k)), len(k))
}

// results returns results[:n], reusing its storage if it has room, and a
// new slice otherwise.
func results(r []bool, n int) []bool {
	if cap(r) >= n {
		return r[:n]
	}
	return make([]bool, n)
}

// TestMany reports, for each key, whether Test(key) would report true, in
// results[i] for keys[i]. It reuses results when it has room for len(keys)
// answers (then it does not allocate) and returns the answers.
func (f *Filter) TestMany(keys [][]byte, results []bool) []bool {
	return testMany(f, keys, results)
}

// TestManyStrings is TestMany for string keys.
func (f *Filter) TestManyStrings(keys []string, results []bool) []bool {
	return testMany(f, keys, results)
}

func testMany[K keyType](f *Filter, keys []K, out []bool) []bool {
	out = results(out, len(keys))
	if len(f.links) == 0 {
		clear(out) // a zero Filter holds nothing
		return out
	}
	var (
		a, b  [round]uint64
		first [round]bool
	)
	for start := 0; start < len(keys); start += round {
		ks := keys[start:min(start+round, len(keys))]
		res := out[start : start+len(ks)]
		for i, k := range ks {
			a[i], b[i] = hash(keyBytes(k))
			res[i] = false
		}
		for li := len(f.links) - 1; li >= 0; li-- {
			l := &f.links[li]
			m, set := l.m, l.bits
			for i := range ks {
				x := a[i] % m
				first[i] = !res[i] && set[x>>3]&(1<<(x&7)) != 0
			}
			for i := range ks {
				if first[i] && l.test(a[i], b[i]) {
					res[i] = true
				}
			}
		}
	}
	return out
}

// AddMany adds each key in order, as the loop of Add does (and BF.MADD).
// At the first key that cannot be added (ErrFull, ErrGrowth) it stops and
// returns an error naming its index that wraps that error; the keys before
// it were added. It allocates only when the chain grows.
func (f *Filter) AddMany(keys [][]byte) error {
	_, err := testAndAddMany(f, keys, nil, false)
	return err
}

// AddManyStrings is AddMany for string keys.
func (f *Filter) AddManyStrings(keys []string) error {
	_, err := testAndAddMany(f, keys, nil, false)
	return err
}

// TestAndAddMany is the loop of TestAndAdd over keys: results[i] reports
// whether keys[i] was present before it was added (and so whether it was
// added by an earlier key of the batch). It reuses results when it has
// room for len(keys) answers and returns the answers. Its errors are
// AddMany's; with an error it returns the answers for the keys before the
// one that failed.
func (f *Filter) TestAndAddMany(keys [][]byte, results []bool) ([]bool, error) {
	return testAndAddMany(f, keys, results, true)
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
func (f *Filter) TestAndAddManyStrings(keys []string, results []bool) ([]bool, error) {
	return testAndAddMany(f, keys, results, true)
}

func testAndAddMany[K keyType](f *Filter, keys []K, out []bool, answer bool) ([]bool, error) {
	if len(f.links) == 0 {
		return nil, errZero
	}
	if answer {
		out = results(out, len(keys))
	}
	var a, b [round]uint64
	for start := 0; start < len(keys); start += round {
		ks := keys[start:min(start+round, len(keys))]
		for i, k := range ks {
			a[i], b[i] = hash(keyBytes(k))
		}
		for i := range ks {
			present, err := f.testAndAdd(a[i], b[i])
			if err != nil {
				err = fmt.Errorf("bfdump: key %d of %d: %w", start+i, len(keys), err)
				if answer {
					return out[:start+i], err
				}
				return nil, err
			}
			if answer {
				out[start+i] = present
			}
		}
	}
	return out, nil
}
