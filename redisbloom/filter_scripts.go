package redisbloom

import "github.com/redis/go-redis/v9"

// addScript sets the positions of n = ARGV[9] keys, k = ARGV[4] each, given
// in ARGV[8] (see below), adds the number of keys that set at least one new
// bit to the metadata's count field, increments gen if any bit was new, and
// returns "gen:answers", one byte per key: '1' if all of its bits were
// already set (probably present before), '0' if not. Each BITFIELD call
// covers whole keys and at most 1800 positions (7200 arguments). The
// arguments of every call are unpacked, and ARGV[8] found to hold exactly
// those of n keys, before the first bit is set.
//
// ARGV[8] holds BITFIELD's own arguments for every position, ready for
// struct.unpack: "SET", "u1", one byte giving the length of the decimal
// position, the position, "1" (format c3c2Bc0c1). Unpacking a call's
// arguments in C replaces building them in Lua from one argument per
// position, whose Lua strings cost more than the bit operation; it cut the
// server's CPU per key by a fifth to a third (BenchmarkServerCPU). Decimal
// strings, not numbers: Redis's conversion of Lua numbers costs more, and
// may choose an exponent.
var addScript = redis.NewScript(`#!lua
` + checkLua + `
local k = tonumber(ARGV[4])
local s = ARGV[8]
local n = tonumber(ARGV[9])
local per = math.max(1, math.floor(1800 / k))
local unpackf = struct.unpack
local calls = {}
local at = 1
local fmt, fmtc
for first = 1, n, per do
  local c = (math.min(n, first + per - 1) - first + 1) * k
  if c ~= fmtc then
    fmt, fmtc = string.rep('c3c2Bc0c1', c), c
  end
  local args = {unpackf(fmt, s, at)}
  at = args[#args]
  args[#args] = nil
  calls[#calls + 1] = args
end
if at ~= #s + 1 then
  return redis.error_reply('ERR redisbloom: ' .. (#s + 1 - at) .. ' bytes left over after the positions of ' .. n .. ' keys')
end
local out = {}
local fresh = 0
local key = 0
for _, args in ipairs(calls) do
  local old = redis.call('BITFIELD', KEYS[2], unpack(args))
  local o = 1
  for _ = 1, #old / k do
    key = key + 1
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
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
elseif ARGV[7] == 'w' then
  redis.call('HINCRBY', KEYS[1], 'gen', 0)
end
return gentext .. ':' .. table.concat(out)
`)

