package redisbloom

import "github.com/redis/go-redis/v9"

// The scripts of a ScalableFilter. KEYS[1] is the metadata hash, KEYS[2..]
// the bitmaps of sub-filters 0, 1, ... (as many as the caller names; the
// scripts touch only those, so that a Cluster sees every key it uses
// declared). Those that act on an opened filter start with scalableCheckLua
// and take
//
//	ARGV[1] the filter's id (see checkLua);
//	ARGV[2] the highest write generation the handle has seen;
//	ARGV[3] the metadata's check field as the handle computed it from the
//	        parameters it opened (format, id, seed, growth, scale,
//	        tightening, initial capacity, error rate): the parameters that
//	        determine every sub-filter's size;
//	ARGV[4] S, the number of sub-filters the call has sizes (and, for the
//	        key operations, positions) for: KEYS[2..S+1];
//	ARGV[5] C, the number of sub-filters (0, 1, ... C-1) the client tested
//	        the call's keys in itself, on copies of full sub-filters
//	        (CacheFullSubFilters); their positions are not sent;
//	ARGV[6] the import epoch the handle has seen (metadata field epoch,
//	        which Import increments, since it is the only write that
//	        replaces sub-filters or takes their number down): a filter at
//	        a later epoch gives EPOCH, and the client reads the metadata
//	        again and drops its copies; one at an earlier epoch is CORRUPT;
//	ARGV[7] the number of sub-filters the handle has seen at that epoch: a
//	        filter with fewer is CORRUPT (the keys of the missing ones would
//	        be reported absent), as one behind the generation is LOSTGEN;
//	ARGV[8..7+3S] capacity, bitmap bytes and hashes of each of those
//	        sub-filters, which the client derives from the parameters as
//	        bloom.NewScalable does; bytes 0 means the sub-filter cannot be
//	        built (the filter saturates instead).
//
// A filter that has more sub-filters than S gives GROWN n: the handle
// learns n (after checking that its parameters can build n) and calls
// again. The metadata holds n (the number of sub-filters, at most 65,536,
// the most the bloom package's format holds), c0, c1, ... (the count of
// each: keys that set a clear bit), saturated ("1" once growth stopped),
// epoch, gen and lost as for a Filter. The prologue checks what every call
// relies on: the number n, the count of the newest sub-filter (and that no
// count exists past it, which an edit of n alone leaves), and the existence
// and size of every sub-filter's bitmap; it leaves the newest's count in
// newestCount.
const scalableCheckLua = `
local meta = redis.call('HMGET', KEYS[1], 'id', 'gen', 'check', 'lost', 'format', 'n', 'saturated', 'epoch')
if meta[1] ~= ARGV[1] then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
if meta[4] then
  return redis.error_reply('LOST redisbloom: ' .. meta[4])
end
if meta[5] ~= 'redisbloom-scalable/1' or meta[3] ~= ARGV[3] then
  return redis.error_reply('CORRUPT redisbloom: metadata changed: format ' .. tostring(meta[5]) .. ', check ' ..
    tostring(meta[3]) .. ' where the filter was opened with ' .. ARGV[3])
end
` + genCheckLua + `
local n = tonumber(meta[6])
if not n or n < 1 or n > 65536 or n % 1 ~= 0 then
  return redis.error_reply('CORRUPT redisbloom: invalid number of sub-filters ' .. tostring(meta[6]))
end
local epoch = tonumber(meta[8] or '0')
if not epoch or epoch < 0 or epoch % 1 ~= 0 then
  return redis.error_reply('CORRUPT redisbloom: invalid import epoch ' .. tostring(meta[8]))
end
local seenEpoch = tonumber(ARGV[6])
if epoch < seenEpoch then
  return redis.error_reply('CORRUPT redisbloom: import epoch ' .. epoch .. ', the client saw ' .. ARGV[6])
end
if epoch > seenEpoch then
  return redis.error_reply('EPOCH redisbloom: imported since: epoch ' .. epoch .. ', the client saw ' .. ARGV[6])
end
if n < tonumber(ARGV[7]) then
  return redis.error_reply('CORRUPT redisbloom: ' .. n .. ' sub-filters, where the client saw ' .. ARGV[7] ..
    ' with no Import since: the number of sub-filters went down')
end
local counts = redis.call('HMGET', KEYS[1], 'c' .. (n - 1), 'c' .. n)
local newestCount = tonumber(counts[1])
if not newestCount or newestCount < 0 or newestCount % 1 ~= 0 then
  return redis.error_reply('CORRUPT redisbloom: invalid count of sub-filter ' .. (n - 1) .. ': ' .. tostring(counts[1]))
end
if counts[2] then
  return redis.error_reply('CORRUPT redisbloom: the metadata has ' .. n .. ' sub-filters and a count for sub-filter ' .. n)
end
local S = tonumber(ARGV[4])
if n > S then
  return redis.error_reply('GROWN ' .. n)
end
local C = tonumber(ARGV[5])
local cap, bytes, hashes = {}, {}, {}
local a = 8
for j = 0, S - 1 do
  cap[j], bytes[j], hashes[j] = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
end
for j = 0, n - 1 do
  if bytes[j] == 0 then
    return redis.error_reply('CORRUPT redisbloom: the filter has ' .. n .. ' sub-filters; its parameters cannot build sub-filter ' .. j)
  end
  local size = redis.call('STRLEN', KEYS[j + 2])
  if size ~= bytes[j] then
    if size == 0 and redis.call('EXISTS', KEYS[j + 2]) == 0 then
      return redis.error_reply('NOTFOUND redisbloom: bitmap of sub-filter ' .. j .. ' deleted, flushed or evicted')
    end
    return redis.error_reply('CORRUPT redisbloom: bitmap of sub-filter ' .. j .. ' has ' .. size .. ' bytes, want ' .. tostring(bytes[j]))
  end
end
`

