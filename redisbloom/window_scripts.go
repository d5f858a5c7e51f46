package redisbloom

import "github.com/redis/go-redis/v9"

// The scripts of a WindowFilter. KEYS[1] is the metadata hash, KEYS[2..r+1]
// the bitmaps of the ring's r slots {name}:w:0 .. {name}:w:r-1 (all of
// them, always, so that a Cluster sees every key a script uses declared).
// Those that act on an opened filter start with windowCheckLua and take
//
//	ARGV[1] the filter's id (see checkLua);
//	ARGV[2] the highest write generation the handle has seen (genCheckLua);
//	ARGV[3] the metadata's check field as the handle computed it from the
//	        parameters it opened (format, id, seed, window, error rate,
//	        generations, period, policy), which determine every size below;
//	ARGV[4] the import epoch the handle has seen (metadata field epoch,
//	        which Import increments): a filter at a later epoch gives
//	        EPOCH, and the client reads the metadata again; one at an
//	        earlier epoch is CORRUPT;
//	ARGV[5] the rotations the handle has seen at that epoch: a filter with
//	        fewer is CORRUPT (generations it saw went back), as one behind
//	        the write generation is LOSTGEN;
//	ARGV[6] keys per generation (GenCap), ARGV[7] bytes of one
//	        generation's bitmap, ARGV[8] hashes, ARGV[9] the period in
//	        microseconds (0 for a count window), ARGV[10] "o w s": o "1"
//	        if the newest generation rotates when it holds GenCap keys (a
//	        count window, or a time window that rotates early), "0" if not;
//	        w the window's keys (Window), for the floor; s, under Saturate,
//	        the keys past which the newest generation rotates early (the
//	        saturation limit's keys, see saturationCap), else 0;
//	ARGV[11] "" (the server's time, TIME), or in the tests a time in
//	        microseconds the call takes instead, so that a time window can be
//	        compared with bloom.WindowFilter on a fake clock;
//	ARGV[12] "" for a window not under Grow; under Grow, space-separated,
//	        bloom.MaxBits then capacity, bytes and hashes of each extension
//	        level j = 1, 2, ... (at most 16: the levels one Redis string
//	        holds), computed by the client from the parameters (the check);
//	ARGV[13] X, the extension levels whose positions each key carries;
//	ARGV[14] (the add and test scripts) the mode: "f" first-seen
//	        (TestAndAdd: a key already in the window is not added), "a"
//	        (Add, TestAndRefresh: every key is set in the newest generation);
//	ARGV[15] N, the number of keys, then for each key its positions in a
//	        base (hashes of them: the same in every generation, which all
//	        have the same size and seed), then in extension levels 1..X. A
//	        script that needs more levels (a live generation has more
//	        extensions, or an add may append one) replies "NEEDEXT n"
//	        before it writes anything, and the client sends n.
//
// The metadata holds head (the slot of the newest generation), rotations
// (head is rotations mod r), c0..c(r-1) the keys counted in each slot (an
// add that set a bit in it), t0..t(r-1) when each slot's generation started
// (server time in microseconds, TIME; 0 in a count window), epoch, gen and
// lost as for a Filter. Slot s is (head - j) mod r for the generation j
// after the newest. A generation with count 0 has no bit set, and is not
// read.
//
// Time: a time window reads the server's clock (TIME), so every client
// sees the same generations whatever its own clock says. As
// bloom.WindowFilter, it rotates once for every period that has passed
// since the newest generation started, each new one starting a period after
// the one before, as far as the floor lets it drop the oldest (see
// advance); a test sees only the generations that have not expired (live).
// When a generation starts (and when a held rotation moves the newest's
// start) its slot's keys get a PEXPIRE for a second past the time it
// expires: a window that nobody uses frees its memory, and the metadata
// stays. So a bitmap may be missing only where its generation is no longer
// live; a live one missing is NOTFOUND (evicted, deleted), never "absent".
//
// The prologue checks what every call relies on and leaves: r, head, rot,
// epoch, cap, bytes, k, period, onCount, W, satCap, counts[s] and
// starts[s] for each slot, exts, now (microseconds; 0 in a count window),
// elapsed (whole periods since the newest generation started), span, live
// (the generations a test reads), and the functions expired, total,
// droppable, liveNow, rotateTo and advance.
const windowCheckLua = `
local meta = redis.call('HMGET', KEYS[1], 'id', 'gen', 'check', 'lost', 'format', 'head', 'epoch', 'rotations')
if meta[1] ~= ARGV[1] then
  return redis.error_reply('NOTFOUND redisbloom: filter deleted, flushed, evicted or replaced')
end
if meta[4] then
  return redis.error_reply('LOST redisbloom: ' .. meta[4])
end
if meta[5] ~= 'redisbloom-window/1' or meta[3] ~= ARGV[3] then
  return redis.error_reply('CORRUPT redisbloom: metadata changed: format ' .. tostring(meta[5]) .. ', check ' ..
    tostring(meta[3]) .. ' where the filter was opened with ' .. ARGV[3])
end
` + genCheckLua + `
local r = #KEYS - 1
local function int(v)
  local x = tonumber(v)
  if not x or x < 0 or x % 1 ~= 0 or x >= 9007199254740992 then return nil end
  return x
end
local function dec(x) return string.format('%.0f', x) end
local head, epoch, rot = int(meta[6]), int(meta[7] or '0'), int(meta[8])
if not head or not rot or head >= r or rot % r ~= head then
  return redis.error_reply('CORRUPT redisbloom: newest generation ' .. tostring(meta[6]) .. ' after ' ..
    tostring(meta[8]) .. ' rotations in a ring of ' .. r)
end
if not epoch then
  return redis.error_reply('CORRUPT redisbloom: invalid import epoch ' .. tostring(meta[7]))
end
local seenEpoch = tonumber(ARGV[4])
if epoch < seenEpoch then
  return redis.error_reply('CORRUPT redisbloom: import epoch ' .. epoch .. ', the client saw ' .. ARGV[4])
end
if epoch > seenEpoch then
  return redis.error_reply('EPOCH redisbloom: imported since: epoch ' .. epoch .. ', the client saw ' .. ARGV[4])
end
if rot < tonumber(ARGV[5]) then
  return redis.error_reply('CORRUPT redisbloom: ' .. dec(rot) .. ' rotations, where the client saw ' .. ARGV[5] ..
    ' with no Import since: generations went back')
end
local cap, bytes, k, period = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local ocText, wText, scText = string.match(ARGV[10], '^([01]) (%d+) (%d+)$')
if not ocText then
  return redis.error_reply('ERR redisbloom: invalid policy argument ' .. ARGV[10])
end
local onCount, W, satCap = ocText == '1', tonumber(wText), tonumber(scText)
local fields = {}
for s = 0, r - 1 do
  fields[2 * s + 1] = 'c' .. s
  fields[2 * s + 2] = 't' .. s
end
local vals = redis.call('HMGET', KEYS[1], unpack(fields))
local counts, starts = {}, {}
for s = 0, r - 1 do
  -- A generation takes keys past its share (Saturate, and for the floor),
  -- but each counted key set a bit.
  counts[s], starts[s] = int(vals[2 * s + 1]), int(vals[2 * s + 2])
  if not counts[s] or counts[s] > 8 * bytes or not starts[s] then
    return redis.error_reply('CORRUPT redisbloom: generation in slot ' .. s .. ': invalid count ' ..
      tostring(vals[2 * s + 1]) .. ' or start ' .. tostring(vals[2 * s + 2]))
  end
end
-- Under Grow (ARGV[12] not empty): the sizes of extension levels 1..#xcap
-- (after the bit limit of the whole window), the levels X whose
-- positions each key carries (ARGV[13]), and exts[s], the key counts of
-- slot s's extensions, oldest first (field x<s>, comma-separated; missing
-- or empty for none, and then no extension key of the slot may exist:
-- checked below for the live generations).
local grow = ARGV[12] ~= ''
local xcap, xbytes, xk, exts = {}, {}, {}, {}
local maxBits, X = 0, tonumber(ARGV[13]) or 0
for s = 0, r - 1 do exts[s] = {} end
if grow then
  local first = true
  for v in string.gmatch(ARGV[12], '%d+') do
    if first then
      maxBits, first = tonumber(v), false
    else
      local n = #xk
      if #xcap == n then xcap[n + 1] = tonumber(v)
      elseif #xbytes == n then xbytes[n + 1] = tonumber(v)
      else xk[n + 1] = tonumber(v) end
    end
  end
  local xf = {}
  for s = 0, r - 1 do xf[s + 1] = 'x' .. s end
  local xv = redis.call('HMGET', KEYS[1], unpack(xf))
  for s = 0, r - 1 do
    local list, bad = exts[s], false
    if xv[s + 1] and xv[s + 1] ~= '' then
      -- Every comma-separated field a count: "x", "-1", "1e300", ",," are not.
      for v in string.gmatch(xv[s + 1] .. ',', '([^,]*),') do
        local c = int(v)
        if not c then bad = true else list[#list + 1] = c end
      end
    end
    -- A generation with extensions has a full base; each extension but
    -- the newest is full, and the newest (past the limits, for the floor)
    -- holds at most a key per bit.
    bad = bad or #list > #xcap or (#list > 0 and counts[s] < cap)
    for j = 1, #list do
      if list[j] > 8 * xbytes[j] or (j < #list and list[j] ~= xcap[j]) then bad = true end
    end
    if bad then
      return redis.error_reply('CORRUPT redisbloom: generation in slot ' .. s .. ': invalid extensions ' ..
        tostring(xv[s + 1]) .. ' for a base counting ' .. dec(counts[s]))
    end
  end
end
local function xkey(s, j) return KEYS[s + 2] .. ':x' .. j end
local now, elapsed = 0, 0
if period > 0 then
  if ARGV[11] ~= '' then
    now = tonumber(ARGV[11])
  else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local d = now - starts[head]
  if d >= period then
    elapsed = math.floor(d / period)
    while elapsed * period > d do elapsed = elapsed - 1 end
    while (elapsed + 1) * period <= d do elapsed = elapsed + 1 end
  end
end
-- The floor (as bloom.WindowFilter's, internal/window): every key of a
-- generation of a time window was added before its start plus a period
-- (a held rotation moves the newest's start up, hold), so at its start
-- plus span, r periods, it holds no key added within the duration:
-- expired(s), and tests skip it and every older one (live). A rotation
-- clears the oldest generation only when none of its keys is in the floor
-- (the keys both among the last W added and, in a time window, added
-- within the duration): droppable(), when it is empty, has expired, or the
-- generations newer than it hold W counted keys.
local span = r * period
local function expired(s) return now >= starts[s] and now - starts[s] >= span end
local function total(s)
  local n = counts[s]
  for j = 1, #exts[s] do n = n + exts[s][j] end
  return n
end
local function droppable()
  local o = (head + 1) % r
  if counts[o] == 0 and #exts[o] == 0 then return true end
  if period > 0 and expired(o) then return true end
  local n, s = 0, head
  for _ = 1, r - 1 do
    n = n + total(s)
    if n >= W then return true end
    s = (s - 1) % r
  end
  return false
end
-- liveNow(): the generations a test reads, newest first: all of a count
-- window; those of a time window newer than its newest expired one.
local function liveNow()
  if period == 0 then return r end
  for j = 0, r - 1 do
    if expired((head - j) % r) then return j end
  end
  return r
end
local live = liveNow()
-- rotateTo(start, write): the oldest generation emptied and made the
-- newest, started at start or at the newest's start if that is later;
-- emptied[s] marks the slots emptied. With write, Redis too (the add
-- script's clearSlot, defined later); without, only the tables here (the
-- read-only scripts' view of what the next add does).
local emptied = {}
local clearSlot
local function rotateTo(start, write)
  start = math.max(start, starts[head])
  local g = (head + 1) % r
  if write then clearSlot(g) end
  counts[g], starts[g], exts[g] = 0, start, {}
  emptied[g] = true
  head = g
  rot = rot + 1
end
-- advance(write): bloom.WindowFilter's Advance: one rotation for every
-- period that has passed since the newest generation started (at most r),
-- each new generation starting a period after the one before, the last at
-- the start plus the periods elapsed, as long as the oldest is droppable;
-- when it is not, the newest generation goes on past its period (hold),
-- its start moved up to now-period+1, so that its keys are still all
-- added before its start plus a period (bloom.WindowFilter moves it to
-- 1 ns above now-period, on its clock of nanoseconds; here the clock is the
-- server's, of microseconds). It returns whether it changed anything.
local function advance(write)
  if elapsed == 0 then return false end
  local start, n = starts[head], math.min(elapsed, r)
  for i = 1, n do
    if not droppable() then
      starts[head] = now - (period - 1)
      return true
    end
    local t = start + i * period
    if i == n then t = start + elapsed * period end
    rotateTo(t, write)
  end
  return true
end
for j = 0, live - 1 do
  local s = (head - j) % r
  local size = redis.call('STRLEN', KEYS[s + 2])
  if size ~= bytes then
    -- An empty generation other than the newest is never read, and its
    -- bitmap made again when it becomes the newest: it may be missing
    -- (a window created before generations expired by their own start
    -- gave the older empty ones a shorter PEXPIRE).
    if size ~= 0 or redis.call('EXISTS', KEYS[s + 2]) == 1 then
      return redis.error_reply('CORRUPT redisbloom: bitmap of the generation in slot ' .. s .. ' has ' .. size .. ' bytes, want ' .. bytes)
    end
    if j == 0 or counts[s] > 0 or #exts[s] > 0 then
      return redis.error_reply('NOTFOUND redisbloom: bitmap of the generation in slot ' .. s .. ' deleted, flushed, evicted or expired')
    end
  end
  for j = 1, #exts[s] do
    local size = redis.call('STRLEN', xkey(s, j))
    if size ~= xbytes[j] then
      if size == 0 and redis.call('EXISTS', xkey(s, j)) == 0 then
        return redis.error_reply('CORRUPT redisbloom: extension ' .. j .. ' of the generation in slot ' .. s .. ' is missing (deleted, flushed, evicted or expired)')
      end
      return redis.error_reply('CORRUPT redisbloom: extension ' .. j .. ' of the generation in slot ' .. s .. ' has ' .. size .. ' bytes, want ' .. xbytes[j])
    end
  end
  if grow and #exts[s] < #xcap and redis.call('EXISTS', xkey(s, #exts[s] + 1)) == 1 then
    return redis.error_reply('CORRUPT redisbloom: extension ' .. (#exts[s] + 1) .. ' of the generation in slot ' .. s ..
      ' exists, but the metadata lists ' .. #exts[s])
  end
end
`

