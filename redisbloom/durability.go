package redisbloom

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned by a write on a handle made by WithWait when
// fewer replicas than asked acknowledged it within the timeout. The write was
// applied on the master (Test there reports the keys present), but a
// failover before the replicas receive it would lose it. Retrying is safe.
var ErrNotReplicated = errors.New("redisbloom: write not acknowledged by enough replicas")

// maxStaleWait bounds how long a read refused by a lagging replica is
// retried.
const maxStaleWait = time.Second

// generation is the highest write generation a handle has seen (see the
// scripts' documentation in scripts.go). WithWait's copies share it.
type generation struct{ v atomic.Uint64 }

func (g *generation) load() uint64 { return g.v.Load() }

func (g *generation) observe(v uint64) {
	for {
		cur := g.v.Load()
		if v <= cur || g.v.CompareAndSwap(cur, v) {
			return
		}
	}
}

// waitSpec is what WithWait asked for.
type waitSpec struct {
	replicas int
	timeout  time.Duration
}

// WithWait returns a handle on the same filter whose writes (Add, TestAndAdd,
// AddMany, TestAndAddMany, Import) return only after at least replicas
// replicas acknowledged them, with Redis's WAIT, or an error wrapping
// ErrNotReplicated after timeout. The handle shares f's generation (see
// ErrLost); reads are unchanged. Each write round trip then carries one WAIT,
// and a write that changes no bit still writes (the generation field, to the
// value it has), so that the WAIT also covers the writes of other clients
// that set those bits.
//
// A write that WithWait acknowledged survives the failure of the master (a
// failover to one of those replicas) and is visible to reads from those
// replicas afterwards, in every process. It does not survive a restart of
// every server from an older snapshot: that takes persistence (see the
// package documentation, "Durability").
//
// rdb must be a *redis.Client (which includes the Sentinel failover client)
// or a *redis.ClusterClient: WAIT has to go to the master that holds the
// filter, on the connection that wrote. WithWait returns an error wrapping
// bloom.ErrInvalidParameter for another client, replicas < 1 or a timeout
// under a millisecond (WAIT's unit; WAIT's 0, forever, is not offered).
func (f *Filter) WithWait(replicas int, timeout time.Duration) (*Filter, error) {
	if f.rdb == nil {
		return nil, errZero
	}
	if replicas < 1 || timeout < time.Millisecond {
		return nil, fmt.Errorf("%w: WithWait(%d, %v): replicas must be at least 1 and timeout at least 1ms (WAIT's unit)", bloom.ErrInvalidParameter, replicas, timeout)
	}
	switch f.rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return nil, fmt.Errorf("%w: WithWait needs a *redis.Client or *redis.ClusterClient, not %T", bloom.ErrInvalidParameter, f.rdb)
	}
	g := *f
	g.wait = &waitSpec{replicas: replicas, timeout: timeout}
	g.co = nil // a coalescer sends through the handle it was made for
	return &g, nil
}

// master returns the client of the master that holds f.
func (w *waitSpec) master(ctx context.Context, f *Filter) (redis.Cmdable, error) {
	switch c := f.rdb.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, f.keys[0])
		if err != nil {
			return nil, fmt.Errorf("redisbloom: filter %q: master for WAIT: %w", f.name, err)
		}
		return m, nil
	default:
		return f.rdb, nil
	}
}

// check returns an error unless the WAIT acked succeeded with enough replicas.
func (w *waitSpec) check(f *Filter, acked *redis.Cmd) error {
	n, err := acked.Int64()
	if err != nil {
		return fmt.Errorf("redisbloom: filter %q: WAIT: %w", f.name, err)
	}
	if n < int64(w.replicas) {
		return fmt.Errorf("%w: filter %q: %d of %d replicas acknowledged the write within %v",
			ErrNotReplicated, f.name, n, w.replicas, w.timeout)
	}
	return nil
}

// scriptErr turns the error of a script call into the package's error
// (wrap). A master behind the handle's generation (LOSTGEN) lost writes: the
// filter is marked lost there first, so that every handle, including those
// opened later that never saw the lost writes, gets ErrLost.
func (f *Filter) scriptErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if redis.HasErrorPrefix(err, errLostGenPrefix) {
		why := fmt.Sprintf("acknowledged writes lost (write generation %d was seen by a client, %s); Destroy the filter and rebuild it",
			f.seen.load(), time.Now().UTC().Format(time.RFC3339))
		if mErr := markLostScript.Run(ctx, f.rdb, f.keys, f.id, f.seen.load(), why).Err(); mErr != nil {
			return fmt.Errorf("%w: %q: %v (marking it lost failed: %v)", ErrLost, f.name, err, mErr)
		}
	}
	return f.wrap(err)
}

// retryStale runs op, and runs it again while it fails with ErrStale (a
// replica behind the generation this handle has seen), for up to
// maxStaleWait or until ctx ends. A retry cut short by ctx returns the stale
// error, joined with ctx's.
func (f *Filter) retryStale(ctx context.Context, op func() error) error {
	err := op()
	if !errors.Is(err, ErrStale) {
		return err
	}
	stale := err
	deadline := time.Now().Add(maxStaleWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if time.Now().Add(delay).After(deadline) {
			return stale
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w; retried until %w", stale, ctx.Err())
		case <-t.C:
		}
		switch err = op(); {
		case errors.Is(err, ErrStale):
			stale = err
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("%w; retried until %w", stale, ctx.Err())
		default:
			return err
		}
	}
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