// scalableTestLua defines test(j, from, present): it reads the positions of
// sub-filter j of keys from..N that are not yet known present and marks
// those whose bits are all set. Keys' positions follow the sizes in ARGV:
// for sub-filter j, N*hashes[j] positions from base[j], key by key. A key's
// positions are read one round at a time: the first position of every key,
// then the second of those whose first was set, and so on, so an absent key
// costs about two reads in a half-full sub-filter, not k. Each BITFIELD_RO
// call carries at most 2600 positions.
const scalableTestLua = `
local N = tonumber(ARGV[a])
a = a + 1
local base = {}
for j = C, S - 1 do
  base[j] = a
  a = a + N * hashes[j]
end
local function read(j, list, lo, hi)
  -- list: keys; reads positions lo..hi (0-based) of each; returns the keys
  -- whose positions read were all set.
  local kk = hashes[j]
  local width = hi - lo + 1
  if width <= 0 then return list end
  local keep = {}
  local per = math.max(1, math.floor(2600 / width))
  for first = 1, #list, per do
    local last = math.min(#list, first + per - 1)
    local args = {}
    local q = 0
    for x = first, last do
      local p = base[j] + (list[x] - 1) * kk
      for t = lo, hi do
        args[q + 1] = 'GET'
        args[q + 2] = 'u1'
        args[q + 3] = ARGV[p + t]
        q = q + 3
      end
    end
    local got = redis.call('BITFIELD_RO', KEYS[j + 2], unpack(args, 1, q))
    local o = 1
    for x = first, last do
      local all = true
      for _ = 1, width do
        if got[o] == 0 then all = false end
        o = o + 1
      end
      if all then keep[#keep + 1] = list[x] end
    end
  end
  return keep
end
local function test(j, from, present)
  local list = {}
  for i = from, N do
    if not present[i] then list[#list + 1] = i end
  end
  for t = 0, hashes[j] - 1 do
    if #list == 0 then return end
    list = read(j, list, t, t)
  end
  for _, i in ipairs(list) do present[i] = true end
end
`

