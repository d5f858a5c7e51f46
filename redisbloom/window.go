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
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// windowFormatName is the metadata's format field of a WindowFilter
// (windowCheckLua and windowMetaScript spell it out too).
const windowFormatName = "redisbloom-window/1"

// WindowFilter is a handle on a window filter stored in Redis: the
// bloom.WindowFilter of the same parameters, kept by any number of
// processes at once. It is a ring of r generations, each a blocked Bloom
// filter of GenerationCapacity keys at ErrorRate/r; keys go into the
// newest; when it holds its share the oldest is emptied and becomes the
// newest (a rotation), and a time window also rotates once per period.
// Export returns a bloom.WindowFilter Equal to the in-memory one fed the
// same keys in the same order (for a time window, at the same times, its
// starts to the server's microsecond), and Import loads one.
//
// Its two promises are those of bloom.WindowFilter, on the conditions of
// the package documentation ("Durability"), kept by the same rules in the
// scripts: the floor, Test never reports absent a key that is both among
// the last Window keys added and, in a time window, added within its
// Duration (under Saturate and Grow, every key added within the Duration,
// unless their limits made them rotate early), after bursts too; and it
// reports an absent key present with a probability of at most ErrorRate
// (a time window under Saturate breaks this one up to its
// bloom.SaturationLimit, and after bursts the floor comes first: see
// bloom.WindowFilter). A key is forgotten after at most r*Window/(r-1)
// more keys, or r/(r-1) times the Duration, unless the floor holds it.
//
// TestAndAdd is first-seen: a key in the window is not added again, so a
// key that keeps coming back is reported new once its first sighting has
// left the window; TestAndRefresh is last-seen, and keeps a recurring key
// in the window. Early rotations (bloom.RotatedEarly, SaturatedPastLimit,
// GrowLimit) are counted in the metadata for every client (Events) and
// reported to the handle whose call caused them (OnEvent).
//
// A time window under bloom.Grow keeps both promises through a burst by
// growing, as bloom.WindowFilter does: when the newest generation's base
// (or its newest extension) holds its capacity before its period is over,
// the add script appends an extension to the generation, sized as
// bloom.WindowFilter's extension j (GenerationCapacity*2^(j-1) keys, the
// generation's rate split so that its sub-filters' rates sum below it),
// probed by every test while the generation is live and deleted with it.
// Past 16 extensions a generation, bloom.MaxBits bits in all, or an
// extension of more than MaxBits bits (one Redis string), the window
// rotates early instead.
//
// Rotation happens inside the script that adds: each call is one Lua
// script, atomic on the server, so two clients can never both rotate for
// one full generation, and a key added just before a rotation is in the
// generation that becomes the second newest, kept for r-1 more rotations.
// A time window keeps the server's time (TIME), the same for every
// client whatever its own clock says, and gives each generation's key a
// PEXPIRE, so that a window nobody uses frees its memory; only its
// metadata stays.
//
// The window named name is the keys {name}:meta (a hash: format
// "redisbloom-window/1", id, seed, window, error_rate, generations,
// gen_capacity, bits, hashes, period, period_us, policy, check, gen, epoch
// the number of Imports, head the slot of the newest generation, rotations,
// c0, c1, ... the keys counted in each slot, t0, t1, ... when each started,
// under Grow x0, x1, ... the key counts of each slot's extensions,
// comma-separated, saturation_limit if one was given, the event counters
// ev_rotated_early, ev_saturated_past_limit and ev_grow_limit, lost), {name}:w:0 .. {name}:w:r-1, the slots' bitmaps,
// and under Grow {name}:w:<slot>:x1 .. x16, their extensions' (bit p of a
// sub-filter is Redis bit p, as in a Filter; a key's positions are those of
// bloom.AppendBlockedLocations with the sub-filter's bits and hashes). They
// share the hash tag {name}, so a Cluster serves the whole window from one
// master.
//
// Every call checks the metadata against the parameters the handle opened
// (the check field), the write generation (ErrLost, ErrStale), that the
// rotations did not go back with no Import since, every count and start,
// every extension count list, and the size of every live generation's
// bitmap and extension (a missing extension the metadata counts, or one it
// does not list, is ErrCorrupt): each gives ErrCorrupt or ErrNotFound,
// never "absent".
//
// A WindowFilter is safe for concurrent use. A zero WindowFilter is not
// usable: its methods return an error.
type WindowFilter struct {
	h     Filter // name, rdb, keys (meta, then the r slots), id, seen, wait
	p     windowParams
	check string
	// args are ARGV[3], ARGV[6..10] and ARGV[12] of the scripts, as sent.
	args [7]string
	// xs are the sizes of the extension levels under Grow (nil for the
	// other policies), and levels the extension levels whose positions
	// calls send (ARGV[13]): raised when a script asks for more (NEEDEXT),
	// shared with the handles WithWait derives.
	xs     []windowExt
	levels *atomic.Int32
	// view is the import epoch and the rotations the handle has seen,
	// shared with the handles WithWait derives (a chain's n is the
	// rotations here).
	view *chainView
	// clock, in the tests only, gives the time in microseconds the scripts
	// take instead of the server's (export_test.go); nil in use.
	clock func() int64
	// onEvent is OnEvent's callback, nil if none.
	onEvent func(bloom.WindowEvent)
}

