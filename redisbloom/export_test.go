package redisbloom

import (
	"context"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// legacyTestScript is testScript as it was before it read position by
// position (commit e759273): every position of every key. The benchmarks
// run it side by side with the current one.
var legacyTestScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
local k = tonumber(ARGV[4])
local n = (#ARGV - 7) / k
local out = {}
local j = 8
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
return gentext .. ':' .. table.concat(out)
`)

// earlyStopTestScript is testScript as it was before it took the positions
// after each key's first packed into one argument (commit c8bdf09): every
// position a decimal argument, read position by position. The benchmarks
// run it side by side with the current one.
var earlyStopTestScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
local k = tonumber(ARGV[4])
local n = (#ARGV - 7) / k
local alive = {}
for i = 1, n do alive[i] = i end
local args = {}
for q = 1, math.min(n, 2600) do
  args[3 * q - 2] = 'GET'
  args[3 * q - 1] = 'u1'
end
for r = 8, 7 + k do
  local still = {}
  for first = 1, #alive, 2600 do
    local last = math.min(#alive, first + 2599)
    local q = 0
    for x = first, last do
      q = q + 1
      args[3 * q] = ARGV[r + (alive[x] - 1) * k]
    end
    local got = redis.call('BITFIELD_RO', KEYS[2], unpack(args, 1, 3 * q))
    for x = first, last do
      if got[x - first + 1] == 1 then still[#still + 1] = alive[x] end
    end
  end
  alive = still
  if #alive == 0 then break end
end
local out = {}
for i = 1, n do out[i] = '0' end
for _, i in ipairs(alive) do out[i] = '1' end
return gentext .. ':' .. table.concat(out)
`)

// packedTestScript is testScript as it was before it took the first
// positions packed for struct.unpack and built its reply from runs of '0'
// (this commit's parent): each key's first position a decimal argument, the
// others packed (4 bytes each). The benchmarks run it side by side with the
// current one.
var packedTestScript = redis.NewScript(`#!lua flags=no-writes
` + checkLua + `
local k = tonumber(ARGV[4])
local rest = ARGV[8]
local n = #ARGV - 8
if #rest ~= 4 * (k - 1) * n then
  return redis.error_reply('ERR redisbloom: ' .. #rest .. ' bytes of packed positions for ' .. n .. ' keys')
end
local args = {}
for q = 1, math.min(n, 2600) do
  args[3 * q - 2] = 'GET'
  args[3 * q - 1] = 'u1'
end
local alive = {}
for first = 1, n, 2600 do
  local last = math.min(n, first + 2599)
  local q = 0
  for i = first, last do
    q = q + 1
    args[3 * q] = ARGV[8 + i]
  end
  local got = redis.call('BITFIELD_RO', KEYS[2], unpack(args, 1, 3 * q))
  for i = first, last do
    if got[i - first + 1] == 1 then alive[#alive + 1] = i end
  end
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
local out = {}
for i = 1, n do out[i] = '0' end
for _, i in ipairs(alive) do out[i] = '1' end
return gentext .. ':' .. table.concat(out)
`)

// previousAddScript is addScript as it was before it took its BITFIELD
// arguments packed for struct.unpack (commit c8bdf09): one decimal argument
// per position. The benchmarks run it side by side with the current one.
var previousAddScript = redis.NewScript(`#!lua
` + checkLua + `
local k = tonumber(ARGV[4])
local n = (#ARGV - 7) / k
local out = {}
local j = 8
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
  gentext = redis.call('HINCRBY', KEYS[1], 'gen', 1)
elseif ARGV[7] == 'w' then
  redis.call('HINCRBY', KEYS[1], 'gen', 0)
end
return gentext .. ':' .. table.concat(out)
`)

// Test scripts for Tuned.
const (
	TestCurrent   = ""           // testScript
	TestEarlyStop = "early-stop" // earlyStopTestScript
	TestAll       = "all"        // legacyTestScript
	TestBefore    = "before"     // packedTestScript
)

// Tuned returns a copy of f that runs Test and TestMany with the script
// named by test (one of the Test constants), the writing calls with the
// previous addScript if previousAdd, and splits batches into script calls
// of perScript positions if perScript > 0 (default maxPositionsPerScript).
func Tuned(f *Filter, test string, previousAdd bool, perScript int) *Filter {
	g := *f
	g.tune = &tuning{perScript: perScript}
	if previousAdd {
		g.tune.add = previousAddScript
	}
	switch test {
	case TestEarlyStop:
		g.tune.test = earlyStopTestScript
	case TestAll:
		g.tune.test = legacyTestScript
	case TestBefore:
		g.tune.test = packedTestScript
		g.tune.testBefore = true
	}
	return &g
}

// CoalescedAsBefore returns a Coalesced handle on f as it was before: it
// does not yield to the callers it answered before taking the next batch,
// and writes with previousAddScript.
func CoalescedAsBefore(f *Filter) *Filter {
	g := *f
	g.tune = &tuning{noYield: true, add: previousAddScript}
	return g.Coalesced()
}

// CoalescedStats returns the batches a Coalesced handle sent and the keys
// in them.
func CoalescedStats(f *Filter) (batches, keys int64) {
	return f.co.batches.Load(), f.co.keys.Load()
}

// MaxPositionsPerScript is the default split size.
const MaxPositionsPerScript = maxPositionsPerScript

// SetScalablePositionsPerScript sets the split size of ScalableFilter's
// batches, for the benchmarks, and returns the previous one.
func SetScalablePositionsPerScript(n int) int {
	old := scalablePositionsPerScript
	scalablePositionsPerScript = n
	return old
}

// NewWindowOnClock is NewWindow whose scripts take the time, in Unix
// microseconds, from clock instead of the server's TIME, so that a time
// window can be compared with bloom.WindowFilter on a fake clock.
func NewWindowOnClock(ctx context.Context, rdb redis.UniversalClient, name string, window uint64, errorRate float64, clock func() int64, opts ...bloom.Option) (*WindowFilter, error) {
	p, err := windowProbe(window, errorRate, opts)
	if err != nil {
		return nil, err
	}
	return createWindow(ctx, rdb, name, p, clock)
}

// WindowLevels returns the extension levels whose positions w's calls send.
func WindowLevels(w *WindowFilter) int { return int(w.levels.Load()) }

// WindowSatCap returns the keys past which w's newest generation rotates
// early under Saturate (0 for the other policies).
func WindowSatCap(w *WindowFilter) uint64 { return w.p.saturationCap() }
