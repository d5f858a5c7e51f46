package redisbloom

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// scalableFormatName is the metadata's format field of a ScalableFilter
// (scalableCheckLua spells it out too).
const scalableFormatName = "redisbloom-scalable/1"

// Growth kinds as the bloom package's scalable format numbers them.
const (
	growthLinear      = 1
	growthExponential = 2
)

// scalableProbeCapacity bounds the initial capacity of the in-memory filter
// that NewScalable builds to validate its arguments and options (see
// NewScalable).
const scalableProbeCapacity = 1 << 16

// errGrownPrefix is the reply of a script that was given the sizes of fewer
// sub-filters than the filter has.
const errGrownPrefix = "GROWN"

// ScalableFilter is a handle on a scalable Bloom filter stored in Redis: a
// chain of sub-filters that grows as keys are added, with the sub-filters,
// growth, tightening and positions of bloom.ScalableBloomFilter, so that
// Export returns a filter Equal to the in-memory one built from the same keys
// in the same order, and Import loads one (of the classic layout). Test never
// reports an added key as absent (on the conditions of the package doc) and
// reports an absent key present with a probability of at most ErrorRate,
// however many keys it holds, until it is saturated.
//
// Any number of clients may add at once: each sub-filter is created exactly
// once, inside the script call that found the newest one full, and a key
// that tests present is not added again, so duplicates do not make it grow.
// Cost: one Lua script (one round trip) per call or batch, plus one when the
// handle has not yet seen a sub-filter another client created; an absent key
// reads every sub-filter.
//
// Growth stops (the filter saturates: still no false negatives, a rising
// rate) when the next sub-filter would pass MaxBits bits, the whole filter
// bloom.MaxBits, or 65,536 sub-filters. A sub-filter count lower than one a
// handle has seen, a missing or extra sub-filter, or a count that is not
// valid gives ErrCorrupt, never "absent". Its keys share the hash tag {name},
// so one Cluster master serves the whole filter; docs/design.md gives them.
//
// A ScalableFilter is safe for concurrent use. A zero ScalableFilter is not
// usable: its methods return an error.
type ScalableFilter struct {
	h               Filter // name, rdb, keys ({name}:meta only), id, seen: error handling shared with Filter
	seed            uint32
	growth          byte
	scale           float64
	tightening      float64
	initialCapacity uint64
	errorRate       float64
	check           string

	// chain is the import epoch and number of sub-filters the handle has
	// seen, shared with the handles WithWait derives; sizes are the
	// sub-filters' sizes, a function of the parameters, shared likewise.
	chain  *chainView
	sizes  *sizeCache
	copies *subCopies // nil unless CacheFullSubFilters
	// room is what the newest sub-filter could still take at the last add
	// call (-1 once saturated; 0 before the first): while it is at least a
	// batch, calls leave out the next sub-filter's positions.
	room atomic.Int64
}

var errZeroScalable = fmt.Errorf("%w: a zero ScalableFilter is not usable; make one with NewScalable or OpenScalable", ErrZeroValue)

// NewScalable returns the scalable filter called name in rdb, creating it if
// it does not exist, with the sub-filters of bloom.NewScalable(
// initialCapacity, errorRate, opts...) of the classic layout: its options
// Linear or Exponential, Tightening and Seed, with the same defaults
// (Concurrent is accepted and means nothing here; Redis filters have the
// classic layout only, and bloom.Blocked is refused). Every process that
// shares the filter can call it with the same arguments. If only the
// filter's metadata is left (its first bitmap was evicted or deleted), it
// creates the filter again, empty.
//
// It returns an error wrapping bloom.ErrInvalidParameter for an invalid name
// or arguments (those bloom.NewScalable refuses, bloom.Blocked, and a first
// sub-filter of more than MaxBits bits); one wrapping bloom.ErrIncompatible when the
// filter exists with other parameters; ErrFormat when name's keys hold
// something else (a fixed Filter included); ErrCorrupt or ErrLost for a
// filter in that state; or the error of the round trip.
func NewScalable(ctx context.Context, rdb redis.UniversalClient, name string, initialCapacity uint64, errorRate float64, opts ...bloom.Option) (*ScalableFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	probe, err := scalableProbe(initialCapacity, errorRate, opts)
	if err != nil {
		return nil, err
	}
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("redisbloom: filter id: %w", err)
	}
	s, err := scalableFromProbe(rdb, name, hex.EncodeToString(token[:]), probe, initialCapacity)
	if err != nil {
		return nil, err
	}
	first := s.size(0)
	fields := s.metaFields()
	args := append(fields, "check", s.check, "gen", "0", "n", "1", "c0", "0", s.subPrefix(), (first.m+7)/8)
	res, err := scalableCreateScript.Run(ctx, rdb, s.keys(1), args...).Slice()
	if err != nil {
		return nil, s.h.wrap(err)
	}
	if len(res) == 1 {
		return s, nil
	}
	existing, err := parseScalableMeta(ctx, rdb, name, res[1:])
	if err != nil {
		return nil, err
	}
	if err := existing.sameParameters(s); err != nil {
		return nil, err
	}
	return existing, nil
}

