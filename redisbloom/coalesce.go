package redisbloom

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Coalesced returns a handle on the same filter whose single-key calls (Add,
// Test, TestAndAdd) made from several goroutines at once share script calls:
// a call finds the filter idle and is sent at once, alone; the calls made
// while it is on its round trip wait and then go together in the next one,
// as one batch (TestMany, or TestAndAddMany for Add and TestAndAdd). So a
// lone caller pays no delay, and many callers pay one round trip and one
// script call per batch instead of one each.
//
// The answers are those of the single calls made one after the other in the
// order they joined the batch: TestAndAdd still reports a new key as new to
// exactly one caller. A call whose context ends while it waits returns the
// context's error, and its key may or may not have been added. An error of
// the batch is returned to every call in it. Batch calls (AddMany, TestMany,
// TestAndAddMany) and the other methods are not coalesced. The handle shares
// f's generation; WithWait on it returns a handle that is not coalesced.
func (f *Filter) Coalesced() *Filter {
	g := *f
	g.co = &coalescer{f: &g}
	return &g
}

// coalescer gathers a Filter's concurrent single-key calls: one queue for
// reads and one for writes, each with at most one batch in flight.
type coalescer struct {
	f     *Filter
	mu    sync.Mutex
	queue [2][]*pendingKey // [0] Test, [1] TestAndAdd (and Add)
	busy  [2]int           // batches in flight
	// batches and keys count the batches sent and the keys in them, for
	// the benchmarks (export_test.go).
	batches, keys atomic.Int64
}

// maxInFlight is how many batches of one queue may be on their round trip
// at once. Measured with BenchmarkSingleKeys16 (16 goroutines, 2 shared
// cores): 2 or 4 gave no more keys/s than 1 and smaller batches, so more
// server CPU per key.
const maxInFlight = 1

// pendingKey is a single-key call waiting for its batch.
type pendingKey struct {
	ctx     context.Context
	key     []byte
	done    chan struct{}
	present bool
	err     error
}

// maxCoalesced bounds the keys of one coalesced batch.
const maxCoalesced = 1000

// do queues key for a read (write false) or a test-and-add and waits for
// its answer.
func (c *coalescer) do(ctx context.Context, write bool, key []byte) (bool, error) {
	w := 0
	if write {
		w = 1
	}
	p := &pendingKey{ctx: ctx, key: key, done: make(chan struct{})}
	c.mu.Lock()
	c.queue[w] = append(c.queue[w], p)
	if c.busy[w] < maxInFlight {
		c.busy[w]++
		go c.flush(w)
	}
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.present, p.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// flush sends the queued calls of queue w, batch after batch, until it is
// empty.
func (c *coalescer) flush(w int) {
	for {
		c.mu.Lock()
		n := min(len(c.queue[w]), maxCoalesced)
		if n == 0 {
			c.busy[w]--
			c.mu.Unlock()
			return
		}
		batch := c.queue[w][:n:n]
		c.queue[w] = c.queue[w][n:]
		c.mu.Unlock()

		// Calls whose context already ended are left out: they have
		// returned, and their keys must not be added behind their back.
		live := batch[:0:0]
		keys := make([][]byte, 0, len(batch))
		for _, p := range batch {
			if p.ctx.Err() == nil {
				live = append(live, p)
				keys = append(keys, p.key)
			}
		}
		if len(live) == 0 {
			continue
		}
		c.batches.Add(1)
		c.keys.Add(int64(len(live)))
		// The batch outlives the cancellation of any one caller, whose
		// deadline then only ends its own wait.
		ctx := context.WithoutCancel(live[0].ctx)
		var r []byte
		var err error
		if w == 1 {
			r, err = c.f.run(ctx, c.f.addScript(), false, keys)
		} else {
			r, err = c.f.run(ctx, c.f.testScript(), true, keys)
		}
		for i, p := range live {
			if err != nil {
				p.err = err
			} else {
				p.present = r[i] == '1'
			}
			close(p.done)
		}
		// Let the callers just answered run before taking the next batch:
		// most of them call again at once, and would otherwise miss it.
		// With 16 goroutines (BenchmarkSingleKeys16) batches alternated
		// between a few keys and the rest, 7.8 keys on average; yielding
		// here made them 14 keys, and the server's CPU per key fell by a
		// quarter. (Waiting for more callers would delay a lone one.)
		if c.f.tune == nil || !c.f.tune.noYield {
			runtime.Gosched()
		}
	}
}
