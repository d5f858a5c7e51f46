package layout

// The limits of a filter that the layouts' rate math needs: bloom.MaxBits and
// bloom.MaxHashes (the root package checks at compile time that they agree).
const (
	MaxBits   uint64 = 1 << 40
	MaxHashes uint   = 64
)

// Meter bounds the work of sizing in a decoder, which a hostile header could
// otherwise make cost a tenth of a second (see the root package's
// ScalableBloomFilter.growthWithin). It counts the terms of the sums that
// dominate that work, each an exp and a log or so, about 30 ns on the 2-vCPU
// machine of docs/blocked.md: one term of blocked.Rate, and one step over L
// of classic.ExactRate plus one per 8 of its entries.
//
// It does not count the in-block tables of internal/blocked, whose cost
// depends on what the process has computed before: counting it would make
// whether a header passes depend on the process's history, not on the header
// alone. They are computed once per process, 0.26 s for all of them here,
// and a header pays for those it is the first to need.
type Meter struct {
	left int64
}

// NewMeter returns a Meter with a budget of budget units of work.
func NewMeter(budget int64) Meter { return Meter{left: budget} }

// Left returns the units of work left in the budget, negative once it has
// run out.
func (w *Meter) Left() int64 { return w.left }

// OverBudget is the value a Meter panics with when it runs out.
type OverBudget struct{}

// Spend charges n units of work, and panics with OverBudget when the budget
// is exhausted. A nil Meter meters nothing.
func (w *Meter) Spend(n int64) {
	if w == nil {
		return
	}
	if w.left -= n; w.left < 0 {
		panic(OverBudget{})
	}
}
