package redisbloom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// ErrNoModule is returned by NewNative and OpenNative when the server has no
// BF.* commands (neither Redis 8 nor the RedisBloom module, nor
// valkey-bloom). It wraps errors.ErrUnsupported.
var ErrNoModule = fmt.Errorf("redisbloom: the server has no BF.* commands (RedisBloom): %w", errors.ErrUnsupported)

// maxNativeKeysPerCall bounds the keys of one transaction (one round trip):
// BF.MADD takes about 0.3 us of server time per key, so a call of 10,000
// keys holds the server for about 3 ms. Larger batches take one round trip
// per 10,000 keys, each atomic on its own.
const maxNativeKeysPerCall = 10_000

// maxNativeScriptKeys is the largest batch sent through one script
// (nativeSmallAddScript, nativeSmallTestScript) rather than a transaction
// around the raw command: Lua's conversion of every key costs about 0.3 us
// of server CPU, the transaction's MULTI, EXEC and second script about 10
// us more than one script call.
const maxNativeScriptKeys = 32

// NativeFilter is a handle on a Bloom filter kept by the server's own BF.*
// commands (RedisBloom: Redis 8, Redis Stack, the RedisBloom module;
// valkey-bloom), under the RedisBloom key Key(): BF.EXISTS and BF.MEXISTS
// from any other client answer as Test does, and BF.SCANDUMP reads it
// (bfdump.ScanDump). Beside that key the handle keeps metadata, checked in
// the same atomic step as every BF.* command it sends, so that it keeps the
// promises of Filter: a filter that was deleted, flushed, evicted, lost in a
// restart or replaced gives ErrNotFound, ErrCorrupt or ErrLost, never
// "absent", and nothing is written then; see the package documentation,
// "Durability", for what it takes that an added key is never lost.
//
// Its layout, hash and sizing are RedisBloom's, not bloom.BloomFilter's:
// Export and Import move it as a *bfdump.Filter (BF.SCANDUMP's stream), and
// a scaling filter (the default) grows as BF.ADD grows it: when the newest
// sub-filter holds its capacity, RedisBloom adds one of Expansion() times
// the capacity at half the error rate. Test reports a key that was added as
// present; it reports an absent key as present with a probability at most
// about ErrorRate (RedisBloom's sizing, which misses the rate for filters of
// a few hundred keys or fewer: see bfdump.ReserveSize).
//
// Each call takes one round trip for one key or a batch of up to 10,000
// keys, and is atomic on the server; larger batches take one round trip per
// 10,000 keys. It is safe for concurrent use by any number of goroutines,
// and any number of processes may use the same filter at once; a key added
// by many clients at once is reported new (TestAndAdd false) to exactly
// one. A zero NativeFilter is not usable: its methods return an error.
type NativeFilter struct {
	rdb       redis.UniversalClient
	name      string
	keys      []string // meta, the RedisBloom key, the parking key
	id        string
	capacity  uint64
	errorRate float64
	expansion uint32 // 0: non-scaling
	seen      *generation
	wait      *waitSpec // nil: writes do not WAIT for replicas
}

// errZeroNative is returned by every method of a zero NativeFilter.
var errZeroNative = fmt.Errorf("%w: a zero NativeFilter is not usable; make one with NewNative or OpenNative", ErrZeroValue)

// nativeKeys returns the keys of the native filter called name: its
// metadata, its RedisBloom key and the key the guard parks it under (which
// exists only inside a transaction). The RedisBloom key is {name}:bits, the
// key a Filter keeps its bitmap under, so that Destroy removes it.
func nativeKeys(name string) []string {
	keys := keysOf(name)
	return append(keys, keys[1]+":parked")
}

