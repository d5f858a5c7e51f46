package bfdump

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrExists is returned by Restore and RestoreFrom without replace when
	// the target key exists; nothing was changed.
	ErrExists = errors.New("bfdump: the key exists")

	// ErrChanged is returned by ScanDump when the key kept changing while it
	// was read, and by ScanDumpTo when it changed once: a stream read then
	// would mix states of the filter.
	ErrChanged = errors.New("bfdump: the key changed while it was read")

	// ErrNoModule is wrapped by the errors of Restore, RestoreFrom,
	// ScanDump and ScanDumpTo when the server has no BF.* commands: it
	// needs Redis 8 or later, or the RedisBloom module loaded.
	ErrNoModule = errors.New("bfdump: the server has no BF.* commands (it needs Redis 8 or the RedisBloom module)")
)

// TempTTL is how long the temporary key of an interrupted Restore lives:
// each chunk sent sets its time to live to TempTTL again, so a load whose
// client died leaves a key that nobody queries (its name is random) and
// that Redis deletes after TempTTL.
const TempTTL = 10 * time.Minute

// scanDumpAttempts is how many times ScanDump reads a key that changes
// while it is read.
const scanDumpAttempts = 5

// HasCommands reports whether the server rdb talks to has RedisBloom's
// BF.LOADCHUNK and BF.SCANDUMP (Redis 8, or the RedisBloom module), by
// COMMAND INFO. The stock Redis 7 of Linux distributions has not.
func HasCommands(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	res, err := rdb.Do(ctx, "COMMAND", "INFO", "BF.LOADCHUNK", "BF.SCANDUMP").Slice()
	if err != nil {
		return false, fmt.Errorf("bfdump: COMMAND INFO: %w", err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("bfdump: COMMAND INFO returned %d entries for 2 commands", len(res))
	}
	return res[0] != nil && res[1] != nil, nil
}

// commandError returns the error of a BF.* command: ErrNoModule for the
// server's "unknown command", whose text echoes the first arguments (a
// binary chunk among them), and otherwise err, with bytes that are not
// printable text escaped as in a Go string literal.
func commandError(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "ERR unknown command") {
		return ErrNoModule
	}
	if msg := err.Error(); strings.IndexFunc(msg, notPrintable) >= 0 {
		return escapedError{err}
	}
	return err
}

func notPrintable(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }

// escapedError is an error whose text is escaped (strconv.Quote without
// the quotes); it wraps the error.
type escapedError struct{ err error }

func (e escapedError) Error() string {
	q := strconv.Quote(e.err.Error())
	return q[1 : len(q)-1]
}

func (e escapedError) Unwrap() error { return e.err }

