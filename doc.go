// Package bloom implements Bloom filters: compact sets that answer "definitely
// absent" or "probably present", with no false negatives and a false-positive
// rate that is chosen up front and that holds.
//
//	f, err := bloom.New(1_000_000, 0.01) // 10^6 keys at 1% false positives
//	if err != nil {
//		log.Fatal(err)
//	}
//	f.AddString("https://example.com/")
//	f.TestString("https://example.com/") // true: an added key is always found
//	f.TestString("https://example.net/") // false: never added (true 1% of the time)
//	if !f.TestAndAddString(url) {        // one hash pass: was it there? add it
//		fetch(url)
//	}
//
// # Which type
//
//   - BloomFilter: a fixed-size filter sized from a capacity (keys) and an
//     error rate. New picks the faster blocked layout where it costs at most
//     10% more memory (see DefaultLayout).
//   - ScalableBloomFilter: grows without limit while keeping its overall
//     error rate under its target; for a set whose size is not known.
//   - WindowFilter: the recent past only, the last N keys or the keys of the
//     last d, in fixed memory; for deduplicating a stream (TestAndAdd is
//     first-seen: a key is new again once its first sighting has left the
//     window; TestAndRefresh is last-seen).
//   - View: a read-only filter answered where its encoding lies (a mapped
//     file, an embedded string, any []byte), without decoding it.
//
// Every type has single-key calls (Add, Test, TestAndAdd, with String forms
// that cost what the []byte forms cost) and batch calls (AddMany, TestMany,
// TestAndAddMany) that answer exactly as a loop of single calls would, several
// times faster on large filters. The Concurrent option makes a filter safe
// for concurrent use; without it, a filter is safe for concurrent readers
// only.
//
// # Hashing
//
// Keys are hashed once with 128-bit murmur3, seeded by the filter's seed
// (DefaultSeed unless the Seed option says otherwise), so filters built
// anywhere with the same parameters set the same bits and can be saved,
// merged and compared. AppendLocations and AppendBlockedLocations give the
// exact bit positions, for stores that share a filter bit for bit (see the
// redisbloom module). AddHash and TestHash take a key already hashed to 64
// bits, such as an integer ID or a hash a program computed anyway.
//
// # Saving and loading
//
// Every type implements encoding.BinaryMarshaler and BinaryUnmarshaler (so
// encoding/gob works), io.WriterTo and io.ReaderFrom, and
// encoding.TextMarshaler and TextUnmarshaler (base64 of the binary form), so
// a filter in a struct survives encoding/json and encoding/xml. Read,
// ReadScalable, ReadWindow and ReadAny build a filter from a stream with
// options such as Concurrent; Open, NewView and NewViewString answer from an
// encoding without loading it. Header, AppendWords and FromWords move a
// BloomFilter's bits as 64-bit words.
//
// The format is versioned and little-endian, with CRC-32C checksums; it is
// specified in docs/format.md
// (https://github.com/bloomfilters/bloom/blob/main/docs/format.md). A filter
// saved by any release loads, and answers the same, in every later release.
// Every decoder validates before it allocates: a truncated input is
// io.ErrUnexpectedEOF, any other input that is not exactly an encoding is an
// error wrapping ErrCorrupt, never a panic, and the receiver is unchanged on
// error.
//
// # Errors
//
// Constructors and options return errors wrapping ErrInvalidParameter that
// name the parameter and its allowed range; combining filters of different
// sizes, hash counts, seeds or layouts returns ErrIncompatible. The zero value
// of each type is not usable: its methods panic with a message naming the
// constructor, and never answer "present".
package bloom