// NewNative returns the native filter called name in rdb, creating it if it
// does not exist as BF.RESERVE creates it: capacity keys at errorRate,
// scaling by bfdump.DefaultExpansion unless bfdump.Expansion or
// bfdump.NonScaling say otherwise. Every process that shares the filter can
// call NewNative with the same arguments. A filter whose RedisBloom key is
// gone but whose metadata stays (the key was evicted or deleted) is created
// again, empty.
//
// It returns ErrNoModule if the server has no BF.* commands; an error
// wrapping bloom.ErrInvalidParameter for an invalid name (see Destroy), a
// capacity outside [1, bfdump.MaxReserveCapacity], an errorRate outside
// (0, 1) or invalid options; an error wrapping bloom.ErrIncompatible when
// the filter exists with another capacity, error rate or expansion;
// ErrFormat when name's keys hold something else (a Filter of this package,
// or a RedisBloom key without metadata); ErrCorrupt or ErrLost for a filter
// in that state; or the error of the round trip.
func NewNative(ctx context.Context, rdb redis.UniversalClient, name string, capacity uint64, errorRate float64, opts ...bfdump.Option) (*NativeFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	// bfdump checks the parameters as BF.RESERVE does; a filter of one key
	// is the cheapest way to have it read the options.
	if capacity < 1 || capacity > bfdump.MaxReserveCapacity {
		return nil, fmt.Errorf("%w: redisbloom: capacity must be in [1, %d] (BF.RESERVE's range), got %d", bloom.ErrInvalidParameter, bfdump.MaxReserveCapacity, capacity)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("%w: redisbloom: errorRate must be in (0, 1), got %v", bloom.ErrInvalidParameter, errorRate)
	}
	probe, err := bfdump.Reserve(1, errorRate, opts...)
	if err != nil {
		return nil, err
	}
	var expansion uint32
	if !probe.NonScaling() {
		expansion = probe.Expansion()
	}
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("redisbloom: filter id: %w", err)
	}
	f := &NativeFilter{rdb: rdb, name: name, keys: nativeKeys(name), id: hex.EncodeToString(token[:]),
		capacity: capacity, errorRate: errorRate, expansion: expansion, seen: new(generation)}
	fields := f.metaFields()
	args := append(fields, "check", metaCheck(fields), "count", "0", "gen", "0",
		"reserve", strconv.FormatFloat(errorRate, 'g', -1, 64), strconv.FormatUint(capacity, 10))
	if expansion == 0 {
		args = append(args, "NONSCALING")
	} else {
		args = append(args, "EXPANSION", strconv.FormatUint(uint64(expansion), 10))
	}
	created, err := nativeCreateScript.Run(ctx, rdb, f.keys[:2], args...).Int()
	if err != nil {
		return nil, f.wrap(err)
	}
	if created == 1 {
		return f, nil
	}
	existing, err := OpenNative(ctx, rdb, name)
	if err != nil {
		return nil, err
	}
	mismatch := func(what string, got, wanted any) error {
		return fmt.Errorf("%w: filter %q exists with %s %v, not %v", bloom.ErrIncompatible, name, what, got, wanted)
	}
	switch {
	case existing.capacity != capacity:
		return nil, mismatch("capacity", existing.capacity, capacity)
	case math.Float64bits(existing.errorRate) != math.Float64bits(errorRate):
		return nil, mismatch("error rate", existing.errorRate, errorRate)
	case existing.expansion != expansion:
		return nil, mismatch("expansion (0: non-scaling)", existing.expansion, expansion)
	}
	return existing, nil
}

