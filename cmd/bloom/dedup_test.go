package main

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/bloomfilters/bloom"
)

// benchLines returns n 60-byte lines (59 characters and a newline), half of
// them repeats of earlier ones, like a crawler's URL stream.
func benchLines(n int) []byte {
	var b bytes.Buffer
	b.Grow(60 * n)
	for i := range n {
		k := uint64(i)
		if i%2 == 1 {
			k = uint64(i) * 0x9E3779B97F4A7C15 % uint64(i) // an earlier line
		}
		fmt.Fprintf(&b, "https://example.com/page/%016x%018d\n", k*0x9E3779B97F4A7C15, k)
	}
	return b.Bytes()
}

// BenchmarkDedup measures the dedup loop on 60-byte lines with the default
// parameters: reading, hashing, the filter and buffered output. The filter is
// made anew for every pass over the same 2^21 lines, so its size does not
// depend on b.N. Besides lines/s by the wall clock it reports lines per
// second of process CPU time, which is steadier on a shared machine.
func BenchmarkDedup(b *testing.B) {
	const lines = 1 << 21
	input := benchLines(lines)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	var stop atomic.Bool
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f, err := bloom.NewScalable(dedupCapacity, dedupErrorRate)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := cpuTime()
		if _, err := dedup(bytes.NewReader(input), io.Discard, f, &stop, nil); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// BenchmarkDedupLarge is BenchmarkDedup on 10^7 lines, 5*10^6 of them
// distinct: a filter grown from 2^20 to 5*10^6 keys, of about 20 MiB, larger
// than the caches. One pass takes seconds: run it with -benchtime 1x.
func BenchmarkDedupLarge(b *testing.B) {
	const lines = 10_000_000
	input := benchLines(lines)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	var stop atomic.Bool
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f, err := bloom.NewScalable(dedupCapacity, dedupErrorRate)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := cpuTime()
		n, err := dedup(bytes.NewReader(input), io.Discard, f, &stop, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n.read != lines {
			b.Fatalf("read %d lines, want %d", n.read, lines)
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// TestDedupBlocks checks dedup against a map on more lines than a block, with
// repeats within and across blocks, read whole and one byte at a time (when
// every block holds one line).
func TestDedupBlocks(t *testing.T) {
	var in, want bytes.Buffer
	seen := make(map[string]bool)
	for i := range 5*blockLines + 3 {
		line := fmt.Sprintf("line %d\n", i*7919%(3*blockLines))
		in.WriteString(line)
		if !seen[line] {
			seen[line] = true
			want.WriteString(line)
		}
	}
	for _, oneByte := range []bool{false, true} {
		f, err := bloom.NewScalable(100, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = bytes.NewReader(in.Bytes())
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		var out bytes.Buffer
		var stop atomic.Bool
		n, err := dedup(r, &out, f, &stop, nil)
		if err != nil || n.read != 5*blockLines+3 || n.written != uint64(len(seen)) || !bytes.Equal(out.Bytes(), want.Bytes()) {
			t.Errorf("oneByte=%v: %+v, %v; output equal: %v", oneByte, n, err, bytes.Equal(out.Bytes(), want.Bytes()))
		}
	}
}
