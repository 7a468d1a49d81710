-- Take a fair lock's waiter out of the list (it gave up) and, when the lock
-- is free and it was first, serve the next waiter. A hold a release wrote
-- for it meanwhile is given back the same way.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[4]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[5]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[6]  relock's waiters, relock_fair_waiter:{<name>} (lua/wake.lua)
-- ARGV[1]  the waiter's id
-- ARGV[2]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  '1' when a release may write the first waiter's hold
-- ARGV[5]  the waiter's owner id
-- Returns 1 when the waiter was in the list, 0 when not, or may's NOPERM
-- error. A waiter left untold (Redis 6) tries again by its deadline.
local no = may({{'hexists', KEYS[1]}, {'exists', KEYS[1]}, {'lrem', KEYS[3]}, {'del', KEYS[1]}}, woken(ARGV[3], KEYS[2], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]))
if no then
  return no
end
local first = head(KEYS[3], KEYS[4], now(), KEYS[6])
local removed = redis.call('lrem', KEYS[3], 0, ARGV[1])
redis.call('zrem', KEYS[4], ARGV[1])
redis.call('hdel', KEYS[6], ARGV[1])
if redis.call('hexists', KEYS[1], ARGV[5]) == 1 then
  -- a release wrote its hold as it gave up (too late): on to the next in line
  redis.call('del', KEYS[1])
  wake(ARGV[3], KEYS[2], ARGV[2], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[4])
  return 1
end
if removed > 0 and first == ARGV[1] and redis.call('exists', KEYS[1]) == 0 then
  wake(ARGV[3], KEYS[2], ARGV[2], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[4])
end
return removed > 0 and 1 or 0
