package redisbloom

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// MaxBits is the largest filter New creates: 2^32 bits (512 MiB), the most one
// Redis string holds.
const MaxBits uint64 = 1 << 32

// formatName is the metadata's format field. It names the key layout and the
// bit positions (those of the bloom package's format version 1); a filter
// with another value is refused with ErrFormat. (checkLua in scripts.go
// spells it out too.)
const formatName = "redisbloom/1"

// maxPositionsPerScript bounds the bit positions (keys times hashes) that one
// script call handles, so that a huge batch does not block the server for
// long: larger batches are split into several script calls, sent together in
// one pipeline (one round trip).
//
// Measured with BenchmarkServerCPU (batches of 10,000 keys, 7 hashes, a
// half-full filter of 10^7 keys, 2 shared cores): the server's CPU per key
// (INFO cpu) did not differ beyond the noise between calls of 1,750 and
// 65,536 positions (medians 5.2-6.7 us in one run, 7.8-8.7 us in another,
// no size consistently best), while the time commandstats gives each call
// favoured smaller calls (10.2-10.4 us per key at 7,000 against 12.2-21.0
// at 65,536 in two runs). 7,000, a batch of 1,000 keys at 1%, also bounds
// how long one call holds the server (about 5 ms) from other clients. With
// the packed add script, alternating (medians of 3 runs): 1,750: 6.1,
// 3,500: 6.2, 7,000: 5.8, 14,000: 6.1, 65,536: 6.5 us per key.
const maxPositionsPerScript = 7000

// maxPositionsPerRoundTrip bounds the bit positions sent in one round trip.
// The server needs about a microsecond per position, so a round trip stays
// well within go-redis's default 3 s read and write timeouts; larger batches
// take one round trip per maxPositionsPerRoundTrip positions.
const maxPositionsPerRoundTrip = 1 << 19

// Sentinel errors, to be matched with errors.Is. Errors for invalid
// parameters wrap bloom.ErrInvalidParameter, and New's error for an existing
// filter with other parameters wraps bloom.ErrIncompatible, as do Import's.
// No method answers "absent" for a filter in any of these states.
var (
	// ErrNotFound is returned when the filter does not exist in Redis: it was
	// never created, or it was deleted, flushed, evicted, expired or lost in
	// a restart (and possibly created again since, with a new id) after this
	// Filter opened it. Open it again (or New it again) to use the new one.
	ErrNotFound = errors.New("redisbloom: filter not found")

	// ErrFormat is returned when the keys of a filter exist but do not hold a
	// filter this package understands: another program's data, or a filter
	// written in another format version. Destroy removes them.
	ErrFormat = errors.New("redisbloom: not a filter in a known format")

	// ErrCorrupt is returned when a filter's keys are inconsistent: the
	// metadata's bits, hashes or seed changed after the filter was opened or
	// no longer match its checksum, the bitmap's length is not ceil(bits/8)
	// bytes (a bitmap replaced by another string), or the metadata is gone
	// while the bitmap stays (evicted, expired or deleted); for a
	// ScalableFilter, a number of sub-filters lower than a handle has seen
	// with no Import since, beyond what the parameters build or the 65,536
	// the format holds, or not matching the sub-filters' counts and bitmaps;
	// for a sharded filter, shards whose parameters are not those the top
	// metadata gives them. Such a filter cannot answer without false
	// negatives. Destroy removes it, so that New can create it again.
	ErrCorrupt = errors.New("redisbloom: filter corrupt")

	// ErrLost is returned when the filter lost writes that were acknowledged:
	// a Filter saw its write generation at some value, and a master now holds
	// an older one (a restart from an older RDB snapshot or AOF, a failover to
	// a replica that had not received every write, a restore from a backup).
	// Keys added in the lost writes would be reported absent, so the first
	// handle that notices marks the filter lost in Redis, and from then on
	// every handle, and New and Open, return ErrLost. Destroy removes the
	// filter; rebuild it from the source of its keys (or Import a copy).
	ErrLost = errors.New("redisbloom: filter lost acknowledged writes")

	// ErrStale is returned by a read (Test, TestMany, Count, Export) that a
	// replica served while it had not yet received writes this Filter saw
	// applied, and that still had not after retrying for up to one second
	// (less if the context ends first). Its answers could have been false
	// negatives for the keys of those writes.
	ErrStale = errors.New("redisbloom: replica behind the writes this handle saw")

	// ErrZeroValue is wrapped by the error of every method of a zero value
	// of the package's types (a Filter, ScalableFilter, ShardedFilter,
	// ShardedScalableFilter, WindowFilter, NativeFilter or
	// ShardedNativeFilter declared rather than made by its New or Open, or a
	// zero Pending): such a value is not usable, and no method of it talks
	// to Redis or panics. Its methods without an error result answer as for
	// a filter with no name, size or keys (Shard -1).
	ErrZeroValue = errors.New("redisbloom: use of a zero value")
)