// windowKeysLua checks ARGV[15] = N against the positions given and
// defines need(levels) (the NEEDEXT reply, or nil) and test(s, lvl, list):
// the keys of list (indices into the batch) whose positions are all set in
// sub-filter lvl of slot s (0 its base), read one position of every key still in
// the running at a time, so that an absent key costs about two reads in a
// half-full generation. Each BITFIELD_RO call carries at most 2600
// positions.
const windowKeysLua = `
local N = tonumber(ARGV[15])
local base = 16
-- A key's positions: k in a base, then xk[j] in an extension of level j,
-- for j = 1..X; off[j] is where level j's start within a key's stride.
local off, stride = {[0] = 0}, k
if X > #xk then X = #xk end
for j = 1, X do
  off[j] = stride
  stride = stride + xk[j]
end
if not N or #ARGV ~= 15 + N * stride then
  return redis.error_reply('ERR redisbloom: ' .. (#ARGV - 15) .. ' positions for ' .. tostring(ARGV[15]) .. ' keys of ' .. stride .. ' positions')
end
local function need(levels)
  if levels > X then
    return redis.error_reply('NEEDEXT ' .. levels .. ' redisbloom: the keys need the positions of ' .. levels .. ' extension levels')
  end
end
local function subKey(s, lvl)
  if lvl == 0 then return KEYS[s + 2] end
  return xkey(s, lvl)
end
local function subK(lvl)
  if lvl == 0 then return k end
  return xk[lvl]
end
-- test(s, lvl, list): the keys of list (indices into the batch) whose
-- positions are all set in the sub-filter lvl (0 the base) of slot s.
local function test(s, lvl, list)
  local key, kk, o = subKey(s, lvl), subK(lvl), off[lvl]
  for t = 0, kk - 1 do
    if #list == 0 then return list end
    local keep = {}
    for first = 1, #list, 2600 do
      local last = math.min(#list, first + 2599)
      local args = {}
      local q = 0
      for x = first, last do
        args[q + 1] = 'GET'
        args[q + 2] = 'u1'
        args[q + 3] = ARGV[base + (list[x] - 1) * stride + o + t]
        q = q + 3
      end
      local got = redis.call('BITFIELD_RO', key, unpack(args, 1, q))
      for x = first, last do
        if got[x - first + 1] == 1 then keep[#keep + 1] = list[x] end
      end
    end
    list = keep
  end
  return list
end
`

