package layout

import "testing"

// TestMeter: a Meter counts its budget down, panics with OverBudget once it
// is exhausted and not before, and a nil Meter meters nothing.
func TestMeter(t *testing.T) {
	var none *Meter
	none.Spend(1 << 62) // must not panic

	spent := func(w *Meter, n int64) (over bool) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(OverBudget); !ok {
					panic(r)
				}
				over = true
			}
		}()
		w.Spend(n)
		return false
	}
	w := NewMeter(10)
	if spent(&w, 4) || spent(&w, 6) {
		t.Fatalf("over budget after spending the whole budget of 10")
	}
	if w.Left() != 0 {
		t.Errorf("Left() = %d after spending 10 of 10", w.Left())
	}
	if !spent(&w, 1) {
		t.Errorf("no OverBudget after spending 11 of 10")
	}
}
