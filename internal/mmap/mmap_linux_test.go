package mmap

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bloomfilters/bloom/internal/hugepage"
	"github.com/bloomfilters/bloom/internal/prefetch"
)

// smapsOf returns the lines of /proc/self/smaps that describe the mapping
// that starts at the first byte of data.
func smapsOf(t testing.TB, data []byte) map[string]string {
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&data[0])))
	fields := map[string]string{}
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") && strings.Count(f[0], "-") == 1 {
			in = strings.HasPrefix(line, start)
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && in {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if len(fields) == 0 {
		t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	}
	return fields
}

// kib parses an smaps size such as "1024 kB".
func kib(t testing.TB, v string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(v, " kB"))
	if err != nil {
		t.Fatalf("smaps size %q", v)
	}
	return n
}

// evict drops path's pages from the page cache (POSIX_FADV_DONTNEED), so
// that a new mapping of it reads them again.
func evict(t testing.TB, path string) {
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	const fadvDontNeed = 4
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, fd.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		t.Fatal(errno)
	}
}

// TestAdvice checks that each advice reaches the kernel: the mapping's
// VmFlags in /proc/self/smaps carry "sr" for Sequential, "rr" for Random and
// "hg" for HugePages, and after Populate the whole file is resident in the
// mapping, which without it has no page resident until one is read.
func TestAdvice(t *testing.T) {
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := map[Advice]string{Sequential: "sr", Random: "rr", HugePages: "hg"}
	for _, a := range []Advice{Normal, Sequential, Random, WillNeed, HugePages, Populate} {
		name := [...]string{"Normal", "Sequential", "Random", "WillNeed", "HugePages", "Populate"}[a]
		t.Run(name, func(t *testing.T) {
			evict(t, path)
			f, err := Open(path, a)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sm := smapsOf(t, f.Data)
			vmFlags := strings.Fields(sm["VmFlags"])
			for b, flag := range flags {
				has := false
				for _, v := range vmFlags {
					has = has || v == flag
				}
				if b == HugePages && a == HugePages && !has {
					if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
						continue // a kernel without transparent huge pages
					}
				}
				if has != (a == b) {
					t.Errorf("advice %d: VmFlags %q, %q present = %v", a, sm["VmFlags"], flag, has)
				}
			}
			rss := kib(t, sm["Rss"])
			if a == Populate && rss != size/1024 {
				t.Errorf("after Populate, %d KiB of %d resident", rss, size/1024)
			}
			if a != Populate && a != WillNeed && rss != 0 {
				t.Errorf("advice %d: %d KiB resident before any read", a, rss)
			}
		})
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Advise(Populate + 1); err == nil {
		t.Error("Advise accepted an unknown advice")
	}
	fd, _ := os.Open(path)
	defer fd.Close()
	r, err := read(fd, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Advise(Random); err != nil {
		t.Errorf("Advise on bytes read: %v", err)
	}
}

// The random loads of a query of a filter of 10^8 keys at 1% (128 MiB),
// over the ways its bytes can lie in memory. See docs/mapping.md for what
// they measured and BenchmarkRandomLoads for how to run them.

const (
	loadsSize  = 128 << 20
	loadsRound = 16 // independent loads per round, as a batch of keys makes
)

// xorshift returns the next word index of a pseudo-random sequence and the
// state after it.
func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// randomLoads reads n words of w at random, in rounds of loadsRound
// independent loads; with pre, each round first prefetches its words (as
// the batch pipelines of the filters do).
func randomLoads(w []uint64, n int, pre bool, x uint64) (uint64, uint64) {
	var idx [loadsRound]uint64
	sum := uint64(0)
	mask := uint64(len(w) - 1)
	for range n / loadsRound {
		for i := range idx {
			x = xorshift(x)
			idx[i] = x & mask
		}
		if pre {
			sum += prefetch.Words(w, idx[:])
		}
		for _, i := range idx {
			sum += w[i]
		}
	}
	return sum, x
}

// threadCPU returns the CPU time the calling thread has used, so that a
// benchmark on a machine other processes share times its own work only
// (as bench/ does). The caller locks its goroutine to its thread.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(errno)
	}
	return time.Duration(ts.Nano())
}

// words returns data as words.
func words(data []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&data[0])), len(data)/8)
}