// OpenNative returns the existing native filter called name in rdb, with
// the parameters it was created with. It returns ErrNotFound if there is no
// such filter, ErrFormat if name's keys hold something else, ErrCorrupt or
// ErrLost for a filter in that state, ErrNoModule if the server has no BF.*
// commands, or the error of the round trip.
func OpenNative(ctx context.Context, rdb redis.UniversalClient, name string) (*NativeFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f := &NativeFilter{rdb: rdb, name: name, keys: nativeKeys(name)}
	res, err := nativeMetaScript.RunRO(ctx, rdb, f.keys[:2], nativeFormat).Slice()
	if err != nil {
		return nil, f.wrap(err)
	}
	meta, err := metaMap(name, res, nativeFormat)
	if err != nil {
		return nil, err
	}
	if why, ok := meta["lost"]; ok {
		return nil, fmt.Errorf("%w: %q: %s", ErrLost, name, why)
	}
	if meta["bf.missing"] == "1" {
		return nil, fmt.Errorf("%w: %q: the RedisBloom key was deleted, flushed or evicted", ErrNotFound, name)
	}
	bad := func(field string) error {
		return fmt.Errorf("%w: %q: invalid %s %q", ErrCorrupt, name, field, meta[field])
	}
	if f.id = meta["id"]; f.id == "" {
		return nil, bad("id")
	}
	if f.capacity, err = strconv.ParseUint(meta["capacity"], 10, 64); err != nil || f.capacity == 0 {
		return nil, bad("capacity")
	}
	if f.errorRate, err = strconv.ParseFloat(meta["error_rate"], 64); err != nil || !(f.errorRate > 0 && f.errorRate < 1) {
		return nil, bad("error_rate")
	}
	expansion, err := strconv.ParseUint(meta["expansion"], 10, 32)
	if err != nil {
		return nil, bad("expansion")
	}
	f.expansion = uint32(expansion)
	if want := metaCheck(f.metaFields()); meta["check"] != want {
		return nil, fmt.Errorf("%w: %q: metadata does not match its check field (%q, computed %q): capacity, error rate or expansion were changed",
			ErrCorrupt, name, meta["check"], want)
	}
	count, err := strconv.ParseUint(meta["count"], 10, 64)
	if err != nil {
		return nil, bad("count")
	}
	gen, err := strconv.ParseUint(meta["gen"], 10, 64)
	if err != nil {
		return nil, bad("gen")
	}
	// The RedisBloom key must be the filter the metadata describes: its
	// growth the same, its capacity at least the first sub-filter's, and at
	// least as many keys as were counted at the last write.
	wantExp := "false"
	if f.expansion != 0 {
		wantExp = strconv.FormatUint(uint64(f.expansion), 10)
	}
	bfCap, err1 := strconv.ParseUint(meta["bf.capacity"], 10, 64)
	items, err2 := strconv.ParseUint(meta["bf.items"], 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return nil, fmt.Errorf("%w: %q: BF.INFO reports capacity %q and %q keys", ErrCorrupt, name, meta["bf.capacity"], meta["bf.items"])
	case meta["bf.expansion"] != wantExp || bfCap < f.capacity:
		return nil, fmt.Errorf("%w: %q: the RedisBloom key has capacity %d and expansion %s, not those of the filter created with capacity %d and expansion %s",
			ErrCorrupt, name, bfCap, meta["bf.expansion"], f.capacity, wantExp)
	case items < count:
		return nil, fmt.Errorf("%w: %q: the RedisBloom key holds %d keys, fewer than the %d added: it was replaced", ErrCorrupt, name, items, count)
	}
	f.seen = new(generation)
	f.seen.observe(gen)
	return f, nil
}

// metaFields returns the metadata fields that describe f, as field, value,
// ... for HSET, the format first; metaCheck covers exactly these.
func (f *NativeFilter) metaFields() []any {
	return []any{
		"format", nativeFormat,
		"id", f.id,
		"capacity", strconv.FormatUint(f.capacity, 10),
		"error_rate", strconv.FormatFloat(f.errorRate, 'g', -1, 64),
		"expansion", strconv.FormatUint(uint64(f.expansion), 10),
	}
}

// Name returns the name the filter was created with.
func (f *NativeFilter) Name() string { return f.name }

// Key returns the RedisBloom key that holds the filter, {name}:bits: the
// key to give BF.EXISTS, BF.MEXISTS, BF.INFO or bfdump.ScanDump in other
// programs. Writing it other than through the NativeFilter (BF.ADD,
// BF.MADD) is not refused, but weakens the check that detects a replaced
// key, which compares its count of keys with the count recorded at the
// handles' last write.
func (f *NativeFilter) Key() string {
	if f.keys == nil {
		return ""
	}
	return f.keys[1]
}

// Capacity returns the keys the first sub-filter was reserved for
// (BF.RESERVE's capacity).
func (f *NativeFilter) Capacity() uint64 { return f.capacity }

// ErrorRate returns the error rate the filter was reserved with.
func (f *NativeFilter) ErrorRate() float64 { return f.errorRate }

// Expansion returns the growth factor (BF.RESERVE's EXPANSION), 0 for a
// non-scaling filter.
func (f *NativeFilter) Expansion() uint32 { return f.expansion }

// NonScaling reports whether the filter is non-scaling: it refuses adds
// once it holds Capacity keys (an error wrapping bfdump.ErrFull). A zero
// NativeFilter is neither: it refuses every call.
func (f *NativeFilter) NonScaling() bool { return f.rdb != nil && f.expansion == 0 }

