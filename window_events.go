package bloom

import (
	"fmt"
	"time"

	"github.com/bloomfilters/bloom/internal/window"
)

// OnEvent makes a window call fn with each event that weakens one of its
// promises (see WindowEventKind), as it happens: synchronously, in the
// goroutine whose call caused it, before that call returns (under the
// adds' lock of a Concurrent window). fn must not call the window's
// methods (on a Concurrent window that deadlocks) and should return
// quickly: a burst may cause an event per generation's share of keys.
// Events counts them without a callback. It applies to NewWindow and
// ReadWindow (the callback is not part of the encoding) and may be given
// at most once.
func OnEvent(fn func(WindowEvent)) Option {
	return Option{func(s *settings) error {
		if s.win.onEvent != nil {
			return paramError("OnEvent may be given only once")
		}
		if fn == nil {
			return paramError("OnEvent needs a function, got nil")
		}
		s.win.onEvent = fn
		return nil
	}}
}

// WindowEventKind is what weakened a promise of a time window.
type WindowEventKind uint8

// The window events.
const (
	// RotatedEarly: a time window under RotateEarly rotated on count, a
	// burst having filled its newest generation before its time was up;
	// it now keeps less than its duration (WindowEvent.Retained).
	RotatedEarly WindowEventKind = iota
	// SaturatedPastLimit: a time window under Saturate reached its
	// SaturationLimit and rotated early.
	SaturatedPastLimit
	// GrowLimit: a time window under Grow could grow no more (16
	// extensions of a generation, or MaxBits) and rotated early.
	GrowLimit
)

// String returns the name of k: "RotatedEarly", "SaturatedPastLimit" or
// "GrowLimit".
func (k WindowEventKind) String() string {
	switch k {
	case RotatedEarly:
		return "RotatedEarly"
	case SaturatedPastLimit:
		return "SaturatedPastLimit"
	case GrowLimit:
		return "GrowLimit"
	}
	return fmt.Sprintf("WindowEventKind(%d)", uint8(k))
}

// WindowEvent is an event of a window (see OnEvent): its kind, the time of
// the window's clock when it happened, and how far back the window still
// reaches after it: every key added within Retained before Time is kept (0
// if it keeps none from before Time).
type WindowEvent struct {
	Kind     WindowEventKind
	Time     time.Time
	Retained time.Duration
}

// WindowEvents counts a window's events by kind since it was made, read
// or decoded into (the counts are not part of the encoding).
type WindowEvents struct {
	RotatedEarly, SaturatedPastLimit, GrowLimit uint64
}

// hook gives the ring f its saturation cap and w's OnEvent.
func (w *WindowFilter) hook(f *window.Filter) {
	f.SatCap = windowSatCap(f.Config)
	f.OnEvent = nil
	if fn := w.onEvent; fn != nil {
		f.OnEvent = func(e window.Event) {
			fn(WindowEvent{Kind: WindowEventKind(e.Kind), Time: time.Unix(0, e.Time), Retained: time.Duration(e.Retained)})
		}
	}
}

// Events returns the counts of the window's events (see OnEvent) since
// it was made, read or decoded into. On a Concurrent window it takes the
// adds' lock, for O(1).
func (w *WindowFilter) Events() (e WindowEvents) {
	w.read(func(f *window.Filter, _ int64) {
		e = WindowEvents{f.Events[window.RotatedEarly], f.Events[window.SaturatedPastLimit], f.Events[window.GrowLimit]}
	})
	return e
}
