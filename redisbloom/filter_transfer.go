package redisbloom

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"slices"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// Export and Import translate between the Redis bitmap and the binary format
// of a classic bloom.BloomFilter (documented in the bloom package, version
// 1; version 2, the blocked layout, is never written or read here):
//
//	Redis:  bit p is bit 7-p%8 of byte p/8 (most significant first)
//	bloom:  bit p is bit p%64 of little-endian 64-bit word p/64, that is
//	        bit p%8 of byte p/8 of the payload (least significant first)
//
// Both put bit p in byte p/8, so a byte converts by reversing its bits.

// The parts of the bloom binary format that Export writes (version 1,
// which the bloom package decodes forever) and that Import reads from
// MarshalBinary (version 3, which it writes: a 64-byte header, then the
// words; in a ScalableBloomFilter, the table of the sub-filters' offsets at
// offset 64).
const (
	encMagic   = "BLMF"
	encVersion = 1
	encHeader  = 48
	encCRC     = 4

	importVersion = 3
	importHeader  = 64
	importTable   = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Export returns an in-memory copy of the filter: a bloom.BloomFilter of the
// classic layout, as every Redis filter, with the same bits, hashes, seed,
// capacity, error rate, count and bit array, which answers Test exactly as
// the Redis filter does. It reads the bitmap in one
// round trip, consistently with the count, and needs about three times
// Bits()/8 bytes of memory on the client. It returns ErrNotFound if the filter
// no longer exists and ErrFormat if its keys hold an invalid bitmap.
func (f *Filter) Export(ctx context.Context) (*bloom.BloomFilter, error) {
	if f.rdb == nil {
		return nil, errZero
	}
	var res []any
	err := f.retryStale(ctx, func() error {
		var err error
		res, err = exportScript.RunRO(ctx, f.rdb, f.keys, f.args(0, false)...).Slice()
		return f.scriptErr(ctx, err)
	})
	if err != nil {
		return nil, err
	}
	if len(res) != 3 {
		return nil, fmt.Errorf("%w: %q: malformed export reply", ErrFormat, f.name)
	}
	if err := f.observe(res[0]); err != nil {
		return nil, err
	}
	n, err := parseUint(f.name, "count", res[1])
	if err != nil {
		return nil, err
	}
	bitmap, ok := res[2].(string)
	if !ok {
		return nil, fmt.Errorf("%w: %q: malformed export reply", ErrFormat, f.name)
	}
	if uint64(len(bitmap)) != (f.m+7)/8 { // checked by the script too
		return nil, fmt.Errorf("%w: %q: bitmap of %d bytes for %d bits", ErrCorrupt, f.name, len(bitmap), f.m)
	}
	enc := appendEncoding(nil, f.seed, f.k, f.m, f.capacity, f.errorRate, n, bitmap)
	g := new(bloom.BloomFilter)
	if err := g.UnmarshalBinary(enc); err != nil {
		// Bits set in the padding past the filter's size.
		return nil, fmt.Errorf("%w: %q: %v", ErrCorrupt, f.name, err)
	}
	return g, nil
}

// Import replaces the filter's bits and count with those of src, in one round
// trip, atomically: Export afterwards returns a filter Equal to src, except
// that capacity and error rate stay the Redis filter's. src must have the
// classic layout, as every Redis filter (a filter built with bloom.Blocked
// places its bits elsewhere and is refused), and the same bits, hashes and
// seed as the filter, or Import returns an error wrapping
// bloom.ErrIncompatible. It returns ErrNotFound if the filter no longer
// exists. Keys added by other clients between Export and Import are lost;
// Import is meant for restoring or seeding a filter.
func (f *Filter) Import(ctx context.Context, src *bloom.BloomFilter) error {
	if f.rdb == nil {
		return errZero
	}
	if err := f.compatible(src); err != nil {
		return err
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	if v := binary.LittleEndian.Uint16(enc[4:]); v != importVersion || enc[6] != 0 {
		// The bits below are read at the offsets of version 3, which
		// the bloom package writes, of the classic layout.
		return fmt.Errorf("%w: the filter imported into %q encodes as version %d, layout %d, not version %d of the classic layout",
			bloom.ErrIncompatible, f.name, v, enc[6], importVersion)
	}
	bitmap := enc[importHeader : importHeader+(f.m+7)/8]
	for i, b := range bitmap {
		bitmap[i] = bits.Reverse8(b)
	}
	args := append(f.args(2, true), bitmap, src.Count())
	var gen *redis.Cmd
	var notReplicated error
	if f.wait == nil {
		gen = importScript.Run(ctx, f.rdb, f.keys, args...)
	} else {
		cmds, nr, err := f.pipeline(ctx, importScript, false, [][]any{args})
		if err != nil {
			return err
		}
		gen, notReplicated = cmds[0], nr
	}
	g, err := gen.Uint64()
	if err != nil {
		return f.scriptErr(ctx, err)
	}
	f.seen.observe(g)
	return notReplicated
}

// compatible returns an error wrapping bloom.ErrIncompatible unless src can
// be imported into f: a classic filter with f's bits, hashes and seed.
func (f *Filter) compatible(src *bloom.BloomFilter) error {
	switch {
	case src == nil || src.Hashes() == 0:
		return fmt.Errorf("%w: nil or zero BloomFilter", bloom.ErrIncompatible)
	case src.Layout() == bloom.LayoutBlocked:
		return errBlockedSource(fmt.Sprintf("the filter imported into %q", f.name))
	case src.Bits() != f.m || src.Hashes() != f.k || src.Seed() != f.seed:
		return fmt.Errorf("%w: filter %q has %d bits, %d hashes, seed %#x; the imported one %d bits, %d hashes, seed %#x",
			bloom.ErrIncompatible, f.name, f.m, f.k, f.seed, src.Bits(), src.Hashes(), src.Seed())
	}
	return nil
}

// appendEncoding appends the bloom.BloomFilter encoding (version 1) of a
// filter with the given parameters, count and Redis bitmap of ceil(m/8)
// bytes to enc.
func appendEncoding(enc []byte, seed uint32, k uint, m, capacity uint64, errorRate float64, count uint64, bitmap string) []byte {
	words := (m + 63) / 64
	enc = slices.Grow(enc, encHeader+8*int(words)+encCRC)
	start := len(enc)
	enc = append(enc, encMagic...)
	enc = binary.LittleEndian.AppendUint16(enc, encVersion)
	enc = binary.LittleEndian.AppendUint16(enc, 0) // flags
	enc = binary.LittleEndian.AppendUint32(enc, seed)
	enc = binary.LittleEndian.AppendUint32(enc, uint32(k))
	enc = binary.LittleEndian.AppendUint64(enc, m)
	enc = binary.LittleEndian.AppendUint64(enc, capacity)
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(errorRate))
	enc = binary.LittleEndian.AppendUint64(enc, count)
	for i := 0; i < len(bitmap); i++ {
		enc = append(enc, bits.Reverse8(bitmap[i]))
	}
	enc = append(enc, make([]byte, start+encHeader+8*int(words)-len(enc))...) // zero padding up to whole words
	return binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc[start:], castagnoli))
}
