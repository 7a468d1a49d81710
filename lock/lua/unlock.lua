-- Release one count of a reentrant lock (Redisson RLock's unlock). Safe to
-- retry: the first run leaves its answer in a short-lived latch, which a
-- retry whose first reply was lost returns instead of decrementing again.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the unlock latch, redisson_unlock_latch:{<name>}:<request id>
-- KEYS[4]  a fair lock's waiter list, redisson_lock_queue:{<name>}
--          (KEYS[4] to KEYS[7] are absent for a lock)
-- KEYS[5]  a fair lock's deadlines, redisson_lock_timeout:{<name>}
-- KEYS[6]  a fair lock's fencing counter, redisson_lock_token:{<name>}
-- KEYS[7]  a fair lock's waiters hash, relock_fair_waiter:{<name>}
-- ARGV[1]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[2]  lease in milliseconds, re-applied while counts remain
-- ARGV[3]  owner id
-- ARGV[4]  publish command: publish, or spublish on a cluster
-- ARGV[5]  latch lifetime in milliseconds
-- ARGV[6]  fair lock: '1' when a release may write the first waiter's hold
-- Returns 1 when released (key deleted, message published), 2 when a fair
-- lock's waiters were not told (Redis 6), 0 when a count remains, -1 when the
-- owner does not hold the lock, or may's NOPERM error. A release reads first
-- and asks may only about the writes after its first (docs/edges.md).
local fair = KEYS[4] ~= nil
local done = redis.call('get', KEYS[3])
if done ~= false then
  return tonumber(done)
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]))
if count == nil then
  return -1
end
if count > 1 then
  local no = may({{'hincrby', KEYS[1]}, {'set', KEYS[3]}})
  if no then
    return no
  end
  -- PEXPIRE first: a full server refuses only a first write that may grow
  -- memory, such as HINCRBY
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
if fair then
  local W = {{'del', KEYS[1]}}
  local ch, msg = waking(W, KEYS[2], ARGV[1], KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[6])
  -- the channel is asked about even when nobody waits: a user who may not
  -- publish learns it at the first release
  local no = run(W, {{ARGV[4], KEYS[2]}, {'set', KEYS[3]}})
  if no then
    return no
  end
  local res = (not ch or tell(ARGV[4], ch, msg)) and 1 or 2
  redis.call('set', KEYS[3], res, 'px', ARGV[5])
  return res
end
local no = may({{'set', KEYS[3]}})
if no then
  return no
end
if ARGV[4] == 'spublish' then
  redis.call('spublish', KEYS[2], ARGV[1])
else
  redis.call('publish', KEYS[2], ARGV[1])
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