// windowRotateLua defines clearSlot(s), which empties slot s's bitmap and
// deletes its extensions, for rotateTo; expire(s), which gives slot s's
// keys (extensions included) of a time window a PEXPIRE of a second past
// the time its generation expires (its start plus span); and saveState().
const windowRotateLua = `
clearSlot = function(s)
  redis.call('DEL', KEYS[s + 2])
  for j = 1, #exts[s] do redis.call('DEL', xkey(s, j)) end
  redis.call('SETBIT', KEYS[s + 2], 8 * bytes - 1, 0)
end
local function expire(s)
  if period > 0 then
    local ms = dec(math.max(math.ceil((starts[s] + span - now) / 1000) + 1000, 1))
    redis.call('PEXPIRE', KEYS[s + 2], ms)
    for x = 1, #exts[s] do redis.call('PEXPIRE', xkey(s, x), ms) end
  end
end
local function saveState()
  local h = {'head', head, 'rotations', dec(rot)}
  for s = 0, r - 1 do
    h[#h + 1] = 'c' .. s
    h[#h + 1] = dec(counts[s])
    h[#h + 1] = 't' .. s
    h[#h + 1] = dec(starts[s])
    if grow then
      local cs = {}
      for j = 1, #exts[s] do cs[j] = dec(exts[s][j]) end
      h[#h + 1] = 'x' .. s
      h[#h + 1] = table.concat(cs, ',')
    end
  end
  redis.call('HSET', KEYS[1], unpack(h))
end
`

