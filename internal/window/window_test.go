package window

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/bloomfilters/bloom/internal/format"
	"github.com/bloomfilters/bloom/internal/layout"
	"github.com/bloomfilters/bloom/internal/murmur"
)

// testConfig returns a window of gens generations for window keys, each
// generation about 16 bits per key with k = 8: the root package sizes real
// ones; these tests are about rotation and bookkeeping.
func testConfig(window uint64, gens int) Config {
	c := Config{Window: window, ErrorRate: 0.01, Gens: gens, GenCap: GenCapFor(window, gens), K: 8, Seed: 7}
	c.M = max((c.GenCap*16+511)/512, 1) * 512
	return c
}

// testSizer sizes extension j of a test window as testConfig sizes a
// generation: GenCap*2^(j-1) keys at about 16 bits each, k = 8.
func testSizer(c Config, j int) (Ext, error) {
	capacity := c.GenCap << (j - 1)
	return Ext{Cap: capacity, M: max((capacity*16+511)/512, 1) * 512, K: 8}, nil
}

func hashOf(key uint64, seed uint32) (uint64, uint64) {
	return murmur.Sum128(layout.KeyBytes(&key), seed)
}

func add(f *Filter, key uint64, now int64) bool {
	f.Advance(now)
	h1, h2 := hashOf(key, f.Seed)
	return f.Add(h1, h2, now)
}

func test(f *Filter, key uint64, now int64) bool {
	h1, h2 := hashOf(key, f.Seed)
	return f.Test(h1, h2, f.Live(now))
}

func TestGenCapFor(t *testing.T) {
	for _, c := range []struct {
		w    uint64
		r    int
		want uint64
	}{{7, 8, 1}, {8, 8, 2}, {14, 8, 2}, {1, 2, 1}, {10, 2, 10}, {1 << 63, 2, 1 << 63}, {1<<64 - 1, 3, 1 << 63}} {
		if got := GenCapFor(c.w, c.r); got != c.want {
			t.Errorf("GenCapFor(%d, %d) = %d, want %d", c.w, c.r, got, c.want)
		}
	}
}

// TestLastWindowPresent is the first promise: after every addition, each of
// the last Window keys added tests present, for r in 2..16, distinct keys
// and keys drawn again and again from a small pool (where an addition counts
// again once its key has left the newest generation).
func TestLastWindowPresent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for gens := 2; gens <= 16; gens++ {
		for _, window := range []uint64{1, 5, 37, 120} {
			for _, pool := range []uint64{0, window/2 + 1, 2 * window} {
				t.Run(fmt.Sprintf("r=%d/window=%d/pool=%d", gens, window, pool), func(t *testing.T) {
					f := New(testConfig(window, gens), 0, testSizer)
					var last []uint64
					steps := int(4*uint64(gens)*f.GenCap) + 50
					for i := range steps {
						key := uint64(i) + 1<<40
						if pool != 0 {
							key = rng.Uint64N(pool)
						}
						add(f, key, 0)
						last = append(last, key)
						if uint64(len(last)) > window {
							last = last[1:]
						}
						for _, k := range last {
							if !test(f, k, 0) {
								t.Fatalf("step %d: key %d, one of the last %d added, tests absent", i, k, window)
							}
						}
					}
					if pool == 0 && f.Rotations() == 0 {
						t.Fatalf("no rotation in %d distinct keys", steps)
					}
				})
			}
		}
	}
}

// TestForgets checks that a key is forgotten once Gens*GenCap keys have been
// added after it: its generation has been cleared, so it tests present only
// as a false positive would.
func TestForgets(t *testing.T) {
	f := New(testConfig(1000, 5), 0, testSizer)
	for i := range uint64(1000) {
		add(f, i, 0)
	}
	for i := range uint64(5 * f.GenCap) {
		add(f, 1<<32+i, 0)
	}
	present := 0
	for i := range uint64(1000) {
		if test(f, i, 0) {
			present++
		}
	}
	// About 5 generations at well under 1% each: 1,000 keys give ~10.
	if present > 40 {
		t.Fatalf("%d of 1000 keys older than the ring still test present", present)
	}
}

