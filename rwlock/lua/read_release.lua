-- Release one read acquisition (RReadWriteLock's read unlock), safe to retry
-- through the latch. Crashed readers are purged; with no holder left the lock
-- goes and waiters are told, else it lives as long as the longest reader lease.
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- KEYS[3]  this owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
-- KEYS[4]  key prefix of the lock, {<name>}
-- KEYS[5]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- KEYS[6]  a give-back's latch (absent for a release): an acquisition's,
--          relock_acquire_latch:{<name>}:<request id>, or a downgrade's,
--          KEYS[5]'s form; the count goes back only if that run counted
-- ARGV[1]  owner id
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- ARGV[3]  latch lifetime in milliseconds
-- Returns 1 when the lock was freed (message published), 2 when freed with the
-- waiters not told (Redis 6), 0 when holders remain, -1 when the owner holds no
-- read lock, -2 when a give-back's run had not counted, or may's NOPERM error.
local lease1 = KEYS[3] .. ':1'
local no = may({{'get', KEYS[5]}, {'del', lease1}, {'pttl', lease1}, {'hincrby', KEYS[1]}, {'hdel', KEYS[1]}, {'hget', KEYS[1]},
  {'hgetall', KEYS[1]}, {'hlen', KEYS[1]}, {'pexpire', KEYS[1]}, {'del', KEYS[1]},
  {ARGV[2], KEYS[2]}, {'set', KEYS[5]}}, KEYS[6] and {{'del', KEYS[6]}} or {})
if no then
  return no
end
local done = redis.call('get', KEYS[5])
if done ~= false then
  return tonumber(done)
end
if KEYS[6] and redis.call('del', KEYS[6]) == 0 then
  return -2
end
local c = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if c == nil then
  if KEYS[6] then
    -- its latch went above: a resend must not read that as "did not count"
    redis.call('set', KEYS[5], -1, 'px', ARGV[3])
  end
  return -1
end
redis.call('del', KEYS[3] .. ':' .. c)
if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
if redis.call('hget', KEYS[1], 'mode') == 'read' then
  -- purge crashed readers (every lease key expired), as the acquire scripts
  -- do; keep the hash as long as the longest remaining reader lease
  local longest = 0
  local fields = redis.call('hgetall', KEYS[1])
  for i = 1, #fields, 2 do
    local f, n = fields[i], tonumber(fields[i + 1])
    if f ~= 'mode' and n ~= nil then
      local last = -2
      for j = 1, n do
        local p = redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. j)
        if p > last then last = p end
      end
      if last == -2 then
        redis.call('hdel', KEYS[1], f)
      elseif last > longest then
        longest = last
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
  end
end
if redis.call('hlen', KEYS[1]) <= 1 then
  redis.call('del', KEYS[1])
  local res = tell(ARGV[2], KEYS[2], 0) and 1 or 2
  redis.call('set', KEYS[5], res, 'px', ARGV[3])
  return res
end
redis.call('set', KEYS[5], 0, 'px', ARGV[3])
return 0
