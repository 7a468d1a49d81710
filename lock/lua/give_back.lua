-- Give back an acquisition that gave up after a run whose reply was lost:
-- the latch acquire.lua left tells whether that run counted. Safe to
-- retry: the first run deletes the latch, so a second one does nothing.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
-- KEYS[3]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[4]  a fair lock's waiter list, KEYS[5] its deadlines, KEYS[6] its
--          fencing counter and KEYS[7] its waiters hash (absent for a
--          lock; see lua/wake.lua)
-- ARGV[1]  owner id
-- ARGV[2]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  a fair lock's: '1' when a release may write the first waiter's
--          hold (lua/wake.lua)
--
-- Returns 1 when a count was given back, 0 when there was none to give.
if redis.call('del', KEYS[2]) == 0 then
  return 0
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if count == nil then
  return 0
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  return 1
end
redis.call('del', KEYS[1])
if KEYS[4] then
  wake(ARGV[3], KEYS[3], ARGV[2], KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[4])
else
  redis.call(ARGV[3], KEYS[3], ARGV[2]) -- a lock: loaded without the libraries
end
return 1
