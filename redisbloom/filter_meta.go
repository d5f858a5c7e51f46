package redisbloom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// metaFields returns the metadata fields that describe f, as field, value,
// ... for HSET. The format comes first: createScript reads it as ARGV[2].
// metaCheck covers exactly these.
func (f *Filter) metaFields() []any {
	return []any{
		"format", formatName,
		"id", f.id,
		"bits", f.params[0],
		"hashes", f.params[1],
		"seed", f.params[2],
		"capacity", strconv.FormatUint(f.capacity, 10),
		"error_rate", strconv.FormatFloat(f.errorRate, 'g', -1, 64),
	}
}

// metaCheck returns the metadata's check field for fields (metaFields' field,
// value, ...): the first 8 bytes of SHA-256 over the values, each followed by
// a zero byte, in hex. Open and New compare it, so that a filter whose bits,
// hashes or seed were changed before this process opened it is refused (the
// scripts compare those fields with the handle's on every call after that).
func metaCheck(fields []any) string {
	h := sha256.New()
	for i := 1; i < len(fields); i += 2 {
		h.Write([]byte(fields[i].(string)))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// metaMap turns a metadata reply (field, value, ...) into a map, refusing a
// format other than want (ErrFormat).
func metaMap(name string, reply []any, want string) (map[string]string, error) {
	meta := make(map[string]string, len(reply)/2)
	for i := 0; i+1 < len(reply); i += 2 {
		field, ok1 := reply[i].(string)
		value, ok2 := reply[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %q: malformed metadata", ErrFormat, name)
		}
		meta[field] = value
	}
	if got := meta["format"]; got != want {
		return nil, fmt.Errorf("%w: %q has format %q, want %q", ErrFormat, name, got, want)
	}
	return meta, nil
}

// parseUint returns a field of a script's reply: a decimal string, or an
// integer (Lua numbers arrive as integers).
func parseUint(name, field string, v any) (uint64, error) {
	if i, ok := v.(int64); ok && i >= 0 {
		return uint64(i), nil
	}
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: invalid %s %q", ErrCorrupt, name, field, s)
	}
	return n, nil
}

// parseMeta builds a handle from metaScript's or createScript's reply
// (field, value, ..., "strlen", the bitmap's length), validating every field
// and the bitmap's length.
func parseMeta(rdb redis.UniversalClient, name string, reply []any) (*Filter, error) {
	meta, err := metaMap(name, reply, formatName)
	if err != nil {
		return nil, err
	}
	if why, ok := meta["lost"]; ok {
		return nil, fmt.Errorf("%w: %q: %s", ErrLost, name, why)
	}
	bad := func(field string) error {
		return fmt.Errorf("%w: %q: invalid %s %q", ErrCorrupt, name, field, meta[field])
	}
	m, err := strconv.ParseUint(meta["bits"], 10, 64)
	if err != nil || m == 0 || m > MaxBits {
		return nil, bad("bits")
	}
	k, err := strconv.ParseUint(meta["hashes"], 10, 64)
	if err != nil || k == 0 || k > uint64(bloom.MaxHashes) {
		return nil, bad("hashes")
	}
	seed, err := strconv.ParseUint(meta["seed"], 10, 32)
	if err != nil {
		return nil, bad("seed")
	}
	capacity, err := strconv.ParseUint(meta["capacity"], 10, 64)
	if err != nil || capacity == 0 {
		return nil, bad("capacity")
	}
	errorRate, err := strconv.ParseFloat(meta["error_rate"], 64)
	if err != nil || !(errorRate > 0 && errorRate < 1) {
		return nil, bad("error_rate")
	}
	if _, err := parseUint(name, "count", meta["count"]); err != nil {
		return nil, err
	}
	// Releases before the write generation (issue 11) wrote neither gen nor
	// check: a missing gen is 0, as the scripts read it too, and a missing
	// check is written by upgrade.
	var gen uint64
	if g, ok := meta["gen"]; ok {
		if gen, err = parseUint(name, "gen", g); err != nil {
			return nil, err
		}
	}
	if meta["id"] == "" {
		return nil, bad("id")
	}
	f := newHandle(rdb, name, meta["id"], m, uint(k), uint32(seed), capacity, errorRate, gen)
	// The fields must be written exactly as New writes them: the scripts
	// compare the strings.
	check, ok := meta["check"]
	if !ok {
		f.legacyCheck = metaCheck(f.metaFields())
	} else if want := metaCheck(f.metaFields()); check != want {
		return nil, fmt.Errorf("%w: %q: metadata does not match its check field (%q, computed %q): bits, hashes, seed, capacity or error rate were changed",
			ErrCorrupt, name, check, want)
	}
	if meta["strlen"] != f.params[3] {
		return nil, fmt.Errorf("%w: %q: bitmap of %s bytes, want %s for %d bits", ErrCorrupt, name, meta["strlen"], f.params[3], m)
	}
	return f, nil
}

// upgrade writes the check field into metadata that a release before the
// write generation (issue 11) created without one, so that from then on New
// and Open verify it. upgradeScript writes it only if the fields are still
// those parseMeta read, so a concurrent change is not blessed; a replica
// (READONLY) is left as it is: its master's metadata is upgraded by the
// first New or Open that reaches the master.
func (f *Filter) upgrade(ctx context.Context) error {
	if f.legacyCheck == "" {
		return nil
	}
	fields := f.metaFields()
	args := make([]any, 0, len(fields)/2+1)
	for i := 1; i < len(fields); i += 2 {
		args = append(args, fields[i])
	}
	args = append(args, f.legacyCheck)
	err := upgradeScript.Run(ctx, f.rdb, f.keys, args...).Err()
	if err != nil && !redis.HasErrorPrefix(err, "READONLY") {
		return f.wrap(err)
	}
	f.legacyCheck = ""
	return nil
}

// sameParameters returns an error wrapping bloom.ErrIncompatible unless the
// existing filter f was created with want's seed, capacity and error rate.
// Its bits and hashes may differ from want's: releases before the exact
// small-filter sizing (bloom.Size since issue 11) sized some filters a few
// bits smaller, and such a filter stays as it was created (parseMeta has
// validated its size against its bitmap).
func (f *Filter) sameParameters(want *Filter) error {
	mismatch := func(what string, got, wanted any) error {
		return fmt.Errorf("%w: filter %q exists with %s %v, not %v", bloom.ErrIncompatible, f.name, what, got, wanted)
	}
	switch {
	case f.seed != want.seed:
		return mismatch("seed", f.seed, want.seed)
	case f.capacity != want.capacity:
		return mismatch("capacity", f.capacity, want.capacity)
	case math.Float64bits(f.errorRate) != math.Float64bits(want.errorRate):
		return mismatch("error rate", f.errorRate, want.errorRate)
	}
	return nil
}
