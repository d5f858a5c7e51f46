package bfdump

import (
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/bloomfilters/bloom"
)

// flipMasks are the single-byte changes TestHeaderFlips makes at every
// offset of a header: the lowest bit, the highest, and all eight.
var flipMasks = []byte{0x01, 0x80, 0xff}

// headerFlips loads g's stream with each single-byte change of its header
// (every offset, each mask of flipMasks) and returns how many changes it
// made and how many the Loader accepted, with the offsets accepted.
func headerFlips(t testing.TB, g golden) (tried, accepted int, offsets []int) {
	t.Helper()
	chunks := make([][]byte, len(g.Scandump))
	for i, p := range g.Scandump {
		b, err := hex.DecodeString(p.Hex)
		if err != nil {
			t.Fatal(err)
		}
		chunks[i] = b
	}
	h := chunks[0]
	for off := range h {
		for _, mask := range flipMasks {
			tried++
			flipped := append([]byte(nil), h...)
			flipped[off] ^= mask
			var ld Loader
			err := ld.LoadChunk(g.Scandump[0].Iter, flipped)
			for i := 1; err == nil && i < len(chunks); i++ {
				err = ld.LoadChunk(g.Scandump[i].Iter, chunks[i])
			}
			if err == nil {
				_, err = ld.Filter()
			}
			if err == nil {
				accepted++
				offsets = append(offsets, off)
			}
		}
	}
	return tried, accepted, offsets
}

// TestHeaderFlips changes each byte of each golden header (see flipMasks)
// and counts the streams the Loader still accepts. What it may accept is a
// change that leaves a chain RedisBloom could have written: the counts of
// the newest sub-filter and the chain together, the growth of a chain of
// one sub-filter (any factor is valid), the lowest bits of the first
// sub-filter's capacity where they leave its bits unchanged, and the
// NONSCALING flag of a chain of one sub-filter (its rate then reads as the
// whole rate asked rather than half). Before the chain checks it accepted
// 206 of the 537 changes of cap1000-p0.01-scaled's header.
func TestHeaderFlips(t *testing.T) {
	tried, accepted := 0, 0
	for _, g := range loadGolden(t) {
		n, a, offs := headerFlips(t, g)
		t.Logf("%s: %d of %d single-byte changes of the %d-byte header accepted, at offsets %v", g.Name, a, n, n/len(flipMasks), offs)
		tried += n
		accepted += a
		links := (n/len(flipMasks) - chainHeaderSize) / linkHeaderSize
		for _, off := range offs {
			field, i := "chain", -1
			if off >= chainHeaderSize {
				i = (off - chainHeaderSize) / linkHeaderSize
				field = linkFields[(off-chainHeaderSize)%linkHeaderSize]
			} else if off >= 16 {
				field = "growth"
			}
			switch {
			case field == "bpe" && (off-chainHeaderSize)%linkHeaderSize == 32: // its last bits
			case i == 0 && field == "error" && off == chainHeaderSize+24: // its last bits
			case i == 0 && field == "entries" && off == chainHeaderSize+44: // its lowest byte, bits unchanged
			case field == "growth" && links == 1:
			default:
				t.Errorf("%s: a change at offset %d (%s of sub-filter %d) accepted", g.Name, off, field, i)
			}
		}
	}
	t.Logf("all golden headers: %d of %d accepted", accepted, tried)
}

// linkFields names the field at each offset of a dumpedChainLink.
var linkFields = func() (f [linkHeaderSize]string) {
	for i, name := range []string{"bytes", "bits", "size", "error", "bpe"} {
		for j := range 8 {
			f[8*i+j] = name
		}
	}
	for j := range 4 {
		f[40+j] = "hashes"
	}
	for j := range 8 {
		f[44+j] = "entries"
	}
	f[52] = "n2"
	return f
}()

