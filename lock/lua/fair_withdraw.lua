-- Take a fair lock's waiter out of the list (it gave up: its wait bound,
-- its context, an error) and, when the lock is free and it was first,
-- wake the next waiter (lua/wake.lua, loaded before this source).
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[4]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- ARGV[1]  the waiter's id (its owner id)
-- ARGV[2]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[3]  publish command: publish, or spublish on a cluster
--
-- Returns 1 when the waiter was in the list, 0 when it was not.
local first = head(KEYS[3], KEYS[4], now()) -- the first live waiter
local removed = redis.call('lrem', KEYS[3], 0, ARGV[1])
redis.call('zrem', KEYS[4], ARGV[1])
if removed > 0 and first == ARGV[1] and redis.call('exists', KEYS[1]) == 0 then
  wake(ARGV[3], KEYS[2], ARGV[2], KEYS[3], KEYS[4])
end
return removed > 0 and 1 or 0