// OpenScalable returns the existing scalable filter called name in rdb, with
// the parameters it was created with. It returns ErrNotFound if there is no
// such filter, ErrFormat if name's keys hold something else (a fixed Filter
// included), ErrCorrupt or ErrLost for a filter in that state, or the error
// of the round trip. It can be served by a replica.
func OpenScalable(ctx context.Context, rdb redis.UniversalClient, name string) (*ScalableFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	s := &ScalableFilter{h: Filter{rdb: rdb, name: name}}
	res, err := scalableMetaScript.RunRO(ctx, rdb, s.keys(1)).Slice()
	if err != nil {
		return nil, s.h.wrap(err)
	}
	return parseScalableMeta(ctx, rdb, name, res)
}

// scalableFromProbe returns a handle with the parameters of probe, an empty
// in-memory filter of the classic layout (scalableProbe), and the initial
// capacity given (which the probe may have been built with less of),
// checking that its first three sub-filters can be built in Redis and that
// the sizes derived here are bloom's. The handle has seen one sub-filter at
// import epoch 0, as NewScalable creates the filter.
func scalableFromProbe(rdb redis.UniversalClient, name, id string, probe *bloom.ScalableBloomFilter, initialCapacity uint64) (*ScalableFilter, error) {
	enc, err := probe.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if (probe.Layout() == bloom.LayoutBlocked) || binary.LittleEndian.Uint16(enc[4:]) != importVersion || enc[13] != 0 {
		// The offsets below are those of version 3, and the sizes
		// those of the classic layout.
		return nil, errBlockedOption()
	}
	s := &ScalableFilter{
		h:               Filter{rdb: rdb, name: name, keys: keysOf(name)[:1], id: id, seen: new(generation)},
		seed:            binary.LittleEndian.Uint32(enc[8:]),
		growth:          enc[12],
		scale:           math.Float64frombits(binary.LittleEndian.Uint64(enc[16:])),
		tightening:      math.Float64frombits(binary.LittleEndian.Uint64(enc[24:])),
		initialCapacity: initialCapacity,
		errorRate:       probe.ErrorRate(),
		chain:           newChainView(0, 1),
		sizes:           new(sizeCache),
	}
	s.check = metaCheck(s.metaFields())
	for j := range 3 {
		if !s.size(j).ok {
			return nil, fmt.Errorf("%w: a scalable filter of initial capacity %d at error rate %v cannot build sub-filter %d within MaxBits (%d) bits, the most one Redis string holds",
				bloom.ErrInvalidParameter, initialCapacity, s.errorRate, j, MaxBits)
		}
	}
	if initialCapacity == probe.InitialCapacity() {
		// The sizes are derived here from the parameters as the bloom
		// package derives them; the probe's first sub-filter (at the
		// first offset of the table) must agree, or Export would not be
		// Equal to it.
		first := s.size(0)
		sub := enc[binary.LittleEndian.Uint64(enc[importTable:]):]
		if binary.LittleEndian.Uint32(sub[12:]) != uint32(first.k) || binary.LittleEndian.Uint64(sub[16:]) != first.m ||
			binary.LittleEndian.Uint64(sub[24:]) != first.capacity || binary.LittleEndian.Uint64(sub[32:]) != math.Float64bits(first.rate) {
			return nil, fmt.Errorf("redisbloom: internal error: the sizes of sub-filter 0 differ from bloom.NewScalable's")
		}
	}
	return s, nil
}

