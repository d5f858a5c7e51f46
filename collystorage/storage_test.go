package collystorage_test

import (
	"errors"
	"net/url"
	"sync"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/collystorage"
)

func newStorage(t testing.TB) *collystorage.Storage {
	t.Helper()
	s, err := collystorage.New(testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIsVisitedClaims checks the claim in IsVisited: two goroutines that both
// ask about a new ID before either calls Visited (colly's two calls) cannot
// both hear false, and Visited marks an ID on its own.
func TestIsVisitedClaims(t *testing.T) {
	s := newStorage(t)
	for id := uint64(0); id < 1000; id++ {
		if v, err := s.IsVisited(id); err != nil || v {
			t.Fatalf("first IsVisited(%d) = %v, %v, want false", id, v, err)
		}
		if v, err := s.IsVisited(id); err != nil || !v {
			t.Fatalf("second IsVisited(%d) = %v, %v, want true", id, v, err)
		}
		if err := s.Visited(id); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint64(1000); id < 2000; id++ {
		if err := s.Visited(id); err != nil {
			t.Fatal(err)
		}
		if v, err := s.IsVisited(id); err != nil || !v {
			t.Fatalf("IsVisited(%d) after Visited = %v, %v, want true", id, v, err)
		}
	}
	if got := s.Count(); got != 2000 {
		t.Errorf("Count = %d, want 2000", got)
	}
}

// TestIsVisitedConcurrent has 8 goroutines ask IsVisited about the same
// 20,000 IDs at once, while the filter grows: each ID must hear false exactly
// once. Run it with -race.
func TestIsVisitedConcurrent(t *testing.T) {
	s := newStorage(t)
	const goroutines, ids = 8, 20_000
	falses := make([][]bool, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		falses[g] = make([]bool, ids)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				// Goroutines walk the IDs from different places.
				j := (i + g*ids/goroutines) % ids
				v, err := s.IsVisited(uint64(j) * 0x9e3779b97f4a7c15)
				if err != nil {
					t.Error(err)
					return
				}
				falses[g][j] = !v
			}
		}()
	}
	wg.Wait()
	bad := 0
	for i := range ids {
		n := 0
		for g := range goroutines {
			if falses[g][i] {
				n++
			}
		}
		if n != 1 {
			if bad++; bad <= 10 {
				t.Errorf("ID %d heard false %d times, want 1", i, n)
			}
		}
	}
	if got := s.Count(); got != ids {
		t.Errorf("Count = %d, want %d", got, ids)
	}
}

// TestNoAllocs checks that IsVisited and Visited allocate nothing, for new
// IDs and for visited ones.
func TestNoAllocs(t *testing.T) {
	s, err := collystorage.New(1_000_000, 0.001) // no growth during the runs
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(1)
	for name, f := range map[string]func(){
		"IsVisited/new":     func() { id++; s.IsVisited(id) },
		"IsVisited/visited": func() { s.IsVisited(1) },
		"Visited/new":       func() { id++; s.Visited(id) },
		"Visited/visited":   func() { s.Visited(1) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// TestCookies checks that cookies are kept, before and after Init.
func TestCookies(t *testing.T) {
	s, err := collystorage.New(testCapacity, testRate)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://example.com/a")
	s.SetCookies(u, "a=1")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	s.SetCookies(u, "b=2")
	if got := s.Cookies(u); got != "a=1\nb=2" && got != "b=2\na=1" {
		t.Errorf("Cookies = %q, want a=1 and b=2", got)
	}
	other, _ := url.Parse("http://example.org/")
	if got := s.Cookies(other); got != "" {
		t.Errorf("Cookies of another host = %q", got)
	}
}

// TestZero checks that a zero Storage fails loudly and never answers.
func TestZero(t *testing.T) {
	var s collystorage.Storage
	if err := s.Init(); err == nil {
		t.Error("Init of a zero Storage succeeded")
	}
	if _, err := s.IsVisited(1); err == nil {
		t.Error("IsVisited of a zero Storage succeeded")
	}
	if err := s.Visited(1); err == nil {
		t.Error("Visited of a zero Storage succeeded")
	}
	if err := s.Save(); err == nil {
		t.Error("Save of a zero Storage succeeded")
	}
	if _, err := s.WriteTo(nil); err == nil {
		t.Error("WriteTo of a zero Storage succeeded")
	}
	s.SetCookies(nil, "a=b")
	if c := s.Cookies(nil); c != "" {
		t.Errorf("Cookies of a zero Storage = %q", c)
	}
	if s.Count() != 0 || s.Bits() != 0 {
		t.Errorf("Count, Bits of a zero Storage = %d, %d", s.Count(), s.Bits())
	}
}

// TestNewErrors checks that New passes bloom's parameter errors on.
func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		capacity uint64
		rate     float64
	}{{0, 0.01}, {100, 0}, {100, 1}, {100, -1}} {
		if _, err := collystorage.New(tc.capacity, tc.rate); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("New(%d, %v): %v, want ErrInvalidParameter", tc.capacity, tc.rate, err)
		}
	}
	if _, err := collystorage.New(100, 0.01, bloom.Concurrent()); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("New with Concurrent: %v, want ErrInvalidParameter", err)
	}
}
