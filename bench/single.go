package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/bloomfilters/bloom"
)

// The default filter's single-key calls against blobloom's (issue 33):
// bloom.New(n, p) with no option, whatever layout it picks, beside the same
// filter fed the keys' xxhash through AddHash and TestHash, which shows how
// much of a difference is the hash. The batch calls at the largest sizes
// are set against the random-load floor of the machine (see printSingle).
//
//	go run -C bench . -impls default,defaulthash,blockedbatch,blobloom -n 1e6,4e7,1e8 -keys random -reps 5 -scalable=false

const (
	nameDefault       = "bloomfilters/bloom, New(n, p) (ours)"
	nameDefaultHashed = "ours, New(n, p), xxhash through AddHash/TestHash"
)

func init() {
	// Right before blobloom, beside the blocked rows.
	at := max(slices.IndexFunc(fixedImpls, func(f fixedImpl) bool { return f.name == nameBlobloom }), 0)
	fixedImpls = slices.Insert(fixedImpls, at,
		fixedImpl{name: nameDefault, short: "default", build: func(n uint64, p float64) set {
			return (*ours)(newDefault(n, p))
		}},
		fixedImpl{name: nameDefaultHashed, short: "defaulthash", build: func(n uint64, p float64) set {
			return (*oursHashed)(newDefault(n, p))
		}})
}

func newDefault(n uint64, p float64) *bloom.BloomFilter {
	f, err := bloom.New(n, p)
	if err != nil {
		panic(err)
	}
	return f
}

// oursHashed hashes keys with xxhash, as blobFilter does, and gives the
// hash to the filter's hashed calls.
type oursHashed bloom.BloomFilter

func (f *oursHashed) addRange(ks *keySet, from, to int) {
	b := (*bloom.BloomFilter)(f)
	for i := from; i < to; i++ {
		b.AddHash(xxhash.Sum64(ks.key(i)))
	}
}

func (f *oursHashed) testRange(ks *keySet, from, to int) (hits int) {
	b := (*bloom.BloomFilter)(f)
	for i := from; i < to; i++ {
		if b.TestHash(xxhash.Sum64(ks.key(i))) {
			hits++
		}
	}
	return hits
}

// printSingle prints the ratios of issue 33: the default filter's
// single-key calls against blobloom's (target <= 1.0 at every size and
// rate), the same with xxhash through the hashed calls, and the blocked
// batch calls in ns per key beside the floor given with -floor (ns per
// random load, from go test -run X -bench RandomLoads ./internal/hugepage;
// target <= 2x from 10^8 keys).
func printSingle(w io.Writer, fixed *fixedResults, floor float64) {
	if fixed == nil {
		return
	}
	var rows []config
	for _, c := range fixed.configs {
		if fixed.runs[c][nameDefault] != nil {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	add := func(r *fixedRun) []float64 { return r.add }
	tp := func(r *fixedRun) []float64 { return r.testPresent }
	ta := func(r *fixedRun) []float64 { return r.testAbsent }
	fmt.Fprintf(w, "### The default filter against blobloom (issue 33; same run, median and range of per-repetition ratios)\n\n")
	fmt.Fprintln(w, "Target: default/blobloom <= 1.0 for Add, Test present and Test absent. "+
		"\"hashed\" is the same default filter fed each key's xxhash through AddHash/TestHash "+
		"(which hash those 8 bytes again with murmur3): the part of the difference that is the hash.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| n | p | keys | k | default/blobloom Add | Test present | Test absent | hashed/blobloom Add | Test present | Test absent |")
	fmt.Fprintln(w, "|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range rows {
		runs := fixed.runs[c]
		d, h, blob := runs[nameDefault], runs[nameDefaultHashed], runs[nameBlobloom]
		fmt.Fprintf(w, "| %s | %g | %s | %d | %s | %s | %s | %s | %s | %s |\n", count(c.n), c.p, c.kind, newDefault(uint64(c.n), c.p).Hashes(),
			ranged(d, blob, add, 1), ranged(d, blob, tp, 1), ranged(d, blob, ta, 1),
			ranged(h, blob, add, 0), ranged(h, blob, tp, 0), ranged(h, blob, ta, 0))
	}
	fmt.Fprintln(w)
	if floor <= 0 {
		return
	}
	fmt.Fprintf(w, "Blocked batch calls (1,000 keys a call) in ns per key and as a multiple of the random-load floor, %.1f ns "+
		"(go test -run X -bench RandomLoads ./internal/hugepage, Words row). Target from 10^8 keys: <= 2x.\n\n", floor)
	fmt.Fprintln(w, "| n | p | keys | Add | Test present | Test absent | Add/floor | Test present/floor | Test absent/floor |")
	fmt.Fprintln(w, "|--:|--:|---|--:|--:|--:|--:|--:|--:|")
	for _, c := range rows {
		bb := fixed.runs[c][nameOursBlockedBatch]
		if bb == nil {
			continue
		}
		mark := func(ns float64) string {
			r := ns / floor
			if c.n >= 100_000_000 && r > 2 {
				return fmt.Sprintf("**%.2f** (miss)", r)
			}
			return fmt.Sprintf("%.2f", r)
		}
		a, p, q := median(bb.add), median(bb.testPresent), median(bb.testAbsent)
		fmt.Fprintf(w, "| %s | %g | %s | %.1f | %.1f | %.1f | %s | %s | %s |\n", count(c.n), c.p, c.kind, a, p, q, mark(a), mark(p), mark(q))
	}
	fmt.Fprintln(w)
}

// ranged formats the median of a's time / b's time over repetitions with
// the range, marked when the median misses target (0: no target), or "-"
// if either did not run.
func ranged(a, b *fixedRun, times func(*fixedRun) []float64, target float64) string {
	if a == nil || b == nil {
		return "-"
	}
	ta, tb := times(a), times(b)
	if len(ta) != len(tb) || len(ta) == 0 {
		return "-"
	}
	rs := make([]float64, len(ta))
	for i := range ta {
		rs[i] = ta[i] / tb[i]
	}
	m := median(rs)
	s := fmt.Sprintf("%.2f", m)
	if len(rs) > 1 {
		s += fmt.Sprintf(" (%.2f-%.2f)", slices.Min(rs), slices.Max(rs))
	}
	if target > 0 && m > target {
		s = "**" + s + "** (miss)"
	}
	return s
}