// subPrefix is the prefix of the sub-filters' keys: sub-filter j is
// subPrefix + j.
func (s *ScalableFilter) subPrefix() string { return "{" + s.h.name + "}:s:" }

// keys returns the metadata key and the keys of sub-filters 0..n-1.
func (s *ScalableFilter) keys(n int) []string {
	keys := make([]string, 0, n+1)
	keys = append(keys, keysOf(s.h.name)[0])
	for j := range n {
		keys = append(keys, s.subPrefix()+strconv.Itoa(j))
	}
	return keys
}

// args returns ARGV[1..7+3S] of scalableCheckLua for S sub-filters, the
// first C of them tested by the client on copies of full sub-filters, for a
// call prepared with the chain v, with room for extra more.
func (s *ScalableFilter) args(v chain, S, C int, extra int) []any {
	args := make([]any, 0, 7+3*S+extra)
	args = append(args, s.h.id, strconv.FormatUint(s.h.seen.load(), 10), s.check, strconv.Itoa(S), strconv.Itoa(C),
		strconv.FormatUint(v.epoch, 10), strconv.Itoa(v.n))
	for j := range S {
		z := s.size(j)
		if !z.ok {
			args = append(args, "0", "0", "0")
			continue
		}
		args = append(args, strconv.FormatUint(z.capacity, 10), strconv.FormatUint((z.m+7)/8, 10), strconv.FormatUint(uint64(z.k), 10))
	}
	return args
}

// subFilters returns how many sub-filters a call prepared with the chain v
// must have sizes for: v's, plus the next one for a call that may grow the
// filter (unless the one before cannot be built either).
func (s *ScalableFilter) subFilters(v chain, grow bool) int {
	n := v.n
	if grow && s.size(n-1).ok {
		n++
	}
	return n
}

// maxChangedRetries bounds how many calls in a row may find that the
// filter changed since the handle's view (GROWN, EPOCH) before the method
// gives up: each such reply teaches the handle the change, so the next call
// normally succeeds.
const maxChangedRetries = 100

