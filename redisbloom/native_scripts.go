package redisbloom

import "github.com/redis/go-redis/v9"

// A NativeFilter's calls are MULTI/EXEC transactions, not one script: Lua
// turns every argument into a Lua string and back into a Redis string when
// it calls a command, which doubled the server's CPU per key of BF.MADD and
// BF.MEXISTS in batches of 1,000 (0.28 -> 0.61 us/key for BF.MADD, 0.20 ->
// 0.50 for BF.MEXISTS, measured side by side with the keys passed through
// EVAL), while a transaction around the raw command cost 1.1x. A transaction
// runs its commands one after the other with nothing in between, but it does
// not stop at a failed command, so each call is
//
//	MULTI
//	EVAL nativeGuardScript    checks the metadata and the RedisBloom key
//	BF.MADD key k1 k2 ...     (BF.MEXISTS, BF.CARD, BF.INFO for reads)
//	EVAL nativeAfterScript    (writes only) records count and generation
//	EXEC
//
// and the client reads the guard's reply first: an error there is the
// call's error, whatever the command after it answered. A write must not
// touch a key the guard refused (BF.MADD creates a missing key with
// RedisBloom's default parameters; a filter that is lost or replaced must
// not be written): the guard then moves whatever the key holds to a parking
// key (RENAME, which keeps the value, its type and its time to live) and
// puts a short string in its place, so that BF.MADD fails with WRONGTYPE
// and writes nothing; nativeAfterScript finds that string, deletes it and
// moves the parked value back. The client sees none of it: all of it
// happens inside the one transaction, which no other client can interleave,
// and which replicas and the AOF receive whole.
//
// The scripts go by EVAL, not EVALSHA: an EVALSHA that fails with NOSCRIPT
// (a server that restarted or flushed its scripts) would let BF.MADD run
// unguarded. EVAL costs the server a SHA1 of the script's text per call,
// about a microsecond, next to the 250-300 us of a batch of 1,000 keys.
//
// KEYS[1] is the metadata hash, KEYS[2] the RedisBloom key, KEYS[3] the
// parking key; ARGV[1] is the filter's id and ARGV[2] the highest write
// generation the handle has seen (see scripts.go: the same error prefixes
// and the same meaning).

// nativeFormat is the format field of a NativeFilter's metadata.
const nativeFormat = "redisbloom-native/1"

// nativeCheckLua sets err (an error reply's text, or nil) and gentext (the
// stored generation) for the filter of id ARGV[1] seen at generation
// ARGV[2]: the id must be the handle's, the filter not marked lost, the
// generation not behind the handle's, and the RedisBloom key must exist,
// be a RedisBloom filter and hold at least the count of keys the metadata
// recorded at the last write (fewer: it was replaced, by a new BF.RESERVE
// or BF.ADD after a deletion, a RESTORE, or another key renamed onto it).
const nativeCheckLua = `
local meta = redis.call('HMGET', KEYS[1], 'id', 'gen', 'lost', 'count')
local err
local gentext = meta[2]
if meta[1] ~= ARGV[1] then
  err = 'NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced'
elseif meta[3] then
  err = 'LOST redisbloom: ' .. meta[3]
elseif not tonumber(gentext) or not tonumber(meta[4]) then
  err = 'CORRUPT redisbloom: invalid generation or count ' .. tostring(gentext) .. ', ' .. tostring(meta[4])
elseif tonumber(gentext) < tonumber(ARGV[2]) then
  local role = string.match(redis.call('INFO', 'replication'), 'role:(%a+)')
  local what = ' redisbloom: generation ' .. gentext .. ' on this server, ' .. ARGV[2] .. ' seen by the client'
  if role == 'slave' then err = 'STALE' .. what else err = 'LOSTGEN' .. what end
else
  local items = redis.pcall('BF.INFO', KEYS[2], 'ITEMS')
  if items.err then
    if string.find(items.err, 'not found', 1, true) then
      err = 'NOTFOUND redisbloom: the RedisBloom key was deleted, flushed or evicted'
    else
      err = 'CORRUPT redisbloom: the RedisBloom key: ' .. items.err
    end
  elseif items[1] < tonumber(meta[4]) then
    err = 'CORRUPT redisbloom: the RedisBloom key holds ' .. items[1] .. ' keys, fewer than the ' .. meta[4] .. ' added: it was replaced'
  end
end
`