// scalableAddScript tests and adds keys: ARGV[8+3S] is N, the number of
// keys, then positions as scalableTestLua reads them. Each key is tested in
// every sub-filter and, if absent, added to the newest, which grows first
// if it is full, exactly as bloom.ScalableBloomFilter.TestAndAdd does: the
// older sub-filters are read once for the whole call (they do not change),
// keys are then set in the newest in runs of at most its remaining capacity
// (BITFIELD SET returns the old bits, so a run needs no test first and its
// new keys cannot overfill it), and once it is full the rest of the keys are
// read in it and the first absent one grows the filter. Growth past
// sub-filter S-1 stops the call: it returns the answers so far and the
// client sends the rest with the sizes of the new sub-filter (the client
// leaves the next sub-filter out, S = n, when the newest had room for the
// whole batch at its last call). It returns "gen:n:room:answers", room the
// keys the newest sub-filter can still take (-1 once saturated), answers one
// byte per key handled ('1' probably present before, '0' added).
var scalableAddScript = redis.NewScript(`#!lua
` + scalableCheckLua + scalableTestLua + `
local present = {}
local cur = n - 1
for j = C, cur - 1 do test(j, 1, present) end
local saturated = meta[7] == '1'
local count = newestCount
local out = {}
local changed = false
local fresh = 0
local i = 1
while i <= N do
  if present[i] then
    out[i] = '1'
    i = i + 1
  elseif saturated or count < cap[cur] then
    local room = N
    if not saturated then room = cap[cur] - count end
    local kk = hashes[cur]
    local lim = math.min(room, math.max(1, math.floor(1800 / kk)))
    local args, idx = {}, {}
    local q = 0
    while i <= N and #idx < lim do
      if present[i] then
        out[i] = '1'
      else
        idx[#idx + 1] = i
        local p = base[cur] + (i - 1) * kk
        for t = 0, kk - 1 do
          args[q + 1] = 'SET'
          args[q + 2] = 'u1'
          args[q + 3] = ARGV[p + t]
          args[q + 4] = '1'
          q = q + 4
        end
      end
      i = i + 1
    end
    local old = redis.call('BITFIELD', KEYS[cur + 2], unpack(args, 1, q))
    local o = 1
    for _, x in ipairs(idx) do
      local was = '1'
      for _ = 1, kk do
        if old[o] == 0 then was = '0' end
        o = o + 1
      end
      if was == '0' then
        fresh = fresh + 1
        count = count + 1
      end
      out[x] = was
    end
  else
    test(cur, i, present)
    while i <= N and present[i] do
      out[i] = '1'
      i = i + 1
    end
    if i > N then break end
    local nxt = cur + 1
    if nxt >= S then break end
    if bytes[nxt] == 0 then
      saturated = true
      redis.call('HSET', KEYS[1], 'saturated', '1')
    else
      if redis.call('EXISTS', KEYS[nxt + 2]) == 1 then
        return redis.error_reply('CORRUPT redisbloom: bitmap of sub-filter ' .. nxt .. ' exists before the filter grew into it')
      end
      redis.call('HSET', KEYS[1], 'c' .. cur, count)
      redis.call('SETBIT', KEYS[nxt + 2], 8 * bytes[nxt] - 1, 0)
      cur = nxt
      n = n + 1
      count = 0
      redis.call('HSET', KEYS[1], 'n', n, 'c' .. cur, 0)
    end
    changed = true
  end
end
if fresh > 0 then
  redis.call('HSET', KEYS[1], 'c' .. cur, count)
  changed = true
end
if changed then
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
local room = -1
if not saturated then room = cap[cur] - count end
return gentext .. ':' .. n .. ':' .. room .. ':' .. table.concat(out)
`)

// scalableTestScript reports for each key whether it is present in any
// sub-filter (same ARGV as scalableAddScript, with S at least n) and
// returns "gen:n:answers". It writes nothing.
var scalableTestScript = redis.NewScript(`#!lua flags=no-writes
` + scalableCheckLua + scalableTestLua + `
local present = {}
for j = n - 1, C, -1 do test(j, 1, present) end
local out = {}
for i = 1, N do
  if present[i] then out[i] = '1' else out[i] = '0' end
end
return gentext .. ':' .. n .. ':' .. table.concat(out)
`)

// scalableCountsLua appends the counts c0, c1, ... c(n-1) to reply, and
// returns an error reply if one is missing.
const scalableCountsLua = `
for j = 0, n - 1 do
  local c = redis.call('HGET', KEYS[1], 'c' .. j)
  if not c then
    return redis.error_reply('CORRUPT redisbloom: the count of sub-filter ' .. j .. ' is missing')
  end
  reply[#reply + 1] = c
end
`

