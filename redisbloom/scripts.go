package redisbloom

import "github.com/redis/go-redis/v9"

// The Lua scripts below are the only code that touches a filter's keys, so
// every operation is atomic on the server and checks, in the same round trip
// as its bit operations, that the filter it was opened on still exists.
//
// All of them take KEYS[1] = the metadata hash and KEYS[2] = the bitmap.
// Those that act on an opened filter take ARGV[1] = the filter's id, a random
// token written at creation: a filter that was deleted (or flushed, evicted,
// lost in a restart) and then created again under the same name has a new id,
// so an old handle cannot silently write into it with stale parameters.
//
// Bit positions travel as one binary argument of 4-byte little-endian
// unsigned integers (positions are below MaxBits = 2^32), k per key, and are
// applied with BITFIELD in slices of at most 1800 positions: SET takes 4
// arguments per position, and Redis's Lua unpacks at most about 8000 values
// into one call.
//
// The scripts start with a shebang (Redis 7.0 and later), which lets Redis
// refuse a writing script up front when it is out of memory instead of
// failing halfway, and lets the read-only ones run on replicas via
// EVALSHA_RO.

// errNotFoundPrefix starts the error the scripts return when the filter's
// keys are gone or belong to a newer filter of the same name.
const errNotFoundPrefix = "NOTFOUND"

// checkLua is the common prologue: the filter must still be the one this
// handle opened.
const checkLua = `
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
local k = tonumber(ARGV[2])
local pos = ARGV[3]
local n = #pos / (4 * k)
local per = math.max(1, math.floor(1800 / k))
local byte = string.byte
local out = {}
local i = 1
`

// addScript sets the positions of every key (ARGV[2] = k, ARGV[3] =
// positions), counts the keys that set at least one new bit into the
// metadata's count field, and returns one byte per key: '1' if all of its
// bits were already set (probably present before), '0' if not.
var addScript = redis.NewScript(`#!lua
` + checkLua + `
local fresh = 0
for first = 1, n, per do
  local last = math.min(n, first + per - 1)
  local args, a = {}, 0
  for _ = 1, (last - first + 1) * k do
    local b1, b2, b3, b4 = byte(pos, i, i + 3)
    i = i + 4
    args[a + 1] = 'SET'
    args[a + 2] = 'u1'
    args[a + 3] = b1 + 256 * b2 + 65536 * b3 + 16777216 * b4
    args[a + 4] = 1
    a = a + 4
  end
  local old = redis.call('BITFIELD', KEYS[2], unpack(args))
  local o = 1
  for key = first, last do
    local present = '1'
    for _ = 1, k do
      if old[o] == 0 then present = '0' end
      o = o + 1
    end
    if present == '0' then fresh = fresh + 1 end
    out[key] = present
  end
end
if fresh > 0 then
  redis.call('HINCRBY', KEYS[1], 'count', fresh)
end
return table.concat(out)
`)

// testScript reads the positions of every key (ARGV[2] = k, ARGV[3] =
// positions) with BITFIELD_RO and returns one byte per key: '1' if all of
// its bits are set, '0' if not. It writes nothing, so replicas can run it.
var testScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
for first = 1, n, per do
  local last = math.min(n, first + per - 1)
  local args, a = {}, 0
  for _ = 1, (last - first + 1) * k do
    local b1, b2, b3, b4 = byte(pos, i, i + 3)
    i = i + 4
    args[a + 1] = 'GET'
    args[a + 2] = 'u1'
    args[a + 3] = b1 + 256 * b2 + 65536 * b3 + 16777216 * b4
    a = a + 3
  end
  local got = redis.call('BITFIELD_RO', KEYS[2], unpack(args))
  local o = 1
  for key = first, last do
    local present = '1'
    for _ = 1, k do
      if got[o] == 0 then present = '0' end
      o = o + 1
    end
    out[key] = present
  end
end
return table.concat(out)
`)

// createScript creates the filter (ARGV: field, value, ... of the metadata,
// then ARGV[#ARGV] = the bitmap's size in bytes) unless its metadata exists.
// It returns {1} when it created the filter and {0, field, value, ...} with
// the stored metadata when the filter existed already. A bitmap without
// metadata is an error: it is not ours to overwrite.
var createScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then
  local meta = redis.call('HGETALL', KEYS[1])
  table.insert(meta, 1, 0)
  return meta
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EXISTS redisbloom: bitmap key exists without its metadata; delete it or choose another name')
end
local fields = {}
for j = 1, #ARGV - 1 do fields[j] = ARGV[j] end
redis.call('HSET', KEYS[1], unpack(fields))
local size = tonumber(ARGV[#ARGV])
redis.call('SETBIT', KEYS[2], 8 * size - 1, 0)
return {1}
`)

// metaScript returns the metadata of an existing filter as field, value,
// ... (ARGV[1] = the expected id, or "" to accept any).
var metaScript = redis.NewScript(`#!lua flags=no-writes
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter does not exist')
end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted and created again')
end
return meta
`)

// exportScript returns {count, bitmap} of the filter with id ARGV[1].
var exportScript = redis.NewScript(`#!lua flags=no-writes
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
return {redis.call('HGET', KEYS[1], 'count'), redis.call('GET', KEYS[2])}
`)

// importScript replaces the bitmap of the filter with id ARGV[1] by ARGV[2]
// and its count by ARGV[3].
var importScript = redis.NewScript(`#!lua
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'count', ARGV[3])
return 1
`)