// Filter is a handle on a Bloom filter stored in Redis. Its Test never
// reports a key that was added as absent, on the conditions given in the
// package documentation under "Durability"; it reports an absent key as
// present with a probability close to ErrorRate while the filter holds at
// most Capacity keys.
//
// A Filter holds the filter's parameters, never its bits, and the highest
// write generation it has seen (see ErrLost and ErrStale). It is safe for
// concurrent use by any number of goroutines, and any number of processes may
// use the same filter at once. Each method takes one round trip to Redis (two
// the first time a server sees one of the package's scripts) and is atomic
// there. Batches are the exception when they are large: every 7,000 bit
// positions (keys times Hashes, 1,000 keys at 1%) are one atomic script call,
// and every 524,288 positions (about 75,000 keys at 1%, half a second of
// server time) one round trip.
//
// A zero Filter is not usable: its methods return an error.
type Filter struct {
	rdb       redis.UniversalClient
	name      string
	keys      []string // meta, bits
	id        string   // the random id of the filter this handle opened
	m         uint64
	k         uint
	seed      uint32
	capacity  uint64
	errorRate float64
	// params are checkLua's ARGV[3..6] (bits, hashes, seed, bitmap bytes) as
	// the decimal strings the metadata holds.
	params [4]string
	seen   *generation // shared by the handles WithWait derives
	// loaded holds the scripts (*redis.Script) this handle, or one derived
	// from it, has loaded with SCRIPT LOAD for the pipelined calls.
	loaded *sync.Map
	wait   *waitSpec // nil: writes do not WAIT for replicas
	// legacyCheck is the check field to write into metadata written by a
	// release that wrote none (upgrade), or "".
	legacyCheck string
	// co gathers concurrent single-key calls (Coalesced); nil: each is
	// sent on its own.
	co *coalescer
	// tune overrides the defaults for the benchmarks (export_test.go), so
	// that they measure earlier code paths side by side; nil in use.
	tune *tuning
}

// tuning is what the benchmarks may override: the scripts Test and TestMany
// and the writing calls run, the positions per script call, and whether a
// Coalesced handle yields between batches.
type tuning struct {
	test      *redis.Script
	add       *redis.Script
	perScript int
	noYield   bool // Coalesced: do not yield between batches (as before)
	// testBefore: test takes testScript's previous arguments (each key's
	// first position a decimal argument, the others packed in ARGV[8]).
	testBefore bool
}

func (f *Filter) testScript() *redis.Script {
	if f.tune != nil && f.tune.test != nil {
		return f.tune.test
	}
	return testScript
}

func (f *Filter) addScript() *redis.Script {
	if f.tune != nil && f.tune.add != nil {
		return f.tune.add
	}
	return addScript
}

func (f *Filter) positionsPerScript() int {
	if f.tune != nil && f.tune.perScript > 0 {
		return f.tune.perScript
	}
	return maxPositionsPerScript
}

// errZero is returned by every method of a zero Filter.
var errZero = fmt.Errorf("%w: a zero Filter is not usable; make one with New or Open", ErrZeroValue)

