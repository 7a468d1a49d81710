-- A waiter gives up: remove its mark and wake the waiters behind it; the
-- keys then expire with what is left (state.lua).
-- KEYS[1]  waiters zset
-- KEYS[2]  waiter marks' expiry hash
-- KEYS[3]  the channel
-- KEYS[4]  the semaphore hash
-- KEYS[5]  live permits zset
-- KEYS[6]  permit weights hash
-- ARGV[1]  waiter id
-- ARGV[2]  publish command
-- Returns 1 when a mark was removed, 0 when none was, or may's NOPERM error.
-- Waiters left untold (Redis 6) try again by their marks' third.
local S = {hash = KEYS[4], permits = KEYS[5], weights = KEYS[6], waiters = KEYS[1], marks = KEYS[2], out = ARGV[1]}
local listed = redis.call('zscore', KEYS[1], ARGV[1]) ~= false
local W = {{'hdel', KEYS[2], ARGV[1]}, {'zrem', KEYS[1], ARGV[1]}}
local now = server_ms()
load(S)
if not other_kind(S) then -- another kind's hash is left as it is
  local used = scan(S, now)
  S.gone = S.gone + (listed and 1 or 0)
  purge(S, W)
  S.last = latest(S, now)
  settle(S, W, now, used)
end
local no = run(W, {listed and {ARGV[2], KEYS[3]}})
if no then
  return no
end
if listed then
  tell(ARGV[2], KEYS[3], 0)
  return 1
end
return 0
