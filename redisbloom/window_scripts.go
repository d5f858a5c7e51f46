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
// the one before; a test sees only the generations such a rotation would
// keep (live), those a rotation the floor holds (clearable) included. At
// every rotation the slots' keys get a PEXPIRE for a second past the
// latest time they may still be live (expireAll): a window that nobody
// uses frees its memory, and the metadata stays. So a bitmap may be
// missing only where its generation is no longer live; a live one missing
// is NOTFOUND (evicted, deleted), never "absent".
//
// The prologue checks what every call relies on and leaves: r, head, rot,
// epoch, cap, bytes, k, period, onCount, W, satCap, counts[s] and
// starts[s] for each slot, lastAdd, exts, now (microseconds; 0 in a count
// window), elapsed (whole periods since the newest generation started),
// adv and planStart (the rotations the time calls for that the floor
// allows), overdue (a time rotation is held), live (the generations a
// test sees, r less adv), and the functions total and clearable.
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
-- A time window that rotates early may hold a rotation (see clearable) and
-- fill its newest generation past its share, by at most W keys.
local maxCount = cap
if onCount and period > 0 then maxCount = cap + W end
local fields = {}
for s = 0, r - 1 do
  fields[2 * s + 1] = 'c' .. s
  fields[2 * s + 2] = 't' .. s
end
fields[2 * r + 1] = 'la'
local vals = redis.call('HMGET', KEYS[1], unpack(fields))
local counts, starts = {}, {}
for s = 0, r - 1 do
  counts[s], starts[s] = int(vals[2 * s + 1]), int(vals[2 * s + 2])
  if not counts[s] or (onCount and counts[s] > maxCount) or not starts[s] then
    return redis.error_reply('CORRUPT redisbloom: generation in slot ' .. s .. ': invalid count ' ..
      tostring(vals[2 * s + 1]) .. ' or start ' .. tostring(vals[2 * s + 2]))
  end
end
-- lastAdd: when a key last went into a newest generation whose period was
-- over (a held rotation; 0 if never): the generation after it starts no
-- earlier.
local lastAdd = int(vals[2 * r + 1] or '0')
if not lastAdd then
  return redis.error_reply('CORRUPT redisbloom: invalid last add time ' .. tostring(vals[2 * r + 1]))