// renameScript moves the loaded temporary key (KEYS[1]) to the target
// (KEYS[2]) and removes the time to live it had while loading, in one
// atomic step: readers of the target see the old value or the whole new
// filter, never a part. Without replace (ARGV[1] = "0") an existing target
// is left alone and the script returns 0.
var renameScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('ERR bfdump: the temporary key vanished during the load (expired or deleted)')
end
if ARGV[1] ~= '1' and redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PERSIST', KEYS[2])
return 1
`)

// Restore stores f under key in a RedisBloom server, so that BF.EXISTS
// answers there as f.Test does, and BF.ADD goes on from f's state (new
// sub-filters the server adds are sized by RedisBloom's rule, see Reserve).
//
// It loads f's stream (Chunks) with BF.LOADCHUNK into a temporary key of a
// random name in key's Redis Cluster hash slot, whose time to live it keeps
// at TempTTL, then renames that key to key and removes its time to live, in
// one script: no reader of key ever sees a part of f. If anything fails, it
// deletes the temporary key (an interrupted process leaves it to expire)
// and key is unchanged. With replace, key is replaced whatever it held;
// without, an existing key gives ErrExists.
//
// It sends one command per chunk of up to 16 MiB. A server without BF.*
// commands gives an error wrapping ErrNoModule (see HasCommands).
func Restore(ctx context.Context, rdb redis.UniversalClient, key string, f *Filter, replace bool) error {
	if len(f.links) == 0 {
		return fmt.Errorf("bfdump: restore %q: %w", key, errZero)
	}
	return restore(ctx, rdb, key, replace, func(send func(int64, []byte) error) error {
		for it, chunk := range f.Chunks() {
			if err := send(it, chunk); err != nil {
				return err
			}
		}
		return nil
	})
}

// RestoreFrom is Restore for a saved form read from r (WriteTo's output,
// ScanDumpTo's), streamed chunk by chunk: it holds one chunk in memory, not
// the filter. It checks the saved form as ReadFrom does, checksum included,
// before the rename: a corrupt or truncated input leaves key unchanged.
func RestoreFrom(ctx context.Context, rdb redis.UniversalClient, key string, r io.Reader, replace bool) error {
	return restore(ctx, rdb, key, replace, func(send func(int64, []byte) error) error {
		_, err := readSavedTo(r, send)
		return err
	})
}

func restore(ctx context.Context, rdb redis.UniversalClient, key string, replace bool, stream func(send func(int64, []byte) error) error) error {
	tmp, err := tempName(key)
	if err != nil {
		return fmt.Errorf("bfdump: restore %q: %w", key, err)
	}
	fail := func(err error) error {
		// The caller's context may be what failed: delete with a context of
		// its own.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if derr := rdb.Del(dctx, tmp).Err(); derr != nil {
			return fmt.Errorf("bfdump: restore %q: %w (deleting the temporary key %q failed: %v; it expires within %v)", key, err, tmp, derr, TempTTL)
		}
		return fmt.Errorf("bfdump: restore %q: %w", key, err)
	}
	send := func(it int64, chunk []byte) error {
		var load *redis.Cmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			load = p.Do(ctx, "BF.LOADCHUNK", tmp, it, chunk)
			p.PExpire(ctx, tmp, TempTTL)
			return nil
		})
		if load != nil && load.Err() != nil {
			// The command's own error (say "unknown command") rather than
			// the EXECABORT it caused.
			err = load.Err()
		}
		if err != nil {
			return fmt.Errorf("BF.LOADCHUNK (iterator %d): %w", it, commandError(err))
		}
		return nil
	}
	if err := stream(send); err != nil {
		return fail(err)
	}
	rep := "0"
	if replace {
		rep = "1"
	}
	moved, err := renameScript.Run(ctx, rdb, []string{tmp, key}, rep).Int()
	if err != nil {
		return fail(fmt.Errorf("rename: %w", err))
	}
	if moved == 0 {
		return fail(ErrExists)
	}
	return nil
}

// ScanDump reads the filter stored under key in a RedisBloom server with
// BF.SCANDUMP, so that Test answers as BF.EXISTS does there. It watches the
// key (WATCH) while it reads: a key changed meanwhile is read again, up to
// a few times, then ErrChanged. The stream is checked as Loader checks it.
// A missing key gives the server's error ("ERR not found"); a server
// without BF.* commands an error wrapping ErrNoModule.
func ScanDump(ctx context.Context, rdb redis.UniversalClient, key string) (*Filter, error) {
	for range scanDumpAttempts {
		var ld Loader
		err := scan(ctx, rdb, key, ld.LoadChunk)
		if errors.Is(err, ErrChanged) {
			continue
		}
		if err != nil {
			return nil, err
		}
		f, err := ld.Filter()
		if err != nil {
			return nil, fmt.Errorf("bfdump: BF.SCANDUMP %q: %w", key, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("bfdump: BF.SCANDUMP %q, %d times: %w", key, scanDumpAttempts, ErrChanged)
}

// ScanDumpTo writes the saved form (as WriteTo writes it) of the filter
// stored under key to w, a chunk at a time, holding one chunk in memory:
// a backup that RestoreFrom or ReadFrom loads. It returns the bytes
// written. It writes nothing until the server has returned the stream's
// header and the header is valid: a missing key, a key of another type, a
// server without BF.* commands or a failed connection leave w untouched.
// The stream is checked as Loader checks it; a key changed while it is read
// gives ErrChanged (what was written is then not a valid saved form: write
// to a temporary file and rename it on success).
func ScanDumpTo(ctx context.Context, rdb redis.UniversalClient, key string, w io.Writer) (int64, error) {
	crc := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(w, crc)}
	ld := Loader{noBits: true}
	var rec [recordSize]byte
	le := binary.LittleEndian
	err := scan(ctx, rdb, key, func(it int64, chunk []byte) error {
		if err := ld.LoadChunk(it, chunk); err != nil {
			return err
		}
		if cw.n == 0 {
			// The header came, and is valid: the stream is coming.
			if _, err := io.WriteString(cw, magic); err != nil {
				return err
			}
		}
		le.PutUint64(rec[:], uint64(it))
		le.PutUint32(rec[8:], uint32(len(chunk)))
		if _, err := cw.Write(rec[:]); err != nil {
			return err
		}
		_, err := cw.Write(chunk)
		return err
	})
	if err == nil {
		_, err = ld.Filter()
	}
	if err != nil {
		return cw.n, err
	}
	clear(rec[:])
	if _, err := cw.Write(rec[:]); err != nil {
		return cw.n, err
	}
	n, err := w.Write(le.AppendUint32(nil, crc.Sum32()))
	return cw.n + int64(n), err
}

// scan calls each with every pair of key's BF.SCANDUMP stream, in order,
// inside WATCH key, and returns ErrChanged if key changed meanwhile.
func scan(ctx context.Context, rdb redis.UniversalClient, key string, each func(int64, []byte) error) error {
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		it := int64(0)
		for {
			res, err := tx.Do(ctx, "BF.SCANDUMP", key, it).Slice()
			if err != nil {
				return fmt.Errorf("bfdump: BF.SCANDUMP %q %d: %w", key, it, commandError(err))
			}
			if len(res) != 2 {
				return fmt.Errorf("bfdump: BF.SCANDUMP %q %d: reply of %d elements, want 2", key, it, len(res))
			}
			next, ok := res[0].(int64)
			data, ok2 := res[1].(string)
			if !ok || !ok2 {
				return fmt.Errorf("bfdump: BF.SCANDUMP %q %d: reply of %T and %T, want an integer and a string", key, it, res[0], res[1])
			}
			if next == 0 {
				break
			}
			if err := each(next, []byte(data)); err != nil {
				return fmt.Errorf("bfdump: BF.SCANDUMP %q: %w", key, err)
			}
			it = next
		}
		// EXEC fails if key was written since WATCH.
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Exists(ctx, key)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return fmt.Errorf("bfdump: BF.SCANDUMP %q: %w", key, ErrChanged)
	}
	return err
}
