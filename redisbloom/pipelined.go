package redisbloom

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pending is the answer of a call queued on a caller's redis.Pipeliner
// (AddPipelined, TestPipelined, TestAndAddPipelined). Its Result is
// available once the pipeline's Exec has returned. A Pending is used by
// one goroutine; the zero Pending is not usable.
type Pending struct {
	q *queued
}

// Result returns the answer of the queued call, with the meaning of the
// call it stands for (Test's, or TestAndAdd's; for AddPipelined only the
// error matters), and that call's errors: ErrNotFound, ErrCorrupt, ErrLost
// or ErrStale, never false, for a filter in that state, and the
// pipeline's error for the command. Call it after the pipeline's Exec
// (whose error it reports per command, so Exec's own error may be
// ignored); before, it returns an error. Result does the checks and the
// generation handling of the call made directly: a call that the server
// refused because it did not have the script cached yet (NOSCRIPT), or
// that a lagging replica refused (ErrStale), is made again directly, one
// more round trip, with ctx.
func (p *Pending) Result(ctx context.Context) (present bool, err error) {
	if p == nil || p.q == nil {
		return false, fmt.Errorf("%w: a zero Pending is not usable; AddPipelined, TestPipelined and TestAndAddPipelined return one", ErrZeroValue)
	}
	r, err := p.q.result(ctx)
	if err != nil {
		return false, err
	}
	return r[0] == '1', nil
}

// AddPipelined queues Add(key) on pipe, so that a caller with single keys
// can keep several calls in flight in one round trip: queue calls (of any
// filters, and any other commands) on a pipeline, run its Exec, then read
// each call's Pending.Result. The script call is atomic, as Add's is, but the
// pipeline as a whole is not (use no TxPipeline: a script that fails in a
// MULTI cannot be sent again). It is safe for concurrent use on a Filter,
// not on one pipe. On a handle made by WithWait it queues nothing and the
// Result is an error wrapping errors.ErrUnsupported: WAIT needs the
// connection of the write, which a shared pipeline does not promise. A
// Coalesced handle queues its call on pipe like any other.
func (f *Filter) AddPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	return f.pipelined(ctx, pipe, addScript, false, key)
}

// TestPipelined queues Test(key) on pipe (see AddPipelined). The Result
// reports whether key may be in the filter: false means definitely never
// added, true probably added. With a ClusterClient whose ReadOnly option
// is set, a pipeline of reads only is served by replicas, as Test is.
func (f *Filter) TestPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	return f.pipelined(ctx, pipe, f.testScript(), true, key)
}

// TestAndAddPipelined queues TestAndAdd(key) on pipe (see AddPipelined). The
// Result reports whether key was probably present before the call; among
// clients that TestAndAdd the same new key at once, pipelined or not,
// exactly one hears false.
func (f *Filter) TestAndAddPipelined(ctx context.Context, pipe redis.Pipeliner, key []byte) *Pending {
	return f.pipelined(ctx, pipe, addScript, false, key)
}

// pipelined queues the call of s over key on a caller's pipe. The first
// time a handle (or one derived from it) queues s, it loads s with SCRIPT
// LOAD (on every master of a Cluster) in a round trip of its own, so that
// the caller's Exec does not fail with NOSCRIPT on a server that has never
// run s; a server that drops its scripts later (SCRIPT FLUSH, a restart)
// still fails that call of the pipeline, and Result then makes it directly.
func (f *Filter) pipelined(ctx context.Context, pipe redis.Pipeliner, s *redis.Script, readOnly bool, key []byte) *Pending {
	if f.loaded != nil && (f.wait == nil || readOnly) {
		if _, ok := f.loaded.Load(s); !ok {
			if err := s.Load(ctx, f.rdb).Err(); err != nil {
				return &Pending{&queued{f: f, s: s, readOnly: readOnly, err: f.wrap(err)}}
			}
			f.loaded.Store(s, true)
		}
	}
	return &Pending{f.enqueue(ctx, pipe, s, readOnly, [][]byte{key})}
}

// queued is a call of a Filter's script over keys whose script calls were
// added to a pipeline, to be decoded after the pipeline ran.
type queued struct {
	f        *Filter
	s        *redis.Script
	readOnly bool
	keys     [][]byte
	per      int // keys per script call
	cmds     []*redis.Cmd
	err      error // the call could not be queued
}

// enqueue adds the script calls of s over keys to pipe: EVALSHA (or
// EVALSHA_RO), one per maxPositionsPerScript positions, as roundTrip sends
// them. It queues nothing for more keys than one round trip takes
// (maxPositionsPerRoundTrip positions); callers split larger batches.
func (f *Filter) enqueue(ctx context.Context, pipe redis.Pipeliner, s *redis.Script, readOnly bool, keys [][]byte) *queued {
	q := &queued{f: f, s: s, readOnly: readOnly, keys: keys}
	switch {
	case f.rdb == nil:
		q.err = errZero
		return q
	case f.wait != nil && !readOnly:
		q.err = fmt.Errorf("redisbloom: filter %q: a handle made by WithWait cannot queue writes on a pipeline: %w", f.name, errors.ErrUnsupported)
		return q
	case len(keys) == 0:
		return q
	}
	build, per := f.scriptArgs(s, readOnly, keys)
	argv := build()
	q.per = per
	q.cmds = make([]*redis.Cmd, len(argv))
	for i, args := range argv {
		if readOnly {
			q.cmds[i] = s.EvalShaRO(ctx, pipe, f.keys, args...)
		} else {
			q.cmds[i] = s.EvalSha(ctx, pipe, f.keys, args...)
		}
	}
	return q
}

// result decodes the replies of q's script calls after the pipeline ran:
// one byte per key. A call the server refused for want of the script
// (NOSCRIPT: it did not run) or that a lagging replica refused (ErrStale: a
// read) is made again directly, which loads the script and retries stale
// reads as Filter's methods do.
func (q *queued) result(ctx context.Context) ([]byte, error) {
	if q.err != nil {
		return nil, q.err
	}
	out := make([]byte, 0, len(q.keys))
	for i, cmd := range q.cmds {
		lo, hi := i*q.per, min((i+1)*q.per, len(q.keys))
		if errors.Is(cmd.Err(), redis.ErrNoScript) || redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			r, err := q.f.run(ctx, q.s, q.readOnly, q.keys[lo:hi])
			if err != nil {
				return nil, err
			}
			out = append(out, r...)
			continue
		}
		if cmd.Err() == nil && cmd.Val() == nil {
			return nil, fmt.Errorf("redisbloom: filter %q: result read before the pipeline's Exec", q.f.name)
		}
		r, err := q.f.reply(ctx, cmd, hi-lo)
		if errors.Is(err, ErrStale) {
			r, err = q.f.run(ctx, q.s, q.readOnly, q.keys[lo:hi])
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}