// testScript reads the positions of n = ARGV[10] keys with BITFIELD_RO and
// returns "gen:answers", one byte per key: '1' if all of its bits are set,
// '0' if not. It reads position by position: the first position of every
// key, then the second of the keys whose first was set, and so on, so that
// an absent key costs about 1/(1-fill) reads, two in a half-full filter,
// instead of k. It writes nothing, so replicas can run it. Each BITFIELD_RO
// call covers at most 2600 positions (7800 arguments).
//
// ARGV[9] holds BITFIELD_RO's arguments for the first position of every
// key, ready for struct.unpack as in addScript: "GET", "u1", one byte giving
// the length of the decimal position, the position (format c3c2Bc0). ARGV[8]
// holds the other k-1 positions of every key, 4 bytes each, big-endian, key
// after key. Lua turns an argument into a string of its own, which costs
// about as much as the read: sending only the positions that every key needs
// that way, and decoding the others only for the keys still in the running,
// cut the server's CPU per absent key by a quarter to a half against one
// argument per position (BenchmarkServerCPU, batches of 1,000 and 10,000).
// The decoded numbers go to BITFIELD_RO through tostring, which writes
// integers below 2^32 in plain decimal (Redis's own conversion of Lua
// numbers may choose an exponent). The reply is built from runs of '0'
// (string.rep) around the few keys found present, not from a table of n
// one-byte strings. The first positions for struct.unpack and that reply
// cut the server's CPU per absent key at batches of 1,000 to 0.84-0.94x
// the script that took them one argument each (BenchmarkServerCPU, 6 runs).
var testScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
local k = tonumber(ARGV[4])
local rest = ARGV[8]
local s = ARGV[9]
local n = tonumber(ARGV[10])
if #rest ~= 4 * (k - 1) * n then
  return redis.error_reply('ERR redisbloom: ' .. #rest .. ' bytes of packed positions for ' .. n .. ' keys')
end
local unpackf = struct.unpack
local alive = {}
local args
local at = 1
local fmt, fmtc
for first = 1, n, 2600 do
  local c = math.min(n, first + 2599) - first + 1
  if c ~= fmtc then
    fmt, fmtc = string.rep('c3c2Bc0', c), c
  end
  local a = {unpackf(fmt, s, at)}
  at = a[#a]
  a[#a] = nil
  args = args or a
  local got = redis.call('BITFIELD_RO', KEYS[2], unpack(a))
  for i = 1, c do
    if got[i] == 1 then alive[#alive + 1] = first + i - 1 end
  end
end
if at ~= #s + 1 then
  return redis.error_reply('ERR redisbloom: ' .. (#s + 1 - at) .. ' bytes left over after the first positions of ' .. n .. ' keys')
end
local byte = string.byte
for r = 2, k do
  if #alive == 0 then break end
  local still = {}
  for first = 1, #alive, 2600 do
    local last = math.min(#alive, first + 2599)
    local q = 0
    for x = first, last do
      q = q + 1
      local o = ((alive[x] - 1) * (k - 1) + r - 2) * 4
      local a, b, c, d = byte(rest, o + 1, o + 4)
      args[3 * q] = tostring(((a * 256 + b) * 256 + c) * 256 + d)
    end
    local got = redis.call('BITFIELD_RO', KEYS[2], unpack(args, 1, 3 * q))
    for x = first, last do
      if got[x - first + 1] == 1 then still[#still + 1] = alive[x] end
    end
  end
  alive = still
end
local rep = string.rep
local out = {gentext, ':'}
local prev = 0
for _, i in ipairs(alive) do
  if i > prev + 1 then out[#out + 1] = rep('0', i - prev - 1) end
  out[#out + 1] = '1'
  prev = i
end
if n > prev then out[#out + 1] = rep('0', n - prev) end
return table.concat(out)
`)

// createScript creates the filter (ARGV: "format", its value, then field,
// value, ... of the rest of the metadata, then ARGV[#ARGV] = the bitmap's size
// in bytes) unless it exists. It returns {1} when it created the filter and
// {0, field, value, ..., "strlen", the bitmap's length} with the stored
// metadata when the filter existed already. Metadata of this format without its bitmap is a lost filter: it is
// created again, with a new id (handles on the old one get NOTFOUND). A
// bitmap without metadata is an error: it may be another program's data, and
// only Destroy removes it.
var createScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then
  local meta = redis.call('HGETALL', KEYS[1])
  if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('HGET', KEYS[1], 'format') ~= ARGV[2] then
    table.insert(meta, 1, 0)
    table.insert(meta, 'strlen')
    table.insert(meta, tostring(redis.call('STRLEN', KEYS[2])))
    return meta
  end
  redis.call('DEL', KEYS[1])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EXISTS redisbloom: the bitmap key exists without its metadata (evicted, expired or deleted, or another program uses the name); remove it with Destroy or choose another name')
end
local fields = {}
for j = 1, #ARGV - 1 do fields[j] = ARGV[j] end
redis.call('HSET', KEYS[1], unpack(fields))
local size = tonumber(ARGV[#ARGV])
redis.call('SETBIT', KEYS[2], 8 * size - 1, 0)
return {1}
`)

// metaScript returns the metadata of an existing filter as field, value,
// ..., followed by "strlen" and the bitmap's length in bytes. It does not
// check the fields: the client does (parseMeta), and checkLua then checks
// every later call against them.
var metaScript = redis.NewScript(`#!lua flags=no-writes
local meta = redis.call('HGETALL', KEYS[1])
local bits = redis.call('EXISTS', KEYS[2])
if #meta == 0 and bits == 1 then
  return redis.error_reply('CORRUPT redisbloom: the bitmap key exists without its metadata (evicted, expired or deleted); Destroy removes it')
end
if #meta == 0 or bits == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter does not exist')
end
table.insert(meta, 'strlen')
table.insert(meta, tostring(redis.call('STRLEN', KEYS[2])))
return meta
`)

// upgradeScript writes the check field (ARGV[8]) into metadata written by a
// release before the write generation, which wrote neither check nor gen,
// provided its format, id, bits, hashes, seed, capacity and error rate are
// still ARGV[1..7] (metaFields' values, from which the client computed the
// check); it also writes gen 0 if gen is missing. Metadata that has a check
// already is left alone if it is ARGV[8], and is CORRUPT if not. It returns
// 1 if it wrote the check, 0 if not.
var upgradeScript = redis.NewScript(`#!lua
local meta = redis.call('HMGET', KEYS[1], 'format', 'id', 'bits', 'hashes', 'seed', 'capacity', 'error_rate', 'check')
if meta[2] ~= ARGV[2] then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
if meta[8] then
  if meta[8] ~= ARGV[8] then
    return redis.error_reply('CORRUPT redisbloom: metadata check ' .. meta[8] .. ', want ' .. ARGV[8])
  end
  return 0
end
for j = 1, 7 do
  if meta[j] ~= ARGV[j] then
    return redis.error_reply('CORRUPT redisbloom: metadata changed while its check was written')
  end
end
redis.call('HSET', KEYS[1], 'check', ARGV[8])
redis.call('HSETNX', KEYS[1], 'gen', '0')
return 1
`)

// countScript returns {gen, count} of the filter (checkLua's ARGV).
var countScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
return {gentext, redis.call('HGET', KEYS[1], 'count')}
`)

// exportScript returns {gen, count, bitmap} of the filter (checkLua's ARGV).
var exportScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
return {gentext, redis.call('HGET', KEYS[1], 'count'), redis.call('GET', KEYS[2])}
`)

// importScript replaces the bitmap of the filter (checkLua's ARGV) by ARGV[8]
// and its count by ARGV[9], increments gen and returns it.
var importScript = redis.NewScript(`#!lua
` + checkLua + `
if #ARGV[8] ~= tonumber(ARGV[6]) then
  return redis.error_reply('CORRUPT redisbloom: imported bitmap of ' .. #ARGV[8] .. ' bytes, want ' .. ARGV[6])
end
redis.call('SET', KEYS[2], ARGV[8])
redis.call('HSET', KEYS[1], 'count', ARGV[9])
return redis.call('HINCRBY', KEYS[1], 'gen', 1)
`)