// changed handles the replies of a call prepared with the chain v that say
// the filter changed since: GROWN n (more sub-filters than the call had
// sizes for; n is checked with checkCount before the handle takes it) and
// EPOCH (an Import since v: the handle reads the metadata again, reload).
// retry reports whether err was one of them and the handle has caught up;
// err is then nil unless catching up failed.
func (s *ScalableFilter) changed(ctx context.Context, v chain, err error) (retry bool, _ error) {
	switch {
	case err == nil:
		return false, nil
	case redis.HasErrorPrefix(err, errGrownPrefix):
		text := strings.TrimSpace(strings.TrimPrefix(err.Error(), errGrownPrefix))
		n, perr := strconv.ParseUint(text, 10, 64)
		if perr != nil {
			return false, fmt.Errorf("%w: %q: invalid number of sub-filters %q", ErrCorrupt, s.h.name, text)
		}
		if err := s.checkCount(ctx, n); err != nil {
			return false, err
		}
		s.chain.see(v.epoch, int(n))
		return true, nil
	case redis.HasErrorPrefix(err, errEpochPrefix):
		// The copies of full sub-filters go with the old epoch
		// (subCopies.current).
		if err := s.reload(ctx); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// reload reads the metadata again, after a script found an Import newer
// than the handle's view (EPOCH), and takes the import epoch and the number
// of sub-filters it holds, which may be lower than before; the metadata
// script checks that no sub-filter past that number is left (its count
// field or its bitmap), and checkCount that the parameters can build them.
func (s *ScalableFilter) reload(ctx context.Context) error {
	res, err := scalableMetaScript.RunRO(ctx, s.h.rdb, s.keys(1)).Slice()
	if err != nil {
		return s.h.wrap(err)
	}
	meta, err := lostMetaMap(s.h.name, res, scalableFormatName)
	if err != nil {
		return err
	}
	if meta["id"] != s.h.id {
		return fmt.Errorf("%w: %q (deleted and created again)", ErrNotFound, s.h.name)
	}
	if meta["check"] != s.check {
		return fmt.Errorf("%w: %q: metadata check %q, opened with %q", ErrCorrupt, s.h.name, meta["check"], s.check)
	}
	n, err := strconv.ParseUint(meta["n"], 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q: invalid n %q", ErrCorrupt, s.h.name, meta["n"])
	}
	epoch, err := parseUint(s.h.name, "epoch", cmp.Or(meta["epoch"], "0"))
	if err != nil {
		return err
	}
	if err := s.checkCount(ctx, n); err != nil {
		return err
	}
	// The scripts check the generation against the handle's (a lagging
	// replica's view would not be taken: it has an older epoch).
	s.chain.see(epoch, int(n))
	return nil
}

// run runs the add or test script over keys, in script calls of at most
// scalablePositionsPerScript positions, one after the other, and returns
// the answers, one byte per key. With copies of full sub-filters
// (CacheFullSubFilters), keys present in them are answered here, and the
// others are sent without their positions in those sub-filters.
func (s *ScalableFilter) run(ctx context.Context, add bool, keys [][]byte) ([]byte, error) {
	if s.h.rdb == nil {
		return nil, errZeroScalable
	}
	return s.resume(ctx, add, keys, make([]byte, 0, len(keys)))
}

// resume is run for keys whose answers are to follow those of out: it makes
// the script calls one after the other, each prepared from the replies of
// the ones before. It stops with ctx's error when ctx ends between calls,
// and gives up after maxChangedRetries calls in a row that answered no key
// because the filter had changed.
func (s *ScalableFilter) resume(ctx context.Context, add bool, keys [][]byte, out []byte) ([]byte, error) {
	idle := 0
	for len(keys) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, s.h.wrap(err)
		}
		c, err := s.prepare(ctx, add, keys)
		if err != nil {
			return nil, err
		}
		reply, err := s.send(ctx, c)
		var done int
		if out, done, err = s.finish(ctx, c, reply, err, out); err != nil {
			return nil, err
		}
		if idle++; done > 0 {
			idle = 0
		} else if idle > maxChangedRetries {
			return nil, s.errKeepsChanging()
		}
		keys = keys[done:]
	}
	return out, nil
}

func (s *ScalableFilter) errKeepsChanging() error {
	return fmt.Errorf("redisbloom: filter %q: %d calls in a row found the filter changed since the call before (grown or imported); giving up",
		s.h.name, maxChangedRetries)
}

// scalableCall is one script call of run, prepared: its batch (a prefix of
// the keys left), the keys of the batch answered from copies of full
// sub-filters (local) and those sent, and the sizes of S sub-filters, the
// first C tested on the copies; chain is the handle's view it was prepared
// with.
type scalableCall struct {
	add   bool
	batch [][]byte
	local []bool
	sent  [][]byte
	S, C  int
	chain chain
}

// prepare chooses the next script call over (a prefix of) keys, at least one.
func (s *ScalableFilter) prepare(ctx context.Context, add bool, keys [][]byte) (*scalableCall, error) {
	v := s.chain.load()
	copies, err := s.copies.current(ctx, s, v)
	if err != nil {
		return nil, err
	}
	S := s.subFilters(v, add)
	C := min(len(copies), S)
	per := 0 // positions per key sent
	for j := C; j < S; j++ {
		if z := s.size(j); z.ok {
			per += int(z.k)
		}
	}
	batchOf := func(per int) int { return min(len(keys), max(1, scalablePositionsPerScript/max(per, 1))) }
	size := batchOf(per)
	if S > v.n {
		// The next sub-filter's positions are needed only if the
		// newest can fill during the call; a call that finds it
		// full without them stops, and the next round sends them.
		// Without them, a call takes more keys if the newest has room
		// for all of them.
		next := 0
		if z := s.size(S - 1); z.ok {
			next = int(z.k)
		}
		switch r := s.room.Load(); {
		case r == -1 || r >= int64(batchOf(per-next)):
			S, size = v.n, batchOf(per-next)
		case r >= int64(size):
			S = v.n
		}
	}
	batch := keys[:size]
	// Keys present in a copy are present: answered here.
	local := make([]bool, len(batch))
	var sent [][]byte
	var locs []uint64
	for i, key := range batch {
		for j := range C {
			z := s.size(j)
			locs = bloom.AppendLocations(locs[:0], key, z.m, z.k, s.seed)
			if allSet(copies[j], locs) {
				local[i] = true
				break
			}
		}
		if !local[i] {
			sent = append(sent, key)
		}
	}
	// The call is made even when every key was answered here: it checks
	// that the filter still exists and that the copies are those of its
	// current import epoch.
	return &scalableCall{add: add, batch: batch, local: local, sent: sent, S: S, C: C, chain: v}, nil
}

