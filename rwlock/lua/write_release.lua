-- Release one write acquisition (Redisson's RReadWriteLock write unlock),
-- safe to retry through the latch. At zero the lock is deleted, or, when
-- the writer still holds read locks (it downgraded), turns to read mode;
-- either way waiters are woken.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- KEYS[3]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- ARGV[1]  owner id .. ':write'
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- ARGV[3]  latch lifetime in milliseconds
--
-- Returns 1 when the write lock ended (message published), 0 when write
-- counts remain, -1 when the owner holds no write lock.
local done = redis.call('get', KEYS[3])
if done ~= false then
  return tonumber(done)
end
local c = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if c == nil then
  return -1
end
if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('set', KEYS[3], 0, 'px', ARGV[3])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[2], KEYS[2], 1)
redis.call('set', KEYS[3], 1, 'px', ARGV[3])
return 1
