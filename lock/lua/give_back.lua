-- Give back an acquisition that gave up after a run whose reply was lost:
-- the latch acquire.lua left tells whether that run counted. Safe to retry:
-- the first run deletes the latch.
-- KEYS[1]  the lock hash
-- KEYS[2]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
-- KEYS[3]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[4]  a fair lock's waiter list, redisson_lock_queue:{<name>}
--          (KEYS[4] to KEYS[7] are absent for a lock)
-- KEYS[5]  a fair lock's deadlines, redisson_lock_timeout:{<name>}
-- KEYS[6]  a fair lock's fencing counter, redisson_lock_token:{<name>}
-- KEYS[7]  a fair lock's waiters hash, relock_fair_waiter:{<name>}
-- ARGV[1]  owner id
-- ARGV[2]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  fair lock: '1' when a release may write the first waiter's hold
-- Returns 1 when a count was given back, 2 when the lock was freed but the
-- waiters not told (Redis 6), 0 when there was none to give, or may's NOPERM.
local fair = KEYS[4] ~= nil
local no = may({{'hget', KEYS[1]}, {'del', KEYS[2]}, {'hincrby', KEYS[1]}, {'del', KEYS[1]}},
  fair and woken(ARGV[3], KEYS[3], KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]) or {{ARGV[3], KEYS[3]}})
if no then
  return no
end
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
local told
if fair then
  told = wake(ARGV[3], KEYS[3], ARGV[2], KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[4])
else
  told = tell(ARGV[3], KEYS[3], ARGV[2]) -- a lock's script has no wake.lua
end
return told and 1 or 2
