-- Change the recorded size deliberately, and wake waiters (a larger size
-- may let them in). Permits held beyond a smaller size stay until released.
--
-- KEYS[1]  the semaphore hash
-- KEYS[2]  the channel
-- ARGV[1]  new size
-- ARGV[2]  publish command
--
-- Returns the previous size, or 0 when none was recorded.
local old = tonumber(redis.call('hget', KEYS[1], 'size')) or 0
redis.call('hset', KEYS[1], 'size', ARGV[1])
if redis.call('hexists', KEYS[1], 'used') == 0 then
  redis.call('hset', KEYS[1], 'used', 0)
end
redis.call(ARGV[2], KEYS[2], 0)
return old
