package bfdump

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
)

// benchKeys returns n distinct 16-byte keys.
func benchKeys(n int, salt uint64) [][]byte {
	keys := make([][]byte, n)
	buf := make([]byte, 16*n)
	for i := range keys {
		k := buf[16*i : 16*i+16 : 16*i+16]
		binary.LittleEndian.PutUint64(k, uint64(i)*0x9E3779B97F4A7C15+salt)
		binary.LittleEndian.PutUint64(k[8:], salt)
		keys[i] = k
	}
	return keys
}

// benchSizes are the filters the benchmarks use: their size does not
// depend on b.N.
var benchSizes = []uint64{1e5, 1e7}

// BenchmarkAdd adds new keys to a filter sized for them, cycling through
// them (later rounds find them present) and refilling it when full.
func BenchmarkAdd(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%g/p=0.01", float64(n)), func(b *testing.B) {
			keys := benchKeys(int(n), 1)
			f, err := New(n, 0.01, NonScaling())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = f.Add(keys[i%len(keys)])
			}
		})
	}
}

// BenchmarkTest tests absent and present keys against a full filter.
func BenchmarkTest(b *testing.B) {
	for _, n := range benchSizes {
		keys, absent := benchKeys(int(n), 1), benchKeys(int(n), 2)
		f, err := New(n, 0.01, NonScaling())
		if err != nil {
			b.Fatal(err)
		}
		if err := f.AddMany(keys); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			keys [][]byte
		}{{"absent", absent}, {"present", keys}} {
			b.Run(fmt.Sprintf("n=%g/p=0.01/%s", float64(n), c.name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					f.Test(c.keys[i%len(c.keys)])
				}
			})
			b.Run(fmt.Sprintf("n=%g/p=0.01/%s/TestMany-1000", float64(n), c.name), func(b *testing.B) {
				res := make([]bool, 1000)
				b.ReportAllocs()
				for i := 0; i < b.N; i += 1000 {
					start := i % (len(c.keys) - 1000)
					f.TestMany(c.keys[start:start+1000], res)
				}
			})
		}
	}
}

// BenchmarkStream writes and reads the saved form of a full filter of 10^7
// keys at 1% (11.4 MiB of bits).
func BenchmarkStream(b *testing.B) {
	f, err := New(1e7, 0.01, NonScaling())
	if err != nil {
		b.Fatal(err)
	}
	if err := f.AddMany(benchKeys(1e7, 3)); err != nil {
		b.Fatal(err)
	}
	saved, _ := f.MarshalBinary()
	b.Run("WriteTo", func(b *testing.B) {
		b.SetBytes(int64(len(saved)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := f.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadFrom", func(b *testing.B) {
		b.SetBytes(int64(len(saved)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var g Filter
			if _, err := g.ReadFrom(bytes.NewReader(saved)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Loader", func(b *testing.B) {
		b.SetBytes(int64(len(saved)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var ld Loader
			for it, chunk := range f.Chunks() {
				if err := ld.LoadChunk(it, chunk); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := ld.Filter(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkServer loads 2*10^6 keys at 1% into a RedisBloom server three
// ways: Restore of a filter built in Go, and BF.MADD of the keys in batches
// of 1,000 on one pipeline; and reads the key back with ScanDump. It needs a
// server with BF.* commands at BLOOM_REDIS_ADDR and skips without one.
func BenchmarkServer(b *testing.B) {
	rdb := bfClient(b)
	ctx := context.Background()
	const n = 2_000_000
	keys := benchKeys(n, 4)
	f, err := Reserve(n, 0.01, NonScaling())
	if err != nil {
		b.Fatal(err)
	}
	if err := f.AddMany(keys); err != nil {
		b.Fatal(err)
	}
	key := testKey(b, rdb)
	b.Run("Restore", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := Restore(ctx, rdb, key, f, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BF.MADD-pipelined", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			rdb.Del(ctx, key)
			if err := rdb.Do(ctx, "BF.RESERVE", key, "0.01", n, "NONSCALING").Err(); err != nil {
				b.Fatal(err)
			}
			pipe := rdb.Pipeline()
			for start := 0; start < n; start += 1000 {
				args := make([]any, 0, 1002)
				args = append(args, "BF.MADD", key)
				for _, k := range keys[start : start+1000] {
					args = append(args, k)
				}
				pipe.Do(ctx, args...)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ScanDump", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			g, err := ScanDump(ctx, rdb, key)
			if err != nil {
				b.Fatal(err)
			}
			if !g.Equal(f) {
				h1, h2 := g.AppendHeader(nil), f.AppendHeader(nil)
				nd := 0
				for j := range g.links[0].bits {
					if g.links[0].bits[j] != f.links[0].bits[j] {
						if nd < 5 {
							b.Logf("byte %d: server %08b go %08b", j, g.links[0].bits[j], f.links[0].bits[j])
						}
						nd++
					}
				}
				b.Fatalf("the key differs from the filter: headers equal %v %x %x; %d bytes differ", bytes.Equal(h1, h2), h1, h2, nd)
			}
		}
	})
}