var errZeroWindow = fmt.Errorf("%w: a zero WindowFilter is not usable; make one with NewWindow or OpenWindow", ErrZeroValue)

// windowKeys returns the metadata key and the keys of slots 0..r-1.
func windowKeys(name string, r int) []string {
	keys := make([]string, 0, r+1)
	keys = append(keys, keysOf(name)[0])
	for s := range r {
		keys = append(keys, windowSlotPrefix(name)+strconv.Itoa(s))
	}
	return keys
}

// windowSlotPrefix is the prefix of a window's slot keys: slot s is the
// prefix followed by s.
func windowSlotPrefix(name string) string { return "{" + name + "}:w:" }

// newWindowHandle returns a handle on the window name with the parameters
// p and id, which has seen the epoch and rotations of a window just
// created.
func newWindowHandle(rdb redis.UniversalClient, name, id string, p windowParams) *WindowFilter {
	w := &WindowFilter{
		h: Filter{rdb: rdb, name: name, keys: windowKeys(name, p.gens), id: id, seen: new(generation)},
		p: p,
	}
	w.check = metaCheck(w.metaFields())
	onCount := "0"
	if p.onCount() {
		onCount = "1"
	}
	w.xs = p.exts
	w.levels = new(atomic.Int32)
	var sizes []byte
	if w.xs != nil {
		sizes = strconv.AppendUint(sizes, bloom.MaxBits, 10)
		for _, x := range w.xs {
			sizes = fmt.Appendf(sizes, " %d %d %d", x.cap, x.m/8, x.k)
		}
	}
	w.args = [7]string{
		w.check,
		strconv.FormatUint(p.genCap, 10),
		strconv.FormatUint(p.m/8, 10),
		strconv.FormatUint(uint64(p.k), 10),
		strconv.FormatInt(p.periodMicros(), 10),
		onCount + " " + strconv.FormatUint(p.window, 10) + " " + strconv.FormatUint(p.saturationCap(), 10),
		string(sizes),
	}
	w.view = newChainView(0, 0)
	return w
}

// NewWindow returns the window filter called name in rdb, creating it if it
// does not exist, with the generations of bloom.NewWindow(window,
// errorRate, opts...): its options (bloom.Generations, bloom.Every for a
// time window and bloom.OnOverflow for its policy, bloom.Seed) with the
// same defaults. bloom.Concurrent and bloom.Clock mean nothing here: every
// call is atomic on the server, and a time window reads the server's clock.
// Every process that shares the window can call it with the same arguments.
// If only the window's metadata is left while its newest generation should
// still be there (evicted or deleted), it creates the window again, empty.
//
// It returns an error wrapping bloom.ErrInvalidParameter for an invalid
// name or arguments (those bloom.NewWindow refuses, a generation of more
// than MaxBits bits, a period too long for the scripts' arithmetic);
// one wrapping bloom.ErrIncompatible when the window exists with other
// parameters; ErrFormat when name's keys hold something else; ErrCorrupt
// or ErrLost for a window in that state; or the error of the round trip.
func NewWindow(ctx context.Context, rdb redis.UniversalClient, name string, window uint64, errorRate float64, opts ...bloom.Option) (*WindowFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p, err := windowProbe(window, errorRate, opts)
	if err != nil {
		return nil, err
	}
	if err := checkWindowParams(p); err != nil {
		return nil, err
	}
	return createWindow(ctx, rdb, name, p, nil)
}

