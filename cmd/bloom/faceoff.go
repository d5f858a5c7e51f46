package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/bloomfilters/bloom"
)

const faceoffDoc = `Shows what a Bloom filter buys. First the memory face-off: for 10^3 to 10^6
random 16-character keys, a filter at a 1% false-positive rate beside a Go
map[string]struct{} holding the same keys (measured with runtime.MemStats),
and the filter's measured false-positive rate beside the theory. Then a
24-bit filter with 3 hash functions, bit by bit: adding words, a member, a
word the filter proves absent and a false positive. Takes a few seconds.
`

// Face-off parameters. The keys and probes come from fixed seeds, so
// everything but the map's bytes (which depend on the Go version) is the same
// on every run.
const (
	faceoffRate   = 0.01
	faceoffKeyLen = 16
	faceoffProbes = 1_000_000 // absent keys tested per filter
)

func runFaceoff(e *env, args []string) error {
	flags := newFlagSet(e, "faceoff", faceoffDoc)
	if err := flags.parse(args); err != nil {
		return err
	}
	if err := checkArgs(flags, 0, 0); err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	if err := faceoff(w, []int{1e3, 1e4, 1e5, 1e6}, faceoffProbes); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := walkthrough(w); err != nil {
		return err
	}
	return w.Flush()
}

// keyGen makes random keys of faceoffKeyLen letters and digits.
type keyGen struct {
	r   *rand.Rand
	buf [faceoffKeyLen]byte
}

