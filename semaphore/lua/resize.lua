-- Change the recorded size and wake waiters (a larger size may let them in).
-- Permits held beyond a smaller size stay until released. The record lives
-- while a permit or a mark does, and at least ARGV[3] ms (state.lua).
-- KEYS[1]  the semaphore hash
-- KEYS[2]  the channel
-- KEYS[3]  live permits zset
-- KEYS[4]  permit weights hash
-- KEYS[5]  waiters zset
-- KEYS[6]  waiter marks' expiry hash
-- ARGV[1]  new size
-- ARGV[2]  publish command
-- ARGV[3]  the record's least life in ms (the hash's field kept: until when)
-- Returns the previous size (0 when none was recorded), -kind when another
-- kind holds the name (nothing written), or may's NOPERM error. Waiters left
-- untold (Redis 6) try again by their marks' third.
local S = {hash = KEYS[1], permits = KEYS[3], weights = KEYS[4], waiters = KEYS[5], marks = KEYS[6]}
load(S)
local other = other_kind(S)
if other then
  return -other
end
local old = S.size or 0
local now = server_ms()
local used = scan(S, now)
-- kept: until when the record stays, whatever comes and goes (settle)
S.kept = now + tonumber(ARGV[3])
local W = {{'hset', KEYS[1], 'size', ARGV[1], 'kept', S.kept}}
purge(S, W)
S.last = latest(S, now)
settle(S, W, now, used)
local no = run(W, {{ARGV[2], KEYS[2]}})
if no then
  return no
end
tell(ARGV[2], KEYS[2], 0)
return old