// send makes the prepared call c and returns the script's reply, sending a
// read again that a lagging replica refused (retryStale).
func (s *ScalableFilter) send(ctx context.Context, c *scalableCall) (string, error) {
	var reply string
	err := s.h.retryStale(ctx, func() error {
		var err error
		reply, err = s.call(ctx, c.add, c.chain, c.S, c.C, c.sent)
		return err
	})
	return reply, err
}

// finish takes the reply of the prepared call c, or its error, and appends
// the answers of c's batch to out, up to the first sent key the script did
// not get to; done is how many keys of the batch are answered. A reply that
// the filter changed since c's view (GROWN: grown past the sub-filters the
// call was sized for; EPOCH: imported) answers none, with a nil error: the
// handle has learnt what the next call needs (see changed).
func (s *ScalableFilter) finish(ctx context.Context, c *scalableCall, reply string, err error, out []byte) (_ []byte, done int, _ error) {
	if retry, err := s.changed(ctx, c.chain, err); retry || err != nil {
		return out, 0, err
	}
	if err != nil {
		return nil, 0, err
	}
	gen, rest, ok1 := strings.Cut(reply, ":")
	nText, a, ok2 := strings.Cut(rest, ":")
	n, err := strconv.Atoi(nText)
	room := int64(-2)
	if c.add && ok2 {
		var roomText string
		roomText, a, ok2 = strings.Cut(a, ":")
		room, err = strconv.ParseInt(roomText, 10, 64)
	}
	// The script checked that the filter has at least c.chain.n
	// sub-filters and at most S (it grows up to S).
	if !ok1 || !ok2 || err != nil || n < c.chain.n || n > c.S || len(a) > len(c.sent) {
		return nil, 0, fmt.Errorf("redisbloom: filter %q: malformed script reply", s.h.name)
	}
	if err := s.h.observe(gen); err != nil {
		return nil, 0, err
	}
	s.chain.see(c.chain.epoch, n)
	if c.add {
		s.room.Store(room)
	}
	// No answer is progress only if the filter grew or the call lacked
	// the next sub-filter's positions (room is now 0).
	if len(a) == 0 && len(c.sent) > 0 && (!c.add || (n == c.chain.n && c.S > c.chain.n)) {
		return nil, 0, fmt.Errorf("redisbloom: filter %q: script answered for no key", s.h.name)
	}
	answered := 0
	for i := range c.batch {
		if c.local[i] {
			out = append(out, '1')
		} else if answered < len(a) {
			out = append(out, a[answered])
			answered++
		} else {
			return out, i, nil
		}
	}
	return out, len(c.batch), nil
}

// allSet reports whether every position of locs is set in bitmap, in Redis's
// layout (bit p is bit 7-p%8 of byte p/8).
func allSet(bitmap string, locs []uint64) bool {
	for _, p := range locs {
		if bitmap[p>>3]&(0x80>>(p&7)) == 0 {
			return false
		}
	}
	return true
}

// call runs one script call over keys, prepared with the chain v, with the
// sizes of S sub-filters and the positions of sub-filters C..S-1 (the client
// tested 0..C-1 itself, on copies of full sub-filters).
func (s *ScalableFilter) call(ctx context.Context, add bool, v chain, S, C int, keys [][]byte) (string, error) {
	args := s.callArgs(v, S, C, keys)
	var cmd *redis.Cmd
	var notReplicated error
	if add {
		cmd, notReplicated = s.write(ctx, scalableAddScript, s.keys(S), args)
	} else {
		cmd = scalableTestScript.RunRO(ctx, s.h.rdb, s.keys(S), args...)
	}
	return s.callReply(ctx, cmd, notReplicated)
}

