package hugepage

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestWordsAreZeroAndSized(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, MinBytes/8 - 1, MinBytes / 8, MinBytes/8 + 12345} {
		w := Words(n)
		if uint64(len(w)) != n || uint64(cap(w)) != n {
			t.Fatalf("Words(%d): len %d cap %d", n, len(w), cap(w))
		}
		for i, x := range w {
			if x != 0 {
				t.Fatalf("Words(%d)[%d] = %#x", n, i, x)
			}
		}
	}
}

// hugeAt returns the AnonHugePages, in KiB, of the mapping that holds addr
// (from /proc/self/smaps), or -1 if the kernel does not report it.
func hugeAt(t *testing.T, addr uintptr) int {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return -1
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if lo, rest, ok := strings.Cut(line, "-"); ok && !strings.Contains(lo, " ") {
			hi, _, _ := strings.Cut(rest, " ")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h
			continue
		}
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("smaps: %q", line)
			}
			return n
		}
	}
	return -1
}

// TestHugePagesBackLargeWords checks, where Linux offers transparent huge
// pages on request, that a large slice touched after Words is backed by them,
// also when it reuses memory the Go heap had already touched.
func TestHugePagesBackLargeWords(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are requested on Linux only")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages not available (%q, %v)", mode, err)
	}
	for round := range 3 {
		w := Words(64 << 20 / 8)
		for i := 0; i < len(w); i += 512 {
			w[i] = 1
		}
		got := hugeAt(t, uintptr(unsafe.Pointer(&w[len(w)/2])))
		if got < 0 {
			t.Skip("no AnonHugePages in /proc/self/smaps")
		}
		// With transparent huge pages on request only ("madvise", the
		// usual default), 4 KiB pages are all the slice gets without the
		// advice. Ask for a quarter of the 64 MiB: a fragmented machine may
		// lack free 2 MiB pages for the rest, and the slice's ends are not
		// whole huge pages.
		if got < 16<<10 {
			t.Fatalf("round %d: the mapping of a 64 MiB slice has %d KiB in huge pages, want at least 16384", round, got)
		}
		runtime.KeepAlive(w)
		runtime.GC()
	}
}

// BenchmarkRandomLoads reads words of a 128 MiB slice (about the bits of a
// filter of 10^8 keys at 1%) at random, independent loads as a batch of
// keys makes them, from make and from Words, alternating within each
// iteration so that both see the same load on the machine:
//
//	go test -run X -bench RandomLoads -count 5 ./internal/hugepage
func BenchmarkRandomLoads(b *testing.B) {
	const n = 128 << 20 / 8
	slices := map[string][]uint64{"make": make([]uint64, n), "Words": Words(n)}
	for _, w := range slices {
		for i := range w {
			w[i] = uint64(i)
		}
	}
	const loads = 1 << 20
	for _, name := range []string{"make", "Words"} {
		b.Run(name, func(b *testing.B) {
			w := slices[name]
			x, sum := uint64(88172645463325252), uint64(0)
			for range b.N {
				for range loads {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					sum += w[x%n]
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*loads), "ns/load")
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
}

// BenchmarkRandomUpdates is BenchmarkRandomLoads with a bit set in each
// word it reads: the floor of a batch add, whose cache lines are written
// back to memory after they are read.
func BenchmarkRandomUpdates(b *testing.B) {
	const n = 128 << 20 / 8
	w := Words(n)
	for i := range w {
		w[i] = uint64(i)
	}
	const updates = 1 << 20
	x := uint64(88172645463325252)
	b.ResetTimer()
	for range b.N {
		for range updates {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			w[x%n] |= 1 << (x >> 58)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*updates), "ns/update")
}

func TestAlignedWords(t *testing.T) {
	for n := uint64(1); n <= 200; n++ {
		w := AlignedWords(n)
		if uint64(len(w)) != n || uint64(cap(w)) != n || !IsAligned(w) {
			t.Fatalf("AlignedWords(%d): len %d, cap %d, aligned %v", n, len(w), cap(w), IsAligned(w))
		}
		for i, x := range w {
			if x != 0 {
				t.Fatalf("AlignedWords(%d)[%d] = %#x", n, i, x)
			}
		}
	}
	if w := AlignedWords(16); IsAligned(w[1:]) {
		t.Fatal("IsAligned reports a slice one word past a cache line aligned")
	}
}
