-- Change the recorded size deliberately, and wake waiters (a larger size
-- may let them in). Permits held beyond a smaller size stay until
-- released. The record lives while a permit or a mark does, and at least
-- ARGV[3] ms (purge, settle: state.lua, put before this source).
--
-- KEYS[1]  the semaphore hash
-- KEYS[2]  the channel
-- KEYS[3]  live permits zset
-- KEYS[4]  permit weights hash
-- KEYS[5]  waiters zset
-- KEYS[6]  waiter marks' expiry hash
-- ARGV[1]  new size
-- ARGV[2]  publish command
-- ARGV[3]  how long the record lives at least, in milliseconds (field
--          kept of the hash: until when, server ms)
--
-- A command this user may not run is refused before anything is written
-- (may, kept: state.lua), with an error reply naming it.
--
-- Returns the previous size, or 0 when none was recorded; -kind when
-- another kind holds the name (other_kind), with nothing written. Waiters the
-- server could not tell (a publish refused after the writes, on a server
-- too old to refuse it beforehand) try again by their marks' third.
local S = {hash = KEYS[1], permits = KEYS[3], weights = KEYS[4], waiters = KEYS[5], marks = KEYS[6]}
local no = may(kept(S), {{ARGV[2], KEYS[2]}})
if no then
  return no
end
load(S)
local other = other_kind(S)
if other then
  return -other
end
local old = S.size or 0
local now = server_ms()
local used = purge(S, now)
-- kept: until when the record stays, whatever comes and goes (settle)
S.kept = now + tonumber(ARGV[3])
redis.call('hset', KEYS[1], 'size', ARGV[1], 'kept', S.kept)
settle(S, now, used)
tell(ARGV[2], KEYS[2], 0)
return old
