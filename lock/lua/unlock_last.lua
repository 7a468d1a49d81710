-- Release the last count of a reentrant lock this process knows of, the
-- common unlock, with no latch key to write. When Redis holds more counts
-- than the caller knew, nothing is changed and -2 sends the caller to
-- unlock.lua, whose latch makes a decrement safe to retry.
--
-- A run that finds the owner's field gone may follow an earlier run of
-- the same release whose reply was lost (the client sends a command again
-- on its own after a broken connection), or the hold was lost. It returns
-- -1 where Redis shows a loss: the owner is in the record of holds a
-- force unlock ended (KEYS[4]), or the fencing counter is gone (a flush, a
-- restart without persistence). Otherwise -3: the caller reads it as its
-- own earlier release unless its lease lapsed meanwhile.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the fencing counter, redisson_lock_token:{<name>}
-- KEYS[4]  the owners a force unlock ended, redisson_unlock_latch:{<name>}:forced
-- KEYS[5]  a fair lock's waiter list, redisson_lock_queue:{<name>}
--          (KEYS[5] to KEYS[7] are absent for a lock: wake, from
--          lua/wake.lua, publishes on the channel)
-- KEYS[6]  a fair lock's deadlines, redisson_lock_timeout:{<name>}
-- KEYS[7]  a fair lock's waiters hash, relock_fair_waiter:{<name>}
-- ARGV[1]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[2]  owner id
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  a fair lock's: '1' when a release may write the first waiter's
--          hold (lua/wake.lua)
--
-- Returns 1 when released (key deleted, message published), 2 when
-- released but the message could not be published (a fair lock's, on a
-- server too old to refuse it beforehand: the waiters were not told), -1 when the owner does
-- not hold the lock and Redis shows it lost, -3 when it does not hold it
-- and Redis shows no loss, -2 when it holds more than one count.
-- A fair lock's release loads internal/scripts' lua/fence.lua (may) and
-- lua/wake.lua, and asks beforehand what runs after its first write. A
-- lock's loads nothing: its channel's PUBLISH, the command most likely
-- refused, runs before the DEL, so that a refusal leaves the lock held
-- and internal/scripts names the command from the line Redis reports.
-- Waiters told first try only after this script, when the key is gone.
local fair = KEYS[5] ~= nil
if fair then
  local no = may(woken(ARGV[3], KEYS[2], KEYS[1], KEYS[5], KEYS[6], KEYS[3], KEYS[7]))
  if no then
    return no
  end
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
  if redis.call('exists', KEYS[3]) == 0 or redis.call('hexists', KEYS[4], ARGV[2]) == 1 then
    return -1
  end
  return -3
end
if tonumber(count) > 1 then
  return -2
end
if fair then
  redis.call('del', KEYS[1])
  return wake(ARGV[3], KEYS[2], ARGV[1], KEYS[1], KEYS[5], KEYS[6], KEYS[3], KEYS[7], ARGV[4]) and 1 or 2
end
if ARGV[3] == 'spublish' then
  redis.call('spublish', KEYS[2], ARGV[1])
else
  redis.call('publish', KEYS[2], ARGV[1])
end
redis.call('del', KEYS[1])
return 1