// createWindow creates the window name with the parameters p, or opens the
// existing one if it has them (NewWindow); clock is the tests' (see
// WindowFilter.clock), nil in use.
func createWindow(ctx context.Context, rdb redis.UniversalClient, name string, p windowParams, clock func() int64) (*WindowFilter, error) {
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("redisbloom: filter id: %w", err)
	}
	w := newWindowHandle(rdb, name, hex.EncodeToString(token[:]), p)
	w.clock = clock
	args := append(w.metaFields(), "check", w.check, "gen", "0", "epoch", "0", "head", "0", "rotations", "0",
		w.args[2], w.args[4], w.now())
	res, err := windowCreateScript.Run(ctx, rdb, w.h.keys, args...).Slice()
	if err != nil {
		return nil, w.h.wrap(err)
	}
	if len(res) == 1 {
		return w, nil
	}
	existing, err := parseWindowMeta(rdb, name, res[1:])
	if err != nil {
		return nil, err
	}
	if err := existing.sameParameters(w); err != nil {
		return nil, err
	}
	existing.clock = clock
	return existing, nil
}

// now returns the scripts' ARGV[11]: "" for the server's time, or the
// tests' clock.
func (w *WindowFilter) now() string {
	if w.clock == nil {
		return ""
	}
	return strconv.FormatInt(w.clock(), 10)
}

// OpenWindow returns the existing window filter called name in rdb, with
// the parameters it was created with. It returns ErrNotFound if there is
// no such window, ErrFormat if name's keys hold something else, ErrCorrupt
// or ErrLost for a window in that state, or the error of the round trip. It
// can be served by a replica.
func OpenWindow(ctx context.Context, rdb redis.UniversalClient, name string) (*WindowFilter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	h := &Filter{rdb: rdb, name: name}
	res, err := windowMetaScript.RunRO(ctx, rdb, keysOf(name)[:1], windowSlotPrefix(name), maxWindowGens).Slice()
	if err != nil {
		return nil, h.wrap(err)
	}
	return parseWindowMeta(rdb, name, res)
}

// OnEvent returns a handle on the same window that calls fn with each
// event (bloom.WindowEventKind: RotatedEarly, SaturatedPastLimit,
// GrowLimit) a call of that handle causes: synchronously, in the goroutine
// of the call (Add, TestAndAdd, TestAndRefresh or a batch form), after the
// script that caused it ran and before the call returns, once per event,
// in order, with the server's time and how far back the window reached
// after it. Events caused by other handles or clients are not reported to
// it; Events counts those of every client. fn must not call the window's
// methods, and a nil fn makes a handle that reports none. The handle
// shares w's write generation, view of the rotations and WithWait.
// (bloom.OnEvent does not apply to a Redis window: NewWindow refuses it.)
func (w *WindowFilter) OnEvent(fn func(bloom.WindowEvent)) *WindowFilter {
	g := *w
	g.onEvent = fn
	return &g
}

// Name returns the name the window was created with.
func (w *WindowFilter) Name() string { return w.h.name }

// Window returns the number of keys the window promises to keep.
func (w *WindowFilter) Window() uint64 { return w.p.window }

// ErrorRate returns the false-positive rate the window keeps at every
// moment (for a saturating time window, while no generation holds more
// than GenerationCapacity keys).
func (w *WindowFilter) ErrorRate() float64 { return w.p.errorRate }

// Generations returns r, the number of generations in the ring.
func (w *WindowFilter) Generations() int { return w.p.gens }

// GenerationCapacity returns the keys each generation holds before the
// next rotation: ceil(Window/(r-1)).
func (w *WindowFilter) GenerationCapacity() uint64 { return w.p.genCap }