// BenchmarkRandomLoads reads words of a 128 MiB file at random, from
// mappings made with each advice, in the directories of BLOOM_MMAP_DIRS
// (colon-separated; default the temporary directory and /dev/shm), and
// from anonymous memory with 2 MiB pages (hugepage.Words) and with 4 KiB
// pages, for comparison:
//
//	go test -run X -bench RandomLoads -count 5 ./internal/mmap
//
// "first" times Open and the first 2^18 loads of a new mapping of a file
// whose pages are all in the page cache (the faults that map them, or with
// Populate, the open); "steady" and "steady-prefetch" time loads once every
// page has been read through the mapping, plain and with each round of 16
// prefetched first. With HugePages the file is dropped from the page cache
// and read back through a mapping so advised, so that the page cache holds
// it in 2 MiB folios where the file system can (tmpfs cannot drop it).
// Times are the CPU time of the benchmarking thread, faults included, so
// that other processes on the machine inflate them less.
func BenchmarkRandomLoads(b *testing.B) {
	dirs := []string{os.TempDir(), "/dev/shm"}
	if d := os.Getenv("BLOOM_MMAP_DIRS"); d != "" {
		dirs = strings.Split(d, ":")
	}
	data := make([]byte, loadsSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	steady := func(b *testing.B, w []uint64) {
		var sum uint64
		for i := 0; i < len(w); i += 512 {
			sum += w[i] // every page, through this mapping
		}
		for _, pre := range []bool{false, true} {
			name := "steady"
			if pre {
				name = "steady-prefetch"
			}
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				const n = 1 << 16
				x := uint64(88172645463325252)
				start := threadCPU()
				for range b.N {
					var s uint64
					s, x = randomLoads(w, n, pre, x)
					sum += s
				}
				b.ReportMetric(float64((threadCPU()-start).Nanoseconds())/float64(b.N*n), "cpu-ns/load")
			})
		}
		if sum == 1 {
			b.Log(sum)
		}
	}
	b.Run("anon-2MiB", func(b *testing.B) {
		w := hugepage.Words(loadsSize / 8)
		copy(w, words(data))
		steady(b, w)
	})
	b.Run("anon-4KiB", func(b *testing.B) {
		m, err := syscall.Mmap(-1, 0, loadsSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			b.Fatal(err)
		}
		defer syscall.Munmap(m)
		if err := syscall.Madvise(m, syscall.MADV_NOHUGEPAGE); err != nil {
			b.Fatal(err)
		}
		copy(m, data)
		steady(b, words(m))
	})
	for _, dir := range dirs {
		path := filepath.Join(dir, "bloom-mmap-bench")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		defer os.Remove(path)
		for _, a := range []struct {
			name   string
			advice []Advice
		}{{"none", nil}, {"Random", []Advice{Random}}, {"Populate", []Advice{Populate}}, {"HugePages", []Advice{HugePages}}} {
			open := func(b *testing.B) *File {
				if a.name == "HugePages" {
					evict(b, path)
				}
				f, err := Open(path, a.advice...)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < len(f.Data); i += 4096 << 4 {
					_ = f.Data[i]
				}
				return f
			}
			name := strings.ReplaceAll(strings.TrimPrefix(dir, "/"), "/", "-") + "/" + a.name
			b.Run(name+"/first", func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				const n = 1 << 18
				// Every page in the page cache; with HugePages, read back
				// through a mapping so advised, in large folios.
				var sum uint64
				if a.name == "HugePages" {
					evict(b, path)
					f, err := Open(path, HugePages)
					if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < len(f.Data); i += 4096 {
						sum += uint64(f.Data[i])
					}
					f.Close()
				} else if warm, err := os.ReadFile(path); err != nil || len(warm) != loadsSize {
					b.Fatal(err)
				}
				var spent time.Duration
				b.ResetTimer()
				for range b.N {
					start := threadCPU()
					f, err := Open(path, a.advice...)
					if err != nil {
						b.Fatal(err)
					}
					s, _ := randomLoads(words(f.Data), n, false, 88172645463325252)
					sum += s
					spent += threadCPU() - start
					f.Close()
				}
				b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*n), "cpu-ns/load")
				if sum == 1 {
					b.Log(sum)
				}
			})
			b.Run(name, func(b *testing.B) {
				f := open(b)
				defer f.Close()
				sm := smapsOf(b, f.Data)
				b.Logf("%s: Rss %s, FilePmdMapped %s, ShmemPmdMapped %s", name, sm["Rss"], sm["FilePmdMapped"], sm["ShmemPmdMapped"])
				steady(b, words(f.Data))
			})
		}
	}
}

// inCore returns how many pages of data, a mapping, are in the page cache
// (mincore).
func inCore(t testing.TB, data []byte) int {
	page := os.Getpagesize()
	vec := make([]byte, (len(data)+page-1)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestDropCache checks that DropCache empties the page cache of a file that
// was just written and read, except on tmpfs, whose pages are the file.
func TestDropCache(t *testing.T) {
	const size = 8 << 20
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if fs.Type == tmpfsMagic {
		t.Skipf("%s is on tmpfs, which keeps its pages", dir)
	}
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := inCore(t, f.Data); n != size/os.Getpagesize() {
		t.Fatalf("%d pages of a file just written in the page cache, want all %d", n, size/os.Getpagesize())
	}
	f.Close()
	if err := DropCache(path); err != nil {
		t.Fatal(err)
	}
	if f, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := inCore(t, f.Data); n != 0 {
		t.Errorf("after DropCache, %d pages in the page cache, want 0", n)
	}
	if err := DropCache(filepath.Join(dir, "missing")); err == nil {
		t.Error("DropCache of a missing file succeeded")
	}
}
