// Package bfdump builds, reads and writes RedisBloom's Bloom filters in Go:
// the filters of the BF.* commands of Redis 8 and of the RedisBloom module.
//
// A Filter has the sub-filters, bits, positions and growth of the filter a
// RedisBloom server keeps under a key, so a program can
//
//   - build a filter offline and load it into a key (Restore, RestoreFrom),
//     after which BF.EXISTS answers exactly as Filter.Test does; loading
//     with BF.LOADCHUNK is far cheaper for the server than BF.MADD;
//   - read a key into memory (ScanDump) and query it locally, or back it up
//     to a file (ScanDumpTo) and restore it elsewhere;
//   - reproduce a key: Reserve with BF.RESERVE's arguments and the same adds
//     gives the server's BF.SCANDUMP stream byte for byte.
//
// New sizes a filter for its rate, which RedisBloom's own sizing (Reserve)
// misses for small filters: see Size and FalsePositiveRate.
//
// # The BF.SCANDUMP stream
//
// BF.SCANDUMP key 0 returns (1, header); BF.SCANDUMP key it, with the
// iterator it of the previous reply, returns the next (iterator, chunk),
// and (0, "") after the last. Filter.Chunks yields the same pairs. The
// header, all integers little-endian, packed (RedisBloom's sb.c,
// dumpedChainHeader and dumpedChainLink):
//
//	offset size
//	0      8    items: keys added, all sub-filters
//	8      4    n: number of sub-filters, at least 1
//	12     4    options: 1 (NOROUND) | 4 (FORCE64), + 8 if NONSCALING
//	16     4    growth (EXPANSION)
//	20     53*n one record per sub-filter, oldest first:
//	            0   8  bytes of its bit array
//	            8   8  bits = 8 * bytes
//	            16  8  keys added to it
//	            24  8  its error rate, IEEE 754 double
//	            32  8  bits per entry, double: hashes = ceil(0.693147180559945 * it)
//	            40  4  hashes
//	            44  8  capacity (entries)
//	            52  1  n2: 0 (power-of-two sizes, before RedisBloom 2.0, are not read)
//
// Then come the bit arrays, oldest sub-filter first, in chunks of at most
// 16 MiB (MaxChunkSize) that never cross a sub-filter, each with the
// iterator 1 + the byte offset of its end across all bit arrays. Position x
// of a sub-filter is bit x%8 (least significant first) of byte x/8; a key's
// positions are given in the Filter documentation.
//
// BF.LOADCHUNK key it chunk, with each pair in order, recreates the filter
// on another server: the header creates the key, the chunks fill its bits.
//
// # Load with Restore or RestoreFrom, not a BF.LOADCHUNK loop
//
// RedisBloom's documentation shows a loop of BF.LOADCHUNK over the pairs of
// a dump. The server checks little of what it is sent: it answers OK to
// damaged streams and the key then answers "absent" for keys the filter
// holds, with no error anywhere. Measured with RedisBloom (commit
// b28c2945) in Redis 7.0.15, for a filter of 10,000 keys in four
// sub-filters (TestRawLoadChunkLosesKeys): a chunk one byte short, OK, then
// 1,028 to 3,994 of the 10,000 keys absent depending on the chunk; the last
// chunk missing, OK, 2,946 absent; the header alone, OK, all 10,000 absent
// (an earlier run on other filters measured 2,029-3,991 and 3,953). And
// on Redis below 7.2 a header whose sub-filter byte count has its top bit
// set stops the server: Redis 7.0.15 aborted with "OUT OF MEMORY.
// Allocating 9223372036854775936 bytes" in BF.LOADCHUNK.
//
// Restore and RestoreFrom are the safe paths. They check the whole stream
// as a Loader does (the header first, then every byte of the bit arrays
// exactly once, in order; RestoreFrom also the saved form's checksum)
// before anything reaches the key: they load a temporary key and rename it
// to the target only once it is complete and valid, so a reader of the
// target sees the old filter or the whole new one, and a damaged or
// truncated input leaves the target unchanged. A program with pairs from
// elsewhere can give them to a Loader, then Restore its Filter.
//
// # The saved form
//
// WriteTo, MarshalBinary and ScanDumpTo write the stream to a file as:
//
//	"bfdump\x00" (7 bytes), version 1 (1 byte)
//	records, one per pair of the stream, in order:
//	    iterator  int64, little-endian
//	    length    uint32, little-endian
//	    chunk     length bytes
//	an end record: iterator 0, length 0
//	CRC-32C (Castagnoli) of all the bytes before it, uint32, little-endian
//
// ReadFrom, UnmarshalBinary and RestoreFrom read it. Decoders check the
// header against RedisBloom's own rules and this package's limits before
// they allocate, and refuse a chain that neither RedisBloom nor New could
// have written (each sub-filter's capacity, rate and geometry follow from
// the first sub-filter and the growth, and only the newest is not full), so
// that a loaded filter grows as the original would. They allocate no more
// than about twice what they have read, never panic, and leave the receiver
// unchanged on error; errors wrap bloom.ErrCorrupt (or errors.ErrUnsupported
// for streams of RedisBloom before 2.0, which this package does not read),
// and input that ends early also io.ErrUnexpectedEOF.
//
// # Redis
//
// The functions that talk to Redis take any go-redis v9 UniversalClient
// (single node, Sentinel, Cluster). The temporary key of Restore shares the
// target key's hash slot, so the final rename works on a Cluster. The stock
// Redis 7 of Linux distributions has no BF.* commands (HasCommands tells):
// the calls then fail with an error wrapping ErrNoModule.
package bfdump