end
-- Under Grow (ARGV[12] not empty): the sizes of extension levels 1..#xcap
-- (after the bit limit of the whole window), the levels X whose
-- positions each key carries (ARGV[13]), and exts[s], the key counts of
-- slot s's extensions, oldest first (field x<s>, comma-separated; missing
-- or empty for none, and then no extension key of the slot may exist).
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
    bad = bad or #list > #xcap or counts[s] > cap or (#list > 0 and counts[s] ~= cap)
    for j = 1, #list do
      if list[j] > xcap[j] or (j < #list and list[j] ~= xcap[j]) then bad = true end
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
-- The floor: a time window under RotateEarly keeps every key that is both
-- among the last W added and added within its duration dur; under Saturate
-- and Grow every key added within dur; a count window the last W.
-- clearable(h, tot, st, t) reports whether a rotation at time t after the
-- newest generation in slot h may empty the oldest (slot h+1), given the
-- keys tot[s] and starts st[s] of each slot: it holds none (tot 0), its
-- keys are older than dur (each was added before the generation after it
-- started: st of slot h+2), or, where the floor is the last W keys, the
-- other generations hold at least W.
local dur = (r - 1) * period
local function total(s)
  local n = counts[s]
  for j = 1, #exts[s] do n = n + exts[s][j] end
  return n
end
local function clearable(h, tot, st, t)
  local o = (h + 1) % r
  if tot[o] == 0 then return true end
  if period > 0 and st[(h + 2) % r] + dur <= t then return true end
  if period == 0 or onCount then
    local n = 0
    for s = 0, r - 1 do
      if s ~= o then n = n + tot[s] end
    end
    return n >= W
  end
  return false
end
-- The rotations the time calls for (as bloom.WindowFilter's Advance: one
-- per period since the newest generation started, each new one starting a
-- period after the one before, the last at its start plus the periods
-- elapsed), as far as the floor lets them go: adv of them, the i-th
-- starting its generation at planStart[i], never before lastAdd. A held
-- one leaves the newest generation overdue: keys keep going into it, and
-- a later call rotates when the floor allows.
local adv, planStart = 0, {}
if elapsed > 0 then
  local tot, st = {}, {}
  for s = 0, r - 1 do tot[s], st[s] = total(s), starts[s] end
  local n = math.min(elapsed, r)
  local h = head
  for i = 1, n do
    if not clearable(h, tot, st, now) then break end
    local o = (h + 1) % r
    local t0 = starts[head] + i * period
    if i == n then t0 = starts[head] + elapsed * period end
    tot[o], st[o] = 0, math.max(t0, lastAdd)
    planStart[i] = st[o]
    h, adv = o, i
  end
end
local overdue = adv < math.min(elapsed, r)
local live = r - adv
for j = 0, live - 1 do
  local s = (head - j) % r
  local size = redis.call('STRLEN', KEYS[s + 2])
  if size ~= bytes then
    if size == 0 and redis.call('EXISTS', KEYS[s + 2]) == 0 then
      return redis.error_reply('NOTFOUND redisbloom: bitmap of the generation in slot ' .. s .. ' deleted, flushed, evicted or expired')
    end
    return redis.error_reply('CORRUPT redisbloom: bitmap of the generation in slot ' .. s .. ' has ' .. size .. ' bytes, want ' .. bytes)
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

// windowRotateLua defines clearSlot(s, start), which empties slot s for a
// new generation started at start (microseconds) and deletes its
// extensions; expireAll(), which gives every slot's keys (extensions
// included) of a time window a PEXPIRE of a second past the latest time
// the window may still read them: r periods after the newest generation
// started, or dur after lastAdd (the floor keeps a generation no longer
// than the duration after its last key, and the oldest no longer than dur
// after the next one started); and saveState().
const windowRotateLua = `
local function clearSlot(s, start)
  redis.call('DEL', KEYS[s + 2])
  for j = 1, #exts[s] do redis.call('DEL', xkey(s, j)) end
  redis.call('SETBIT', KEYS[s + 2], 8 * bytes - 1, 0)
  counts[s], starts[s], exts[s] = 0, start, {}
end
local function expireAll()
  if period > 0 then
    local t = math.max(starts[head] + r * period, lastAdd + dur)
    local ms = dec(math.max(math.ceil((t - now) / 1000) + 1000, 1))
    for s = 0, r - 1 do
      redis.call('PEXPIRE', KEYS[s + 2], ms)
      for x = 1, #exts[s] do redis.call('PEXPIRE', xkey(s, x), ms) end
    end
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
  if lastAdd > 0 then
    h[#h + 1] = 'la'
    h[#h + 1] = dec(lastAdd)
  end
  redis.call('HSET', KEYS[1], unpack(h))
end
`

// windowAddScript adds the N keys, in order, as bloom.WindowFilter's
// TestAndAdd (mode "f", first-seen) or TestAndRefresh and Add (mode "a")
// do one by one: first the rotations the time calls for as far as the
// floor lets them go (adv, planStart), then for each key a rotation if
// the newest generation holds GenCap keys and the window rotates on count
// and the floor allows it (else the newest takes the key past its share),
// or, under Saturate, if it holds the saturation limit's keys, then its
// positions set in the newest. In mode "f" a key already in the window is
// answered '1' and not set (nor does it rotate). A key's answer is '1' if
// it was in any generation before it was added (in mode "a", the oldest
// included when that key's add rotates it out, as bloom.WindowFilter tests
// before it adds): its bits all set in the newest (BITFIELD SET returns
// the old bits), or in an older one, read before the keys are set (older
// generations do not change; a rotation during the call adds the former
// newest to them and takes the oldest away). Keys are set in runs of at
// most the newest sub-filter's remaining room, so that a run cannot
// overfill it. Under Grow, a full base (or newest extension) of the newest
// generation gets a new extension, as bloom.WindowFilter's Add does, or
// past the limits an early rotation; a key's answer then also counts the
// newest generation's other sub-filters. It counts the events (early
// rotations of a time window under RotateEarly, Saturate's and Grow's
// rotations past their limits) in the metadata, and the keys a held
// rotation made go past their generation's share (held), and returns
// "gen:rotations:levels:events:answers", levels the most extensions a
// generation has (0 when no burst is in the window), events "" or the
// time of the call and, comma-separated, each event's letter (R, S, G) and
// how far back the window reached after it, in microseconds: "t/R5000,S0".
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
  -- levels the newest reaches if every key is new.
  local top = 0
  for j = 0, live - 1 do top = math.max(top, #exts[(head - j) % r]) end
  local lvl, c = 0, 0
  if adv == 0 then
    lvl = #exts[head]
    if lvl == 0 then c = counts[head] else c = exts[head][lvl] end
  end
  local n = N
  while n > 0 do
    local room = cap - c
    if lvl > 0 then room = xcap[lvl] - c end
    if room >= n then break end
    n = n - math.max(room, 0)
    if lvl >= #xcap then
      top = #xcap
      break
    end
    lvl, c = lvl + 1, 0
    top = math.max(top, lvl)
  end
  local e = need(top)
  if e then return e end
end
local first = ARGV[14] == 'f'
local changed, reexpire = false, false
for i = 1, adv do
  head = (head + 1) % r
  clearSlot(head, planStart[i])
  rot = rot + 1
  changed, reexpire = true, true
end
-- The events of the call, and the keys added past a generation's share
-- while a rotation was held.
local evs, nR, nS, nG, held = {}, 0, 0, 0, 0
local function event(kind)
  evs[#evs + 1] = kind .. dec(math.max(now - starts[(head + 1) % r], 0))
end
-- foundIn[x]: the slot of a generation, other than the newest sub-filter
-- of the newest, that holds key x.
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
    if counts[s] > 0 then
      for lvl = 0, #exts[s] do list = findSub(list, s, lvl) end
    end
  end
  return list
end
local all = {}
for x = 1, N do all[x] = x end
all = find(all, 1, r - 1)
for lvl = 0, #exts[head] - 1 do all = findSub(all, head, lvl) end
local out = {}
local i = 1
-- inDropped: the key i, which made the oldest generation go, was in it.
local inDropped = 0
-- lateAdd: a key went into the newest generation while it was overdue.
local lateAdd = false
while i <= N do
  if first then
    -- Keys in the window are answered, and neither set nor rotate.
    while i <= N and foundIn[i] do
      out[i] = '1'
      i = i + 1
    end
    if i > N then break end
  end
  local rotateNow, kind, heldRoom = false, nil, nil
  if grow and counts[head] >= cap then
    -- The base is full: into the newest extension, a new one when that is
    -- full too, or an early rotation past the limits.
    local L = #exts[head]
    if L == 0 or exts[head][L] >= xcap[L] then
      if canGrow(L + 1) then
        local j = L + 1
        redis.call('DEL', xkey(head, j))
        redis.call('SETBIT', xkey(head, j), 8 * xbytes[j] - 1, 0)
        exts[head][j] = 0
        changed, reexpire = true, true
        -- The keys not found yet may be in the sub-filter that just
        -- filled, set earlier in this call.
        local fresh = {}
        for x = i, N do
          if not foundIn[x] then fresh[#fresh + 1] = x end
        end
        findSub(fresh, head, L)
      else
        rotateNow, kind = true, 'G'
      end
    end
  elseif onCount and counts[head] >= cap then
    -- Full: rotate if the floor allows, else take keys past the share
    -- until the other generations hold W (or the time lets the oldest go).
    local tot = {}
    for s = 0, r - 1 do tot[s] = total(s) end
    if clearable(head, tot, starts, now) then
      rotateNow = true
      if period > 0 and not overdue then kind = 'R' end
    else
      local n = 0
      for s = 0, r - 1 do
        if s ~= (head + 1) % r then n = n + tot[s] end
      end
      heldRoom = math.max(W - n, 1)
    end
  elseif satCap > 0 and counts[head] >= satCap then
    rotateNow, kind = true, 'S'
  end
  if rotateNow then
    -- The oldest (slot head+1) is emptied and becomes the newest; the keys
    -- found only there are looked for in the other older generations,
    -- and the keys not found anywhere in the former newest.
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
    head = dropped
    clearSlot(head, now)
    rot = rot + 1
    changed, reexpire, overdue = true, true, false
    find(fresh, 1, 1)
    find(lost, 1, r - 1)
    if kind then
      event(kind)
      if kind == 'R' then nR = nR + 1 elseif kind == 'S' then nS = nS + 1 else nG = nG + 1 end
    end
  end
  -- L: the sub-filter keys go to (0 the base, else an extension).
  local L = #exts[head]
  local room = N
  if grow then
    room = cap - counts[head]
    if L > 0 then room = xcap[L] - exts[head][L] end
  elseif onCount then
    room = heldRoom or (cap - counts[head])
  elseif satCap > 0 then
    room = satCap - counts[head]
  end
  if L > X then
    return redis.error_reply('ERR redisbloom: internal error: extension level ' .. L .. ' beyond the ' .. X .. ' the keys carry')
  end
  local kk, o = subK(L), off[L]
  local lim = math.max(1, math.min(room, math.floor(1800 / kk))) -- room >= 1: rotated, grown or held above if full
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
    if overdue then lateAdd = true end
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
        if heldRoom then held = held + 1 end
        changed = true
      end
      if was or (not first and (foundIn[x] or inDropped == x)) then out[x] = '1' else out[x] = '0' end
    end
  end
end
if lateAdd then
  lastAdd = math.max(lastAdd, now)
  changed, reexpire = true, true
end
if reexpire then expireAll() end
if changed then
  saveState()
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
if nR > 0 then redis.call('HINCRBY', KEYS[1], 'ev_rotated_early', nR) end
if nS > 0 then redis.call('HINCRBY', KEYS[1], 'ev_saturated_past_limit', nS) end
if nG > 0 then redis.call('HINCRBY', KEYS[1], 'ev_grow_limit', nG) end
if held > 0 then redis.call('HINCRBY', KEYS[1], 'held', held) end
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

// windowStateLua builds reply: {gen, rotations, head, now, adv, c0, ...,
// c(r-1), t0, ..., t(r-1)}, rotations as stored and the rest as the adv
// rotations the time calls for leave them (see the prologue): the slots
// they empty count 0 and start at planStart. Emptied marks those slots.
const windowStateLua = `
local emptied = {}
for i = 1, adv do
  head = (head + 1) % r
  counts[head], starts[head], exts[head] = 0, planStart[i], {}
  emptied[head] = true
end
local reply = {gentext, dec(rot), head, dec(now), dec(adv)}
for s = 0, r - 1 do reply[#reply + 1] = dec(counts[s]) end
for s = 0, r - 1 do reply[#reply + 1] = dec(starts[s]) end
`

// windowCountScript returns windowStateLua's reply (ARGV[1..13]), each
// slot's count including its extensions' under Grow.
var windowCountScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + windowStateLua + `
for s = 0, r - 1 do reply[6 + s] = dec(total(s)) end
return reply
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
// {gen, ev_rotated_early, ev_saturated_past_limit, ev_grow_limit, held},
// each "0" when missing.
var windowEventsScript = redis.NewScript(`#!lua flags=no-writes
` + windowCheckLua + `
local ev = redis.call('HMGET', KEYS[1], 'ev_rotated_early', 'ev_saturated_past_limit', 'ev_grow_limit', 'held')
local reply = {gentext}
for j = 1, 4 do reply[j + 1] = ev[j] or '0' end
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
    if not c or c > xcap[j] or not ARGV[a + 1] or #ARGV[a + 1] ~= xbytes[j] then
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
  clearSlot(s, 0)
  redis.call('SET', KEYS[s + 2], ARGV[16 + 2 * r + s])
  counts[s], starts[s] = tonumber(ARGV[16 + s]), tonumber(ARGV[16 + r + s])
  if grow then a = a + 1 end
  for j = 1, #newExts[s] do
    redis.call('SET', xkey(s, j), ARGV[a + 1])
    a = a + 2
  end
  exts[s] = newExts[s]
end
-- The imported starts stand: no last add into an overdue generation.
lastAdd = 0
redis.call('HDEL', KEYS[1], 'la')
expireAll()
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
    local la = tonumber(redis.call('HGET', KEYS[1], 'la') or '0') or 0
    if start and now - start >= r * period and now - la >= (r - 1) * period then lost = false end
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
    -- Slot s is the generation (0 - s) mod r after the newest.
    local j = (0 - s) % r
    redis.call('PEXPIRE', KEYS[s + 2], string.format('%.0f', math.ceil((r - j) * period / 1000) + 1000))
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
