package redisbloom

import "github.com/redis/go-redis/v9"

// The Lua scripts below are the only code that touches a filter's keys, so
// every operation is atomic on the server and checks, in the same round trip
// as its bit operations, that the filter it was opened on is still there,
// intact, and not older than what the handle has seen.
//
// All of them take KEYS[1] = the metadata hash and KEYS[2] = the bitmap.
// Those that act on an opened filter start with checkLua and take
//
//	ARGV[1] the filter's id, a random token written at creation: a filter
//	        that was deleted (or flushed, evicted, lost in a restart) and then
//	        created again under the same name has a new id, so an old handle
//	        cannot silently write into it with stale parameters;
//	ARGV[2] the highest write generation the handle has seen (see below);
//	ARGV[3] bits, ARGV[4] hashes, ARGV[5] seed, as the handle knows them (the
//	        decimal strings stored in the metadata), and ARGV[6] the bitmap's
//	        length in bytes, ceil(bits/8): metadata or a bitmap changed behind
//	        the package's back gives CORRUPT instead of answers computed from
//	        other positions or from a shorter string (whose missing bytes
//	        BITFIELD_RO reads as zeros, "absent");
//	ARGV[7] "w" when the caller will WAIT for replicas after the call, else
//	        "": a writing call that changes no bit then still writes (HINCRBY
//	        gen 0), so that WAIT also covers the other clients' writes that
//	        set those bits before.
//
// The generation (metadata field gen) counts the writes that changed the
// filter: each script call that set a new bit, and each Import. Every reply
// carries it, and the handle keeps the highest it has seen. A server whose
// generation is lower than that lacks writes the handle saw applied: a
// replica that has not caught up (STALE: the client retries the read) or a
// master that lost them (LOSTGEN): a restart from an older RDB snapshot or
// AOF, a failover to a lagging replica. The client then marks the filter lost
// (field lost, markLostScript), and every script refuses a filter so marked
// (LOST) until it is destroyed.
//
// Bit positions are applied with BITFIELD (SET u1 <pos> 1 returns the old
// bit, which makes test-and-add atomic) in slices of whole keys: Redis's Lua
// unpacks at most about 8000 values into one call.
//
// The scripts start with a shebang (Redis 7.0 and later), which lets Redis
// refuse a writing script up front when it is out of memory instead of
// failing halfway, and lets the read-only ones run on replicas via
// EVALSHA_RO.

// Prefixes of the errors the scripts return.
const (
	errNotFoundPrefix = "NOTFOUND" // keys gone, or a newer filter of the same name
	errCorruptPrefix  = "CORRUPT"  // metadata or bitmap inconsistent
	errLostPrefix     = "LOST"     // marked lost
	errLostGenPrefix  = "LOSTGEN"  // a master behind the handle's generation
	errStalePrefix    = "STALE"    // a replica behind the handle's generation
)

// genCheckLua ends the prologues of the fixed and the scalable scripts
// (checkLua, scalableCheckLua): with meta[2] the stored write generation and
// ARGV[2] the highest one the client has seen, it sets gen and gentext, and
// refuses a server behind the client: STALE on a replica, LOSTGEN on a
// master.
const genCheckLua = `local gentext = meta[2] or '0'
local gen = tonumber(gentext)
if not gen then
  return redis.error_reply('CORRUPT redisbloom: invalid generation ' .. meta[2])
end
if gen < tonumber(ARGV[2]) then
  local role = string.match(redis.call('INFO', 'replication'), 'role:(%a+)')
  local what = ' redisbloom: generation ' .. gen .. ' on this server, ' .. ARGV[2] .. ' seen by the client'
  if role == 'slave' then
    return redis.error_reply('STALE' .. what)
  end
  return redis.error_reply('LOSTGEN' .. what)
end
`

// checkLua is the common prologue of the scripts that act on an opened
// filter (see above for ARGV[1..7]). It leaves the generation in gen, and as
// the decimal string the metadata holds in gentext (a reply that only reads
// returns that: Lua's number-to-string conversion is not free). The
// common path costs one HMGET and one STRLEN; INFO, EXISTS and the string
// building run only on the way to an error.
const checkLua = `
local meta = redis.call('HMGET', KEYS[1], 'id', 'gen', 'bits', 'hashes', 'seed', 'lost', 'format')
if meta[1] ~= ARGV[1] then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
if meta[6] then
  return redis.error_reply('LOST redisbloom: ' .. meta[6])
end
if meta[3] ~= ARGV[3] or meta[4] ~= ARGV[4] or meta[5] ~= ARGV[5] or meta[7] ~= 'redisbloom/1' then
  return redis.error_reply('CORRUPT redisbloom: metadata changed: format, bits, hashes, seed are ' ..
    tostring(meta[7]) .. ', ' .. tostring(meta[3]) .. ', ' .. tostring(meta[4]) .. ', ' .. tostring(meta[5]) ..
    '; the filter was created with redisbloom/1, ' .. ARGV[3] .. ', ' .. ARGV[4] .. ', ' .. ARGV[5])
end
local size = redis.call('STRLEN', KEYS[2])
if size ~= tonumber(ARGV[6]) then
  if size == 0 and redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('NOTFOUND redisbloom: bitmap deleted, flushed or evicted')
  end
  return redis.error_reply('CORRUPT redisbloom: bitmap of ' .. size .. ' bytes, want ' .. ARGV[6])
end
` + genCheckLua

// markLostScript marks the filter with id ARGV[1] lost (field lost = ARGV[3])
// if this server, a master, still has a generation lower than ARGV[2]. It
// returns 1 if the filter is (now) marked, 0 if not.
var markLostScript = redis.NewScript(`#!lua
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then
  return 0
end
if redis.call('HEXISTS', KEYS[1], 'lost') == 1 then
  return 1
end
local gen = tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
if gen and gen >= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'lost', ARGV[3])
return 1
`)
