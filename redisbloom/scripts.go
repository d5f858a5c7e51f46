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
// Bit positions are applied with BITFIELD (SET u1 <pos> 1 returns the old
// bit, which makes test-and-add atomic) in slices of whole keys: Redis's Lua
// unpacks at most about 8000 values into one call.
//
// The scripts start with a shebang (Redis 7.0 and later), which lets Redis
// refuse a writing script up front when it is out of memory instead of
// failing halfway, and lets the read-only ones run on replicas via
// EVALSHA_RO.

// errNotFoundPrefix starts the error the scripts return when the filter's
// keys are gone or belong to a newer filter of the same name.
const errNotFoundPrefix = "NOTFOUND"

// checkLua is the common prologue of addScript and testScript: the filter
// must still be the one this handle opened. ARGV[2] is k, ARGV[3..] are the
// positions, k per key, as decimal strings: passing them through to BITFIELD
// as they came is cheaper than any decoding in Lua, whose number-to-string
// conversion costs more than the bit operation itself.
const checkLua = `
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] or redis.call('EXISTS', KEYS[2]) == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
local k = tonumber(ARGV[2])
local n = (#ARGV - 2) / k
local out = {}
local j = 3
`

// addScript sets the positions of every key, adds the number of keys that
// set at least one new bit to the metadata's count field, and returns one
// byte per key: '1' if all of its bits were already set (probably present
// before), '0' if not. Each BITFIELD call covers whole keys and at most 1800
// positions (7200 arguments).
var addScript = redis.NewScript(`#!lua
` + checkLua + `
local per = math.min(n, math.max(1, math.floor(1800 / k)))
local args = {}
for q = 1, per * k do
  args[4 * q - 3] = 'SET'
  args[4 * q - 2] = 'u1'
  args[4 * q] = '1'
end
local fresh = 0
for first = 1, n, per do
  local last = math.min(n, first + per - 1)
  local c = (last - first + 1) * k
  for q = 1, c do
    args[4 * q - 1] = ARGV[j]
    j = j + 1
  end
  local old = redis.call('BITFIELD', KEYS[2], unpack(args, 1, 4 * c))
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

// testScript reads the positions of every key with BITFIELD_RO and returns
// one byte per key: '1' if all of its bits are set, '0' if not. It writes
// nothing, so replicas can run it. Each BITFIELD_RO call covers whole keys
// and at most 2600 positions (7800 arguments).
var testScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
local per = math.min(n, math.max(1, math.floor(2600 / k)))
local args = {}
for q = 1, per * k do
  args[3 * q - 2] = 'GET'
  args[3 * q - 1] = 'u1'
end
for first = 1, n, per do
  local last = math.min(n, first + per - 1)
  local c = (last - first + 1) * k
  for q = 1, c do
    args[3 * q] = ARGV[j]
    j = j + 1
  end
  local got = redis.call('BITFIELD_RO', KEYS[2], unpack(args, 1, 3 * c))
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

// createScript creates the filter (ARGV: "format", its value, then field,
// value, ... of the rest of the metadata, then ARGV[#ARGV] = the bitmap's size
// in bytes) unless it exists. It returns {1} when it created the filter and
// {0, field, value, ...} with the stored metadata when the filter existed
// already. Metadata of this format without its bitmap is a lost filter: it is
// created again, with a new id. A bitmap without metadata is an error: it is
// not ours to overwrite.
var createScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then
  local meta = redis.call('HGETALL', KEYS[1])
  if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('HGET', KEYS[1], 'format') ~= ARGV[2] then
    table.insert(meta, 1, 0)
    return meta
  end
  redis.call('DEL', KEYS[1])
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
