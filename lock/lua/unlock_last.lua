-- Release the last count of a reentrant lock this process knows of, the
-- common unlock, with no latch key to write: a retry whose first reply was
-- lost finds the field gone and answers -1, which the caller reads as
-- released unless the lease was lost. When Redis holds more counts than
-- the caller knew, nothing is changed and -2 sends the caller to
-- unlock.lua, whose latch makes a decrement safe to retry.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  a fair lock's waiter list, redisson_lock_queue:{<name>}
--          (KEYS[3] to KEYS[6] are absent for a lock: wake, from
--          lua/wake.lua, publishes on the channel)
-- KEYS[4]  a fair lock's deadlines, redisson_lock_timeout:{<name>}
-- KEYS[5]  a fair lock's fencing counter, redisson_lock_token:{<name>}
-- KEYS[6]  a fair lock's waiters hash, relock_fair_waiter:{<name>}
-- ARGV[1]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[2]  owner id
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  a fair lock's: '1' when a release may write the first waiter's
--          hold (lua/wake.lua)
--
-- HGET and DEL, the first write, are not asked beforehand: a refusal of
-- either changes nothing, and internal/scripts names the command. What
-- runs after the DEL is asked (may), with an error reply naming it.
--
-- Returns 1 when released (key deleted, message published), 2 when
-- released but the message could not be published (a server too old to
-- refuse it beforehand: the waiters were not told), -1 when the owner does
-- not hold the lock, -2 when it holds more than one count.
-- may and tell come from internal/scripts' lua/acl.lua (scripts.Checks).
local fair = KEYS[3] ~= nil
local no = may(fair and woken(ARGV[3], KEYS[2], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]) or {{ARGV[3], KEYS[2]}})
if no then
  return no
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
  return -1
end
if tonumber(count) > 1 then
  return -2
end
redis.call('del', KEYS[1])
local told
if fair then
  told = wake(ARGV[3], KEYS[2], ARGV[1], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[4])
else
  told = tell(ARGV[3], KEYS[2], ARGV[1]) -- a lock: loaded without the libraries
end
return told and 1 or 2