// callArgs returns the arguments of call.
func (s *ScalableFilter) callArgs(v chain, S, C int, keys [][]byte) []any {
	total := 0
	for j := C; j < S; j++ {
		if z := s.size(j); z.ok {
			total += int(z.k) * len(keys)
		}
	}
	text := make([]byte, 0, 11*total)
	ends := make([]int, 0, total)
	var locs []uint64
	for j := C; j < S; j++ {
		z := s.size(j)
		if !z.ok {
			continue
		}
		for _, key := range keys {
			locs = bloom.AppendLocations(locs[:0], key, z.m, z.k, s.seed)
			for _, p := range locs {
				text = strconv.AppendUint(text, p, 10)
				ends = append(ends, len(text))
			}
		}
	}
	all := unsafe.String(unsafe.SliceData(text), len(text)) // text is not modified again
	args := s.args(v, S, C, 1+total)
	args = append(args, strconv.Itoa(len(keys)))
	start := 0
	for _, end := range ends {
		args = append(args, all[start:end])
		start = end
	}
	return args
}

// callReply returns the reply of a script call, cmd, or its error: GROWN
// and EPOCH as they are, the others as scriptErr makes them; notReplicated
// is the error of the WAIT that followed a write, reported after the
// script's own.
func (s *ScalableFilter) callReply(ctx context.Context, cmd *redis.Cmd, notReplicated error) (string, error) {
	reply, err := cmd.Text()
	if err != nil {
		if redis.HasErrorPrefix(err, errGrownPrefix) || redis.HasErrorPrefix(err, errEpochPrefix) {
			return "", err
		}
		return "", s.h.scriptErr(ctx, err)
	}
	if notReplicated != nil {
		gen, _, _ := strings.Cut(reply, ":")
		if err := s.h.observe(gen); err != nil {
			return "", err
		}
		return "", notReplicated
	}
	return reply, nil
}

// errEpochPrefix is the reply of a script called by a handle whose view is
// of an earlier import epoch (see chainView): it reads the metadata again
// (reload) and drops its copies of full sub-filters, which the Import
// replaced.
const errEpochPrefix = "EPOCH"

// CacheFullSubFilters makes the handle keep copies of the filter's full
// sub-filters, all but the newest, up to maxBytes bytes of them (oldest
// first), and test keys in them itself. A full sub-filter never changes
// again (Import, which replaces it, is detected: the copies are then
// dropped and fetched again), so this changes no answer; it moves the
// reading of those sub-filters from Redis to the client, where it costs
// a fraction of a microsecond per key instead of tens, and the client
// sends only the positions of the newer sub-filters. The copies are
// fetched when the handle first sees the filter grown past them: one read
// of their bitmaps, served by a replica only when it has every write to
// them. Call it before the handle is shared; maxBytes <= 0 turns it off.
func (s *ScalableFilter) CacheFullSubFilters(maxBytes int64) {
	if maxBytes <= 0 {
		s.copies = nil
		return
	}
	s.copies = &subCopies{max: maxBytes}
}

// subCopies are a handle's copies of full sub-filters.
type subCopies struct {
	max     int64
	mu      sync.Mutex
	epoch   uint64   // the import epoch of the copies
	bitmaps []string // sub-filters 0..len-1, Redis layout
}