// GenerationBits returns the size of each generation in bits (a multiple
// of bloom.BlockBits); Redis holds it in GenerationBits/8 bytes.
func (w *WindowFilter) GenerationBits() uint64 { return w.p.m }

// Hashes returns the number of bit positions each key sets in a
// generation.
func (w *WindowFilter) Hashes() uint { return w.p.k }

// Seed returns the murmur3 seed of every generation.
func (w *WindowFilter) Seed() uint32 { return w.p.seed }

// Duration returns how long a time window keeps keys, (r-1) times the
// period of a generation (at least bloom.Every's d), and 0 for a count
// window, as bloom.WindowFilter's Duration. The server keeps time in whole
// microseconds: a generation lasts the period rounded up to one.
func (w *WindowFilter) Duration() time.Duration { return w.p.period * time.Duration(w.p.gens-1) }

// Rotations returns the number of rotations the handle has seen (at the
// current import epoch), as of its last call.
func (w *WindowFilter) Rotations() uint64 {
	if w.view == nil {
		return 0 // a zero WindowFilter
	}
	return uint64(w.view.load().n)
}

// windowPositionsPerScript bounds the positions (keys times hashes) of one
// script call of a WindowFilter: each position is read in up to r
// generations.
var windowPositionsPerScript = 7000

// The modes of run: a test, an add of every key (Add, TestAndRefresh), a
// first-seen add (TestAndAdd). modeAdd and modeFirst are the add script's
// ARGV[14].
const (
	modeTest  = ""
	modeAdd   = "a"
	modeFirst = "f"
)

// run runs the add script in mode, or the test script, over keys, in
// script calls of at most windowPositionsPerScript positions, one after the
// other (each atomic), and returns the answers, one byte per key. It calls
// the OnEvent callback for the events the calls report.
func (w *WindowFilter) run(ctx context.Context, mode string, keys [][]byte) ([]byte, error) {
	if w.h.rdb == nil {
		return nil, errZeroWindow
	}
	out := make([]byte, 0, len(keys))
	per := max(1, windowPositionsPerScript/int(w.p.k))
	idle := 0
	for len(keys) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, w.h.wrap(err)
		}
		batch := keys[:min(per, len(keys))]
		v := w.view.load()
		reply, err := w.call(ctx, mode, v, int(w.levels.Load()), batch)
		if n, ok := needLevels(err); ok {
			// The window grew: send the positions of n levels from now on.
			if idle++; idle > maxChangedRetries || n > len(w.xs) {
				return nil, fmt.Errorf("redisbloom: filter %q: %w", w.h.name, err)
			}
			for old := w.levels.Load(); int(old) < n && !w.levels.CompareAndSwap(old, int32(n)); old = w.levels.Load() {
			}
			continue
		}
		if retry, err := w.changed(ctx, err); err != nil {
			return nil, err
		} else if retry {
			if idle++; idle > maxChangedRetries {
				return nil, w.errKeepsChanging()
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		idle = 0
		gen, rest, ok1 := strings.Cut(reply, ":")
		rotText, rest, ok2 := strings.Cut(rest, ":")
		levelsText, rest, ok3 := strings.Cut(rest, ":")
		evText, a, ok4 := strings.Cut(rest, ":")
		rot, err1 := strconv.ParseUint(rotText, 10, 64)
		levels, err2 := strconv.Atoi(levelsText)
		events, err3 := parseWindowEvents(evText)
		if !ok1 || !ok2 || !ok3 || !ok4 || err1 != nil || err2 != nil || err3 != nil || len(a) != len(batch) || rot < uint64(v.n) {
			return nil, fmt.Errorf("redisbloom: filter %q: malformed script reply", w.h.name)
		}
		if old := w.levels.Load(); levels == 0 && old > 0 {
			// No extension left in the window (the burst aged out): the
			// keys need their base positions only again. Lowered only
			// then, so that a burst does not pay a NEEDEXT per call.
			w.levels.CompareAndSwap(old, 0)
		}
		if err := w.h.observe(gen); err != nil {
			return nil, err
		}
		w.view.see(v.epoch, int(min(rot, math.MaxInt)))
		if w.onEvent != nil {
			for _, e := range events {
				w.onEvent(e)
			}
		}
		out = append(out, a...)
		keys = keys[len(batch):]
	}
	return out, nil
}

