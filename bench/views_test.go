//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
)

// The benchmarks of issue 23's targets for views: opening a 1.2 GB filter
// file and answering the first query, and the cost per query of a View over
// heap bytes and over file mappings against the filter decoded into the
// heap. They need large files, so they run only when asked (docs/mapping.md
// has the commands and the figures):
//
//	BLOOM_VIEW_FILE=/tmp/bloom-1e9.bin go test -run X -bench OpenFirstQuery -benchtime 5x -count 5
//	BLOOM_VIEW_BIG=1 go test -run X -bench ViewVsHeap -count 5
//
// TestViewPagesShared, below, is quick and runs everywhere on Linux.

// bigKeys is the number of keys added to the filter of BLOOM_VIEW_FILE.
const bigKeys = 10_000_000

// filterFile returns the path in BLOOM_VIEW_FILE, after writing there, if no
// file is there yet, New(1e9, 0.01) with bigKeys keys added (1.2 GB), and
// the first key added. It skips the benchmark if the variable is not set.
func filterFile(b *testing.B) (string, []byte) {
	path := os.Getenv("BLOOM_VIEW_FILE")
	if path == "" {
		b.Skip("set BLOOM_VIEW_FILE to a path (a 1.2 GB filter is written there if missing)")
	}
	keys := genKeys(randomKeys, 1, 31)
	if _, err := os.Stat(path); err == nil {
		return path, keys.key(0)
	}
	start := time.Now()
	f, err := bloom.New(1e9, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	keys = genKeys(randomKeys, bigKeys, 31)
	batch := make([][]byte, 0, 4096)
	for i := range keys.len() {
		if batch = append(batch, keys.key(i)); len(batch) == cap(batch) || i == keys.len()-1 {
			f.AddMany(batch)
			batch = batch[:0]
		}
	}
	if err := writeFile(path, f); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s (%d bits, %d keys) in %v", path, f.Bits(), keys.len(), time.Since(start).Round(time.Millisecond))
	return path, keys.key(0)
}

// writeFile writes f to path with WriteTo, through a temporary file.
func writeFile(path string, f *bloom.BloomFilter) error {
	out, err := os.CreateTemp(filepath.Dir(path), ".bloom-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	w := bufio.NewWriterSize(out, 1<<20)
	if _, err := f.WriteTo(w); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), path)
}

// evict drops the file's pages from the page cache (posix_fadvise
// POSIX_FADV_DONTNEED: pages no process maps are written back if dirty and
// dropped), so that the next open reads the disk. On a virtual machine the
// host may still cache the disk's blocks: "cold" is cold for this kernel.
func evict(b *testing.B, path string) {
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	if err := fd.Sync(); err != nil {
		b.Fatal(err)
	}
	const fadvDontNeed = 4
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, fd.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		b.Fatal(errno)
	}
}

// warm reads the file, so that its pages are in the page cache.
func warm(b *testing.B, path string) {
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := fd.Read(buf); err != nil {
			return
		}
	}
}