// current returns the copies for a call prepared with the chain v, fetching
// those of sub-filters that became full since, within the budget; copies
// of another import epoch than v's are dropped first. A nil receiver has
// none. A fetch that finds the filter changed since v returns the copies
// there are: the call made with them gets the same reply and catches up.
func (c *subCopies) current(ctx context.Context, s *ScalableFilter, v chain) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != v.epoch {
		c.bitmaps, c.epoch = nil, v.epoch
	}
	have := len(c.bitmaps)
	used := int64(0)
	for _, b := range c.bitmaps {
		used += int64(len(b))
	}
	to := have
	for to < v.n-1 {
		z := s.size(to)
		if !z.ok || used+int64((z.m+7)/8) > c.max {
			break
		}
		used += int64((z.m + 7) / 8)
		to++
	}
	if to == have {
		return c.bitmaps, nil
	}
	var res []any
	err := s.h.retryStale(ctx, func() error {
		args := append(s.args(v, v.n, have, 1), strconv.Itoa(to))
		var err error
		res, err = scalableFetchScript.RunRO(ctx, s.h.rdb, s.keys(v.n), args...).Slice()
		if err != nil && !redis.HasErrorPrefix(err, errGrownPrefix) && !redis.HasErrorPrefix(err, errEpochPrefix) {
			err = s.h.scriptErr(ctx, err)
		}
		return err
	})
	if redis.HasErrorPrefix(err, errGrownPrefix) || redis.HasErrorPrefix(err, errEpochPrefix) {
		return c.bitmaps, nil
	}
	if err != nil {
		return nil, err
	}
	if len(res) != 2+to-have {
		return nil, fmt.Errorf("redisbloom: filter %q: malformed fetch reply", s.h.name)
	}
	if err := s.h.observe(res[0]); err != nil {
		return nil, err
	}
	for j := have; j < to; j++ {
		b, ok := res[2+j-have].(string)
		if !ok || uint64(len(b)) != (s.size(j).m+7)/8 {
			return nil, fmt.Errorf("%w: %q: bitmap of sub-filter %d does not match its size", ErrCorrupt, s.h.name, j)
		}
		c.bitmaps = append(c.bitmaps, b)
	}
	return c.bitmaps, nil
}

// Name returns the name the filter was created with.
func (s *ScalableFilter) Name() string { return s.h.name }

// Seed returns the murmur3 seed of every sub-filter.
func (s *ScalableFilter) Seed() uint32 { return s.seed }

// InitialCapacity returns the capacity of the first sub-filter, in keys.
func (s *ScalableFilter) InitialCapacity() uint64 { return s.initialCapacity }

// ErrorRate returns the target false-positive rate, which the filter keeps
// however far it grows (until it is saturated).
func (s *ScalableFilter) ErrorRate() float64 { return s.errorRate }

// Add inserts key unless it tests present already, growing the filter if its
// newest sub-filter is full. It takes one round trip and returns ErrNotFound,
// ErrCorrupt or ErrLost if the filter no longer exists or is in that state
// (and then writes nothing). After any other error the key may or may not
// have been added; retrying is safe.
func (s *ScalableFilter) Add(ctx context.Context, key []byte) error {
	_, err := s.run(ctx, true, [][]byte{key})
	return err
}

