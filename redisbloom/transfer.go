package redisbloom

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// Export and Import translate between the Redis bitmap and the binary format
// of bloom.BloomFilter (documented in the bloom package, version 1):
//
//	Redis:  bit p is bit 7-p%8 of byte p/8 (most significant first)
//	bloom:  bit p is bit p%64 of little-endian 64-bit word p/64, that is
//	        bit p%8 of byte p/8 of the payload (least significant first)
//
// Both put bit p in byte p/8, so a byte converts by reversing its bits.

// The parts of the bloom binary format (version 1) that Export writes.
const (
	encMagic   = "BLMF"
	encVersion = 1
	encHeader  = 48
	encCRC     = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Export returns an in-memory copy of the filter: a bloom.BloomFilter with the
// same bits, hashes, seed, capacity, error rate, count and bit array, which
// answers Test exactly as the Redis filter does. It reads the bitmap in one
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
	words := (f.m + 63) / 64
	enc := make([]byte, 0, encHeader+8*words+encCRC)
	enc = append(enc, encMagic...)
	enc = binary.LittleEndian.AppendUint16(enc, encVersion)
	enc = binary.LittleEndian.AppendUint16(enc, 0) // flags
	enc = binary.LittleEndian.AppendUint32(enc, f.seed)
	enc = binary.LittleEndian.AppendUint32(enc, uint32(f.k))
	enc = binary.LittleEndian.AppendUint64(enc, f.m)
	enc = binary.LittleEndian.AppendUint64(enc, f.capacity)
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(f.errorRate))
	enc = binary.LittleEndian.AppendUint64(enc, n)
	for i := 0; i < len(bitmap); i++ {
		enc = append(enc, bits.Reverse8(bitmap[i]))
	}
	enc = enc[:encHeader+8*words] // zero padding up to whole words
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc, castagnoli))
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
// same bits, hashes and seed as the filter, or Import returns an error
// wrapping bloom.ErrIncompatible. It returns ErrNotFound if the filter no
// longer exists. Keys added by other clients between Export and Import are
// lost; Import is meant for restoring or seeding a filter.
func (f *Filter) Import(ctx context.Context, src *bloom.BloomFilter) error {
	if f.rdb == nil {
		return errZero
	}
	if src == nil || src.Hashes() == 0 {
		return fmt.Errorf("%w: nil or zero BloomFilter", bloom.ErrIncompatible)
	}
	if src.Bits() != f.m || src.Hashes() != f.k || src.Seed() != f.seed {
		return fmt.Errorf("%w: filter %q has %d bits, %d hashes, seed %#x; the imported one %d bits, %d hashes, seed %#x",
			bloom.ErrIncompatible, f.name, f.m, f.k, f.seed, src.Bits(), src.Hashes(), src.Seed())
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	bitmap := enc[encHeader : encHeader+(f.m+7)/8]
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