// windowAddScript adds the N keys, in order, as bloom.WindowFilter's
// TestAndAdd (mode "f", first-seen) or TestAndRefresh and Add (mode "a")
// do one by one, in a batch (one time for the whole call): first advance,
// then for each key, in mode "f", nothing if it is in a live generation
// (answered '1'), else: if the newest generation's base holds GenCap keys,
// under Grow an extension (a new one when the newest is full, or past the
// limits an early rotation if the oldest is droppable, else the key goes
// past the newest's capacity), otherwise a rotation if the oldest is
// droppable (under Saturate only once the newest holds satCap keys), else
// the key goes into the newest past its share; then its positions are set
// in the newest sub-filter of the newest generation. A key's answer is
// '1' if it was in a live generation before it was added (in mode "a",
// the oldest included when that key's add rotates it out, as
// bloom.WindowFilter tests before it adds): its bits all set in the newest
// (BITFIELD SET returns the old bits), or in an older one, read before the
// keys are set (older generations do not change; a rotation during the
// call adds the former newest to them and takes the oldest away). Keys
// are set in runs that no decision above falls within: at most the newest
// sub-filter's remaining room, or, past it, the keys until the oldest is
// droppable. It counts the events (a rotation on count of a time window
// under RotateEarly, Saturate's and Grow's early rotations) in the
// metadata (ev_rotated_early, ev_saturated_past_limit, ev_grow_limit) and
// returns "gen:rotations:levels:events:answers", levels the most
// extensions a generation has (0 when no burst is in the window), events
// "" or the time of the call, "/" and, comma-separated, each event's
// letter (R, S, G) and how far back the window reached after it, in
// microseconds: "1700000000000000/R5000,S0".
var windowAddScript = redis.NewScript(`#!lua
` + windowCheckLua + windowKeysLua + windowRotateLua + `
-- canGrow(j): a new extension of level j fits the window's limits.
local function canGrow(j)
  if j > #xcap then return false end
  local total = r * bytes * 8
  for s = 0, r - 1 do
    for x = 1, #exts[s] do total = total + xbytes[x] * 8 end
  end
  return xbytes[j] * 8 <= maxBits - total
end
if grow then
  -- The extension levels whose positions the call may read, checked
  -- before anything is written: those of the live generations, and the
  -- levels the newest reaches if every key is new, from where it is or
  -- from a new generation (advance may rotate).
  local top = 0
  for j = 0, live - 1 do top = math.max(top, #exts[(head - j) % r]) end
  local function reach(lvl, c)
    local n = N
    while n > 0 do
      local room = cap - c
      if lvl > 0 then room = xcap[lvl] - c end
      if room >= n then break end
      n = n - math.max(room, 0)
      if lvl >= #xcap then return #xcap end
      lvl, c = lvl + 1, 0
    end
    return lvl
  end
  local lvl = #exts[head]
  local c = counts[head]
  if lvl > 0 then c = exts[head][lvl] end
  top = math.max(top, reach(lvl, c), reach(0, 0))
  local e = need(top)
  if e then return e end
end
local first = ARGV[14] == 'f'
local changed = false
local newHead = head
if advance(true) then
  changed = true
  expire(head)
end
live = liveNow()
-- The events of the call.
local evs, nR, nS, nG = {}, 0, 0, 0
local function event(kind)
  local l = liveNow()
  local oldest = now
  if l > 0 then oldest = starts[(head - l + 1) % r] end
  evs[#evs + 1] = kind .. dec(math.max(now - oldest, 0))
  if kind == 'R' then nR = nR + 1 elseif kind == 'S' then nS = nS + 1 else nG = nG + 1 end
end
-- foundIn[x]: the slot of a live generation, other than the newest
-- sub-filter of the newest, that holds key x.
local foundIn = {}
local function findSub(list, s, lvl)
  if #list == 0 then return list end
  local hit = {}
  for _, x in ipairs(test(s, lvl, list)) do
    foundIn[x] = s
    hit[x] = true
  end
  local rest = {}
  for _, x in ipairs(list) do
    if not hit[x] then rest[#rest + 1] = x end
  end
  return rest
end
local function find(list, from, to)
  for j = from, to do
    local s = (head - j) % r
    if counts[s] > 0 or #exts[s] > 0 then
      for lvl = 0, #exts[s] do list = findSub(list, s, lvl) end
    end
  end
  return list
end
local all = {}
for x = 1, N do all[x] = x end
all = find(all, 1, live - 1)
for lvl = 0, #exts[head] - 1 do all = findSub(all, head, lvl) end
-- heldRoom(): the keys the newest takes past its share before the oldest
-- becomes droppable (the generations newer than it hold W).
local function heldRoom()
  local n, s = 0, head
  for _ = 1, r - 1 do
    n = n + total(s)
    s = (s - 1) % r
  end
  return math.max(W - n, 1)
end
local out = {}
local i = 1
-- inDropped: the key i, which made the oldest generation go, was in it.
local inDropped = 0
while i <= N do
  local L = #exts[head]
  -- decides: the key's add may rotate or grow (the base is full).
  local decides = counts[head] >= cap
  if first and (foundIn[i] or (decides and #test(head, L, {i}) == 1)) then
    -- In the window: answered, neither set nor rotating.
    out[i] = '1'
    i = i + 1
  else
    local rotateNow, kind, room = false, nil, nil
    if grow and decides then
      -- The base is full: into the newest extension, a new one when that
      -- is full too, or past the limits an early rotation if the floor
      -- allows, else past the newest sub-filter's capacity.
      if L == 0 or exts[head][L] >= xcap[L] then
        if canGrow(L + 1) then
          local j = L + 1
          redis.call('DEL', xkey(head, j))
          redis.call('SETBIT', xkey(head, j), 8 * xbytes[j] - 1, 0)
          exts[head][j] = 0
          expire(head)
          changed = true
          -- The keys not found yet may be in the sub-filter that just
          -- filled, set earlier in this call.
          local fresh = {}
          for x = i, N do
            if not foundIn[x] then fresh[#fresh + 1] = x end
          end
          findSub(fresh, head, L)
        elseif droppable() then
          rotateNow, kind = true, 'G'
        else
          room = heldRoom()
        end
      end
    elseif decides and (not (period > 0 and not onCount) or (satCap > 0 and counts[head] >= satCap)) then
      -- A count window, RotateEarly, or Saturate at its limit: rotate if
      -- the floor allows, else take keys past the share.
      if droppable() then
        rotateNow = true
        if period > 0 then
          if onCount then kind = 'R' else kind = 'S' end
        end
      else
        room = heldRoom()
      end
    end
    if rotateNow then
      -- The oldest (slot head+1) is emptied and becomes the newest; the
      -- keys found only there are looked for in the other older
      -- generations, and the keys not found anywhere in the former
      -- newest.
      local dropped = (head + 1) % r
      if foundIn[i] == dropped then inDropped = i end
      local lost, fresh = {}, {}
      for x = i, N do
        if foundIn[x] == dropped then
          foundIn[x] = nil
          lost[#lost + 1] = x
        elseif not foundIn[x] then
          fresh[#fresh + 1] = x
        end
      end
      rotateTo(now, true)
      expire(head)
      changed = true
      live = liveNow()
      if live >= 2 then find(fresh, 1, 1) end
      find(lost, 1, live - 1)
      if kind then event(kind) end
    end
    -- L: the sub-filter keys go to (0 the base, else an extension).
    L = #exts[head]
    if not room then
      room = N
      if counts[head] < cap then
        room = cap - counts[head]
      elseif L > 0 and exts[head][L] < xcap[L] then
        room = xcap[L] - exts[head][L]
      elseif satCap > 0 and counts[head] < satCap then
        room = satCap - counts[head]
      end
    end
    if L > X then
      return redis.error_reply('ERR redisbloom: internal error: extension level ' .. L .. ' beyond the ' .. X .. ' the keys carry')
    end
    local kk, o = subK(L), off[L]
    local lim = math.max(1, math.min(room, math.floor(1800 / kk)))
    local args, idx = {}, {}
    local q = 0
    while i <= N and #idx < lim do
      if first and foundIn[i] then
        out[i] = '1'
      else
        idx[#idx + 1] = i
        local p = base + (i - 1) * stride + o
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
    if #idx > 0 then
      local old = redis.call('BITFIELD', subKey(head, L), unpack(args, 1, q))
      local o2 = 1
      for _, x in ipairs(idx) do
        local was = true
        for _ = 1, kk do
          if old[o2] == 0 then was = false end
          o2 = o2 + 1
        end
        if not was then
          if L == 0 then counts[head] = counts[head] + 1 else exts[head][L] = exts[head][L] + 1 end
          changed = true
        end
        if was or (not first and (foundIn[x] or inDropped == x)) then out[x] = '1' else out[x] = '0' end
      end
    end
  end
end
if changed then
  saveState()
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
if nR > 0 then redis.call('HINCRBY', KEYS[1], 'ev_rotated_early', nR) end
if nS > 0 then redis.call('HINCRBY', KEYS[1], 'ev_saturated_past_limit', nS) end
if nG > 0 then redis.call('HINCRBY', KEYS[1], 'ev_grow_limit', nG) end
local evText = ''
if #evs > 0 then evText = dec(now) .. '/' .. table.concat(evs, ',') end
local levels = 0
for s = 0, r - 1 do levels = math.max(levels, #exts[s]) end
return gentext .. ':' .. dec(rot) .. ':' .. levels .. ':' .. evText .. ':' .. table.concat(out)
`)