// TestBatchMatchesLoop checks that the batch calls give the answers and the
// state of the loop of single calls, rotations included.
func TestBatchMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, gens := range []int{2, 3, 8, 16} {
		for _, m := range []uint64{0, 1 << 21, 1} {
			c := testConfig(3000, gens)
			if m == 1<<21 {
				c.M = m // large enough that the batch calls prefetch
			}
			if m == 1 {
				// A time window under Grow, all in one period: it takes
				// extensions, which the tests read too.
				c.Period, c.Policy = 1<<40, Grow
			}
			a, b := New(c, 0, testSizer), New(c, 0, testSizer)
			for it := range 20 {
				mode := AddNew + Mode(it%2) // first-seen, then last-seen
				keys := make([]uint64, rng.IntN(700))
				for i := range keys {
					keys[i] = rng.Uint64N(5000)
				}
				want := make([]bool, len(keys))
				for i, k := range keys {
					h1, h2 := hashOf(k, c.Seed)
					want[i] = a.Test(h1, h2, a.Live(0))
					if !want[i] || mode == AddRefresh {
						a.Add(h1, h2, 0)
					}
				}
				got := make([]bool, len(keys))
				AddMany(b, keys, got, 0, mode)
				for i := range keys {
					if got[i] != want[i] {
						t.Fatalf("r=%d: TestAndAddMany[%d] = %v, loop %v", gens, i, got[i], want[i])
					}
				}
				if !a.Equal(b) {
					t.Fatalf("r=%d: batch state differs from loop's", gens)
				}
				if c.Policy == Grow && a.Extensions() == 0 && a.Count(0) > c.GenCap {
					t.Fatalf("r=%d: no extension past the base's capacity", gens)
				}
				strs := make([]string, len(keys))
				for i := range strs {
					strs[i] = fmt.Sprint(keys[i])
				}
				AddMany(b, strs, nil, 0, AddAll)
				for _, s := range strs {
					h1, h2 := murmur.Sum128([]byte(s), c.Seed)
					a.Add(h1, h2, 0)
				}
				if !a.Equal(b) {
					t.Fatalf("r=%d: AddMany state differs from loop's", gens)
				}
				TestMany(b, keys, got, b.Live(0))
				for i, k := range keys {
					if got[i] != test(a, k, 0) {
						t.Fatalf("r=%d: TestMany[%d] differs from Test", gens, i)
					}
				}
			}
		}
	}
}

