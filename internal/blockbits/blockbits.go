// Package blockbits adds and tests the positions of one key in a 512-bit
// block of a blocked filter with 8 or 9 positions per key (error rates near
// 1e-3), in assembly where the CPU has AVX-512: the check that the key's
// nine candidates are distinct (one VPCONFLICTQ against about 70
// instructions in Go) is what made the single-key calls of those filters
// cost more than blobloom's. AddFields and TestFields do the same for 2 to
// 7 positions (error rates from about 0.3% to 25%), whose candidates are
// the fields of h2 alone: the fields in the lanes of a vector, compared
// with the vector rotated by 1 to 4 lanes (VALIGNQ, VPCMPEQQ), against
// DistinctFields' 37 instructions in Go, and for the test the k bits read
// at once (VPERMQ of the block's eight words).
//
// A key's candidates are the seven 9-bit fields of h2, from the lowest,
// then the fields of w1 = splitmix64(h2 + 0x9E3779B97F4A7C15), the
// sequence of the blocked layout (bloom.AppendBlockedLocations); with
// n1 = k - 7 in {1, 2}, the first k candidates are the key's positions when
// they are distinct. Add and Test answer ok = false otherwise, and the
// caller takes its general path.
//
// Where Native is false (another architecture, a CPU without AVX-512F and
// AVX-512CD, or the purego build tag), Add and Test are the Go reference
// below, which the caller does not use on its hot path.
package blockbits

// golden is 2^64 divided by the golden ratio, the step of splitmix64.
const golden = 0x9E3779B97F4A7C15

func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// candidates returns the first 7+n1 candidates of h2.
func candidates(h2, n1 uint64) []uint64 {
	c := make([]uint64, 0, 9)
	for j := range 7 {
		c = append(c, h2>>(9*j)&511)
	}
	w1 := splitmix(h2 + golden)
	for j := range n1 {
		c = append(c, w1>>(9*j)&511)
	}
	return c
}

func distinct(c []uint64) bool {
	for i := range c {
		for j := range i {
			if c[i] == c[j] {
				return false
			}
		}
	}
	return true
}

// addGo is Add in Go, the reference of the assembly.
func addGo(blk *[8]uint64, h2, n1 uint64) (present, ok bool) {
	c := candidates(h2, n1)
	if !distinct(c) {
		return false, false
	}
	present = true
	for _, p := range c {
		w, bit := &blk[p>>6], uint64(1)<<(p&63)
		present = present && *w&bit != 0
		*w |= bit
	}
	return present, true
}

// testGo is Test in Go, the reference of the assembly.
func testGo(blk *[8]uint64, h2, n1 uint64) (present, ok bool) {
	c := candidates(h2, n1)
	for _, p := range c[7:] {
		if blk[p>>6]&(1<<(p&63)) == 0 {
			return false, true
		}
	}
	if !distinct(c) {
		return false, false
	}
	return true, true
}

// testFieldsGo is TestFields in Go, the reference of the assembly.
func testFieldsGo(blk *[8]uint64, h2, k uint64) (present, ok bool) {
	c := candidates(h2, 0)[:k]
	for _, p := range c {
		if blk[p>>6]&(1<<(p&63)) == 0 {
			return false, true
		}
	}
	if !distinct(c) {
		return false, false
	}
	return true, true
}

// addFieldsGo is AddFields in Go, the reference of the assembly.
func addFieldsGo(blk *[8]uint64, h2, k uint64) (present, ok bool) {
	c := candidates(h2, 0)[:k]
	if !distinct(c) {
		return false, false
	}
	present = true
	for _, p := range c {
		w, bit := &blk[p>>6], uint64(1)<<(p&63)
		present = present && *w&bit != 0
		*w |= bit
	}
	return present, true
}

// testAllGo is TestAll in Go, the reference of the assembly.
func testAllGo(blk *[8]uint64, h2, n1 uint64) (present, ok bool) {
	return testFieldsGo7(blk, candidates(h2, n1))
}

// testFieldsGo7 is the test of the candidates c, all positions of the key
// if distinct.
func testFieldsGo7(blk *[8]uint64, c []uint64) (present, ok bool) {
	for _, p := range c {
		if blk[p>>6]&(1<<(p&63)) == 0 {
			return false, true
		}
	}
	if !distinct(c) {
		return false, false
	}
	return true, true
}
