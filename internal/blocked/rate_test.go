package blocked

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/bloomfilters/bloom/internal/layout"
)

// refInBlockRates is the computation of the in-block rates p_in(j) of hash
// count k as it was before issue 21 (item 6), over all 513 entries of the
// distribution and without flushing subnormal numbers, up to the point where
// they are full.
func refInBlockRates(k uint) []float64 {
	var dist, pow [BlockBits + 1]float64
	dist[0] = 1
	for x := range pow {
		pow[x] = 1
		for i := range int(k) {
			pow[x] *= float64(max(x-i, 0)) / float64(BlockBits-i)
		}
	}
	rates := []float64{0}
	for {
		for i := range int(k) {
			d := float64(BlockBits - i)
			for x := BlockBits; x >= 1; x-- {
				dist[x] = dist[x]*float64(max(x-i, 0))/d + dist[x-1]*float64(BlockBits-x+1)/d
			}
			dist[0] = 0
		}
		var r, notFull float64
		for x := range dist {
			r += dist[x] * pow[x]
		}
		for x := range BlockBits {
			notFull += dist[x]
		}
		rates = append(rates, r)
		if notFull < 0x1p-60 {
			return rates
		}
	}
}

// TestInBlockRatesExact: the in-block rates, which skip the entries of the
// distribution that are 0 and flush subnormal ones to 0 (issue 21, item 6:
// 2.3 s for all 64 tables before, 0.26 s after), are the rates of the plain
// computation bit for bit, for every k up to the point where they are full,
// so that bloom.BlockedSize, and so the sizes of saved blocked filters, do
// not change.
func TestInBlockRatesExact(t *testing.T) {
	ks := []uint{1, 2, 3, 7, 16, 33, 64}
	if !testing.Short() {
		ks = ks[:0]
		for k := uint(1); k <= layout.MaxHashes; k++ {
			ks = append(ks, k)
		}
	}
	for _, k := range ks {
		ref := refInBlockRates(k)
		v := inBlockView{k: k, set: inBlockSet(k)}
		if got := v.at(1 << 40); got != 1 {
			t.Errorf("k=%d: p_in(2^40) = %v, want 1", k, got)
		}
		if !v.set.full || len(v.set.rates) != len(ref) {
			t.Fatalf("k=%d: %d rates (full %v), want %d", k, len(v.set.rates), v.set.full, len(ref))
		}
		for j := range ref {
			if math.Float64bits(ref[j]) != math.Float64bits(v.set.rates[j]) {
				t.Fatalf("k=%d: p_in(%d) = %v, want %v", k, j, v.set.rates[j], ref[j])
			}
		}
	}
}

// resetInBlockRates forgets every in-block rate computed so far.
func resetInBlockRates() {
	for k := range inBlockRates {
		c := &inBlockRates[k]
		c.mu.Lock()
		c.set.Store(nil)
		c.table = nil
		c.mu.Unlock()
	}
}