// New returns the filter called name in rdb, creating it if it does not exist,
// sized like a classic bloom.New(capacity, errorRate, opts...): bloom.Size
// gives its bits and hashes, and bloom.Seed its seed (default
// bloom.DefaultSeed). Redis filters have the classic layout only: New
// refuses bloom.Blocked (ErrInvalidParameter), and Concurrent means nothing
// here. Every
// process that shares a filter can call New with the same arguments. If only
// the filter's metadata is left (its bitmap was evicted or deleted), New
// creates the filter again, empty.
//
// An existing filter with the same seed, capacity and error rate is opened
// with the bits and hashes it was created with, which differ slightly for
// small filters created by releases before bloom.Size used the exact rate
// (9593 bits instead of 9595 for 1000 keys at 1%). Metadata written by
// releases before the write generation (without the check and gen fields)
// is accepted, and its check field written on the way (see Open).
//
// It returns an error wrapping bloom.ErrInvalidParameter for an invalid name
// (see Destroy), invalid sizing or options (bloom.Blocked included), or a
// filter larger than MaxBits;
// an error wrapping bloom.ErrIncompatible when the filter exists with another
// seed, capacity or error rate; ErrFormat when name's keys hold
// something else (a bitmap key without metadata included); ErrCorrupt or
// ErrLost for a filter in that state; or the error of the round trip.
func New(ctx context.Context, rdb redis.UniversalClient, name string, capacity uint64, errorRate float64, opts ...bloom.Option) (*Filter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	probe, err := fixedProbe(opts)
	if err != nil {
		return nil, err
	}
	m, k, err := bloom.Size(capacity, errorRate)
	if err != nil {
		return nil, err
	}
	if m > MaxBits {
		return nil, fmt.Errorf("%w: capacity %d at errorRate %v needs %d bits, more than MaxBits (%d), the most one Redis string holds",
			bloom.ErrInvalidParameter, capacity, errorRate, m, MaxBits)
	}
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("redisbloom: filter id: %w", err)
	}
	f := newHandle(rdb, name, hex.EncodeToString(token[:]), m, k, probe.Seed(), capacity, errorRate, 0)
	fields := f.metaFields()
	args := append(fields, "check", metaCheck(fields), "count", "0", "gen", "0", (m+7)/8)
	res, err := createScript.Run(ctx, rdb, f.keys, args...).Slice()
	if err != nil {
		return nil, f.wrap(err)
	}
	if len(res) == 1 {
		return f, nil // created
	}
	existing, err := parseMeta(rdb, name, res[1:])
	if err != nil {
		return nil, err
	}
	if err := existing.sameParameters(f); err != nil {
		return nil, err
	}
	if err := existing.upgrade(ctx); err != nil {
		return nil, err
	}
	return existing, nil
}