func newKeyGen(seed uint64) *keyGen {
	return &keyGen{r: rand.New(rand.NewPCG(seed, 0x6b6579))}
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// next returns a new key in a slice that the next call overwrites.
func (g *keyGen) next() []byte {
	for i := range g.buf {
		g.buf[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return g.buf[:]
}

type faceoffRow struct {
	n            int
	filterBytes  uint64
	mapBytes     uint64
	measuredFPR  float64
	theoryFPR    float64
	bits, hashes uint64
}

// faceoff measures and prints the memory and false-positive tables.
func faceoff(w io.Writer, sizes []int, probes int) error {
	rows := make([]faceoffRow, 0, len(sizes))
	for _, n := range sizes {
		r, err := faceoffOne(n, probes)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(w, "Memory face-off: n random %d-character keys in a Bloom filter at p = %g\n", faceoffKeyLen, faceoffRate)
	fmt.Fprintf(w, "and in a Go map[string]struct{} (bytes measured with runtime.MemStats).\n\n")
	fmt.Fprintf(w, "%11s  %13s  %8s  %14s  %9s  %10s\n", "n", "filter bytes", "bits/key", "map bytes", "bytes/key", "map/filter")
	for _, r := range rows {
		fmt.Fprintf(w, "%11s  %13s  %8.2f  %14s  %9.1f  %9.0fx\n", thousands(uint64(r.n)),
			thousands(r.filterBytes), float64(8*r.filterBytes)/float64(r.n),
			thousands(r.mapBytes), float64(r.mapBytes)/float64(r.n), float64(r.mapBytes)/float64(r.filterBytes))
	}
	fmt.Fprintf(w, "\nThe map keeps every key (16 bytes, a 16-byte string header, its table);\n"+
		"the filter keeps no key, only about %.0f bits each, and answers \"maybe\".\n\n", float64(8*rows[len(rows)-1].filterBytes)/float64(rows[len(rows)-1].n))
	fmt.Fprintf(w, "False positives among %s keys never added, tested against each filter:\n\n", thousands(uint64(probes)))
	fmt.Fprintf(w, "%11s  %6s  %6s  %12s  %12s\n", "n", "bits", "hashes", "measured", "theoretical")
	for _, r := range rows {
		fmt.Fprintf(w, "%11s  %6s  %6d  %11.3f%%  %11.3f%%\n", thousands(uint64(r.n)), shortBits(r.bits), r.hashes,
			100*r.measuredFPR, 100*r.theoryFPR)
	}
	return nil
}

// faceoffOne builds a filter and a map of n random keys and measures them.
func faceoffOne(n, probes int) (faceoffRow, error) {
	r := faceoffRow{n: n}
	f, err := bloom.New(uint64(n), faceoffRate)
	if err != nil {
		return r, err
	}
	r.bits, r.hashes = f.Bits(), uint64(f.Hashes())
	r.filterBytes = (f.Bits() + 63) / 64 * 8

	// The map: its table and its keys, all allocated between two full
	// collections, so that the difference in live heap is what it holds.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := make(map[string]struct{})
	g := newKeyGen(uint64(n))
	for range n {
		m[string(g.next())] = struct{}{}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	r.mapBytes = after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)

	g = newKeyGen(uint64(n)) // the same keys again
	for range n {
		f.Add(g.next())
	}
	r.theoryFPR = bloom.FalsePositiveRate(f.Bits(), f.Hashes(), uint64(len(m)))
	if f.Layout() == bloom.LayoutBlocked { // New's default at 1% from a few thousand keys
		r.theoryFPR = bloom.BlockedFalsePositiveRate(f.Bits(), f.Hashes(), uint64(len(m)))
	}

	// Probes from another seed; the map rules out the (astronomically rare)
	// probe that is a key.
	g = newKeyGen(uint64(n) + 1<<32)
	tested, positives := 0, 0
	for tested < probes {
		k := g.next()
		if _, ok := m[string(k)]; ok {
			continue
		}
		tested++
		if f.Test(k) {
			positives++
		}
	}
	r.measuredFPR = float64(positives) / float64(tested)
	runtime.KeepAlive(m)
	return r, nil
}

// shortBits formats a bit count with a unit: 9.6K, 9.6M.
func shortBits(b uint64) string {
	switch {
	case b >= 1e6:
		return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) + "M"
	case b >= 1e3:
		return strconv.FormatFloat(float64(b)/1e3, 'f', 1, 64) + "K"
	}
	return strconv.FormatUint(b, 10)
}

// The walkthrough filter.
const (
	walkBits   = 24
	walkHashes = 3
)

var walkMembers = []string{"cat", "dog", "fox"}

// walkCandidates are searched, in order, for a word the filter proves absent
// and for a false positive.
var walkCandidates = strings.Fields(`cow owl bee ant elk emu yak hen pig rat bat ape eel gnu ram
	ewe cod jay koi doe hog kid pup cub asp boa cat dog fox bear bird crab crow deer dove duck frog
	goat hare hawk lamb lion mole moth mule newt puma seal slug swan toad wasp wolf worm`)

// walkthrough prints the 24-bit, 3-hash filter as bit rows while words are
// added and tested.
func walkthrough(w io.Writer) error {
	f, err := bloom.NewWithSize(walkBits, walkHashes)
	if err != nil {
		return err
	}
	locations := func(word string) []uint64 {
		return bloom.AppendLocations(nil, []byte(word), f.Bits(), f.Hashes(), f.Seed())
	}
	set := make([]bool, walkBits) // mirrors the filter, for drawing
	fmt.Fprintf(w, "Walkthrough: a Bloom filter of %d bits and %d hash functions. Each word\n"+
		"sets %d bits, chosen by hashing it; testing a word reads the same %d bits.\n\n",
		walkBits, walkHashes, walkHashes, walkHashes)
	const label = "%-14s"
	fmt.Fprintf(w, label+"%s\n", "", ruler(walkBits, 10))
	fmt.Fprintf(w, label+"%s\n", "", ruler(walkBits, 1))
	fmt.Fprintf(w, label+"%s\n", "empty", row(set))
	for _, word := range walkMembers {
		locs := locations(word)
		var already []uint64
		for _, p := range locs {
			if set[p] && !slices.Contains(already, p) {
				already = append(already, p)
			}
			set[p] = true
		}
		f.AddString(word)
		note := ""
		switch len(already) {
		case 0:
		case 1:
			note = joinPositions(already) + " was on already"
		default:
			note = joinPositions(already) + " were on already"
		}
		fmt.Fprintf(w, label+"%s   sets bits %s\n", "add "+strconv.Quote(word), row(set), joinPositions(locs))
		fmt.Fprintf(w, label+"%s\n", "", notes(marks(locs, set), note))
	}
	on := 0
	for _, b := range set {
		if b {
			on++
		}
	}
	fill := float64(on) / walkBits
	fmt.Fprintf(w, "\n%d of %d bits are on, so a word never added finds all %d of its bits on\n"+
		"with a probability of about (%d/%d)^%d = %.1f%%: the false-positive rate.\n\n",
		on, walkBits, walkHashes, on, walkBits, walkHashes, 100*fill*fill*fill)

	test := func(word, verdict string) {
		locs := locations(word)
		fmt.Fprintf(w, label+"%s   reads bits %s\n", "test "+strconv.Quote(word), row(set), joinPositions(locs))
		fmt.Fprintf(w, label+"%s\n", "", notes(marks(locs, set), verdict))
	}
	member := walkMembers[1]
	if !f.TestString(member) {
		return fmt.Errorf("walkthrough: %q was added but tests absent", member) // cannot happen
	}
	test(member, "all on: probably present (it was added)")

	var absent, falsePositive string
	for _, c := range candidates() {
		if slices.Contains(walkMembers, c) {
			continue
		}
		if !f.TestString(c) && absent == "" {
			absent = c
		}
		if f.TestString(c) && falsePositive == "" {
			falsePositive = c
		}
		if absent != "" && falsePositive != "" {
			break
		}
	}
	var off []uint64
	for _, p := range locations(absent) {
		if !set[p] && !slices.Contains(off, p) {
			off = append(off, p)
		}
	}
	s := "s"
	if len(off) == 1 {
		s = ""
	}
	test(absent, fmt.Sprintf("bit%s %s off (!): definitely absent", s, joinPositions(off)))
	if falsePositive == "" {
		fmt.Fprintln(w, "\n(No false positive among the words searched.)")
		return nil
	}
	test(falsePositive, "all on: \"probably present\", wrongly")
	fmt.Fprintf(w, "\n%q was never added: other words set its bits. It is a false positive,\n"+
		"the price of keeping bits instead of keys. A bigger filter makes them rarer:\n"+
		"bloom.New(n, p) sizes one for n keys at a false-positive rate p.\n", falsePositive)
	return nil
}

// candidates returns walkCandidates followed by numbered words, enough to find
// a false positive in any filter that is not nearly empty.
func candidates() []string {
	c := slices.Clone(walkCandidates)
	for i := range 1000 {
		c = append(c, "word"+strconv.Itoa(i))
	}
	return c
}

// row draws bits as 0s and 1s.
func row(set []bool) string {
	b := make([]byte, len(set))
	for i, on := range set {
		b[i] = '0'
		if on {
			b[i] = '1'
		}
	}
	return string(b)
}

// marks draws a line with ^ under each position in locs whose bit is on and
// ! under each whose bit is off.
func marks(locs []uint64, set []bool) string {
	b := []byte(strings.Repeat(" ", len(set)))
	for _, p := range locs {
		b[p] = '^'
		if !set[p] {
			b[p] = '!'
		}
	}
	return strings.TrimRight(string(b), " ")
}

// notes pads a marks line to the width of a row and appends note.
func notes(marks, note string) string {
	if note == "" {
		return marks
	}
	return marks + strings.Repeat(" ", walkBits-len(marks)) + "   " + note
}

// ruler labels positions 0 to n-1: with unit 10 the tens digit every ten
// positions, with unit 1 the ones digit of each.
func ruler(n, unit int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
		if unit == 1 {
			b[i] = byte('0' + i%10)
		} else if i%unit == 0 {
			b[i] = byte('0' + i/unit%10)
		}
	}
	return strings.TrimRight(string(b), " ")
}

// joinPositions formats positions in increasing order, without repeats, as
// "3, 9 and 17".
func joinPositions(ps []uint64) string {
	ps = slices.Compact(slices.Sorted(slices.Values(ps)))
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.FormatUint(p, 10)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