// wrap turns the scripts' error replies into the package's errors.
func (f *NativeFilter) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case redis.HasErrorPrefix(err, errNotFoundPrefix):
		return fmt.Errorf("%w: %q (deleted, flushed, evicted, expired, lost in a restart or created again): %v", ErrNotFound, f.name, err)
	case redis.HasErrorPrefix(err, errCorruptPrefix):
		return fmt.Errorf("%w: %q: %v", ErrCorrupt, f.name, err)
	case redis.HasErrorPrefix(err, errLostGenPrefix), redis.HasErrorPrefix(err, errLostPrefix):
		return fmt.Errorf("%w: %q: %v", ErrLost, f.name, err)
	case redis.HasErrorPrefix(err, errStalePrefix):
		return fmt.Errorf("%w: %q: %v", ErrStale, f.name, err)
	case redis.HasErrorPrefix(err, "EXISTS"):
		return fmt.Errorf("%w: %q: %v", ErrFormat, f.name, err)
	case strings.Contains(err.Error(), "non scaling filter is full"):
		return fmt.Errorf("redisbloom: filter %q: %w (%v)", f.name, bfdump.ErrFull, err)
	case strings.Contains(strings.ToLower(err.Error()), "unknown redis command") ||
		strings.Contains(strings.ToLower(err.Error()), "unknown command"):
		return fmt.Errorf("%w: filter %q: %v", ErrNoModule, f.name, err)
	}
	return fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
}

// scriptErr turns the guard's error into the package's error; a master
// behind the handle's generation is marked lost first (see Filter's).
func (f *NativeFilter) scriptErr(ctx context.Context, err error) error {
	if redis.HasErrorPrefix(err, errLostGenPrefix) {
		why := fmt.Sprintf("acknowledged writes lost (write generation %d was seen by a client, %s); Destroy the filter and rebuild it",
			f.seen.load(), time.Now().UTC().Format(time.RFC3339))
		if mErr := markLostScript.Run(ctx, f.rdb, f.keys[:1], f.id, f.seen.load(), why).Err(); mErr != nil {
			return fmt.Errorf("%w: %q: %v (marking it lost failed: %v)", ErrLost, f.name, err, mErr)
		}
	}
	return f.wrap(err)
}

// observe records the generation a guard or nativeAfterScript returned.
func (f *NativeFilter) observe(v any) error {
	g, err := parseUint(f.name, "generation", v)
	if err != nil {
		return err
	}
	f.seen.observe(g)
	return nil
}

// WithWait returns a handle on the same filter whose writes (Add,
// TestAndAdd, AddMany, TestAndAddMany and their String forms, Import)
// return only after at least replicas replicas acknowledged them, with
// Redis's WAIT, or an error wrapping ErrNotReplicated after timeout, as
// Filter.WithWait: a write that changes nothing still writes the
// generation, so that the WAIT covers the other clients' writes that added
// those keys. The handle shares f's generation; reads are unchanged. Each
// write stays one round trip, its transaction followed by WAIT on the
// connection that sent it, to the master that holds the filter; rdb must
// be a *redis.Client or a *redis.ClusterClient. It returns an error
// wrapping bloom.ErrInvalidParameter for another client, replicas < 1 or a
// timeout under a millisecond.
func (f *NativeFilter) WithWait(replicas int, timeout time.Duration) (*NativeFilter, error) {
	if f.rdb == nil {
		return nil, errZeroNative
	}
	g, err := (&Filter{rdb: f.rdb, name: f.name, keys: f.keys[:2]}).WithWait(replicas, timeout)
	if err != nil {
		return nil, err
	}
	h := *f
	h.wait = g.wait
	return &h, nil
}

