package redisbloom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// nativeExportAttempts is how many times Export reads a filter that
// changes while it is read.
const nativeExportAttempts = 5

// Export returns a copy of the filter in memory, read with BF.SCANDUMP: its
// Test answers as the server's BF.EXISTS did at the time of the read. It
// reads the RedisBloom key and checks the metadata under WATCH, and reads
// again when either changed meanwhile, up to a few times, then returns an
// error wrapping bfdump.ErrChanged. It takes one round trip per chunk of
// the stream (RedisBloom sends up to 16 MiB a chunk) and returns the
// errors Test returns.
func (f *NativeFilter) Export(ctx context.Context) (*bfdump.Filter, error) {
	if f.rdb == nil {
		return nil, errZeroNative
	}
	for range nativeExportAttempts {
		var ld bfdump.Loader
		err := f.rdb.Watch(ctx, func(tx *redis.Tx) error {
			gen, err := nativeReadGuardScript.EvalRO(ctx, tx, f.keys, f.id, strconv.FormatUint(f.seen.load(), 10)).Result()
			if err != nil {
				return f.scriptErr(ctx, err)
			}
			if err := f.observe(gen); err != nil {
				return err
			}
			for it := int64(0); ; {
				res, err := tx.Do(ctx, "BF.SCANDUMP", f.keys[1], it).Slice()
				if err != nil {
					return f.wrap(fmt.Errorf("BF.SCANDUMP %d: %w", it, err))
				}
				if len(res) != 2 {
					return fmt.Errorf("redisbloom: filter %q: BF.SCANDUMP %d: reply of %d elements, want 2", f.name, it, len(res))
				}
				next, ok := res[0].(int64)
				data, ok2 := res[1].(string)
				if !ok || !ok2 {
					return fmt.Errorf("redisbloom: filter %q: BF.SCANDUMP %d: reply of %T and %T", f.name, it, res[0], res[1])
				}
				if next == 0 {
					break
				}
				if err := ld.LoadChunk(next, []byte(data)); err != nil {
					return fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
				}
				it = next
			}
			// EXEC fails if either key was written since WATCH.
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Exists(ctx, f.keys[0])
				return nil
			})
			return err
		}, f.keys[:2]...)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return nil, err
		}
		g, err := ld.Filter()
		if err != nil {
			return nil, fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
		}
		return g, nil
	}
	return nil, fmt.Errorf("redisbloom: filter %q: read %d times: %w", f.name, nativeExportAttempts, bfdump.ErrChanged)
}

// Import replaces the filter's contents by src, atomically: readers see
// the filter before or after, never a part. src must have the filter's
// parameters: its first sub-filter Capacity keys at the error rate
// RedisBloom gives it (ErrorRate, halved for a scaling filter), the same
// expansion or non-scaling; bfdump.Reserve with the filter's arguments
// builds such a filter, and so does bfdump.New (sized for the rate rather
// than by RedisBloom's rule), which a program can create offline and
// Import into a new filter. Otherwise Import returns an error wrapping
// bloom.ErrIncompatible.
//
// It loads src's stream (BF.LOADCHUNK) into a temporary key in the
// filter's hash slot, which expires after bfdump.TempTTL if the client
// dies, then checks the metadata as every call does and renames the
// temporary key onto the filter's key in one script. On error the filter is
// unchanged. It returns the errors Add returns.
func (f *NativeFilter) Import(ctx context.Context, src *bfdump.Filter) error {
	if f.rdb == nil {
		return errZeroNative
	}
	if err := f.compatible(src); err != nil {
		return err
	}
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return fmt.Errorf("redisbloom: filter %q: %w", f.name, err)
	}
	tmp := f.keys[1] + ":import:" + hex.EncodeToString(token[:])
	fail := func(err error) error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if derr := f.rdb.Del(dctx, tmp).Err(); derr != nil {
			return fmt.Errorf("%w (deleting the temporary key %q failed: %v; it expires within %v)", err, tmp, derr, bfdump.TempTTL)
		}
		return err
	}
	for it, chunk := range src.Chunks() {
		var load *redis.Cmd
		_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			load = p.Do(ctx, "BF.LOADCHUNK", tmp, it, chunk)
			p.PExpire(ctx, tmp, bfdump.TempTTL)
			return nil
		})
		if load != nil && load.Err() != nil {
			err = load.Err()
		}
		if err != nil {
			return fail(f.wrap(fmt.Errorf("BF.LOADCHUNK (iterator %d): %w", it, err)))
		}
	}
	keys := append(f.keys[:3:3], tmp)
	args := []any{f.id, strconv.FormatUint(f.seen.load(), 10), strconv.FormatUint(src.Count(), 10)}
	if f.wait == nil {
		gen, err := nativeImportScript.Run(ctx, f.rdb, keys, args...).Result()
		if err != nil {
			return fail(f.scriptErr(ctx, err))
		}
		return f.observe(gen)
	}
	// WithWait: the script and WAIT on one connection of the master.
	shim := &Filter{rdb: f.rdb, name: f.name, keys: f.keys[:2]}
	c, err := f.wait.master(ctx, shim)
	if err != nil {
		return fail(err)
	}
	pipe := c.Pipeline()
	run := nativeImportScript.Eval(ctx, pipe, keys, args...)
	acked := pipe.Do(ctx, "wait", f.wait.replicas, f.wait.timeout.Milliseconds())
	_, _ = pipe.Exec(ctx)
	if err := run.Err(); err != nil {
		return fail(f.scriptErr(ctx, err))
	}
	if err := f.observe(run.Val()); err != nil {
		return err
	}
	return f.wait.check(shim, acked)
}

// compatible returns an error wrapping bloom.ErrIncompatible unless src has
// f's parameters (see Import).
func (f *NativeFilter) compatible(src *bfdump.Filter) error {
	if src == nil {
		return fmt.Errorf("%w: redisbloom: filter %q: Import of a nil filter", bloom.ErrIncompatible, f.name)
	}
	subs := src.SubFilters()
	rate := f.errorRate
	if !f.NonScaling() {
		rate /= 2
	}
	capped := min(f.errorRate, 0.25) // BF.RESERVE caps the rate at 0.25
	if !f.NonScaling() {
		capped /= 2
	}
	if len(subs) == 0 {
		return fmt.Errorf("%w: redisbloom: filter %q: Import of a zero bfdump.Filter", bloom.ErrIncompatible, f.name)
	}
	switch {
	case src.NonScaling() != f.NonScaling():
		return fmt.Errorf("%w: redisbloom: filter %q: non-scaling %v, Import of a filter with %v", bloom.ErrIncompatible, f.name, f.NonScaling(), src.NonScaling())
	case !f.NonScaling() && src.Expansion() != f.expansion:
		return fmt.Errorf("%w: redisbloom: filter %q: expansion %d, Import of a filter with %d", bloom.ErrIncompatible, f.name, f.expansion, src.Expansion())
	case subs[0].Capacity != f.capacity:
		return fmt.Errorf("%w: redisbloom: filter %q: capacity %d, Import of a filter whose first sub-filter takes %d", bloom.ErrIncompatible, f.name, f.capacity, subs[0].Capacity)
	case subs[0].ErrorRate != rate && subs[0].ErrorRate != capped:
		return fmt.Errorf("%w: redisbloom: filter %q: first sub-filter at rate %v, Import of one at %v", bloom.ErrIncompatible, f.name, rate, subs[0].ErrorRate)
	}
	return nil
}