// grown returns f after adds of keys "key-0", "key-1", ... until it has
// links sub-filters.
func grown(t *testing.T, f *Filter, links int) *Filter {
	t.Helper()
	for i := 0; len(f.links) < links; i++ {
		if err := f.AddString("key-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestChainChecks decodes the headers of valid chains, of every kind this
// package and RedisBloom build, and of chains changed to break one rule of
// checkChain each: the first must load, the others must not.
func TestChainChecks(t *testing.T) {
	must := func(f *Filter, err error) *Filter {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// A New filter restored into RedisBloom and grown there, then read and
	// grown in Go: sub-filters of both sizings.
	mixed := grown(t, must(New(100, 0.01)), 2)
	mixed.exact = false // as the server grows it
	mixed = grown(t, mixed, 3)
	mixed.exact = true
	mixed = grown(t, mixed, 4)
	valid := map[string]*Filter{
		"Reserve":            grown(t, must(Reserve(100, 0.01)), 4),
		"Reserve exp 1":      grown(t, must(Reserve(100, 0.01, Expansion(1))), 4),
		"Reserve exp 4":      grown(t, must(Reserve(100, 0.01, Expansion(4))), 4),
		"Reserve exp 0":      must(Reserve(100, 0.01, Expansion(0))),
		"Reserve nonscaling": must(Reserve(100, 0.01, NonScaling())),
		"New":                grown(t, must(New(100, 0.01)), 4),
		"New exp 3":          grown(t, must(New(10, 1e-4, Expansion(3))), 4),
		"NewWithSize":        grown(t, must(NewWithSize(1000, 3, 50, 0.05)), 4),
		"mixed":              mixed,
	}
	for name, f := range valid {
		g, _, err := decodeHeader(f.AppendHeader(nil))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if g.exact != f.exact {
			t.Errorf("%s: decoded as sized exactly %v, built %v", name, g.exact, f.exact)
		}
	}
	type change struct {
		name string
		base *Filter
		edit func(f *Filter)
	}
	for _, c := range []change{
		{"scaling with growth 0", valid["Reserve"], func(f *Filter) { f.growth = 0 }},
		{"growth past MaxExpansion", valid["Reserve nonscaling"], func(f *Filter) { f.growth = MaxExpansion + 1 }},
		{"non-scaling with sub-filters", valid["Reserve"], func(f *Filter) { f.options |= optNoScaling }},
		{"older sub-filter not full", valid["Reserve"], func(f *Filter) { f.links[1].size--; f.count-- }},
		{"newest past its capacity", valid["Reserve"], func(f *Filter) { f.links[3].size = f.links[3].entries + 1; f.recount() }},
		{"single past its capacity", valid["Reserve exp 0"], func(f *Filter) { f.links[0].size = f.links[0].entries + 1; f.recount() }},
		{"first: bits unlike RedisBloom's", valid["Reserve"], func(f *Filter) { f.links[0].m += 64 }},
		{"first: bits per entry unlike New's", valid["New"], func(f *Filter) { f.links[0].bpe = math.Nextafter(f.links[0].bpe, 0) }},
		{"capacity not growth times", valid["Reserve"], func(f *Filter) { f.links[2].entries++ }},
		{"newest capacity not growth times", valid["Reserve"], func(f *Filter) { f.links[3].entries *= 2 }},
		{"growth unlike the capacities", valid["Reserve exp 4"], func(f *Filter) { f.growth = 2 }},
		{"rate not half", valid["Reserve"], func(f *Filter) { f.links[2].err *= 0.9; f.links[2].bpe = calcBPE(f.links[2].err) }},
		{"rate not half, New", valid["New"], func(f *Filter) { f.links[2].err = math.Nextafter(f.links[2].err, 1) }},
		{"later: bits unlike RedisBloom's", valid["Reserve"], func(f *Filter) { f.links[2].m += 64 }},
		{"later: New's sizing in a Reserve chain", valid["Reserve"], func(f *Filter) { f.links[2] = valid["New"].links[2]; f.recount() }},
		{"later: bits not 8 * odd", valid["New"], func(f *Filter) { f.links[2].m += 8 }},
		{"later: bits per entry unlike New's", valid["New"], func(f *Filter) { f.links[2].bpe = math.Nextafter(f.links[2].bpe, 0) }},
	} {
		f := c.base.Clone()
		c.edit(f)
		if g, _, err := decodeHeader(f.AppendHeader(nil)); !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("%s: %v, %v; want an error wrapping bloom.ErrCorrupt", c.name, g != nil, err)
		}
	}
}

// recount sets the chain's count to the sum of its sub-filters'.
func (f *Filter) recount() {
	f.count = 0
	for i := range f.links {
		f.count += f.links[i].size
	}
}