// BenchmarkOpenFirstQuery opens the filter file of BLOOM_VIEW_FILE (see
// filterFile) and answers one query, with and without the check of the
// body's checksums, with the file's pages in the page cache (warm) and
// dropped from it (cold). It reports the time from Open to the first
// answer and the KiB of the file resident in the process after it (Rss of
// the mapping, from /proc/self/smaps). The +MADV_ variants map the file as
// Open does and advise the mapping before the View checks it, as
// mmap.Open(path, mmap.Random) or mmap.Open(path, mmap.HugePages) would.
// Read (decoding into the heap, what the issue measured at 4.7-6.1 s) runs
// only with BLOOM_VIEW_READ=1.
func BenchmarkOpenFirstQuery(b *testing.B) {
	path, key := filterFile(b)
	type variant struct {
		name   string
		opts   []bloom.ViewOption
		read   bool
		advice int // madvise advice for the mapping, or -1 for bloom.Open
	}
	skip := []bloom.ViewOption{bloom.SkipBodyCheck()}
	variants := []variant{
		{name: "skip-body", opts: skip, advice: -1},
		{name: "skip-body+MADV_RANDOM", opts: skip, advice: syscall.MADV_RANDOM},
		{name: "skip-body+MADV_HUGEPAGE", opts: skip, advice: syscall.MADV_HUGEPAGE},
		{name: "body-check", advice: -1},
		{name: "body-check+MADV_HUGEPAGE", advice: syscall.MADV_HUGEPAGE},
	}
	if os.Getenv("BLOOM_VIEW_READ") == "1" {
		variants = append(variants, variant{name: "Read", read: true, advice: -1})
	}
	for _, v := range variants {
		for _, cache := range []string{"warm", "cold"} {
			b.Run(v.name+"/"+cache, func(b *testing.B) {
				var total time.Duration
				var resident, huge int
				for range b.N {
					b.StopTimer()
					if cache == "cold" {
						evict(b, path)
					} else {
						warm(b, path)
					}
					b.StartTimer()
					start := time.Now()
					if v.read {
						fd, err := os.Open(path)
						if err != nil {
							b.Fatal(err)
						}
						f, err := bloom.Read(bufio.NewReaderSize(fd, 1<<20))
						fd.Close()
						if err != nil || !f.Test(key) {
							b.Fatalf("Read: %v", err)
						}
						total += time.Since(start)
						continue
					}
					var view *bloom.View
					var err error
					unmap := func() {}
					if v.advice >= 0 {
						// What Open would do with mmap.Open(path, advice).
						view, unmap, err = openAdvised(path, v.advice, v.opts...)
					} else {
						view, err = bloom.Open(path, v.opts...)
					}
					if err != nil {
						b.Fatal(err)
					}
					if !view.Test(key) {
						b.Fatal("an added key is absent")
					}
					total += time.Since(start)
					b.StopTimer()
					resident = residentKiB(b, path)
					huge = mappingKiB(b, "self", path, "FilePmdMapped:")
					view.Close()
					unmap()
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/first-query")
				if !v.read {
					b.ReportMetric(float64(resident), "resident-KiB")
					b.ReportMetric(float64(huge), "2MiB-mapped-KiB")
				}
			})
		}
	}
}

// openAdvised maps path read-only and shared, as bloom.Open does, applies
// madvise advice to the mapping, and makes a View over it; the function it
// returns unmaps it.
func openAdvised(path string, advice int, opts ...bloom.ViewOption) (*bloom.View, func(), error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	unmap := func() { syscall.Munmap(data) }
	if err := syscall.Madvise(data, advice); err != nil {
		unmap()
		return nil, nil, err
	}
	v, err := bloom.NewView(data, opts...)
	if err != nil {
		unmap()
		return nil, nil, err
	}
	return v, unmap, nil
}

// residentKiB returns the Rss, in KiB, of this process's mappings of path,
// from /proc/self/smaps.
func residentKiB(tb testing.TB, path string) int {
	return mappingKiB(tb, "self", path, "Rss:")
}

// mappingKiB sums field (such as "Rss:" or "Pss:") over the mappings of
// path in /proc/<pid>/smaps.
func mappingKiB(tb testing.TB, pid, path, field string) int {
	data, err := os.ReadFile("/proc/" + pid + "/smaps")
	if err != nil {
		tb.Fatal(err)
	}
	in, sum := false, 0
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Count(fields[0], "-") == 1 && !strings.HasSuffix(fields[0], ":") {
			in = fields[len(fields)-1] == path
			continue
		}
		if v, ok := strings.CutPrefix(line, field); ok && in {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				tb.Fatalf("smaps: %q", line)
			}
			sum += n
		}
	}
	return sum
}

// rollupKiB returns a field of /proc/<pid>/smaps_rollup, in KiB.
func rollupKiB(tb testing.TB, pid int, field string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				tb.Fatalf("smaps_rollup: %q", line)
			}
			return n
		}
	}
	tb.Fatalf("no %s in smaps_rollup", field)
	return 0
}

// rusageThread is RUSAGE_THREAD: getrusage of the calling thread.
const rusageThread = 1

