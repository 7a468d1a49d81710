-- Give back the permits of one acquisition and wake the waiters; safe to
-- retry through the latch. Lapsed permits and marks are purged on the way
-- (purge, settle: state.lua, put before this source), the released
-- permit's own weight too when its lease had lapsed, so that a release
-- that finds its permit gone still leaves nothing without a TTL.
--
-- KEYS[1]  the semaphore hash
-- KEYS[2]  live permits zset
-- KEYS[3]  permit weights hash
-- KEYS[4]  the channel, redisson_sc:{<name>}
-- KEYS[5]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- KEYS[6]  waiters zset
-- KEYS[7]  waiter marks' expiry hash
-- ARGV[1]  permit id
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- ARGV[3]  latch lifetime in milliseconds
--
-- Returns 1 when released, -1 when the permit is not held (it expired and
-- was reclaimed, or was never taken).
local done = redis.call('get', KEYS[5])
if done ~= false then
  return tonumber(done)
end
local S = {hash = KEYS[1], permits = KEYS[2], weights = KEYS[3], waiters = KEYS[6], marks = KEYS[7]}
local now = server_ms()
local used = purge(S, now)
if redis.call('zscore', KEYS[2], ARGV[1]) == false then
  redis.call('hdel', KEYS[3], ARGV[1])
  settle(S, now, used)
  return -1
end
local n = tonumber(redis.call('hget', KEYS[3], ARGV[1])) or 0
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[3], ARGV[1])
used = used - n
if used < 0 then used = 0 end
settle(S, now, used)
redis.call(ARGV[2], KEYS[4], n)
redis.call('set', KEYS[5], 1, 'px', ARGV[3])
return 1
