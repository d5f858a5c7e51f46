// Command urllines writes a deterministic stream of URL lines with repeats,
// the input of bloom dedup's benchmark (cmd/bloom/bench-dedup.sh):
//
//	go run ./cmd/bloom/internal/urllines -n 5e6 -distinct 3.8e6 > urls.txt
//
// The same flags write the same bytes on every machine. Each distinct URL is
// https://siteH.com/CATEGORY/ID, with ID a bijection of the URL's number, so
// that the URLs are distinct by construction. A line is a new URL or a
// repeat; the new ones are spread evenly through the stream, so that exactly
// -distinct of -n lines are distinct, and a repeat is of a recent URL (among
// the last 1,000) or of any earlier one, each half the time.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

var categories = []string{"news", "shop", "blog", "wiki", "docs", "forum", "img", "video",
	"about", "help", "search", "tag", "user", "p", "item", "story"}

func main() {
	n := flag.Float64("n", 5e6, "lines to write")
	distinct := flag.Float64("distinct", 3.8e6, "distinct lines among them")
	seed := flag.Uint64("seed", 1, "seed of the stream")
	flag.Parse()
	lines, uniq := uint64(*n), uint64(*distinct)
	if uniq > lines || (lines > 0 && uniq == 0) {
		fmt.Fprintln(os.Stderr, "urllines: want 1 <= -distinct <= -n")
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(*seed, 0x5eed))
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	var buf []byte
	var made uint64 // distinct URLs written so far
	for i := uint64(0); i < lines; i++ {
		// New with probability (new left)/(lines left): exactly uniq new.
		j := made
		if made == 0 || rng.Uint64N(lines-i) < uniq-made {
			made++
		} else if rng.IntN(2) == 0 {
			j = made - 1 - rng.Uint64N(min(made, 1000))
		} else {
			j = rng.Uint64N(made)
		}
		buf = appendURL(buf[:0], j)
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "urllines:", err)
		os.Exit(1)
	}
}

// appendURL appends URL number j and a newline to b.
func appendURL(b []byte, j uint64) []byte {
	h := j * 0x9e3779b97f4a7c15
	h ^= h >> 29
	b = append(b, "https://site"...)
	b = strconv.AppendUint(b, h%20000, 10)
	b = append(b, ".com/"...)
	b = append(b, categories[h>>40%uint64(len(categories))]...)
	b = append(b, '/')
	// An odd multiplier is a bijection of the 32-bit numbers.
	b = strconv.AppendUint(b, uint64(uint32(j)*2654435761), 10)
	return append(b, '\n')
}
