-- Release the last count of a lock this process knows of, with no latch. A
-- field found gone is this release's earlier run, its reply lost (-3), unless
-- Redis shows a loss (-1): a force unlock's record, or no counter.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the fencing counter, redisson_lock_token:{<name>}
-- KEYS[4]  the owners a force unlock ended, redisson_unlock_latch:{<name>}:forced
-- KEYS[5]  a fair lock's waiter list, redisson_lock_queue:{<name>}
--          (KEYS[5] to KEYS[7] are absent for a lock)
-- KEYS[6]  a fair lock's deadlines, redisson_lock_timeout:{<name>}
-- KEYS[7]  a fair lock's waiters hash, relock_fair_waiter:{<name>}
-- ARGV[1]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[2]  owner id
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  fair lock: '1' when a release may write the first waiter's hold
-- Returns 1 when released (key deleted, message published), 2 when a fair
-- lock's waiters were not told (Redis 6), -1 or -3 when not held (above), -2
-- when more than one count is held (unchanged: unlock.lua decrements), or a
-- refusal's error. A lock's PUBLISH runs before its DEL (docs/edges.md).
local fair = KEYS[5] ~= nil
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
  local W = {{'del', KEYS[1]}}
  local ch, msg = waking(W, KEYS[2], ARGV[1], KEYS[1], KEYS[5], KEYS[6], KEYS[3], KEYS[7], ARGV[4])
  local no = run(W, {{ARGV[3], KEYS[2]}}) -- asked even when nobody waits, as unlock.lua
  if no then
    return no
  end
  return (not ch or tell(ARGV[3], ch, msg)) and 1 or 2
end
if ARGV[3] == 'spublish' then
  redis.call('spublish', KEYS[2], ARGV[1])
else
  redis.call('publish', KEYS[2], ARGV[1])
end
redis.call('del', KEYS[1])
return 1
