package layout

import (
	"sync"
	"testing"
	"unsafe"
)

func TestStripesFor(t *testing.T) {
	for _, tc := range []struct{ words, want int }{
		{0, MinStripes}, {1, MinStripes}, {MinStripes * StripeWords, MinStripes},
		{MinStripes*StripeWords + 1, 2 * MinStripes}, {1 << 30, MaxStripes},
	} {
		if got := StripesFor(tc.words); got != tc.want {
			t.Errorf("StripesFor(%d) = %d, want %d", tc.words, got, tc.want)
		}
	}
	if s := unsafe.Sizeof(Stripe{}); s != 64 {
		t.Errorf("a stripe takes %d bytes, not one cache line", s)
	}
}

// TestLocksCount: Count sums what the stripes counted, SetCount and
// AddCount move the sum, and every hash maps to a stripe of the table.
func TestLocksCount(t *testing.T) {
	l := NewLocks(1 << 20)
	if l.Len() != MaxStripes {
		t.Fatalf("%d stripes", l.Len())
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				l.Of(uint64(g*1000+i) * 0x9E3779B97F4A7C15).Count.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := l.Count(); n != 8000 {
		t.Fatalf("Count = %d, want 8000", n)
	}
	l.AddCount(^uint64(99)) // -100
	if n := l.Count(); n != 7900 {
		t.Fatalf("after AddCount(-100): %d", n)
	}
	l.SetCount(5)
	if n := l.Count(); n != 5 || l.Fresh().Count() != 0 || l.Fresh().Len() != l.Len() {
		t.Fatalf("after SetCount(5): %d", n)
	}
	var c Conc
	c.Store(3)
	if c.Load() != 3 || c.Reserved.Load() != 3 || c.NewLocks() != nil {
		t.Fatal("Conc without locks")
	}
	d := Conc{Locks: NewLocks(10)}
	d.Store(4)
	if d.Load() != 4 || d.NewLocks() == nil {
		t.Fatal("Conc with locks")
	}
}