// windowTestScript reports for each of the N keys whether it is in any
// live generation (newest first; a key found is not read further) and
// returns "gen:rotations:levels::answers", levels the most extensions a
// live generation has. It writes nothing.
var windowTestScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + windowKeysLua + `
local top = 0
for j = 0, live - 1 do top = math.max(top, #exts[(head - j) % r]) end
local e = need(top)
if e then return e end
local list = {}
for x = 1, N do list[x] = x end
local present = {}
for j = 0, live - 1 do
  if #list == 0 then break end
  local s = (head - j) % r
  if counts[s] > 0 then
    for lvl = 0, #exts[s] do
      for _, x in ipairs(test(s, lvl, list)) do present[x] = true end
      local rest = {}
      for _, x in ipairs(list) do
        if not present[x] then rest[#rest + 1] = x end
      end
      list = rest
    end
  end
end
local out = {}
for x = 1, N do
  if present[x] then out[x] = '1' else out[x] = '0' end
end
return gentext .. ':' .. dec(rot) .. ':' .. top .. '::' .. table.concat(out)
`)

// windowStateLua builds reply: {gen, rotations, head, now, rotations
// since, c0, ..., c(r-1), t0, ..., t(r-1)}: rotations as stored, and the
// rest as advance leaves them (what the next add does first, made only
// here): emptied marks the slots it empties, which count 0 and start a
// period after the one before.
const windowStateLua = `
local rot0 = rot
advance(false)
local reply = {gentext, dec(rot0), head, dec(now), dec(rot - rot0)}
for s = 0, r - 1 do reply[#reply + 1] = dec(counts[s]) end
for s = 0, r - 1 do reply[#reply + 1] = dec(starts[s]) end
`

