// Package bloom implements Bloom filters: compact sets that answer "definitely
// absent" or "probably present", with no false negatives and a false-positive
// rate that is chosen up front and that holds.
//
// BloomFilter is a fixed-size filter sized from a capacity (keys) and a target
// error rate. ScalableBloomFilter grows without limit while keeping its overall
// error rate under its target.
//
// Keys are hashed once with 128-bit murmur3 (seeded by the filter's seed); the
// k bit positions are derived from the two 64-bit halves by enhanced double
// hashing, each mixed by an xorshift-multiply and mapped onto [0, m) with a
// multiply-shift. AppendLocations exposes exactly those positions so that
// other stores (see the redisbloom module) can share a filter bit for bit.
//
// # Saving and loading
//
// Both types implement encoding.BinaryMarshaler and BinaryUnmarshaler (so
// encoding/gob works), io.WriterTo and io.ReaderFrom in the binary format
// below, and encoding.TextMarshaler and TextUnmarshaler as the standard
// base64 of it, so that a filter in a struct survives encoding/json and
// encoding/xml. Read, ReadScalable and ReadAny build a filter from a stream
// with options, such as Concurrent. Header, AppendWords and FromWords move a
// BloomFilter's bits in and out as 64-bit words, for stores that keep them
// elsewhere.
//
// Every decoder validates before it allocates: a truncated input is
// io.ErrUnexpectedEOF, anything else that is not exactly an encoding below an
// error wrapping ErrCorrupt, never a panic, never an allocation much larger
// than the input, and the receiver is unchanged on error.
//
// # Binary format
//
// The encoding of a filter is a pure function of what Equal compares, so the
// same filter always encodes to the same bytes. The format is versioned: an
// encoding of version 1 written by any release loads, and answers the same,
// in every later release. All integers are little-endian.
//
// A BloomFilter, version 1:
//
//	offset  size  field
//	0       4     magic "BLMF"
//	4       2     version, 1
//	6       2     flags, 0 (decoders reject any other value)
//	8       4     seed (murmur3)
//	12      4     k, hash functions, in [1, MaxHashes]
//	16      8     m, bits, in [1, MaxBits]
//	24      8     capacity, keys, at least 1
//	32      8     error rate, IEEE 754 float64 bits, in (0, 1)
//	40      8     count, at most the number of set bits
//	48      8*W   the bits as W = ceil(m/64) 64-bit words: bit i is bit i%64
//	              of word i/64; bits at m and above are 0
//	48+8*W  4     CRC-32C (Castagnoli) of every byte before it
//
// Bit positions are those of AppendLocations. Decoders accept exactly this
// layout: a wrong magic, version, flags, size, padding bit, count, trailing
// byte or checksum is an error wrapping ErrCorrupt.
//
// A ScalableBloomFilter, version 1:
//
//	offset  size  field
//	0       4     magic "BLMS"
//	4       2     version, 1
//	6       2     flags: bit 0 set if the filter is Saturated; others 0
//	8       4     seed (murmur3), the same in every sub-filter
//	12      1     growth: 1 Linear, 2 Exponential
//	13      3     zero
//	16      8     scale, float64 bits (> 0 for Linear, > 1 for Exponential)
//	24      8     tightening ratio r, float64 bits, in (0, 1)
//	32      8     initial capacity, keys, at least 1
//	40      8     error rate P, float64 bits, in (0, 1)
//	48      4     N, the number of sub-filters, at least 1
//	52      4     zero
//	56      ...   the N sub-filters, oldest first, each in the BloomFilter
//	              format (with its own CRC-32C)
//	end-4   4     CRC-32C (Castagnoli) of every byte before it
//
// Sub-filter i must have exactly the capacity, error rate, size and hash
// count that the parameters give it, so a decoded filter grows exactly as the
// original would; every sub-filter but the newest must be full (its count at
// its capacity). Decoders reject anything else with an error wrapping
// ErrCorrupt. The sizes of filters saved before sizing used the exact rate
// are accepted too.
//
// Version 2 records the layout; it is written only for filters with the
// blocked layout (see Blocked), and classic filters keep being written, byte
// for byte, as version 1. A BloomFilter in version 2 is version 1 with 2 at
// offset 4 and, at offset 6 in place of the flags, the layout 1 (blocked:
// 512-bit blocks, m a multiple of 512; block b is words 8b to 8b+7, and the
// positions are those of AppendBlockedLocations). A ScalableBloomFilter in
// version 2 has 2 at offset 4 and the layout 1 at offset 13, and its
// sub-filters are blocked BloomFilters in version 2. Decoders reject version
// 2 with any other layout, so that every filter has one encoding.
//
// The text encoding of either type is the standard base64 (RFC 4648, with
// padding, without line breaks) of its binary encoding.
package bloom
