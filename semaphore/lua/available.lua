-- Permits free now, after reclaiming lapsed permits and marks (state.lua).
-- KEYS[1]  the semaphore hash
-- KEYS[2]  live permits zset
-- KEYS[3]  permit weights hash
-- KEYS[4]  waiters zset
-- KEYS[5]  waiter marks' expiry hash
-- ARGV[1]  size as this client knows it
-- ARGV[2]  "recorded": take the size Redis records (WithRecordedSize); "" refuses
-- Returns {1, available} (all of ARGV[1], nothing written, when no size is
-- recorded); {-2, size} when Redis records another size; {-4, kind} when
-- another kind holds the name; or may's NOPERM error.
local S = {hash = KEYS[1], permits = KEYS[2], weights = KEYS[3], waiters = KEYS[4], marks = KEYS[5]}
load(S)
local size = S.size
if size == nil then
  local other = other_kind(S)
  if other then
    return {-4, other}
  end
  return {1, tonumber(ARGV[1])}
end
if size ~= tonumber(ARGV[1]) and ARGV[2] ~= 'recorded' then
  return {-2, size}
end
local now = server_ms()
local used = scan(S, now)
local W = {}
purge(S, W)
S.last = latest(S, now)
settle(S, W, now, used)
local no = run(W)
if no then
  return no
end
-- after a Resize below what is held, nothing is free (not a negative count)
return {1, math.max(size - used, 0)}