// windowCountScript returns {gen, rotations, n}: the keys counted in the
// live generations, extensions included (ARGV[1..13]).
var windowCountScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + `
local n = 0
for j = 0, live - 1 do n = n + total((head - j) % r) end
return {gentext, dec(rot), dec(n)}
`)

// windowExportScript returns windowStateLua's reply followed by the r
// bitmaps, slot 0 first (false for an emptied slot), and under Grow, for
// each slot, its number of extensions and then each one's count and
// bitmap.
var windowExportScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + windowStateLua + `
for s = 0, r - 1 do
  if emptied[s] then
    reply[#reply + 1] = false
  else
    reply[#reply + 1] = redis.call('GET', KEYS[s + 2])
  end
end
if grow then
  for s = 0, r - 1 do
    reply[#reply + 1] = #exts[s]
    for j = 1, #exts[s] do
      reply[#reply + 1] = dec(exts[s][j])
      reply[#reply + 1] = redis.call('GET', xkey(s, j))
    end
  end
end
return reply
`)

// windowEventsScript returns the event counters of the metadata:
// {gen, ev_rotated_early, ev_saturated_past_limit, ev_grow_limit}, each
// "0" when missing.
var windowEventsScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + `
local ev = redis.call('HMGET', KEYS[1], 'ev_rotated_early', 'ev_saturated_past_limit', 'ev_grow_limit')
local reply = {gentext}
for j = 1, 3 do reply[j + 1] = ev[j] or '0' end
return reply
`)

