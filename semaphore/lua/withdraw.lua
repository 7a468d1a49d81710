-- A waiter gives up: remove its mark and wake the waiters behind it.
--
-- KEYS[1]  waiters zset
-- KEYS[2]  waiter marks' expiry hash
-- KEYS[3]  the channel
-- ARGV[1]  waiter id
-- ARGV[2]  publish command
--
-- Returns 1 when a mark was removed.
redis.call('hdel', KEYS[2], ARGV[1])
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call(ARGV[2], KEYS[3], 0)
  return 1
end
return 0
