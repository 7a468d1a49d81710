-- Give back the permits of one acquisition and wake the waiters; safe to
-- retry through the latch.
--
-- KEYS[1]  the semaphore hash
-- KEYS[2]  live permits zset
-- KEYS[3]  permit weights hash
-- KEYS[4]  the channel, redisson_sc:{<name>}
-- KEYS[5]  the latch, redisson_unlock_latch:{<name>}:<request id>
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
if redis.call('zscore', KEYS[2], ARGV[1]) == false then
  return -1
end
local n = tonumber(redis.call('hget', KEYS[3], ARGV[1])) or 0
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[3], ARGV[1])
local used = (tonumber(redis.call('hget', KEYS[1], 'used')) or 0) - n
if used < 0 then used = 0 end
redis.call('hset', KEYS[1], 'used', used)
redis.call(ARGV[2], KEYS[4], n)
redis.call('set', KEYS[5], 1, 'px', ARGV[3])
return 1