// windowImportScript replaces the whole ring (ARGV[1..13] as above, ARGV[14]
// the new head, ARGV[15] the new rotations, then r counts, r starts and r
// bitmaps, slot 0 first, each of the size's bytes, and under Grow, for each
// slot, its number of extensions and then each one's count and bitmap),
// gives the slots of a time window their expiry, increments epoch and gen
// and returns {gen, epoch}.
var windowImportScript = redis.NewScript(`#!lua
` + windowCheckLua + windowRotateLua + `
local h, ro = int(ARGV[14]), int(ARGV[15])
if not h or not ro or h >= r or ro % r ~= h or #ARGV < 15 + 3 * r then
  return redis.error_reply('CORRUPT redisbloom: imported newest generation ' .. tostring(ARGV[14]) .. ' after ' .. tostring(ARGV[15]) .. ' rotations')
end
for s = 0, r - 1 do
  if #ARGV[16 + 2 * r + s] ~= bytes or not int(ARGV[16 + s]) or not int(ARGV[16 + r + s]) then
    return redis.error_reply('CORRUPT redisbloom: imported generation in slot ' .. s .. ' does not match the sizes')
  end
end
-- The imported extensions, checked before anything is written.
local newExts, a = {}, 16 + 3 * r
for s = 0, r - 1 do
  newExts[s] = {}
  local n = grow and int(ARGV[a]) or 0
  if grow then a = a + 1 end
  if not n or n > #xcap then
    return redis.error_reply('CORRUPT redisbloom: imported generation in slot ' .. s .. ' has invalid extensions')
  end
  for j = 1, n do
    local c = int(ARGV[a])
    if not c or c > 8 * xbytes[j] or (j < n and c ~= xcap[j]) or not ARGV[a + 1] or #ARGV[a + 1] ~= xbytes[j] then
      return redis.error_reply('CORRUPT redisbloom: imported extension ' .. j .. ' in slot ' .. s .. ' does not match the sizes')
    end
    newExts[s][j] = c
    a = a + 2
  end
end
if #ARGV ~= a - 1 then
  return redis.error_reply('CORRUPT redisbloom: imported window has ' .. (#ARGV - a + 1) .. ' arguments too many')
end
head, rot = h, ro
a = 16 + 3 * r
for s = 0, r - 1 do
  clearSlot(s)
  redis.call('SET', KEYS[s + 2], ARGV[16 + 2 * r + s])
  counts[s], starts[s] = tonumber(ARGV[16 + s]), tonumber(ARGV[16 + r + s])
  if grow then a = a + 1 end
  for j = 1, #newExts[s] do
    redis.call('SET', xkey(s, j), ARGV[a + 1])
    a = a + 2
  end
  exts[s] = newExts[s]
end
for s = 0, r - 1 do expire(s) end
saveState()
local e = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
return {redis.call('HINCRBY', KEYS[1], 'gen', 1), e}
`)