// nativeGuardScript opens a writing transaction (see above). It returns
// the generation, or the error, having parked the key.
var nativeGuardScript = redis.NewScript(`#!lua
` + nativeCheckLua + `
if err then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('RENAME', KEYS[2], KEYS[3])
  end
  redis.call('SET', KEYS[2], 'redisbloom: parked')
  return redis.error_reply(err)
end
return gentext
`)

// nativeReadGuardScript opens a reading transaction: the checks of
// nativeGuardScript, nothing written, so that replicas can run it.
var nativeReadGuardScript = redis.NewScript(`#!lua flags=no-writes
` + nativeCheckLua + `
if err then
  return redis.error_reply(err)
end
return gentext
`)

// nativeAfterScript closes a writing transaction. If the guard parked the
// key, it moves it back and returns 0. Otherwise it records the key's count
// of keys (RedisBloom's, BF.CARD) in the metadata and, if the count went up,
// increments the generation; with ARGV[1] = "w" (the caller WAITs for
// replicas) it writes the generation even when nothing changed, so that the
// WAIT covers the other clients' writes that added those keys. It returns
// the generation.
var nativeAfterScript = redis.NewScript(`#!lua
local card = redis.pcall('BF.CARD', KEYS[2])
if type(card) == 'table' then
  redis.call('DEL', KEYS[2])
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('RENAME', KEYS[3], KEYS[2])
  end
  return 0
end
local meta = redis.call('HMGET', KEYS[1], 'count', 'gen')
if tonumber(meta[1]) ~= card then
  redis.call('HSET', KEYS[1], 'count', card)
  return redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
if ARGV[1] == 'w' then
  return redis.call('HINCRBY', KEYS[1], 'gen', 0)
end
return tonumber(meta[2])
`)

// nativeCreateScript creates the filter unless its metadata exists: KEYS[1]
// the metadata, KEYS[2] the RedisBloom key; ARGV the metadata's field,
// value, ... (format first), then after the field name "reserve" BF.RESERVE's
// arguments after the key. It returns 1 when it created the filter, 0 when
// metadata exists (the client opens it then). Metadata of this format whose
// RedisBloom key is gone is a lost filter: it is created again, with a new
// id. A RedisBloom key without metadata is an error: it may be another
// program's filter, and only Destroy removes it.
var nativeCreateScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('HGET', KEYS[1], 'format') ~= ARGV[2] then
    return 0
  end
  redis.call('DEL', KEYS[1])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EXISTS redisbloom: the key ' .. KEYS[2] .. ' exists without metadata (another program uses the name, or the metadata was evicted or deleted); remove it with Destroy or choose another name')
end
local fields = {}
local j = 1
while ARGV[j] ~= 'reserve' do
  fields[j] = ARGV[j]
  j = j + 1
end
redis.call('BF.RESERVE', KEYS[2], unpack(ARGV, j + 1))
redis.call('HSET', KEYS[1], unpack(fields))
return 1
`)

// nativeMetaScript returns the metadata of an existing filter as field,
// value, ..., followed by what BF.INFO reports of the RedisBloom key:
// "bf.capacity", "bf.filters", "bf.items" and "bf.expansion" (the string
// "false" for a non-scaling filter). ARGV[1] is the format: metadata of
// another format is returned as it is. It checks nothing but the keys'
// existence: the client checks the fields (OpenNative).
var nativeMetaScript = redis.NewScript(`#!lua flags=no-writes
local meta = redis.call('HGETALL', KEYS[1])
local exists = redis.call('EXISTS', KEYS[2])
if #meta == 0 and exists == 1 then
  return redis.error_reply('CORRUPT redisbloom: the RedisBloom key exists without its metadata (evicted, expired or deleted); Destroy removes it')
