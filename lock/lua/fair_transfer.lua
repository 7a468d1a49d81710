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
-- read first, then write what was planned (may checks it beforehand)
local W = {{'del', KEYS[1]}}
local at = now()
local first, gone = line(KEYS[3], KEYS[4], at)
drop(W, gone, KEYS[3], KEYS[4], KEYS[6])
if first and lease[first] then
  local token = grant(W, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], first, owner[first], lease[first])
  return run(W, {{ARGV[3], KEYS[5]}}) or {1, token, first}
end
local ch, msg
if first then
  ch = KEYS[5] .. ':' .. first
  msg = served(W, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], ARGV[2], first, at, ARGV[4])
end
local no = run(W, {{ARGV[3], KEYS[5]}}) -- asked even when nobody waits, as unlock.lua
if no then
  return no
end
if ch and not tell(ARGV[3], ch, msg) then
  return {2, 0, ''}
end
return {0, 0, ''}