// TestTimeRotation drives a time window with a fake clock: a key is held
// for at least (Gens-1) periods and forgotten after Gens, whenever the calls
// come; a burst beyond a generation's capacity rotates early under
// RotateEarly (the retained time shrinks, OldestStart says so) and overfills
// the newest generation under Saturate (ErrorRate says so).
func TestTimeRotation(t *testing.T) {
	const period = 100
	c := testConfig(1000, 4)
	c.Period = period
	for _, gap := range []int64{1, 7, 33, 99, 100, 101, 250} {
		f := New(c, 1000, testSizer)
		now := int64(1000)
		type added struct {
			key uint64
			at  int64
		}
		var hist []added
		stale, old := 0, 0
		for i := range 200 {
			now += gap
			add(f, uint64(i), now)
			hist = append(hist, added{uint64(i), now})
			for _, a := range hist {
				age := now - a.at
				got := test(f, a.key, now)
				if age < 3*period && !got {
					t.Fatalf("gap %d: key added %d ago (window %d) tests absent", gap, age, 3*period)
				}
				if age >= 4*period {
					old++
					if got {
						stale++
					}
				}
			}
		}
		// Keys Gens periods old are in cleared generations: present only
		// as false positives (rate well under 1% here).
		if stale > old/50+2 {
			t.Fatalf("gap %d: %d of %d tests of keys older than the ring answered present", gap, stale, old)
		}
		// Long after the last add, without any add, every generation is
		// out of the window.
		if f.Live(now+4*period) != 0 || test(f, 199, now+4*period) {
			t.Fatalf("gap %d: keys still live 4 periods after the last add", gap)
		}
		f.Advance(now + 4*period)
		if f.SetBits(now+4*period) != 0 || f.Count(now+4*period) != 0 {
			t.Fatalf("gap %d: Advance past the window left bits", gap)
		}
	}

	t.Run("burst/RotateEarly", func(t *testing.T) {
		f := New(c, 0, testSizer)
		for i := range uint64(5 * c.GenCap) {
			add(f, i, 10)
		}
		if f.Rotations() < 4 {
			t.Fatalf("%d rotations after a burst of 5 generations", f.Rotations())
		}
		if s := f.OldestStart(10); s != 10 {
			t.Fatalf("OldestStart = %d after the burst, want 10", s)
		}
		if f.ErrorRate(10) > c.ErrorRate {
			t.Fatalf("rate %v above %v", f.ErrorRate(10), c.ErrorRate)
		}
	})
	t.Run("burst/Saturate", func(t *testing.T) {
		c := c
		c.Policy = Saturate
		f := New(c, 0, testSizer)
		before := 0.0
		for i := range uint64(20 * c.GenCap) {
			add(f, i, 10)
			if i == c.GenCap {
				before = f.ErrorRate(10)
			}
		}
		if f.Rotations() != 0 || f.NewestCount() < 5*c.GenCap {
			t.Fatalf("Saturate rotated (%d) or lost count (%d)", f.Rotations(), f.NewestCount())
		}
		if f.ErrorRate(10) < 10*before {
			t.Fatalf("rate %v after 20 generations' keys, %v after one: not reported", f.ErrorRate(10), before)
		}
		for i := range uint64(20 * c.GenCap) {
			if !test(f, i, 10) {
				t.Fatalf("Saturate lost key %d", i)
			}
		}
	})
	t.Run("burst/Grow", func(t *testing.T) {
		c := c
		c.Policy = Grow
		f := New(c, 0, testSizer)
		base := f.Bits()
		for i := range uint64(20 * c.GenCap) {
			add(f, i, 10)
			if i < c.GenCap && f.Extensions() != 0 {
				t.Fatalf("extension before the base is full (key %d)", i)
			}
		}
		// 20 shares: the base and extensions of 1, 2, 4, 8 and 16 shares.
		if f.Rotations() != 0 || f.Extensions() != 5 || f.Count(10) < 19*c.GenCap {
			t.Fatalf("Grow: %d rotations, %d extensions, count %d", f.Rotations(), f.Extensions(), f.Count(10))
		}
		if f.Bits() <= base {
			t.Fatalf("Bits %d did not grow from %d", f.Bits(), base)
		}
		for i := range uint64(20 * c.GenCap) {
			if !test(f, i, 10) {
				t.Fatalf("Grow lost key %d", i)
			}
		}
		// Three periods later the burst's generation is the oldest live
		// one; a fourth drops it with its extensions.
		f.Advance(10 + 3*period)
		if f.Extensions() != 5 || !test(f, 3, 10+3*period) {
			t.Fatal("burst dropped before its generation left the window")
		}
		f.Advance(10 + 4*period)
		if f.Extensions() != 0 || f.Bits() != base {
			t.Fatalf("after the window: %d extensions, %d bits, want 0 and %d", f.Extensions(), f.Bits(), base)
		}
		// Clear drops the extensions too.
		for i := range uint64(3 * c.GenCap) {
			add(f, i, 10+4*period)
		}
		if f.Extensions() == 0 {
			t.Fatal("no extension after a second burst")
		}
		f.Clear(10 + 4*period)
		if f.Extensions() != 0 || f.Bits() != base || f.Count(10+4*period) != 0 || test(f, 1, 10+4*period) {
			t.Fatalf("after Clear: %d extensions, %d bits, count %d", f.Extensions(), f.Bits(), f.Count(10+4*period))
		}
	})
	t.Run("burst/Grow/limit", func(t *testing.T) {
		// A generation of one key: MaxExtensions extensions hold
		// 2^16-1 more; past them the window rotates early.
		c := testConfig(3, 4)
		c.Period, c.Policy = period, Grow
		f := New(c, 0, testSizer)
		per := c.GenCap << MaxExtensions // base and all extensions
		// Keys that set no bit are not counted: a few more than the
		// capacity of two generations make two rotations.
		n := 2*per + per/64
		for i := range n {
			add(f, i, 10)
		}
		if f.Rotations() != 2 || f.Extensions() < MaxExtensions || f.OldestStart(10) != 0 {
			t.Fatalf("%d rotations, %d extensions, oldest start %d", f.Rotations(), f.Extensions(), f.OldestStart(10))
		}
		for g := range f.exts {
			if len(f.exts[g]) > MaxExtensions {
				t.Fatalf("generation %d has %d extensions", g, len(f.exts[g]))
			}
		}
		// Two more rotate out every generation that started at 0: the
		// retained time is shorter, OldestStart says so.
		for i := range 2 * per {
			add(f, n+i, 10)
		}
		if f.Rotations() != 4 || f.OldestStart(10) != 10 {
			t.Fatalf("%d rotations, oldest start %d, want 4 and 10", f.Rotations(), f.OldestStart(10))
		}
		if f.Bits() > uint64(c.Gens)*(c.M+(c.GenCap<<MaxExtensions)*16+512*MaxExtensions) {
			t.Fatalf("%d bits: more than every generation at its limit", f.Bits())
		}
		for i := n + 2*per - 3*c.GenCap; i < n+2*per; i++ {
			if !test(f, i, 10) {
				t.Fatalf("key %d, one of the last window keys, lost", i)
			}
		}
	})
}

