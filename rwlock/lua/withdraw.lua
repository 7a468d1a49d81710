-- A waiting writer gives up: remove its mark and wake the readers it was
-- holding back.
--
-- KEYS[1]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- ARGV[1]  owner id (the member)
-- ARGV[2]  publish command
--
-- Returns 1 when a mark was removed.
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], 1)
  return 1
end
return 0