// txWait is tx for a write of a handle made by WithWait: the transaction
// and WAIT on one connection of the master, in one pipeline, with MULTI and
// EXEC sent as commands of their own (a transaction pipeline would put
// WAIT inside the transaction, where it cannot wait).
func (f *NativeFilter) txWait(ctx context.Context, cmd []any) (any, error) {
	shim := &Filter{rdb: f.rdb, name: f.name, keys: f.keys[:2]}
	c, err := f.wait.master(ctx, shim)
	if err != nil {
		return nil, err
	}
	pipe := c.Pipeline()
	pipe.Do(ctx, "multi")
	nativeGuardScript.Eval(ctx, pipe, f.keys, f.id, strconv.FormatUint(f.seen.load(), 10))
	pipe.Do(ctx, cmd...)
	nativeAfterScript.Eval(ctx, pipe, f.keys, "w")
	exec := pipe.Do(ctx, "exec")
	acked := pipe.Do(ctx, "wait", f.wait.replicas, f.wait.timeout.Milliseconds())
	_, _ = pipe.Exec(ctx) // each command carries its own error
	replies, err := exec.Slice()
	if err != nil {
		return nil, f.wrap(err)
	}
	if len(replies) != 3 {
		return nil, fmt.Errorf("redisbloom: filter %q: EXEC returned %d replies, want 3", f.name, len(replies))
	}
	if err, ok := replies[0].(error); ok {
		return nil, f.scriptErr(ctx, err)
	}
	if err := f.observe(replies[0]); err != nil {
		return nil, err
	}
	if err, ok := replies[2].(error); ok {
		return nil, f.wrap(err)
	}
	if err := f.observe(replies[2]); err != nil {
		return nil, err
	}
	if err, ok := replies[1].(error); ok {
		return nil, f.wrap(err)
	}
	if err := f.wait.check(shim, acked); err != nil {
		return nil, err
	}
	return replies[1], nil
}

// tx runs cmd (BF.MADD, BF.MEXISTS, BF.CARD, BF.INFO with its arguments)
// in one transaction with the guard and, for a write, nativeAfterScript,
// and returns cmd's reply. A read refused by a lagging replica is retried
// (see Filter's retryStale).
func (f *NativeFilter) tx(ctx context.Context, write bool, cmd []any) (any, error) {
	if f.rdb == nil {
		return nil, errZeroNative
	}
	if write && f.wait != nil {
		return f.txWait(ctx, cmd)
	}
	var out any
	bySHA := !write // see below
	err := (&Filter{}).retryStale(ctx, func() error {
		pipe := f.rdb.TxPipeline()
		var guard, do, after *redis.Cmd
		gen := strconv.FormatUint(f.seen.load(), 10)
		switch {
		case write:
			// EVAL, never EVALSHA: a guard refused with NOSCRIPT would
			// let BF.MADD run unchecked.
			guard = nativeGuardScript.Eval(ctx, pipe, f.keys, f.id, gen)
			do = pipe.Do(ctx, cmd...)
			after = nativeAfterScript.Eval(ctx, pipe, f.keys, "")
		case bySHA:
			// A read's answers are thrown away when its guard fails, so
			// the guard may go by EVALSHA, and by EVAL if the server does
			// not have it.
			guard = nativeReadGuardScript.EvalShaRO(ctx, pipe, f.keys, f.id, gen)
			do = pipe.Do(ctx, cmd...)
		default:
			guard = nativeReadGuardScript.EvalRO(ctx, pipe, f.keys, f.id, gen)
			do = pipe.Do(ctx, cmd...)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
		if err := guard.Err(); bySHA && redis.HasErrorPrefix(err, "NOSCRIPT") {
			bySHA = false
			pipe = f.rdb.TxPipeline()
			guard = nativeReadGuardScript.EvalRO(ctx, pipe, f.keys, f.id, gen)
			do = pipe.Do(ctx, cmd...)
			_, _ = pipe.Exec(ctx)
		}
		if err := guard.Err(); err != nil {
			if errors.Is(err, redis.Nil) {
				return fmt.Errorf("redisbloom: filter %q: empty guard reply", f.name)
			}
			return f.scriptErr(ctx, err)
		}
		if err := f.observe(guard.Val()); err != nil {
			return err
		}
		if write {
			if err := after.Err(); err != nil {
				return f.wrap(err)
			}
			if err := f.observe(after.Val()); err != nil {
				return err
			}
		}
		if err := do.Err(); err != nil {
			return f.wrap(err)
		}
		out = do.Val()
		return nil
	})
	return out, err
}

// flags decodes a reply of BF.MADD or BF.MEXISTS for n keys: integers in
// RESP2, booleans in RESP3. An error among them (a non-scaling filter that
// is full) is returned after the answers before it.
func (f *NativeFilter) flags(reply any, n int, out []bool) ([]bool, error) {
	vals, ok := reply.([]any)
	if !ok {
		return out, fmt.Errorf("redisbloom: filter %q: reply of %T, want an array", f.name, reply)
	}
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			out = append(out, v == 1)
		case bool:
			out = append(out, v)
		case error:
			return out, f.wrap(v)
		default:
			return out, fmt.Errorf("redisbloom: filter %q: reply element %d of %T", f.name, i, v)
		}
	}
	if len(vals) != n {
		return out, fmt.Errorf("redisbloom: filter %q: %d answers for %d keys", f.name, len(vals), n)
	}
	return out, nil
}

