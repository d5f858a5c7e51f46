package bfdump

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The files in testdata/ are streams a real RedisBloom module (commit
// b28c2945, loaded into redis-server 7.0.15) returned for BF.SCANDUMP after
// the commands and keys they name; see testdata/README.md. They are the
// contract: the streams must come out byte for byte, and the filters loaded
// from them must answer as RedisBloom answered.

type golden struct {
	Name     string   `json:"name"`
	Commands []string `json:"commands"`
	Added    int      `json:"added"`
	Present  []int    `json:"present_absent_probes"`
	Info     []any    `json:"bf_info"`
	Scandump []struct {
		Iter int64  `json:"iter"`
		Hex  string `json:"hex"`
	} `json:"scandump"`
}

// goldenProbes is the number of never-added probes per file.
const goldenProbes = 10000

func loadGolden(t testing.TB) []golden {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 7 {
		t.Fatalf("want the 7 golden files in testdata/, found %d", len(files))
	}
	var out []golden
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, g)
	}
	return out
}

// reserve builds the filter of g's BF.RESERVE command.
func (g *golden) reserve(t testing.TB) *Filter {
	t.Helper()
	c := g.Commands
	if len(c) < 4 || c[0] != "BF.RESERVE" {
		t.Fatalf("%s: unexpected commands %q", g.Name, c)
	}
	rate, err := strconv.ParseFloat(c[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := strconv.ParseUint(c[3], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var opts []Option
	for i := 4; i < len(c); i++ {
		switch strings.ToUpper(c[i]) {
		case "NONSCALING":
			opts = append(opts, NonScaling())
		case "EXPANSION":
			i++
			e, err := strconv.ParseUint(c[i], 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, Expansion(uint32(e)))
		default:
			t.Fatalf("%s: unknown option %q", g.Name, c[i])
		}
	}
	f, err := Reserve(capacity, rate, opts...)
	if err != nil {
		t.Fatalf("%s: Reserve: %v", g.Name, err)
	}
	return f
}

func (g *golden) keys() [][]byte {
	keys := make([][]byte, g.Added)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	return keys
}

// load returns the filter of g's stream, through a Loader.
func (g *golden) load(t testing.TB) *Filter {
	t.Helper()
	var ld Loader
	for _, p := range g.Scandump {
		chunk, err := hex.DecodeString(p.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if err := ld.LoadChunk(p.Iter, chunk); err != nil {
			t.Fatalf("%s: LoadChunk(%d): %v", g.Name, p.Iter, err)
		}
	}
	f, err := ld.Filter()
	if err != nil {
		t.Fatalf("%s: %v", g.Name, err)
	}
	return f
}

// TestGoldenStreams builds each file's filter with Reserve and BF.MADD's
// keys and checks its BF.SCANDUMP stream against RedisBloom's, pair by pair
// and byte for byte, and its BF.INFO.
func TestGoldenStreams(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(g.Name, func(t *testing.T) {
			f := g.reserve(t)
			answers, err := f.TestAndAddMany(g.keys(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var dups int
			for _, present := range answers {
				if present {
					dups++
				}
			}
			if uint64(g.Added-dups) != f.Count() {
				t.Errorf("%d keys reported new, Count %d", g.Added-dups, f.Count())
			}
			i := 0
			for it, chunk := range f.Chunks() {
				if i >= len(g.Scandump) {
					t.Fatalf("pair %d (iterator %d) beyond RedisBloom's %d", i, it, len(g.Scandump))
				}
				want := g.Scandump[i]
				if it != want.Iter {
					t.Errorf("pair %d: iterator %d, RedisBloom %d", i, it, want.Iter)
				}
				if got := hex.EncodeToString(chunk); got != want.Hex {
					t.Errorf("pair %d (iterator %d): %d bytes differ from RedisBloom's %d:\n got %.160s\nwant %.160s",
						i, it, len(chunk), len(want.Hex)/2, got, want.Hex)
				}
				i++
			}
			if i != len(g.Scandump) {
				t.Errorf("%d pairs, RedisBloom %d", i, len(g.Scandump))
			}
			checkInfo(t, f, g.Info)
		})
	}
}

// checkInfo compares f.Info() with BF.INFO's reply as JSON decoded it.
func checkInfo(t *testing.T, f *Filter, info []any) {
	t.Helper()
	in := f.Info()
	var exp any = float64(in.Expansion)
	if in.Expansion == 0 {
		exp = nil
	}
	want := map[string]any{
		"Capacity":                 float64(in.Capacity),
		"Size":                     float64(in.Size),
		"Number of filters":        float64(in.Filters),
		"Number of items inserted": float64(in.Items),
		"Expansion rate":           exp,
	}
	if len(info) != 2*len(want) {
		t.Fatalf("BF.INFO has %d elements, want %d", len(info), 2*len(want))
	}
	for i := 0; i < len(info); i += 2 {
		name, _ := info[i].(string)
		w, ok := want[name]
		if !ok {
			t.Errorf("BF.INFO field %q unknown", name)
			continue
		}
		if info[i+1] != w {
			t.Errorf("BF.INFO %q: RedisBloom %v, Info() %v", name, info[i+1], w)
		}
	}
}

// TestGoldenAnswers loads each file's stream and checks that the filter
// answers every probe as RedisBloom's BF.MEXISTS did (its false positives
// and only those) and holds every added key; that the loaded filter equals
// the one Reserve and the adds build; and that its Chunks give the stream
// back.
func TestGoldenAnswers(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(g.Name, func(t *testing.T) {
			f := g.load(t)
			present := make([]bool, goldenProbes)
			for _, i := range g.Present {
				present[i] = true
			}
			wrong := 0
			for i := range goldenProbes {
				if got := f.TestString("probe-" + strconv.Itoa(i)); got != present[i] {
					if wrong++; wrong <= 5 {
						t.Errorf("probe-%d: Test %v, RedisBloom %v", i, got, present[i])
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%d of %d probes answered unlike RedisBloom", wrong, goldenProbes)
			}
			probes := make([][]byte, goldenProbes)
			for i := range probes {
				probes[i] = []byte("probe-" + strconv.Itoa(i))
			}
			if got := f.TestMany(probes, nil); !slices.Equal(got, present) {
				t.Error("TestMany answers differ from RedisBloom's")
			}
			for i, k := range g.keys() {
				if !f.Test(k) {
					t.Fatalf("added key-%d reported absent", i)
				}
			}
			checkInfo(t, f, g.Info)

			built := g.reserve(t)
			if err := built.AddMany(g.keys()); err != nil {
				t.Fatal(err)
			}
			if !f.Equal(built) {
				t.Error("the loaded filter differs from the one Reserve and the adds built")
			}
			i := 0
			for it, chunk := range f.Chunks() {
				want, _ := hex.DecodeString(g.Scandump[i].Hex)
				if it != g.Scandump[i].Iter || !bytes.Equal(chunk, want) {
					t.Errorf("pair %d of the loaded filter differs from the stream", i)
				}
				i++
			}
		})
	}
}