// parseWindowEvents parses the events of an add script's reply: "" or the
// time of the call, "/", and comma-separated each event's letter and how
// far back the window reached after it (microseconds).
func parseWindowEvents(text string) ([]bloom.WindowEvent, error) {
	if text == "" {
		return nil, nil
	}
	at, list, ok := strings.Cut(text, "/")
	t, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || list == "" {
		return nil, errors.New("malformed events")
	}
	var events []bloom.WindowEvent
	for _, e := range strings.Split(list, ",") {
		if e == "" {
			return nil, errors.New("malformed events")
		}
		var kind bloom.WindowEventKind
		switch e[0] {
		case 'R':
			kind = bloom.RotatedEarly
		case 'S':
			kind = bloom.SaturatedPastLimit
		case 'G':
			kind = bloom.GrowLimit
		default:
			return nil, errors.New("malformed events")
		}
		us, err := strconv.ParseInt(e[1:], 10, 64)
		if err != nil || us < 0 || us > math.MaxInt64/1000 {
			return nil, errors.New("malformed events")
		}
		events = append(events, bloom.WindowEvent{Kind: kind, Time: time.UnixMicro(t), Retained: time.Duration(us) * time.Microsecond})
	}
	return events, nil
}

func (w *WindowFilter) errKeepsChanging() error {
	return fmt.Errorf("redisbloom: filter %q: %d calls in a row found the window imported since the call before; giving up",
		w.h.name, maxChangedRetries)
}

// baseArgs returns ARGV[1..13] of the scripts for a call prepared with the
// view v whose keys carry the positions of levels extension levels, with
// room for extra more.
func (w *WindowFilter) baseArgs(v chain, levels, extra int) []any {
	args := make([]any, 0, 13+extra)
	return append(args, w.h.id, strconv.FormatUint(w.h.seen.load(), 10), w.args[0],
		strconv.FormatUint(v.epoch, 10), strconv.Itoa(v.n),
		w.args[1], w.args[2], w.args[3], w.args[4], w.args[5], w.now(), w.args[6], strconv.Itoa(levels))
}

// errNeedLevelsPrefix starts a script's reply when the keys must carry
// the positions of more extension levels (under Grow), followed by how many.
const errNeedLevelsPrefix = "NEEDEXT"

// needLevels reports whether err is a script's NEEDEXT reply and how many
// extension levels it asks for.
func needLevels(err error) (int, bool) {
	if err == nil || !redis.HasErrorPrefix(err, errNeedLevelsPrefix) {
		return 0, false
	}
	f := strings.Fields(err.Error())
	if len(f) < 2 {
		return 0, false
	}
	n, e := strconv.Atoi(f[1])
	return n, e == nil && n > 0
}

// call runs one script call over keys, prepared with the view v, each key
// with its positions in a base and in the first levels extension levels
// (a key's positions differ between sub-filters of different sizes).
func (w *WindowFilter) call(ctx context.Context, mode string, v chain, levels int, keys [][]byte) (string, error) {
	levels = min(levels, len(w.xs))
	stride := int(w.p.k)
	for _, x := range w.xs[:levels] {
		stride += int(x.k)
	}
	text := make([]byte, 0, 11*stride*len(keys))
	ends := make([]int, 0, stride*len(keys))
	var locs []uint64
	for _, key := range keys {
		locs = bloom.AppendBlockedLocations(locs[:0], key, w.p.m, w.p.k, w.p.seed)
		for _, x := range w.xs[:levels] {
			locs = bloom.AppendBlockedLocations(locs, key, x.m, x.k, w.p.seed)
		}
		for _, p := range locs {
			text = strconv.AppendUint(text, p, 10)
			ends = append(ends, len(text))
		}
	}
	all := unsafe.String(unsafe.SliceData(text), len(text)) // text is not modified again
	args := append(w.baseArgs(v, levels, 2+len(ends)), mode, strconv.Itoa(len(keys)))
	start := 0
	for _, end := range ends {
		args = append(args, all[start:end])
		start = end
	}
	if mode == modeTest {
		var reply string
		err := w.h.retryStale(ctx, func() error {
			var err error
			reply, err = windowTestScript.RunRO(ctx, w.h.rdb, w.h.keys, args...).Text()
			return w.scriptErr(ctx, err)
		})
		return reply, err
	}
	cmd, notReplicated := w.h.waitWrite(ctx, windowAddScript, w.h.keys, args)
	reply, err := cmd.Text()
	if err != nil {
		return "", w.scriptErr(ctx, err)
	}
	if notReplicated != nil {
		gen, _, _ := strings.Cut(reply, ":")
		if err := w.h.observe(gen); err != nil {
			return "", err
		}
		return "", notReplicated
	}
	return reply, nil
}

