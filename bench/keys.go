package main

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
)

// keySet holds many keys back to back in one pointer-free buffer, so that
// ten million of them cost the garbage collector nothing to scan and the
// benchmark loops read them sequentially.
type keySet struct {
	buf []byte
	off []uint32 // key i is buf[off[i]:off[i+1]]
}

func (ks *keySet) len() int { return len(ks.off) - 1 }

func (ks *keySet) key(i int) []byte { return ks.buf[ks.off[i]:ks.off[i+1]] }

// meanLen returns the average key length in bytes.
func (ks *keySet) meanLen() float64 { return float64(len(ks.buf)) / float64(ks.len()) }

// maxURLKeys is the most URL-like keys a keySet holds: about 60 bytes each,
// at most 64, within the 4 GiB its 32-bit offsets reach. 16-byte random
// keys reach 2^28, beyond the 10^8 the benchmark goes to.
const maxURLKeys = 50_000_000

// keyKind names a way of generating keys.
type keyKind int

const (
	randomKeys keyKind = iota // 16 uniformly random bytes
	urlKeys                   // ~60-byte URL-like strings with shared prefixes
)

func (k keyKind) String() string {
	if k == randomKeys {
		return "16-byte random"
	}
	return "URL-like"
}

// genKeys returns n distinct keys of the given kind. Keys with different
// streams never collide: random keys are 128-bit values from independent
// generators, and URL-like keys carry their stream and index.
func genKeys(kind keyKind, n int, stream uint64) *keySet {
	rng := rand.New(rand.NewPCG(0x5eed, stream))
	ks := &keySet{off: make([]uint32, 1, n+1)}
	if kind == randomKeys {
		ks.buf = make([]byte, 0, 16*n)
		for range n {
			ks.buf = binary.LittleEndian.AppendUint64(ks.buf, rng.Uint64())
			ks.buf = binary.LittleEndian.AppendUint64(ks.buf, rng.Uint64())
			ks.off = append(ks.off, uint32(len(ks.buf)))
		}
		return ks
	}
	ks.buf = make([]byte, 0, 64*n)
	for i := range n {
		ks.buf = appendURL(ks.buf, rng, stream, uint64(i))
		ks.off = append(ks.off, uint32(len(ks.buf)))
	}
	return ks
}

var (
	hosts = []string{"www.example.com", "news.example.org", "shop.example.net",
		"blog.example.io", "cdn.example.co.uk", "api.example.dev", "m.example.de"}
	sections = []string{"articles", "products", "users", "posts", "images",
		"category", "search", "tags", "video", "docs"}
)

// appendURL appends a URL such as
// https://shop.example.net/products/1f3a9c/000123457?p=3a4 (about 60 bytes).
func appendURL(b []byte, rng *rand.Rand, stream, i uint64) []byte {
	b = append(b, "https://"...)
	b = append(b, hosts[rng.IntN(len(hosts))]...)
	b = append(b, '/')
	b = append(b, sections[rng.IntN(len(sections))]...)
	b = append(b, '/')
	b = strconv.AppendUint(b, rng.Uint64N(1<<24), 16)
	b = append(b, '/')
	b = strconv.AppendUint(b, stream, 10)
	b = append(b, '-')
	var id [9]byte // zero-padded index: equal lengths across streams
	s := strconv.AppendUint(id[:0], i, 10)
	b = append(b, "000000000"[:9-len(s)]...)
	b = append(b, s...)
	b = append(b, "?p="...)
	b = strconv.AppendUint(b, rng.Uint64N(1<<12), 16)
	return b
}