// queryKeys returns n random 16-byte keys, about 1% of which a filter of
// 10^8 keys at 1% reports present.
func queryKeys(n int) [][]byte {
	ks := genKeys(randomKeys, n, 77)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = ks.key(i)
	}
	return keys
}

// BenchmarkViewVsHeap compares, at 10^8 keys (New(1e8, 0.01) full, 120 MB
// of bits, both layouts), the cost per key of Test and TestMany on the
// filter decoded into the heap with Read against a View over the same
// encoding: in heap bytes (NewView), and in files mapped by Open in the
// directories of BLOOM_VIEW_DIRS (colon-separated; default /tmp and
// /dev/shm): as written (file-DIR: the pages its writes left in the page
// cache), dropped from the page cache first so that Open's body check reads
// it back from the disk (file-DIR-reread, as after mmap.DropCache), and
// dropped and read back through a mapping advised MADV_HUGEPAGE
// (file-DIR-huge). Each logs how much of it is mapped with 2 MiB pages. Every iteration runs one round of 4096 keys on each, in turn,
// timed by the CPU time of the benchmarking thread, so that one run gives
// the ratios under one load of the machine. The mapped files are read
// through (the body check) before timing, so every page is resident and
// mapped: steady state, not first touch (docs/mapping.md has both).
func BenchmarkViewVsHeap(b *testing.B) {
	if os.Getenv("BLOOM_VIEW_BIG") != "1" {
		b.Skip("set BLOOM_VIEW_BIG=1 (builds two 120 MB filters and writes them to BLOOM_VIEW_DIRS)")
	}
	dirs := []string{os.TempDir(), "/dev/shm"}
	if d := os.Getenv("BLOOM_VIEW_DIRS"); d != "" {
		dirs = strings.Split(d, ":")
	}
	const n = 100_000_000
	keys := queryKeys(1 << 16)
	for _, lay := range []struct {
		name string
		opt  bloom.Option
	}{{"blocked", bloom.Blocked()}, {"classic", bloom.Classic()}} {
		built, err := bloom.New(n, 0.01, lay.opt)
		if err != nil {
			b.Fatal(err)
		}
		hashes := make([]uint64, 1<<16)
		rng := rand.New(rand.NewPCG(5, 5))
		for added := 0; added < n; added += len(hashes) {
			for i := range hashes {
				hashes[i] = rng.Uint64()
			}
			built.AddManyHashes(hashes[:min(len(hashes), n-added)])
		}
		enc, err := built.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		built = nil
		heap, err := bloom.Read(strings.NewReader(string(enc)))
		if err != nil {
			b.Fatal(err)
		}
		type tester interface {
			Test([]byte) bool
			TestMany([][]byte, []bool) []bool
		}
		names := []string{"heap", "view-heap", "view-heap-2MiB"}
		filters := []tester{heap}
		view, err := bloom.NewView(enc)
		if err != nil {
			b.Fatal(err)
		}
		filters = append(filters, view)
		// The same bytes in anonymous memory advised MADV_HUGEPAGE before
		// it is first touched, as hugepage.Words does for Read's words.
		huge, err := syscall.Mmap(-1, 0, len(enc), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			b.Fatal(err)
		}
		defer syscall.Munmap(huge)
		if err := syscall.Madvise(huge, syscall.MADV_HUGEPAGE); err != nil {
			b.Fatal(err)
		}
		copy(huge, enc)
		if view, err = bloom.NewView(huge); err != nil {
			b.Fatal(err)
		}
		filters = append(filters, view)
		b.Logf("%s: this process has %d KiB of anonymous memory in 2 MiB pages (Read's words, %d KiB, and view-heap-2MiB's, %d KiB, can be)",
			lay.name, rollupKiB(b, os.Getpid(), "AnonHugePages:"), len(enc)/1024, len(enc)/1024)
		for _, dir := range dirs {
			for _, kind := range []string{"", "-reread", "-huge"} {
				path := filepath.Join(dir, fmt.Sprintf("bloom-viewvsheap-%s%s.bin", lay.name, kind))
				if err := writeFile(path, heap); err != nil {
					b.Fatal(err)
				}
				defer os.Remove(path)
				names = append(names, "file"+strings.ReplaceAll(dir, "/", "-")+kind)
				logPages := func() {
					b.Logf("%s: %d KiB resident, %d KiB of it in 2 MiB pages", path,
						mappingKiB(b, "self", path, "Rss:"), mappingKiB(b, "self", path, "FilePmdMapped:")+mappingKiB(b, "self", path, "ShmemPmdMapped:"))
				}
				if kind != "-huge" {
					if kind == "-reread" {
						evict(b, path) // what mmap.DropCache does
					}
					v, err := bloom.Open(path) // the body check maps every page
					if err != nil {
						b.Fatal(err)
					}
					defer v.Close()
					filters = append(filters, v)
					logPages()
					continue
				}
				// The same file dropped from the page cache and read back
				// through a mapping advised MADV_HUGEPAGE (what
				// mmap.Open(path, mmap.HugePages) does), by the body check:
				// in 2 MiB folios mapped with 2 MiB pages where the file
				// system can.
				evict(b, path)
				fd, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				fi, _ := fd.Stat()
				data, err := syscall.Mmap(int(fd.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
				fd.Close()
				if err != nil {
					b.Fatal(err)
				}
				defer syscall.Munmap(data)
				if err := syscall.Madvise(data, syscall.MADV_HUGEPAGE); err != nil {
					b.Fatal(err)
				}
				v, err := bloom.NewView(data)
				if err != nil {
					b.Fatal(err)
				}
				filters = append(filters, v)
				logPages()
			}
		}
		for _, method := range []string{"Test", "TestMany"} {
			b.Run(lay.name+"/"+method, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				const round = 4096
				spent := make([]time.Duration, len(filters))
				results := make([]bool, round)
				hits := make([]int, len(filters))
				faults := make([]int64, len(filters))
				b.ResetTimer()
				for i := range b.N {
					batch := keys[(i*round)%len(keys):][:round]
					for j := range filters {
						j = (j + i) % len(filters) // rotate who goes first
						f := filters[j]
						var r0, r1 syscall.Rusage
						syscall.Getrusage(rusageThread, &r0)
						start := now()
						if method == "Test" {
							for k, key := range batch {
								results[k] = f.Test(key)
							}
						} else {
							f.TestMany(batch, results)
						}
						spent[j] += now() - start
						syscall.Getrusage(rusageThread, &r1)
						faults[j] += r1.Minflt - r0.Minflt + r1.Majflt - r0.Majflt
						for _, r := range results {
							if r {
								hits[j]++
							}
						}
					}
				}
				for j := range filters {
					if hits[j] != hits[0] {
						b.Fatalf("%s answered %d present, heap %d", names[j], hits[j], hits[0])
					}
					b.ReportMetric(float64(spent[j].Nanoseconds())/float64(b.N*round), names[j]+"-ns/key")
					b.ReportMetric(float64(faults[j])/float64(b.N*round), names[j]+"-faults/key")
					if j > 0 {
						b.ReportMetric(float64(spent[j])/float64(spent[0]), names[j]+"/heap")
					}
				}
			})
		}
	}
}

// TestViewPagesShared starts two processes (this test binary again) that
// Open the same 64 MiB filter file and read all of it (the body check), and
// checks in /proc/PID/smaps that each maps every page of the file while its
// proportional share (Pss) of them is about half: the page cache holds one
// copy for both. A third process opens it with SkipBodyCheck and answers a
// query: it must have only a few pages of the file resident.
func TestViewPagesShared(t *testing.T) {
	if os.Getenv("BLOOM_VIEW_CHILD") != "" {
		viewChild(t)
		return
	}
	if testing.Short() {
		t.Skip("writes a 64 MiB file")
	}
	f, err := bloom.NewWithSize(64<<20*8, 7)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]uint64, 1<<20)
	for i := range hashes {
		hashes[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	f.AddManyHashes(hashes)
	path := filepath.Join(t.TempDir(), "shared.bin")
	if err := writeFile(path, f); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fileKiB := int(fi.Size() / 1024)

	start := func(mode string) (*childProc, error) {
		return startChild(path, mode)
	}
	a, err := start("full")
	if err != nil {
		t.Fatal(err)
	}
	defer a.stop()
	rssA, pssA := mappingKiB(t, a.pid, path, "Rss:"), mappingKiB(t, a.pid, path, "Pss:")
	b, err := start("full")
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	for _, p := range []*childProc{a, b} {
		rss, pss := mappingKiB(t, p.pid, path, "Rss:"), mappingKiB(t, p.pid, path, "Pss:")
		pid, _ := strconv.Atoi(p.pid)
		t.Logf("process %s: file mapping Rss %d KiB, Pss %d KiB; whole process (smaps_rollup) Rss %d KiB, Pss %d KiB",
			p.pid, rss, pss, rollupKiB(t, pid, "Rss:"), rollupKiB(t, pid, "Pss:"))
		if rss < fileKiB-4 {
			t.Errorf("process %s has %d KiB of the %d KiB file resident, want all of it", p.pid, rss, fileKiB)
		}
		// Two processes map each page: each one's share is half.
		if pss > rss/2+rss/16 || pss < rss/2-rss/16 {
			t.Errorf("process %s: Pss %d KiB of Rss %d KiB, want about half: the pages are not shared", p.pid, pss, rss)
		}
	}
	t.Logf("first process alone before: file mapping Rss %d KiB, Pss %d KiB", rssA, pssA)
	if pssA < rssA-rssA/16 {
		t.Errorf("alone, Pss %d KiB of Rss %d KiB, want all of it", pssA, rssA)
	}
	c, err := start("skip")
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	// A fault maps the pages around the one touched: 16 (64 KiB), or since
	// Linux 6.18 the whole folio of the page cache that holds it, up to
	// 2 MiB. The child touches four places: the header, the last word
	// (Open checks the padding bits) and the words of two queries.
	const most = 4 * (2048 + 64)
	if rss := mappingKiB(t, c.pid, path, "Rss:"); rss > most || rss == 0 {
		t.Errorf("with SkipBodyCheck, %d KiB of the %d KiB file resident after two queries, want at most %d", rss, fileKiB, most)
	} else {
		t.Logf("with SkipBodyCheck, two queries: file mapping Rss %d KiB of %d KiB", rss, fileKiB)
	}
}

// childProc is a process started by startChild.
type childProc struct {
	pid   string
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

// execTest returns a command that runs this test binary's test name alone,
// with env added to the environment.
func execTest(name string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// startChild runs this test binary as TestViewPagesShared's child, which
// opens path (mode "full": with the body check; "skip": SkipBodyCheck and
// one query), prints "ready" and waits for its standard input to close.
func startChild(path, mode string) (*childProc, error) {
	cmd := execTest("TestViewPagesShared", "BLOOM_VIEW_CHILD="+mode, "BLOOM_VIEW_CHILD_FILE="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		in.Close()
		cmd.Wait()
		return nil, fmt.Errorf("child: %q, %v", line, err)
	}
	return &childProc{pid: strconv.Itoa(cmd.Process.Pid), cmd: cmd, stdin: in}, nil
}

func (p *childProc) stop() {
	p.stdin.Close()
	p.cmd.Wait()
}

// viewChild is the child's side of TestViewPagesShared.
func viewChild(t *testing.T) {
	var opts []bloom.ViewOption
	if os.Getenv("BLOOM_VIEW_CHILD") == "skip" {
		opts = append(opts, bloom.SkipBodyCheck())
	}
	v, err := bloom.Open(os.Getenv("BLOOM_VIEW_CHILD_FILE"), opts...)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	key := binary.LittleEndian.AppendUint64(nil, 0x9e3779b97f4a7c15)
	v.TestHash(0x9e3779b97f4a7c15)
	v.Test(key)
	fmt.Println("ready")
	var buf [1]byte
	os.Stdin.Read(buf[:]) // until the parent closes it
	v.Close()
	os.Exit(0)
}