// scriptErr is the handle's scriptErr, with EPOCH left as it is for
// changed.
func (w *WindowFilter) scriptErr(ctx context.Context, err error) error {
	if err == nil || redis.HasErrorPrefix(err, errEpochPrefix) || redis.HasErrorPrefix(err, errNeedLevelsPrefix) {
		return err
	}
	return w.h.scriptErr(ctx, err)
}

// changed handles a script's EPOCH reply (an Import since the handle's
// view): it reads the metadata again and takes its epoch and rotations.
// retry reports whether err was that and the handle has caught up.
func (w *WindowFilter) changed(ctx context.Context, err error) (retry bool, _ error) {
	if err == nil || !redis.HasErrorPrefix(err, errEpochPrefix) {
		return false, nil
	}
	res, err := windowMetaScript.RunRO(ctx, w.h.rdb, w.h.keys[:1], windowSlotPrefix(w.h.name), maxWindowGens).Slice()
	if err != nil {
		return false, w.h.wrap(err)
	}
	meta, err := lostMetaMap(w.h.name, res, windowFormatName)
	if err != nil {
		return false, err
	}
	if meta["id"] != w.h.id {
		return false, fmt.Errorf("%w: %q (deleted and created again)", ErrNotFound, w.h.name)
	}
	if meta["check"] != w.check {
		return false, fmt.Errorf("%w: %q: metadata check %q, opened with %q", ErrCorrupt, w.h.name, meta["check"], w.check)
	}
	epoch, err1 := parseUint(w.h.name, "epoch", meta["epoch"])
	rot, err2 := parseUint(w.h.name, "rotations", meta["rotations"])
	if err := errors.Join(err1, err2); err != nil {
		return false, err
	}
	// The scripts check the rotations and the generation against these.
	w.view.see(epoch, int(min(rot, math.MaxInt)))
	return true, nil
}

// Add inserts key into the newest generation, whether or not the window
// holds it already, rotating first if the newest is full and the floor
// allows (or, in a time window, if periods have passed). It takes one
// round trip and returns ErrNotFound, ErrCorrupt or ErrLost if the window
// no longer exists or is in that state (and then writes nothing). After any
// other error the key may or may not have been added; retrying is safe.
func (w *WindowFilter) Add(ctx context.Context, key []byte) error {
	_, err := w.run(ctx, modeAdd, [][]byte{key})
	return err
}