// Test reports whether key may be in the filter: false means key was
// definitely never added; true means it probably was. It takes one round
// trip and returns the errors Add returns, never false; it can be served by
// a read replica, as Filter.Test.
func (s *ScalableFilter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := s.run(ctx, false, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// TestAndAdd inserts key and reports whether it was probably present before
// the call, atomically: when several clients TestAndAdd the same new key at
// once, exactly one of them gets false (none does if the key is a false
// positive). It returns the errors Add returns.
func (s *ScalableFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	r, err := s.run(ctx, true, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// AddMany inserts every key of keys, in order, as Add would one by one. It
// takes one script call, atomic, and one round trip per 7,000 positions
// (keys times the hashes of every sub-filter, and of the next one when the
// newest may fill during the call), and one more each time the filter grows
// past the sub-filter after the newest the handle has seen. After an error other than
// ErrNotFound, ErrCorrupt or ErrLost some, all or none of the keys may have
// been added; retrying is safe.
func (s *ScalableFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := s.run(ctx, true, keys)
	return err
}

// TestMany reports whether each key of keys may be in the filter, with
// Test's meaning of true and false: present[i] is for keys[i]. It returns
// the errors Test returns, never all false.
func (s *ScalableFilter) TestMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := s.run(ctx, false, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// TestAndAddMany inserts every key of keys, in order, and reports for each
// whether it was probably present before: present[i] is what
// TestAndAdd(keys[i]) would have returned had the keys been added one by
// one. Each script call is atomic (see AddMany for how many there are). It
// returns the errors AddMany returns, with the same meaning.
func (s *ScalableFilter) TestAndAddMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := s.run(ctx, true, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// state runs the count or export script and returns its reply: gen, n,
// saturated, the n counts, and for export the n bitmaps.
func (s *ScalableFilter) state(ctx context.Context, script *redis.Script) ([]any, int, error) {
	if s.h.rdb == nil {
		return nil, 0, errZeroScalable
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, s.h.wrap(err)
		}
		if try > maxChangedRetries {
			return nil, 0, s.errKeepsChanging()
		}
		v := s.chain.load()
		S := s.subFilters(v, false)
		var res []any
		err := s.h.retryStale(ctx, func() error {
			var err error
			res, err = script.RunRO(ctx, s.h.rdb, s.keys(S), s.args(v, S, 0, 0)...).Slice()
			if err != nil && !redis.HasErrorPrefix(err, errGrownPrefix) && !redis.HasErrorPrefix(err, errEpochPrefix) {
				err = s.h.scriptErr(ctx, err)
			}
			return err
		})
		if retry, err := s.changed(ctx, v, err); err != nil {
			return nil, 0, err
		} else if retry {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		if len(res) < 3 {
			return nil, 0, fmt.Errorf("redisbloom: filter %q: malformed reply", s.h.name)
		}
		if err := s.h.observe(res[0]); err != nil {
			return nil, 0, err
		}
		n, err := parseUint(s.h.name, "n", res[1])
		if err != nil || n < uint64(v.n) || n > uint64(S) {
			return nil, 0, fmt.Errorf("redisbloom: filter %q: malformed reply", s.h.name)
		}
		s.chain.see(v.epoch, int(n))
		return res, int(n), nil
	}
}

// Count returns the number of keys added (from any process) that did not
// test present and set at least one clear bit, like
// bloom.ScalableBloomFilter.Count. It returns the errors Test returns.
func (s *ScalableFilter) Count(ctx context.Context) (uint64, error) {
	res, n, err := s.state(ctx, scalableCountScript)
	if err != nil {
		return 0, err
	}
	if len(res) != 3+n {
		return 0, fmt.Errorf("redisbloom: filter %q: malformed count reply", s.h.name)
	}
	var total uint64
	for _, c := range res[3:] {
		v, err := parseUint(s.h.name, "count", c)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// NumFilters returns the number of sub-filters, as of the handle's last call
// (another client may have grown the filter since).
func (s *ScalableFilter) NumFilters() int {
	if s.h.rdb == nil {
		return 0 // a zero ScalableFilter has no chain
	}
	return s.chain.load().n
}

// Delete removes the filter's keys from Redis. Afterwards every handle on it
// gets ErrNotFound. Deleting a filter that does not exist is not an error.
func (s *ScalableFilter) Delete(ctx context.Context) error {
	if s.h.rdb == nil {
		return errZeroScalable
	}
	return Destroy(ctx, s.h.rdb, s.h.name)
}

// scalablePositionsPerScript bounds the positions (keys times the hashes of
// every sub-filter sized) of one script call of a ScalableFilter.
var scalablePositionsPerScript = 7000

// enqueue adds the prepared script call c to pipe, by its SHA1 (EVALSHA, or
// EVALSHA_RO for a test), as call would send it without WAIT.
func (s *ScalableFilter) enqueue(ctx context.Context, pipe redis.Pipeliner, c *scalableCall) *redis.Cmd {
	args := s.callArgs(c.chain, c.S, c.C, c.sent)
	if c.add {
		return scalableAddScript.EvalSha(ctx, pipe, s.keys(c.S), args...)
	}
	return scalableTestScript.EvalShaRO(ctx, pipe, s.keys(c.S), args...)
}

// queuedReply returns the reply of the call c queued as cmd, after the
// pipeline ran. A call the server refused for want of the script
// (NOSCRIPT: it did not run), or that a lagging replica refused (ErrStale:
// a read), is made again directly, which loads the script and retries stale
// reads as run does.
func (s *ScalableFilter) queuedReply(ctx context.Context, c *scalableCall, cmd *redis.Cmd) (string, error) {
	if err := cmd.Err(); errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
		return s.send(ctx, c)
	}
	reply, err := s.callReply(ctx, cmd, nil)
	if errors.Is(err, ErrStale) {
		return s.send(ctx, c)
	}
	return reply, err
}