// windowLostLua sets lost when the metadata KEYS[1] of this format exists
// with its newest generation's bitmap missing while that generation is
// still live (a window that nobody used for r periods has let every bitmap
// expire: that is not a loss), for r and slotKey(s) defined before, the
// period being the metadata's period_us.
const windowLostLua = `
local lost = false
local m = redis.call('HMGET', KEYS[1], 'head', 'period_us')
local head, period = tonumber(m[1]), tonumber(m[2])
if head and period and head >= 0 and head < r and head % 1 == 0 and redis.call('EXISTS', slotKey(head)) == 0 then
  lost = true
  if period > 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local start = tonumber(redis.call('HGET', KEYS[1], 't' .. head))
    if start and now - start >= r * period then lost = false end
  end
end
`

// windowCreateScript creates the window (ARGV: field, value, ... of the
// metadata, format first, then ARGV[#ARGV-2] = bytes per bitmap,
// ARGV[#ARGV-1] = the period in microseconds and ARGV[#ARGV] = "" or the
// tests' time, as ARGV[11] of the other scripts) unless it exists: r empty
// generations, all started now (0 in a count window), slot 0 the newest. It
// returns {1} when it created the window and {0, field, value, ...} with the
// stored metadata when one existed. Metadata of this format whose newest
// bitmap is gone while live is a lost window, created again with a new id;
// bitmaps without metadata are an error.
var windowCreateScript = redis.NewScript(`#!lua
local r = #KEYS - 1
local function slotKey(s) return KEYS[s + 2] end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local format = redis.call('HGET', KEYS[1], 'format')
  if format == ARGV[2] then
` + windowLostLua + `
    if not lost then
      local meta = redis.call('HGETALL', KEYS[1])
      table.insert(meta, 1, 0)
      return meta
    end
  else
    local meta = redis.call('HGETALL', KEYS[1])
    table.insert(meta, 1, 0)
    return meta
  end
  redis.call('DEL', unpack(KEYS))
  for s = 2, #KEYS do
    for j = 1, 16 do redis.call('DEL', KEYS[s] .. ':x' .. j) end
  end
end
for s = 2, #KEYS do
  if redis.call('EXISTS', KEYS[s]) == 1 then
    return redis.error_reply('EXISTS redisbloom: a generation key exists without its metadata (evicted, expired or deleted, or another program uses the name); remove it with Destroy or choose another name')
  end
end
local bytes, period = tonumber(ARGV[#ARGV - 2]), tonumber(ARGV[#ARGV - 1])
local now = 0
if period > 0 and ARGV[#ARGV] ~= '' then
  now = tonumber(ARGV[#ARGV])
elseif period > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local fields = {}
for j = 1, #ARGV - 3 do fields[j] = ARGV[j] end
for s = 0, r - 1 do
  fields[#fields + 1] = 'c' .. s
  fields[#fields + 1] = '0'
  fields[#fields + 1] = 't' .. s
  fields[#fields + 1] = string.format('%.0f', now)
end
redis.call('HSET', KEYS[1], unpack(fields))
for s = 0, r - 1 do
  redis.call('SETBIT', KEYS[s + 2], 8 * bytes - 1, 0)
  if period > 0 then
    -- Every generation started now, and expires r periods later.
    redis.call('PEXPIRE', KEYS[s + 2], string.format('%.0f', math.ceil(r * period / 1000) + 1000))
  end
end
return {1}
`)

// windowMetaScript returns the metadata of an existing window as field,
// value, ... (the client checks it; every later call checks the bitmaps),
// and that of another format as it is (the client refuses it with
// ErrFormat). KEYS[1] is the metadata, ARGV[1] the prefix of the slots'
// keys, "{name}:w:" (keys of the filter's own hash tag, so in its slot,
// though not declared: the client learns r here), ARGV[2] the most
// generations a window has.
var windowMetaScript = redis.NewScript(`#!lua flags=no-writes
local function slotKey(s) return ARGV[1] .. s end
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then
  for s = 0, tonumber(ARGV[2]) - 1 do
    if redis.call('EXISTS', slotKey(s)) == 1 then
      return redis.error_reply('CORRUPT redisbloom: a generation key exists without its metadata (evicted, expired or deleted); Destroy removes it')
    end
  end
  return redis.error_reply('NOTFOUND redisbloom: filter does not exist')
end
if redis.call('HGET', KEYS[1], 'format') ~= 'redisbloom-window/1' then
  return meta
end
local r = tonumber(redis.call('HGET', KEYS[1], 'generations'))
if not r or r < 2 or r > tonumber(ARGV[2]) or r % 1 ~= 0 then
  return meta
end
` + windowLostLua + `
if lost then
  return redis.error_reply('NOTFOUND redisbloom: the newest generation was deleted, flushed or evicted')
end
return meta
`)
