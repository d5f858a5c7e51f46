package bloom

import (
	"fmt"
	"testing"
)

// TestNewSizeByLayout pins the words of Size and BlockedSize: New sizes a
// filter by Size where its layout is classic (by default or with Classic)
// and by BlockedSize where it is blocked, so that at 1% and 0.1% New's
// default filter has more bits than Size says (Size's doc used to say it
// returned what New uses, whatever the layout).
func TestNewSizeByLayout(t *testing.T) {
	for _, n := range []uint64{1, 100, 1e4, 1e6} {
		for _, p := range []float64{0.1, 0.01, 0.001, 1e-4, 1e-7} {
			t.Run(fmt.Sprintf("n=%g/p=%g", float64(n), p), func(t *testing.T) {
				cm, ck, err := Size(n, p)
				if err != nil {
					t.Fatal(err)
				}
				bm, bk, err := BlockedSize(n, p)
				if err != nil {
					t.Fatal(err)
				}
				sizes := map[Layout][2]uint64{LayoutClassic: {cm, uint64(ck)}, LayoutBlocked: {bm, uint64(bk)}}
				for name, opts := range map[string][]Option{"default": nil, "Classic": {Classic()}, "Blocked": {Blocked()}} {
					f := mustNew(t, n, p, opts...)
					want := map[string]Layout{"default": DefaultLayout(n, p), "Classic": LayoutClassic, "Blocked": LayoutBlocked}[name]
					if f.Layout() != want {
						t.Fatalf("%s: layout %v, want %v", name, f.Layout(), want)
					}
					if got := [2]uint64{f.Bits(), uint64(f.Hashes())}; got != sizes[want] {
						t.Errorf("%s (%v): (bits, hashes) %v, want %v", name, want, got, sizes[want])
					}
				}
			})
		}
	}
	// Where the words matter: New's default at 1% and 0.1% is not Size.
	for _, p := range []float64{0.01, 0.001} {
		cm, _, _ := Size(1e6, p)
		if f := mustNew(t, 1e6, p); f.Layout() != LayoutBlocked || f.Bits() <= cm {
			t.Errorf("New(1e6, %g): %v, %d bits; Size says %d", p, f.Layout(), f.Bits(), cm)
		}
	}
}
