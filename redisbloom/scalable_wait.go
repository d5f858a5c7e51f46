package redisbloom

import (
	"context"
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