// small runs the keys of a small batch through nativeSmallAddScript (add)
// or nativeSmallTestScript, and returns BF.MADD's or BF.MEXISTS's reply.
func small[K []byte | string](ctx context.Context, f *NativeFilter, add bool, keys []K) (any, error) {
	var out any
	err := (&Filter{}).retryStale(ctx, func() error {
		args := make([]any, 0, 3+len(keys))
		args = append(args, f.id, strconv.FormatUint(f.seen.load(), 10))
		var cmd *redis.Cmd
		if add {
			args = append(args, "")
			for _, k := range keys {
				args = append(args, k)
			}
			cmd = nativeSmallAddScript.Run(ctx, f.rdb, f.keys, args...)
		} else {
			for _, k := range keys {
				args = append(args, k)
			}
			cmd = nativeSmallTestScript.RunRO(ctx, f.rdb, f.keys, args...)
		}
		r, err := cmd.Slice()
		if err != nil {
			return f.scriptErr(ctx, err)
		}
		if len(r) != 2 {
			return fmt.Errorf("redisbloom: filter %q: script reply of %d elements, want 2", f.name, len(r))
		}
		if err := f.observe(r[0]); err != nil {
			return err
		}
		out = r[1]
		return nil
	})
	return out, err
}

// many sends keys in calls of up to maxNativeKeysPerCall, BF.MADD when add
// (whose answers are 1 for a key it added, so present is the negation),
// BF.MEXISTS otherwise, and returns whether each key was present.
func many[K []byte | string](ctx context.Context, f *NativeFilter, add bool, keys []K) ([]bool, error) {
	if f.rdb == nil {
		return nil, errZeroNative
	}
	if len(keys) == 0 {
		return []bool{}, nil
	}
	command := "BF.MEXISTS"
	if add {
		command = "BF.MADD"
	}
	present := make([]bool, 0, len(keys))
	var args []any
	for lo := 0; lo < len(keys); lo += maxNativeKeysPerCall {
		batch := keys[lo:min(lo+maxNativeKeysPerCall, len(keys))]
		var reply any
		var err error
		if len(batch) <= maxNativeScriptKeys && !(add && f.wait != nil) {
			reply, err = small(ctx, f, add, batch)
		} else {
			args = append(args[:0], command, f.keys[1])
			for _, k := range batch {
				args = append(args, k)
			}
			reply, err = f.tx(ctx, add, args)
		}
		if err != nil {
			return nil, err
		}
		at := len(present)
		if present, err = f.flags(reply, len(batch), present); err != nil {
			return nil, err
		}
		if add {
			for i := at; i < len(present); i++ {
				present[i] = !present[i]
			}
		}
	}
	return present, nil
}

// Add inserts key (BF.ADD). Afterwards Test(key) reports true. It takes
// one round trip and returns ErrNotFound, ErrCorrupt or ErrLost if the
// filter no longer exists or is in that state (and then writes nothing), an
// error wrapping bfdump.ErrFull when a non-scaling filter holds its
// capacity. After any other error the key may or may not have been added;
// retrying is safe.
func (f *NativeFilter) Add(ctx context.Context, key []byte) error {
	_, err := many(ctx, f, true, [][]byte{key})
	return err
}

// AddString is Add for a string key.
func (f *NativeFilter) AddString(ctx context.Context, key string) error {
	_, err := many(ctx, f, true, []string{key})
	return err
}