// TestBlockedRateTakesNoGlobalLock is issue 21, item 6: the in-block rates
// were behind one mutex, held for the whole of
// bloom.BlockedFalsePositiveRate, so that a call computing rates (6-12 ms for
// those of one hash function) stopped every other call, and every decoder of
// a blocked filter, meanwhile. Now a call with known rates takes no lock, and
// one computing rates holds only the lock of its hash count while it does.
//
// The test holds the locks itself, as a computation in progress would, so
// that it does not depend on timing: it used to count the calls for k = 7
// made while another goroutine computed the rates of k = 1, and on a loaded
// machine saw none in the 6 ms that took.
func TestBlockedRateTakesNoGlobalLock(t *testing.T) {
	resetInBlockRates()
	defer resetInBlockRates()
	want := Rate(10240, 7, 1000, nil) // the rates of k = 7 are known now
	// returns fails t unless Rate(bits, k, n) returns within a minute.
	returns := func(what string, bits uint64, k uint, n uint64) float64 {
		t.Helper()
		done := make(chan float64, 1)
		go func() { done <- Rate(bits, k, n, nil) }()
		select {
		case r := <-done:
			return r
		case <-time.After(time.Minute):
			t.Fatalf("%s: Rate(%d, %d, %d) waited a minute on a lock", what, bits, k, n)
			return 0
		}
	}
	// The rates of k = 1 are being computed: k = 1's lock is held. And the
	// lock of k = 7, whose rates are known, is held too.
	for _, k := range []uint{1, 7} {
		c := &inBlockRates[k]
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	if got := returns("known rates", 10240, 7, 1000); got != want {
		t.Fatalf("Rate(10240, 7, 1000) = %v, then %v", want, got)
	}
	returns("rates of another hash count", BlockBits, 2, 1<<40) // every rate of k = 2
}

// TestBlockedRatePoissonLimit checks the many-block limit against the
// formula of Putze, Sanders and Singler, a Poisson mixture, and the edges.
func TestBlockedRatePoissonLimit(t *testing.T) {
	const n = 1e9
	m := uint64(9.89*n) / BlockBits * BlockBits
	lambda := float64(n) / float64(m/BlockBits)
	tab := inBlockView{k: 6, set: inBlockSet(6)}
	var poisson float64
	lw := -lambda
	for j := uint64(0); j < 400; j++ {
		if j > 0 {
			lw += math.Log(lambda / float64(j))
		}
		poisson += math.Exp(lw) * tab.at(j)
	}
	if got := Rate(m, 6, n, nil); math.Abs(got/poisson-1) > 1e-6 {
		t.Errorf("10^9 keys: %v, Poisson mixture %v", got, poisson)
	}
	for _, c := range []struct {
		m    uint64
		k    uint
		n    uint64
		want float64
	}{
		{511, 3, 1, 1}, {512, 0, 1, 1}, {512, layout.MaxHashes + 1, 1, 1}, {512, 3, 0, 0},
		{512, 3, 1e12, 1}, {layout.MaxBits, 1, 1e15, 1},
	} {
		if got := Rate(c.m, c.k, c.n, nil); got != c.want && math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Rate(%d, %d, %d) = %v, want %v", c.m, c.k, c.n, got, c.want)
		}
	}
}

// TestInBlockRatesMemory bounds the memory of the in-block rate cache, which
// every process fills as it sizes or decodes blocked filters: all hash counts
// full take under 1 MiB of rates, kept in at most 1.5 times that, and no
// table; computing them allocates at most 3 times the rates plus the tables
// (10 KB each). Before, append's own growth and the tables kept after the
// rates were full made it 4.02 MB allocated and 1.68 MB kept; now 3.06 MB and
// 1.24 MB.
func TestInBlockRatesMemory(t *testing.T) {
	resetInBlockRates()
	defer resetInBlockRates()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var rates, capacity uint64
	for k := uint(1); k <= layout.MaxHashes; k++ {
		v := inBlockView{k: k, set: inBlockSet(k)}
		v.at(1 << 40)
		if !v.set.full {
			t.Fatalf("k=%d: rates not full after p_in(2^40)", k)
		}
		if inBlockRates[k].table != nil {
			t.Errorf("k=%d: table kept after the rates are full", k)
		}
		rates += uint64(len(v.set.rates))
		capacity += uint64(cap(v.set.rates))
	}
	runtime.ReadMemStats(&after)
	size, kept, alloc := 8*rates, 8*capacity, after.TotalAlloc-before.TotalAlloc
	t.Logf("%d rates, %d bytes, kept in %d; allocated %d bytes", rates, size, kept, alloc)
	if size > 1<<20 {
		t.Errorf("the full rates take %d bytes, want at most 1 MiB", size)
	}
	if kept > 3*size/2 {
		t.Errorf("%d bytes of rates kept in %d bytes, want at most 1.5 times that", size, kept)
	}
	if tables := uint64(layout.MaxHashes * 10 << 10); alloc > 3*size+tables {
		t.Errorf("computing %d bytes of rates allocated %d bytes, want at most 3 times that plus %d for the tables", size, alloc, tables)
	}
}
