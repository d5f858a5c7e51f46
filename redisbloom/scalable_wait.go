package redisbloom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithWait returns a handle on the same scalable filter whose writes (Add,
// TestAndAdd, AddMany, TestAndAddMany, Import) return only after at least
// replicas replicas acknowledged them, with Redis's WAIT, or an error
// wrapping ErrNotReplicated after timeout, as Filter.WithWait: the write was
// then applied on the master only. Each write script call is followed, on
// the same connection, by a write of the generation field to the value it
// has and by WAIT, in one round trip, so that the WAIT also covers the
// writes of other clients whose sub-filters or bits a call found set (a
// duplicate key, a sub-filter another client created). The handle shares
// s's generation (see ErrLost), its view of the sub-filters and its copies
// of full sub-filters; reads are unchanged.
//
// rdb must be a *redis.Client or a *redis.ClusterClient; WithWait returns an
// error wrapping bloom.ErrInvalidParameter for another client, replicas < 1
// or a timeout under a millisecond.
func (s *ScalableFilter) WithWait(replicas int, timeout time.Duration) (*ScalableFilter, error) {
	if s.h.rdb == nil {
		return nil, errZeroScalable
	}
	probe, err := s.h.WithWait(replicas, timeout) // validates as Filter does
	if err != nil {
		return nil, err
	}
	g := &ScalableFilter{
		h:    *probe,
		seed: s.seed, growth: s.growth, scale: s.scale, tightening: s.tightening,
		initialCapacity: s.initialCapacity, errorRate: s.errorRate, check: s.check,
		chain: s.chain, sizes: s.sizes, copies: s.copies,
	}
	g.room.Store(s.room.Load())
	return g, nil
}

// touchGenScript writes the generation field of the metadata KEYS[1] to the
// value it has, if the metadata exists: a write that replicates, so that a
// WAIT after it covers every write before it on the master.
var touchGenScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'gen', 0)
end
return 1
`)

// write runs the write script sc over keys with args (see waitWrite).
func (s *ScalableFilter) write(ctx context.Context, sc *redis.Script, keys []string, args []any) (cmd *redis.Cmd, notReplicated error) {
	return s.h.waitWrite(ctx, sc, keys, args)
}

// waitWrite runs the write script sc over keys with args, for a scalable
// or window filter whose handle is f (keys[0] its metadata). On a handle
// made by WithWait it sends it to the filter's master in one pipeline with
// touchGenScript and WAIT (again with the scripts' sources if the server
// did not have them cached), and notReplicated is the error of a WAIT that
// too few replicas acknowledged; the caller reports the script's own error
// first.
func (f *Filter) waitWrite(ctx context.Context, sc *redis.Script, keys []string, args []any) (cmd *redis.Cmd, notReplicated error) {
	w := f.wait
	if w == nil {
		return sc.Run(ctx, f.rdb, keys, args...), nil
	}
	via, err := w.master(ctx, f)
	if err != nil {
		bad := redis.NewCmd(ctx)
		bad.SetErr(err)
		return bad, nil
	}
	send := func(bySHA bool) (*redis.Cmd, *redis.Cmd, *redis.Cmd) {
		pipe := via.Pipeline()
		var c, touch *redis.Cmd
		if bySHA {
			c = sc.EvalSha(ctx, pipe, keys, args...)
			touch = touchGenScript.EvalSha(ctx, pipe, keys[:1])
		} else {
			c = sc.Eval(ctx, pipe, keys, args...)
			touch = touchGenScript.Eval(ctx, pipe, keys[:1])
		}
		acked := pipe.Do(ctx, "wait", w.replicas, w.timeout.Milliseconds())
		_, _ = pipe.Exec(ctx) // errors are checked per command
		return c, touch, acked
	}
	noScript := func(c *redis.Cmd) bool {
		return errors.Is(c.Err(), redis.ErrNoScript) || redis.HasErrorPrefix(c.Err(), "NOSCRIPT")
	}
	c, touch, acked := send(true)
	if noScript(c) || noScript(touch) {
		c, touch, acked = send(false)
	}
	if err := touch.Err(); err != nil && c.Err() == nil {
		return c, fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
	}
	return c, w.check(f, acked)
}
