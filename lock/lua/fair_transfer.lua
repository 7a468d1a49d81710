-- Release a fair lock's last count; when the first live waiter is one of
-- this process's (a candidate), hand it the lock here, else serve it as
-- unlock_last.lua does. Safe to retry: a candidate holding it was handed it.
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[3]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[4]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[5]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[6]  relock's waiters, relock_fair_waiter:{<name>} (lua/wake.lua)
-- ARGV[1]  owner id releasing
-- ARGV[2]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  '1' when the hold of another process's first waiter may be written
-- ARGV[5], ARGV[6], ARGV[7], ...  the candidates: waiter id, owner id and
--          lease in ms, for each waiter of this process
-- Returns {1, token, waiter id} when handed to that waiter, {0, 0, ''} when
-- freed, {2, 0, ''} when freed but the first waiter not told (Redis 6),
-- {-1, 0, ''} when the releaser does not hold the lock, {-2, 0, ''} when it
-- holds more than one count (unchanged), or may's NOPERM error.
local no = may({{'hget', KEYS[1]}, {'hexists', KEYS[1]}, {'del', KEYS[1]}}, woken(ARGV[3], KEYS[5], KEYS[1], KEYS[3], KEYS[4], KEYS[2], KEYS[6]))
if no then
  return no
end
local owner, lease = {}, {}
for i = 5, #ARGV, 3 do
  owner[ARGV[i]], lease[ARGV[i]] = ARGV[i + 1], ARGV[i + 2]
end
local count = redis.call('hget', KEYS[1], ARGV[1])
if count == false then
  for id, o in pairs(owner) do
    if redis.call('hexists', KEYS[1], o) == 1 then
      return {1, last(KEYS[2]), id} -- a retry: handed over already
    end
  end
  return {-1, 0, ''}
end
if tonumber(count) > 1 then
  return {-2, 0, ''}
end
redis.call('del', KEYS[1])
local at = now()
local first = head(KEYS[3], KEYS[4], at, KEYS[6])
if first and lease[first] then
  redis.call('lpop', KEYS[3])
  redis.call('zrem', KEYS[4], first)
  redis.call('hdel', KEYS[6], first)
  redis.call('hset', KEYS[1], owner[first], 1)
  redis.call('pexpire', KEYS[1], lease[first])
  return {1, fence(KEYS[2]), first}
end
if first and not serve(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], ARGV[3], KEYS[5], ARGV[2], first, at, ARGV[4]) then
  return {2, 0, ''}
end
return {0, 0, ''}