// growFilled returns a window of c under Grow fed n keys at time 5 (a
// burst: extensions) and then n/4 more a period later.
func growFilled(c Config, n uint64) *Filter {
	c.Policy = Grow
	f := New(c, 5, testSizer)
	for i := range n {
		add(f, i, 5)
	}
	for i := range n / 4 {
		add(f, 1<<20+i, 5+c.Period)
	}
	return f
}

func filled(c Config, n uint64) *Filter {
	f := New(c, 5, testSizer)
	for i := range n {
		add(f, i, 5+int64(i))
	}
	return f
}

func TestEncodingRoundTrip(t *testing.T) {
	c := testConfig(500, 3)
	ct := c
	ct.Period, ct.Policy = 40, Saturate
	cg := c
	cg.Period, cg.Policy = 40, Grow
	cl := ct // a saturation limit in the header
	cl.SatLimit = 0.25
	for _, c := range []Config{c, ct, cg, cl} {
		for _, n := range []uint64{0, 10, 300, 2000, 70_000} {
			f := filled(c, n)
			if c.Policy == Grow {
				f = growFilled(c, n)
				if n > c.GenCap && f.Extensions() == 0 {
					t.Fatalf("n=%d: no extension", n)
				}
			}
			data := f.AppendBinary(nil)
			if uint64(len(data)) != f.EncodedSize() {
				t.Fatalf("encoding of %d bytes, EncodedSize %d", len(data), f.EncodedSize())
			}
			g, err := Decode(data, testSizer)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Equal(g) {
				t.Fatalf("n=%d: decoded window differs", n)
			}
			var buf bytes.Buffer
			if _, err := f.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("WriteTo differs from AppendBinary (%v)", err)
			}
			h, read, err := Read(struct{ io.Reader }{bytes.NewReader(data)}, nil, nil, testSizer)
			if err != nil || read != int64(len(data)) || !f.Equal(h) {
				t.Fatalf("Read: %v, %d of %d bytes", err, read, len(data))
			}
			// The decoded window goes on as the original does, growing
			// alike.
			for i := range uint64(100) + n {
				add(f, 1<<40+i, 5000)
				add(g, 1<<40+i, 5000)
			}
			if !f.Equal(g) {
				t.Fatalf("n=%d: decoded window diverges", n)
			}
			if c := f.Clone(); !c.Equal(f) || c.Extensions() != f.Extensions() {
				t.Fatalf("n=%d: Clone differs", n)
			} else if add(c, 1<<50, 5000); f.Extensions() > 0 && c.Equal(f) && !test(f, 1<<50, 5000) {
				t.Fatalf("n=%d: Clone shares state", n)
			}
		}
	}
}

// TestDecodeRefusesDamage flips every bit and cuts every length of a small
// encoding: each must be an error (ErrCorrupt or io.ErrUnexpectedEOF), from
// both decoders.
func TestDecodeRefusesDamage(t *testing.T) {
	cg := testConfig(60, 3)
	cg.Period = 9
	for _, data := range [][]byte{filled(testConfig(60, 3), 100).AppendBinary(nil), growFilled(cg, 200).AppendBinary(nil)} {
		refusesDamage(t, data)
	}
	// A Grow window with extensions, decoded with another sizing, or
	// none: its extensions are not what the window would make.
	g := growFilled(cg, 200).AppendBinary(nil)
	other := func(c Config, j int) (Ext, error) {
		e, err := testSizer(c, j)
		e.K++
		return e, err
	}
	for _, s := range []Sizer{nil, other} {
		if _, err := Decode(g, s); !errors.Is(err, format.ErrCorrupt) {
			t.Fatalf("Decode with another sizing: %v", err)
		}
		if _, _, err := Read(bytes.NewReader(g), nil, nil, s); !errors.Is(err, format.ErrCorrupt) {
			t.Fatalf("Read with another sizing: %v", err)
		}
	}
}