// Test reports whether key may be in the window: false means key is not
// one of the keys the window keeps (the last Window keys added, or those
// of the live generations of a time window); true means it probably is. It
// takes one round trip and returns the errors Add returns, never false; it
// can be served by a read replica, as Filter.Test.
func (w *WindowFilter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := w.run(ctx, modeTest, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// TestAndAdd is the deduplicator's call, first-seen: it reports whether
// key is probably in the window and adds it only when it is not. A key
// already in the window is not added again, so a key that keeps coming
// back is reported new (false) again once its first sighting has left the
// window: with bloom.Every(7*24*time.Hour), a URL met every day is new
// again every week or so. It is atomic: when several clients TestAndAdd
// the same new key at once, exactly one of them gets false (none does if
// the key is a false positive). It takes one round trip and returns the
// errors Add returns. (Before issue 30 TestAndAdd also added a present
// key, which is now TestAndRefresh.)
func (w *WindowFilter) TestAndAdd(ctx context.Context, key []byte) (bool, error) {
	r, err := w.run(ctx, modeFirst, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// TestAndRefresh is the last-seen call, for alerts that keep firing: it
// reports whether key was probably in the window and adds it to the
// newest generation in any case (as Add), so a key that keeps coming back
// within the window stays suppressed. Each refresh of a key not in the
// newest generation takes room there: in a count window, k keys refreshed
// among every n added leave room for only the last Window*n/(n+k) distinct
// ones. It is atomic, takes one round trip and returns the errors Add
// returns.
func (w *WindowFilter) TestAndRefresh(ctx context.Context, key []byte) (bool, error) {
	r, err := w.run(ctx, modeAdd, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// AddMany inserts every key of keys, in order, as Add would one by one. It
// takes one script call, atomic, and one round trip per 7,000 positions
// (keys times Hashes). After an error other than ErrNotFound, ErrCorrupt or
// ErrLost some, all or none of the keys may have been added; retrying is
// safe.
func (w *WindowFilter) AddMany(ctx context.Context, keys [][]byte) error {
	_, err := w.run(ctx, modeAdd, keys)
	return err
}

// TestMany reports whether each key of keys may be in the window, with
// Test's meaning of true and false: present[i] is for keys[i]. It returns
// the errors Test returns, never all false.
func (w *WindowFilter) TestMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := w.run(ctx, modeTest, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// TestAndAddMany is TestAndAdd of every key of keys, in order: present[i]
// is what TestAndAdd(keys[i]) would have returned had the keys been
// test-and-added one by one (a key repeated in keys is new at most once).
// Each script call is atomic (see AddMany for how many there are). It
// returns the errors AddMany returns, with the same meaning.
func (w *WindowFilter) TestAndAddMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := w.run(ctx, modeFirst, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// TestAndRefreshMany is TestAndRefresh of every key of keys, in order, as
// TestAndAddMany is of TestAndAdd.
func (w *WindowFilter) TestAndRefreshMany(ctx context.Context, keys [][]byte) (present []bool, err error) {
	r, err := w.run(ctx, modeAdd, keys)
	if err != nil {
		return nil, err
	}
	return answers(r), nil
}

// Events returns the window's event counters: the events of every client
// since the window was created (an Import keeps them). It takes one round
// trip, can be served by a replica, and returns the errors Test returns.
func (w *WindowFilter) Events(ctx context.Context) (bloom.WindowEvents, error) {
	res, err := w.read(ctx, windowEventsScript, 4)
	if err != nil {
		return bloom.WindowEvents{}, err
	}
	var n [3]uint64
	for i := range n {
		if n[i], err = parseUint(w.h.name, "event count", res[1+i]); err != nil {
			return bloom.WindowEvents{}, err
		}
	}
	return bloom.WindowEvents{RotatedEarly: n[0], SaturatedPastLimit: n[1], GrowLimit: n[2]}, nil
}

// read runs the read-only script, which takes ARGV[1..13] and replies with
// want values, the write generation first, and returns its reply.
func (w *WindowFilter) read(ctx context.Context, script *redis.Script, want int) ([]any, error) {
	if w.h.rdb == nil {
		return nil, errZeroWindow
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, w.h.wrap(err)
		}
		if try > maxChangedRetries {
			return nil, w.errKeepsChanging()
		}
		v := w.view.load()
		var res []any
		err := w.h.retryStale(ctx, func() error {
			var err error
			res, err = script.RunRO(ctx, w.h.rdb, w.h.keys, w.baseArgs(v, 0, 0)...).Slice()
			return w.scriptErr(ctx, err)
		})
		if retry, err := w.changed(ctx, err); err != nil {
			return nil, err
		} else if retry {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(res) != want {
			return nil, fmt.Errorf("redisbloom: filter %q: malformed reply", w.h.name)
		}
		if err := w.h.observe(res[0]); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// windowState is what the count and export scripts return.
type windowState struct {
	rotations uint64
	head      int
	now       int64    // server time, microseconds (0 in a count window)
	adv       uint64   // the rotations the time calls for, made in head, counts and starts
	counts    []uint64 // by slot
	starts    []int64  // by slot, microseconds
	bitmaps   []any    // by slot, export only
	exts      []any    // under Grow, export only: by slot, n then n (count, bitmap)
}

// state runs the count or export script and parses its reply.
func (w *WindowFilter) state(ctx context.Context, script *redis.Script, bitmaps bool) (*windowState, error) {
	if w.h.rdb == nil {
		return nil, errZeroWindow
	}
	r := w.p.gens
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, w.h.wrap(err)
		}
		if try > maxChangedRetries {
			return nil, w.errKeepsChanging()
		}
		v := w.view.load()
		var res []any
		err := w.h.retryStale(ctx, func() error {
			var err error
			res, err = script.RunRO(ctx, w.h.rdb, w.h.keys, w.baseArgs(v, 0, 0)...).Slice()
			return w.scriptErr(ctx, err)
		})
		if retry, err := w.changed(ctx, err); err != nil {
			return nil, err
		} else if retry {
			continue
		}
		if err != nil {
			return nil, err
		}
		want := 5 + 2*r
		if bitmaps {
			want += r
		}
		if len(res) != want && !(bitmaps && w.xs != nil && len(res) >= want+r) {
			return nil, fmt.Errorf("redisbloom: filter %q: malformed reply", w.h.name)
		}
		if err := w.h.observe(res[0]); err != nil {
			return nil, err
		}
		st := &windowState{counts: make([]uint64, r), starts: make([]int64, r)}
		var errs [4]error
		st.rotations, errs[0] = parseUint(w.h.name, "rotations", res[1])
		head, err1 := parseUint(w.h.name, "head", res[2])
		now, err2 := parseUint(w.h.name, "time", res[3])
		st.adv, errs[3] = parseUint(w.h.name, "advance", res[4])
		errs[1], errs[2] = err1, err2
		if err := errors.Join(errs[:]...); err != nil {
			return nil, err
		}
		if head >= uint64(r) || st.adv > uint64(r) || (st.rotations+st.adv)%uint64(r) != head || st.rotations < uint64(v.n) {
			return nil, fmt.Errorf("redisbloom: filter %q: malformed reply", w.h.name)
		}
		st.head, st.now = int(head), int64(now)
		for s := range r {
			c, err1 := parseUint(w.h.name, "count", res[5+s])
			t, err2 := parseUint(w.h.name, "start", res[5+r+s])
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			st.counts[s], st.starts[s] = c, int64(t)
		}
		if bitmaps {
			st.bitmaps = res[5+2*r : 5+3*r]
			st.exts = res[5+3*r:]
		}
		w.view.see(v.epoch, int(min(st.rotations, math.MaxInt)))
		return st, nil
	}
}

// Count returns the keys counted in the live generations, as
// bloom.WindowFilter's Count: each add that set a bit in the newest
// generation counts one, so a key added again after it left the newest
// counts again; it is an upper bound on the distinct keys the window holds.
// It returns the errors Test returns.
func (w *WindowFilter) Count(ctx context.Context) (uint64, error) {
	res, err := w.read(ctx, windowCountScript, 3)
	if err != nil {
		return 0, err
	}
	return parseUint(w.h.name, "count", res[2])
}

// Delete removes the window's keys from Redis. Afterwards every handle on it
// gets ErrNotFound. Deleting a window that does not exist is not an error.
func (w *WindowFilter) Delete(ctx context.Context) error {
	if w.h.rdb == nil {
		return errZeroWindow
	}
	return Destroy(ctx, w.h.rdb, w.h.name)
}

// WithWait returns a handle on the same window whose writes (Add,
// TestAndAdd, AddMany, TestAndAddMany, Import) return only after at least
// replicas replicas acknowledged them, with Redis's WAIT, or an error
// wrapping ErrNotReplicated after timeout, as ScalableFilter.WithWait. The
// handle shares w's write generation and view of the rotations; reads are
// unchanged. It returns an error wrapping bloom.ErrInvalidParameter for a
// client other than *redis.Client or *redis.ClusterClient, replicas < 1
// or a timeout under a millisecond.
func (w *WindowFilter) WithWait(replicas int, timeout time.Duration) (*WindowFilter, error) {
	if w.h.rdb == nil {
		return nil, errZeroWindow
	}
	h, err := w.h.WithWait(replicas, timeout)
	if err != nil {
		return nil, err
	}
	g := *w
	g.h = *h
	return &g, nil
}