// Test reports whether key may be in the filter (BF.EXISTS): false means
// key was definitely never added; true means it probably was. It takes one
// round trip and returns ErrNotFound, ErrCorrupt or ErrLost, never false,
// if the filter no longer exists or is in that state.
func (f *NativeFilter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := many(ctx, f, false, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestString is Test for a string key.
func (f *NativeFilter) TestString(ctx context.Context, key string) (bool, error) {
	r, err := many(ctx, f, false, []string{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestAndAdd inserts key and reports whether it was probably present before
// the call, atomically: when several clients TestAndAdd the same new key at
// once, exactly one of them gets false (none does if the key is a false
// positive). It takes one round trip and returns the errors Add returns.
func (f *NativeFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	r, err := many(ctx, f, true, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// TestAndAddString is TestAndAdd for a string key.
func (f *NativeFilter) TestAndAddString(ctx context.Context, key string) (bool, error) {
	r, err := many(ctx, f, true, []string{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddMany inserts every key of keys, in order (BF.MADD), in one round trip
// per 10,000 keys. It returns the errors Add returns; after an error other
// than ErrNotFound, ErrCorrupt or ErrLost some, all or none of the keys may
// have been added; retrying is safe.
func (f *NativeFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := many(ctx, f, true, keys)
	return err
}

// AddManyStrings is AddMany for string keys.
func (f *NativeFilter) AddManyStrings(ctx context.Context, keys []string) error {
	_, err := many(ctx, f, true, keys)
	return err
}

// TestMany reports whether each key of keys may be in the filter
// (BF.MEXISTS), with Test's meaning of true and false: present[i] is for
// keys[i]. It takes one round trip per 10,000 keys and returns the errors
// Test returns, never all false.
func (f *NativeFilter) TestMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	return many(ctx, f, false, keys)
}

// TestManyStrings is TestMany for string keys.
func (f *NativeFilter) TestManyStrings(ctx context.Context, keys []string) (present []bool, err error) {
	return many(ctx, f, false, keys)
}

// TestAndAddMany inserts every key of keys, in order, and reports for each
// whether it was probably present before: present[i] is what
// TestAndAdd(keys[i]) would have returned had the keys been added one by
// one, so a key repeated within keys is reported present from its second
// occurrence on. Each 10,000 keys are one round trip, atomic. It returns
// the errors AddMany returns.
func (f *NativeFilter) TestAndAddMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	return many(ctx, f, true, keys)
}

// TestAndAddManyStrings is TestAndAddMany for string keys.
func (f *NativeFilter) TestAndAddManyStrings(ctx context.Context, keys []string) (present []bool, err error) {
	return many(ctx, f, true, keys)
}

// Count returns RedisBloom's count of the keys added (BF.CARD): keys an add
// found absent, from any process, so repeated keys are not counted, and
// neither is a new key that was a false positive. It returns the errors
// Test returns.
func (f *NativeFilter) Count(ctx context.Context) (uint64, error) {
	r, err := f.tx(ctx, false, []any{"BF.CARD", f.Key()})
	if err != nil {
		return 0, err
	}
	return parseUint(f.name, "BF.CARD", r)
}

// Info returns what BF.INFO reports of the filter. It returns the errors
// Test returns.
func (f *NativeFilter) Info(ctx context.Context) (bfdump.Info, error) {
	r, err := f.tx(ctx, false, []any{"BF.INFO", f.Key()})
	if err != nil {
		return bfdump.Info{}, err
	}
	// RESP2 gives an array of name, value, ...; RESP3 a map.
	fields := map[string]any{}
	switch r := r.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if name, ok := r[i].(string); ok {
				fields[name] = r[i+1]
			}
		}
	case map[any]any:
		for k, v := range r {
			if name, ok := k.(string); ok {
				fields[name] = v
			}
		}
	default:
		return bfdump.Info{}, fmt.Errorf("redisbloom: filter %q: BF.INFO reply of %T", f.name, r)
	}
	var in bfdump.Info
	var bad []string
	num := func(name string) uint64 {
		v, ok := fields[name].(int64)
		if !ok || v < 0 {
			if fields[name] != nil || name != "Expansion rate" {
				bad = append(bad, name)
			}
			return 0
		}
		return uint64(v)
	}
	in.Capacity = num("Capacity")
	in.Size = num("Size")
	in.Filters = int(num("Number of filters"))
	in.Items = num("Number of items inserted")
	in.Expansion = uint32(num("Expansion rate"))
	if len(bad) > 0 {
		return bfdump.Info{}, fmt.Errorf("redisbloom: filter %q: BF.INFO without valid %s", f.name, strings.Join(bad, ", "))
	}
	return in, nil
}

// Delete removes the filter's keys from Redis. Afterwards every handle on
// it, this one included, gets ErrNotFound. Deleting a filter that does not
// exist is not an error. Destroy deletes a filter by name.
func (f *NativeFilter) Delete(ctx context.Context) error {
	if f.rdb == nil {
		return errZeroNative
	}
	if err := f.rdb.Del(ctx, f.keys[:2]...).Err(); err != nil {
		return f.wrap(err)
	}
	return nil
}