func refusesDamage(t *testing.T, data []byte) {
	for i := range len(data) {
		for bit := range 8 {
			d := bytes.Clone(data)
			d[i] ^= 1 << bit
			if _, err := Decode(d, testSizer); !errors.Is(err, format.ErrCorrupt) && err != io.ErrUnexpectedEOF {
				t.Fatalf("byte %d bit %d flipped: Decode error %v", i, bit, err)
			}
			if _, _, err := Read(bytes.NewReader(d), nil, nil, testSizer); err == nil {
				t.Fatalf("byte %d bit %d flipped: Read accepted it", i, bit)
			}
		}
	}
	for n := range len(data) {
		if _, err := Decode(data[:n], testSizer); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
		if _, _, err := Read(bytes.NewReader(data[:n]), nil, nil, testSizer); err != io.ErrUnexpectedEOF {
			t.Fatalf("Read cut to %d bytes: %v", n, err)
		}
	}
	if _, err := Decode(append(bytes.Clone(data), 0), testSizer); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(filled(testConfig(60, 3), 100).AppendBinary(nil))
	c := testConfig(30, 4)
	c.Period = 9
	f.Add(filled(c, 50).AppendBinary(nil))
	f.Add(growFilled(c, 30).AppendBinary(nil))
	f.Add(growFilled(c, 200).AppendBinary(nil))
	c.Policy, c.SatLimit = Saturate, 0.5
	f.Add(filled(c, 50).AppendBinary(nil))
	c.Policy, c.SatLimit = Grow, 0
	// Trailing bytes: Decode refuses them, Read leaves them unread.
	f.Add(append(growFilled(c, 30).AppendBinary(nil), 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Decode(data, testSizer)
		r := bytes.NewReader(data)
		w2, _, err2 := Read(r, nil, nil, testSizer)
		if (err == nil) != (err2 == nil && r.Len() == 0) {
			t.Fatalf("Decode %v, Read %v with %d bytes left", err, err2, r.Len())
		}
		if err2 != nil && w2 != nil {
			t.Fatal("Read: error with a result")
		}
		if err != nil {
			if w != nil {
				t.Fatal("error with a result")
			}
			return
		}
		if !w.Equal(w2) || !bytes.Equal(w.AppendBinary(nil), data) {
			t.Fatal("decoded window does not encode back to its input")
		}
		add(w, 1, 0) // usable
	})
}

// TestFloorAfterBurst is the floor of window.go at the level of the ring:
// a burst rotates every generation on count within one instant; a period
// later the rotation by time may not drop the oldest while the newer
// generations hold fewer than Window keys, and the newest holds on past its
// period (its start moved up) until they do. Every key among the last
// Window added and within the duration is present at every step; the
// decoder takes the held state.
func TestFloorAfterBurst(t *testing.T) {
	const period = 100
	c := testConfig(200, 7)
	c.Period = period
	f := New(c, 0, testSizer)
	type added struct {
		key uint64
		at  int64
	}
	var hist []added
	now := int64(1000)
	for i := range uint64(600) {
		add(f, i, now)
		hist = append(hist, added{i, now})
	}
	held := false
	for i := range uint64(300) {
		now += period / 7
		add(f, 1e6+i, now)
		hist = append(hist, added{1e6 + i, now})
		held = held || f.starts[f.newest] > now-period && f.elapsed(now) == 0 && (now-f.starts[f.newest])%period != 0
		for j := len(hist) - 1; j >= len(hist)-int(c.Window) && j >= 0; j-- {
			if now-hist[j].at < 6*period && !test(f, hist[j].key, now) {
				t.Fatalf("step %d: key %d, added %d ago, one of the last %d, absent", i, hist[j].key, now-hist[j].at, c.Window)
			}
		}
		g, err := Decode(f.AppendBinary(nil), testSizer)
		if err != nil || !g.Equal(f) {
			t.Fatalf("step %d: decoding the held window: %v", i, err)
		}
	}
	if !held {
		t.Fatal("the newest generation was never held past its period")
	}
}