// Open returns the existing filter called name in rdb, with the parameters it
// was created with. It returns ErrNotFound if there is no such filter,
// ErrFormat if name's keys hold something else, ErrCorrupt or ErrLost for a
// filter in that state, or the error of the round trip. It can be served by a
// replica.
//
// Metadata written by a release before the write generation has no check
// field: Open (and New) then write it, in a second round trip to the master,
// only if the fields are still those read, so that later opens verify it. A
// read-only replica's refusal is ignored: the filter works, unverified, until
// a New or Open reaches the master.
func Open(ctx context.Context, rdb redis.UniversalClient, name string) (*Filter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	keys := keysOf(name)
	res, err := metaScript.RunRO(ctx, rdb, keys).Slice()
	if err != nil {
		return nil, (&Filter{name: name}).wrap(err)
	}
	f, err := parseMeta(rdb, name, res)
	if err != nil {
		return nil, err
	}
	if err := f.upgrade(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// checkName refuses names whose two keys would not share one Redis Cluster
// hash slot, on every kind of server alike, so that a filter that works on a
// standalone server also works on a Cluster.
func checkName(name string) error {
	if name == "" {
		// "{}" is no hash tag: the keys could land on different slots.
		return fmt.Errorf("%w: the filter name must not be empty", bloom.ErrInvalidParameter)
	}
	keys := keysOf(name)
	tag, ok := hashTag(keys[0])
	if tag2, ok2 := hashTag(keys[1]); !ok || !ok2 || tag != tag2 {
		return fmt.Errorf("%w: filter name %q: its keys %q and %q would have no common Redis Cluster hash tag (a name must not start with '}')",
			bloom.ErrInvalidParameter, name, keys[0], keys[1])
	}
	return nil
}

// hashTag returns the part of key that Redis Cluster hashes to choose its
// slot when that is not the whole key: the bytes between the first '{' and
// the first '}' after it, if there are any (Redis Cluster specification,
// "Hash tags"; keyHashSlot in Redis's cluster.c).
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 {
		return "", false
	}
	return key[open+1 : open+1+n], true
}

func keysOf(name string) []string {
	tag := "{" + name + "}"
	return []string{tag + ":meta", tag + ":bits"}
}

func newHandle(rdb redis.UniversalClient, name, id string, m uint64, k uint, seed uint32, capacity uint64, errorRate float64, gen uint64) *Filter {
	f := &Filter{
		rdb: rdb, name: name, keys: keysOf(name), id: id,
		m: m, k: k, seed: seed, capacity: capacity, errorRate: errorRate,
		params: [4]string{
			strconv.FormatUint(m, 10),
			strconv.FormatUint(uint64(k), 10),
			strconv.FormatUint(uint64(seed), 10),
			strconv.FormatUint((m+7)/8, 10),
		},
		seen:   new(generation),
		loaded: new(sync.Map),
	}
	f.seen.observe(gen)
	return f
}

// wrap turns the scripts' error replies into the package's errors and
// prefixes other errors with the filter's name. (LOSTGEN is turned into
// ErrLost by scriptErr, which marks the filter first.)
func (f *Filter) wrap(err error) error {
	switch {
	case redis.HasErrorPrefix(err, errNotFoundPrefix):
		return fmt.Errorf("%w: %q (deleted, flushed, evicted, expired, lost in a restart or created again)", ErrNotFound, f.name)
	case redis.HasErrorPrefix(err, errCorruptPrefix):
		return fmt.Errorf("%w: %q: %v", ErrCorrupt, f.name, err)
	case redis.HasErrorPrefix(err, errLostGenPrefix), redis.HasErrorPrefix(err, errLostPrefix):
		return fmt.Errorf("%w: %q: %v", ErrLost, f.name, err)
	case redis.HasErrorPrefix(err, errStalePrefix):
		return fmt.Errorf("%w: %q: %v", ErrStale, f.name, err)
	case redis.HasErrorPrefix(err, "WRONGTYPE"), redis.HasErrorPrefix(err, "EXISTS"):
		return fmt.Errorf("%w: %q: %v", ErrFormat, f.name, err)
	}
	return fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
}

// Destroy deletes the filter called name from rdb, whatever state its keys
// are in: the way to remove a filter that no handle can open (ErrCorrupt,
// ErrLost, ErrFormat), so that New can create it again. It deletes the keys
// {name}:meta and {name}:bits, whatever they hold, and those of a
// ScalableFilter's sub-filters, {name}:s:0, {name}:s:1, ..., as far as its
// metadata counts them or they exist, and those of a WindowFilter's
// generations, {name}:w:0 .. {name}:w:63. Handles on the filter get
// ErrNotFound afterwards. Destroying a filter that does not exist is not an
// error. It returns an error wrapping bloom.ErrInvalidParameter for a name
// New refuses: one that is empty or starts with '}' (its two keys would have
// no common Redis Cluster hash tag).
func Destroy(ctx context.Context, rdb redis.UniversalClient, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	keys := append(keysOf(name), "{"+name+"}:s:0")
	if err := destroyScript.Run(ctx, rdb, keys, "{"+name+"}:s:", windowSlotPrefix(name), maxWindowGens).Err(); err != nil {
		return fmt.Errorf("redisbloom: filter %q: %w", name, err)
	}
	return nil
}

// Name returns the name the filter was created with.
func (f *Filter) Name() string { return f.name }

// Bits returns m, the size of the filter in bits. Redis holds it in
// ceil(m/8) bytes.
func (f *Filter) Bits() uint64 { return f.m }

// Hashes returns k, the number of bit positions each key sets.
func (f *Filter) Hashes() uint { return f.k }

// Seed returns the murmur3 seed of the filter.
func (f *Filter) Seed() uint32 { return f.seed }

// Capacity returns the number of keys the filter was sized for.
func (f *Filter) Capacity() uint64 { return f.capacity }

// ErrorRate returns the target false-positive rate at Capacity keys.
func (f *Filter) ErrorRate() float64 { return f.errorRate }

// Add inserts key. Afterwards Test(key) reports true. It takes one round trip
// and returns ErrNotFound, ErrCorrupt or ErrLost if the filter no longer
// exists or is in that state (and then writes nothing). After any other error
// the key may or may not have been added; retrying is safe. On a handle made
// by WithWait it returns only after the replicas acknowledged the write.
func (f *Filter) Add(ctx context.Context, key []byte) error {
	if f.co != nil {
		_, err := f.co.do(ctx, true, key)
		return err
	}
	_, err := f.run(ctx, f.addScript(), false, [][]byte{key})
	return err
}

// Test reports whether key may be in the filter: false means key was
// definitely never added; true means it probably was. It takes one round
// trip and returns ErrNotFound, ErrCorrupt or ErrLost, never false, if the
// filter no longer exists or is in that state. It can be served by a read
// replica: one that has not yet received the writes this handle made or saw
// is retried, then gives ErrStale (see the package documentation, "Reading
// from replicas").
func (f *Filter) Test(ctx context.Context, key []byte) (bool, error) {
	if f.co != nil {
		return f.co.do(ctx, false, key)
	}
	r, err := f.run(ctx, f.testScript(), true, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// TestAndAdd inserts key and reports whether it was probably present before
// the call (with Test's meaning of true and false), atomically: when several
// clients TestAndAdd the same new key at once, exactly one of them gets false
// (none does if the key is a false positive). It takes one round trip and
// returns the errors Add returns, with the same meaning.
func (f *Filter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	if f.co != nil {
		return f.co.do(ctx, true, key)
	}
	r, err := f.run(ctx, f.addScript(), false, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// AddMany inserts every key of keys, in order, in one round trip (more for
// very large batches: see Filter). It returns the errors Add returns; after
// an error other than ErrNotFound, ErrCorrupt or ErrLost some, all or none
// of the keys may have been added; retrying is safe.
func (f *Filter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := f.run(ctx, f.addScript(), false, keys)
	return err
}

// TestMany reports, in one round trip (more for very large batches: see
// Filter), whether each key of keys may be in the filter, with Test's meaning
// of true and false: present[i] is for keys[i]. It returns the errors Test
// returns, never all false.
func (f *Filter) TestMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := f.run(ctx, f.testScript(), true, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// TestAndAddMany inserts every key of keys, in order, in one round trip (more
// for very large batches: see Filter), and reports for each whether it was
// probably present before: present[i] is what TestAndAdd(keys[i]) would have
// returned had the keys been added one by one, so a key repeated within keys
// is reported present from its second occurrence on. It returns the errors
// AddMany returns, with the same meaning.
func (f *Filter) TestAndAddMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := f.run(ctx, f.addScript(), false, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

func answers(r []byte) []bool {
	present := make([]bool, len(r))
	for i, c := range r {
		present[i] = c == '1'
	}
	return present
}

// Count returns the number of keys added (by Add, TestAndAdd and the batch
// forms, from any process) that set at least one new bit, like
// bloom.BloomFilter.Count: repeated keys are not counted, and neither is a new
// key whose bits were all set already. It returns the errors Test returns.
func (f *Filter) Count(ctx context.Context) (uint64, error) {
	if f.rdb == nil {
		return 0, errZero
	}
	var res []any
	err := f.retryStale(ctx, func() error {
		var err error
		res, err = countScript.RunRO(ctx, f.rdb, f.keys, f.args(0, false)...).Slice()
		return f.scriptErr(ctx, err)
	})
	if err != nil {
		return 0, err
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("redisbloom: filter %q: malformed count reply", f.name)
	}
	if err := f.observe(res[0]); err != nil {
		return 0, err
	}
	return parseUint(f.name, "count", res[1])
}

// Delete removes the filter's keys from Redis. Afterwards every handle on it,
// this one included, gets ErrNotFound. Deleting a filter that does not exist
// is not an error. Destroy deletes a filter by name.
func (f *Filter) Delete(ctx context.Context) error {
	if f.rdb == nil {
		return errZero
	}
	if err := f.rdb.Del(ctx, f.keys...).Err(); err != nil {
		return f.wrap(err)
	}
	return nil
}

// args returns the first arguments of every script that starts with
// checkLua, ARGV[1..7], with room for extra more.
func (f *Filter) args(extra int, write bool) []any {
	args := make([]any, 7, 7+extra)
	args[0] = f.id
	args[1] = strconv.FormatUint(f.seen.load(), 10)
	args[2], args[3], args[4], args[5] = f.params[0], f.params[1], f.params[2], f.params[3]
	args[6] = ""
	if write && f.wait != nil {
		args[6] = "w"
	}
	return args
}

// observe records the generation a script returned.
func (f *Filter) observe(gen any) error {
	g, err := parseUint(f.name, "generation", gen)
	if err != nil {
		return err
	}
	f.seen.observe(g)
	return nil
}

// run runs s over keys, one round trip per maxPositionsPerRoundTrip
// positions, and returns the scripts' answers, one byte per key.
func (f *Filter) run(ctx context.Context, s *redis.Script, readOnly bool, keys [][]byte) ([]byte, error) {
	if f.rdb == nil {
		return nil, errZero
	}
	perTrip := max(1, maxPositionsPerRoundTrip/int(f.k))
	if len(keys) <= perTrip {
		return f.roundTrip(ctx, s, readOnly, keys)
	}
	out := make([]byte, 0, len(keys))
	for lo := 0; lo < len(keys); lo += perTrip {
		r, err := f.roundTrip(ctx, s, readOnly, keys[lo:min(lo+perTrip, len(keys))])
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}

// roundTrip computes the positions of keys and runs s over them in one round
// trip: one script call per maxPositionsPerScript positions, pipelined. A
// read that a lagging replica refused is sent again (retryStale).
func (f *Filter) roundTrip(ctx context.Context, s *redis.Script, readOnly bool, keys [][]byte) ([]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	argv, per := f.scriptArgs(s, readOnly, keys)
	var out []byte
	err := f.retryStale(ctx, func() error {
		var err error
		out, err = f.send(ctx, s, readOnly, argv(), len(keys), per)
		return err
	})
	return out, err
}

// scriptArgs computes the positions of keys (at least one) and returns the
// keys per script call of s and argv, which builds the arguments of the
// calls, one per maxPositionsPerScript positions, afresh for each attempt:
// they carry the generation seen so far. roundTrip and the pipelined calls
// both send what it builds.
func (f *Filter) scriptArgs(s *redis.Script, readOnly bool, keys [][]byte) (argv func() [][]any, per int) {
	k := int(f.k)
	per = max(1, f.positionsPerScript()/k) // keys per script call
	// The positions, all in one string to allocate once, as the script
	// takes them: for addScript, BITFIELD's arguments for struct.unpack
	// ("SET", "u1", the length of the decimal position in one byte, the
	// position, "1"; ends[i] ends key i's); for testScript, BITFIELD_RO's
	// arguments for the first position of each key for struct.unpack
	// ("GET", "u1", the length byte, the position; ends[i] ends key i's),
	// the others packed in rest (4 bytes big-endian each); for the scripts
	// of earlier releases in the benchmarks, the first position of each key
	// in decimal and the others in rest (testBefore), or every position in
	// decimal (ends[k*i+j] ends position j of key i).
	packAdd, packTest := s == addScript, s == testScript
	before := f.tune != nil && f.tune.testBefore && s == f.tune.test
	stride := k // entries of ends per key
	if packAdd || packTest || before {
		stride = 1
	}
	size := 11 * k * len(keys)
	if packAdd {
		size = 16 * k * len(keys)
	}
	text := make([]byte, 0, size)
	ends := make([]int, 0, stride*len(keys))
	var rest []byte
	if packTest || before {
		rest = make([]byte, 0, 4*(k-1)*len(keys))
	}

	locs := make([]uint64, 0, k)
	for _, key := range keys {
		locs = bloom.AppendLocations(locs[:0], key, f.m, f.k, f.seed)
		for i, p := range locs {
			switch {
			case packAdd:
				text = append(text, "SETu1"...)
				at := len(text)
				text = strconv.AppendUint(append(text, 0), p, 10)
				text[at] = byte(len(text) - at - 1)
				text = append(text, '1')
				continue
			case (packTest || before) && i > 0:
				rest = binary.BigEndian.AppendUint32(rest, uint32(p)) // p < MaxBits = 2^32
				continue
			case packTest:
				text = append(text, "GETu1"...)
				at := len(text)
				text = strconv.AppendUint(append(text, 0), p, 10)
				text[at] = byte(len(text) - at - 1)
				ends = append(ends, len(text))
				continue
			}
			text = strconv.AppendUint(text, p, 10)
			ends = append(ends, len(text))
		}
		if packAdd {
			ends = append(ends, len(text))
		}
	}
	all := unsafe.String(unsafe.SliceData(text), len(text)) // text is not modified again
	packs := unsafe.String(unsafe.SliceData(rest), len(rest))
	return func() [][]any {
		var argv [][]any
		for lo := 0; lo < len(keys); lo += per {
			n := min(per, len(keys)-lo)
			start := 0
			if lo > 0 {
				start = ends[stride*lo-1]
			}
			switch {
			case packAdd:
				args := f.args(2, !readOnly)
				argv = append(argv, append(args, all[start:ends[lo+n-1]], strconv.Itoa(n)))
				continue
			case packTest:
				args := f.args(3, !readOnly)
				argv = append(argv, append(args, packs[4*(k-1)*lo:4*(k-1)*(lo+n)], all[start:ends[lo+n-1]], strconv.Itoa(n)))
				continue
			}
			args := f.args(stride*n+1, !readOnly)
			if before {
				args = append(args, packs[4*(k-1)*lo:4*(k-1)*(lo+n)])
			}
			for _, end := range ends[stride*lo : stride*(lo+n)] {
				args = append(args, all[start:end])
				start = end
			}
			argv = append(argv, args)
		}
		return argv
	}, per
}

// send runs s once per element of argv, in one round trip, and returns the
// answers, one byte per key, of the calls, which cover n keys, per keys each.
func (f *Filter) send(ctx context.Context, s *redis.Script, readOnly bool, argv [][]any, n, per int) ([]byte, error) {
	if len(argv) == 1 && (readOnly || f.wait == nil) {
		var cmd *redis.Cmd
		if readOnly {
			cmd = s.RunRO(ctx, f.rdb, f.keys, argv[0]...)
		} else {
			cmd = s.Run(ctx, f.rdb, f.keys, argv[0]...)
		}
		return f.reply(ctx, cmd, n)
	}
	cmds, notReplicated, err := f.pipeline(ctx, s, readOnly, argv)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, n)
	for i, cmd := range cmds {
		r, err := f.reply(ctx, cmd, min(per, n-i*per))
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	if notReplicated != nil {
		return nil, notReplicated
	}
	return out, nil
}

// pipeline sends one EVALSHA (or EVALSHA_RO) of s per element of argv in one
// pipeline, followed by a WAIT on a handle made by WithWait. Calls that fail
// because the server does not have the script cached are sent again, with
// the script's source, in a second pipeline. notReplicated is the error of a
// WAIT that too few replicas acknowledged; the caller reports the scripts'
// errors first.
func (f *Filter) pipeline(ctx context.Context, s *redis.Script, readOnly bool, argv [][]any) (cmds []*redis.Cmd, notReplicated, err error) {
	via := redis.Cmdable(f.rdb)
	wait := f.wait != nil && !readOnly
	if wait {
		// WAIT counts the replicas that acknowledged the writes of its own
		// connection: the pipeline must go to one connection of the master
		// that holds the filter.
		c, err := f.wait.master(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		via = c
	}
	send := func(argv [][]any, bySHA bool) []*redis.Cmd {
		pipe := via.Pipeline()
		cmds := make([]*redis.Cmd, len(argv))
		for i, args := range argv {
			switch {
			case bySHA && readOnly:
				cmds[i] = s.EvalShaRO(ctx, pipe, f.keys, args...)
			case bySHA:
				cmds[i] = s.EvalSha(ctx, pipe, f.keys, args...)
			case readOnly:
				cmds[i] = s.EvalRO(ctx, pipe, f.keys, args...)
			default:
				cmds[i] = s.Eval(ctx, pipe, f.keys, args...)
			}
		}
		var acked *redis.Cmd
		if wait {
			acked = pipe.Do(ctx, "wait", f.wait.replicas, f.wait.timeout.Milliseconds())
		}
		_, _ = pipe.Exec(ctx) // errors are checked per command
		if wait && notReplicated == nil {
			notReplicated = f.wait.check(f, acked)
		}
		return cmds
	}
	cmds = send(argv, true)
	var again [][]any
	var at []int
	for i, cmd := range cmds {
		if err := cmd.Err(); errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, argv[i])
			at = append(at, i)
		}
	}
	if len(again) > 0 {
		redo := send(again, false)
		for j, i := range at {
			cmds[i] = redo[j]
		}
	}
	return cmds, notReplicated, nil
}

// reply returns the answer string of a script call that covered n keys,
// recording the generation that comes with it.
func (f *Filter) reply(ctx context.Context, cmd *redis.Cmd, n int) ([]byte, error) {
	s, err := cmd.Text()
	if err != nil {
		return nil, f.scriptErr(ctx, err)
	}
	gen, answers, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("redisbloom: filter %q: malformed script reply", f.name)
	}
	if err := f.observe(gen); err != nil {
		return nil, err
	}
	if len(answers) != n {
		return nil, fmt.Errorf("redisbloom: filter %q: script answered for %d keys, want %d", f.name, len(answers), n)
	}
	return []byte(answers), nil
}