end
if #meta == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter does not exist')
end
if redis.call('HGET', KEYS[1], 'format') ~= ARGV[1] then
  return meta -- not a native filter: the client says so
end
if exists == 0 then
  table.insert(meta, 'bf.missing')
  table.insert(meta, '1')
  return meta
end
local info = redis.pcall('BF.INFO', KEYS[2])
if info.err then
  return redis.error_reply('CORRUPT redisbloom: the RedisBloom key: ' .. info.err)
end
local names = {['Capacity'] = 'bf.capacity', ['Number of filters'] = 'bf.filters',
  ['Number of items inserted'] = 'bf.items', ['Expansion rate'] = 'bf.expansion'}
for i = 1, #info, 2 do
  local v = info[i + 1]
  -- the field names come as status replies: {ok = name}
  local name = names[type(info[i]) == 'table' and info[i].ok or info[i]]
  if name then
    table.insert(meta, name)
    table.insert(meta, tostring(v))
  end
end
return meta
`)

// nativeImportScript replaces the RedisBloom key (KEYS[2]) by the loaded
// temporary key (KEYS[4]) after the checks of nativeGuardScript, records
// its count, increments the generation and returns it. ARGV[3] is the
// count the client expects the loaded filter to report.
var nativeImportScript = redis.NewScript(`#!lua
` + nativeCheckLua + `
if err then
  return redis.error_reply(err)
end
local items = redis.pcall('BF.CARD', KEYS[4])
if redis.call('EXISTS', KEYS[4]) == 0 or type(items) == 'table' then
  return redis.error_reply('ERR redisbloom: the loaded key vanished (expired or deleted)')
end
if tostring(items) ~= ARGV[3] then
  return redis.error_reply('ERR redisbloom: the loaded key holds ' .. items .. ' keys, want ' .. ARGV[3])
end
redis.call('RENAME', KEYS[4], KEYS[2])
redis.call('PERSIST', KEYS[2])
redis.call('HSET', KEYS[1], 'count', items)
return redis.call('HINCRBY', KEYS[1], 'gen', 1)
`)

// nativeSmallAddScript adds the keys ARGV[4..] with BF.MADD inside the
// script, after nativeCheckLua's checks, records the count and generation
// as nativeAfterScript does (ARGV[3] = "w": write the generation even if
// nothing changed), and returns {generation, BF.MADD's reply}. Lua turns
// every key into a Lua string and back, about 0.3 us of server CPU per key,
// but a small batch saves the transaction's two scripts and its MULTI and
// EXEC: Add and TestAndAdd of one key cost the server about half as much
// this way (see maxNativeScriptKeys). An EVALSHA the server does not know
// (NOSCRIPT) runs nothing, so the client simply sends the script.
var nativeSmallAddScript = redis.NewScript(`#!lua
` + nativeCheckLua + `
if err then
  return redis.error_reply(err)
end
local r = redis.call('BF.MADD', KEYS[2], unpack(ARGV, 4))
local card = redis.call('BF.CARD', KEYS[2])
if tonumber(meta[4]) ~= card then
  redis.call('HSET', KEYS[1], 'count', card)
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
elseif ARGV[3] == 'w' then
  redis.call('HINCRBY', KEYS[1], 'gen', 0)
end
return {gentext, r}
`)

// nativeSmallTestScript tests the keys ARGV[3..] with BF.MEXISTS inside
// the script, after nativeCheckLua's checks, and returns {generation,
// BF.MEXISTS's reply}: nativeSmallAddScript's counterpart for reads, which
// replicas can run.
var nativeSmallTestScript = redis.NewScript(`#!lua flags=no-writes
` + nativeCheckLua + `
if err then
  return redis.error_reply(err)
end
return {gentext, redis.call('BF.MEXISTS', KEYS[2], unpack(ARGV, 3))}
`)
