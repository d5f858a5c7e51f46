package prefetch

import "testing"

func TestWords(t *testing.T) {
	w := make([]uint64, 1000)
	for i := range w {
		w[i] = uint64(i)
	}
	idx := []uint64{0, 999, 17, 17, 512}
	before := append([]uint64(nil), w...)
	Words(w, idx)
	Words(w, nil)
	Words(nil, nil)
	for i := range w {
		if w[i] != before[i] {
			t.Fatalf("w[%d] changed", i)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Words(w, idx) }); n != 0 {
		t.Errorf("Words allocates %v times", n)
	}
	ps := []*uint64{&w[0], &w[999], &w[17]}
	Pointers(ps)
	Pointers(nil)
	for i := range w {
		if w[i] != before[i] {
			t.Fatalf("w[%d] changed by Pointers", i)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Pointers(ps) }); n != 0 {
		t.Errorf("Pointers allocates %v times", n)
	}
}

func BenchmarkWords(b *testing.B) {
	w := make([]uint64, 1<<24)
	idx := make([]uint64, 64)
	x := uint64(1)
	for i := range b.N {
		for j := range idx {
			x = x*6364136223846793005 + 1442695040888963407
			idx[j] = (x >> 40) % uint64(len(w))
		}
		_ = i
		Words(w, idx)
	}
}