// scalableCountScript returns {gen, n, saturated, c0, c1, ...}.
var scalableCountScript = redis.NewScript(`#!lua flags=no-writes
` + scalableCheckLua + `
local reply = {gentext, n, meta[7] or '0'}
` + scalableCountsLua + `
return reply
`)

// scalableExportScript returns {gen, n, saturated, c0, ..., bitmap0, ...}.
var scalableExportScript = redis.NewScript(`#!lua flags=no-writes
` + scalableCheckLua + `
local reply = {gentext, n, meta[7] or '0'}
` + scalableCountsLua + `
for j = 0, n - 1 do
  reply[#reply + 1] = redis.call('GET', KEYS[j + 2])
end
return reply
`)

// scalableImportScript replaces the sub-filters: ARGV[8+3S] is the new n,
// then "1" or "0" for saturated, then the n counts and the n bitmaps (whose
// lengths must be the sizes' bytes). Sub-filters past the new n, up to S,
// are deleted. It increments epoch and gen and returns {gen, epoch}.
var scalableImportScript = redis.NewScript(`#!lua
` + scalableCheckLua + `
local m = tonumber(ARGV[a])
if m < 1 or m > S then
  return redis.error_reply('CORRUPT redisbloom: imported ' .. m .. ' sub-filters, sizes for ' .. S)
end
for j = 0, m - 1 do
  local bitmap = ARGV[a + 2 + m + j]
  if #bitmap ~= bytes[j] then
    return redis.error_reply('CORRUPT redisbloom: imported bitmap ' .. j .. ' of ' .. #bitmap .. ' bytes, want ' .. bytes[j])
  end
end
for j = 0, m - 1 do
  redis.call('SET', KEYS[j + 2], ARGV[a + 2 + m + j])
  redis.call('HSET', KEYS[1], 'c' .. j, ARGV[a + 2 + j])
end
for j = m, S - 1 do
  redis.call('DEL', KEYS[j + 2])
  redis.call('HDEL', KEYS[1], 'c' .. j)
end
redis.call('HSET', KEYS[1], 'n', m, 'saturated', ARGV[a + 1])
local e = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
return {redis.call('HINCRBY', KEYS[1], 'gen', 1), e}
`)

// scalablePastLua defines past(prefix), for the scripts that read the
// metadata KEYS[1] of a scalable filter whose sub-filters' keys start with
// prefix before the handle knows n: it returns an error reply if a count
// field or a bitmap of the sub-filter after the n the metadata holds exists
// (the metadata says fewer sub-filters than there are: an edit, and the
// keys of the others would be reported absent), else nil. An invalid n is
// left to the client, which refuses it. The bitmap's key is not declared:
// it is of the filter's own hash tag, so in its slot.
const scalablePastLua = `
local function past(prefix)
  local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
  if not n or n < 1 or n > 65536 or n % 1 ~= 0 then return nil end
  if redis.call('HEXISTS', KEYS[1], 'c' .. n) == 1 or redis.call('EXISTS', prefix .. n) == 1 then
    return redis.error_reply('CORRUPT redisbloom: the metadata has ' .. n .. ' sub-filters, and sub-filter ' .. n .. ' exists')
  end
  return nil
end
`

// scalableMaxLua sets last to the metadata's n, the number of sub-filters,
// bounded by 65,536 whatever it holds, for the scripts that delete what is
// left of a filter.
const scalableMaxLua = `
local last = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if not last or last ~= last or last > 65536 then last = 65536 end
`

// scalableCreateScript creates the filter (ARGV: field, value, ... of the
// metadata, format first, then ARGV[#ARGV-1] = the prefix of the
// sub-filters' keys and ARGV[#ARGV] = the first bitmap's size in bytes)
// unless it exists, with KEYS[2] its first bitmap. It returns {1} when it
// created the filter and {0, field, value, ...} with the stored metadata
// when one existed (checked by past if of this format). Metadata of this
// format without its first bitmap is a lost filter, created again with a
// new id after deleting what is left of its sub-filters (keys of the
// filter's own hash tag, so in its slot, though not declared); a first
// bitmap without metadata is an error.
var scalableCreateScript = redis.NewScript(`#!lua
` + scalablePastLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local format = redis.call('HGET', KEYS[1], 'format')
  if redis.call('EXISTS', KEYS[2]) == 1 or format ~= ARGV[2] then
    if format == ARGV[2] then
      local bad = past(ARGV[#ARGV - 1])
      if bad then return bad end
    end
    local meta = redis.call('HGETALL', KEYS[1])
    table.insert(meta, 1, 0)
    return meta
  end
` + scalableMaxLua + `
  for j = 1, last - 1 do redis.call('DEL', ARGV[#ARGV - 1] .. j) end
  redis.call('DEL', KEYS[1])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.error_reply('EXISTS redisbloom: the first bitmap key exists without its metadata (evicted, expired or deleted, or another program uses the name); remove it with Destroy or choose another name')
end
local fields = {}
for j = 1, #ARGV - 2 do fields[j] = ARGV[j] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('SETBIT', KEYS[2], 8 * tonumber(ARGV[#ARGV]) - 1, 0)
return {1}
`)

// scalableMetaScript returns the metadata of an existing filter as field,
// value, ... (the client checks it, past the sub-filter after the last;
// the sizes of its bitmaps are checked by every later call), and that of
// another format as it is (the client refuses it with ErrFormat). KEYS[2]
// is the first sub-filter's bitmap, whose key ends in "0".
var scalableMetaScript = redis.NewScript(`#!lua flags=no-writes
` + scalablePastLua + `
local meta = redis.call('HGETALL', KEYS[1])
if #meta > 0 and redis.call('HGET', KEYS[1], 'format') ~= 'redisbloom-scalable/1' then
  return meta
end
local bits = redis.call('EXISTS', KEYS[2])
if #meta == 0 and bits == 1 then
  return redis.error_reply('CORRUPT redisbloom: the first bitmap key exists without its metadata (evicted, expired or deleted); Destroy removes it')
end
if #meta == 0 or bits == 0 then
  return redis.error_reply('NOTFOUND redisbloom: filter does not exist')
end
local bad = past(string.sub(KEYS[2], 1, -2))
if bad then return bad end
return meta
`)

// destroyScript deletes KEYS (the keys of a fixed filter, the metadata and
// the first sub-filter) and, for a scalable filter, its sub-filters
// ARGV[1]..'0', '1', ... as far as the metadata's n says (at most 65,536)
// or the keys exist, whichever is further, and the slots of a window,
// ARGV[2]..'0' .. ARGV[2]..(ARGV[3]-1). It returns the number of keys
// deleted.
var destroyScript = redis.NewScript(`#!lua
` + scalableMaxLua + `
local deleted = 0
local j = 0
while true do
  local key = ARGV[1] .. j
  local gone = redis.call('DEL', key)
  if gone == 0 and j >= last then break end
  deleted = deleted + gone
  j = j + 1
end
if ARGV[2] then
  for s = 0, tonumber(ARGV[3]) - 1 do
    deleted = deleted + redis.call('DEL', ARGV[2] .. s)
    -- a window's extensions under Grow (at most 16 a generation)
    for j = 1, 16 do deleted = deleted + redis.call('DEL', ARGV[2] .. s .. ':x' .. j) end
  end
end
return deleted + redis.call('DEL', unpack(KEYS))
`)

// scalableFetchScript returns {gen, epoch, bitmap C, ..., bitmap to-1} of the
// full sub-filters C..to-1 (ARGV[5] = C, the last ARGV to, at most n-1),
// for the client's copies (CacheFullSubFilters). It checks the generation like every read,
// so that a replica has every write to them: they were full before the
// growth past them, which the handle has seen.
var scalableFetchScript = redis.NewScript(`#!lua flags=no-writes
` + scalableCheckLua + `
local to = tonumber(ARGV[a])
if to > n - 1 then
  -- Not reached: to is at most the n the client saw at this epoch, minus 1.
  return redis.error_reply('CORRUPT redisbloom: fetch of sub-filters up to ' .. to .. ' of ' .. n)
end
local reply = {gentext, meta[8] or '0'}
for j = C, to - 1 do
  reply[#reply + 1] = redis.call('GET', KEYS[j + 2])
end
return reply
`)
