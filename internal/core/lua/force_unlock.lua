-- Force-unlock a lock, rwlock or semaphore whoever holds it, and wake its
-- waiters on Redisson's channel (ForceUnlock, ForceRelease, relock unlock).
-- KEYS[1]  the hash, the lock's name
-- KEYS[2]  the channel: redisson_lock__channel:{<name>} (lock),
--          redisson_rwlock:{<name>} (rwlock), redisson_sc:{<name>} (semaphore)
-- KEYS[3]  rwlock: readers' lease key prefix, {<name>} (keys
--          {<name>}:<owner>:rwlock_timeout:<i>); semaphore: the permits zset
--          {<name>}:permits; lock: the owners a force unlock ended,
--          redisson_unlock_latch:{<name>}:forced (owner -> 1), kept for their
--          lease, so that their release tells this loss from a lost reply
-- KEYS[4]  semaphore: the permit weights hash {<name>}:weights; else unused
-- ARGV[1]  the kind the caller saw: lock, rwlock or semaphore
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- Returns 1 when something was released (message published), 0 when the
-- hash is gone, -1 when it is no longer of kind ARGV[1] (nothing changed).
local kind = ARGV[1]
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return 0
end
local isRW = redis.call('hexists', KEYS[1], 'mode') == 1
local isSem = redis.call('hexists', KEYS[1], 'size') == 1
if (kind == 'rwlock') ~= isRW or (kind == 'semaphore') ~= isSem then
  return -1
end
if kind == 'semaphore' then
  -- the size record stays (the semaphore's configuration); every permit goes
  redis.call('del', KEYS[3], KEYS[4])
  redis.call('hset', KEYS[1], 'used', 0)
  redis.call(ARGV[2], KEYS[2], 0)
  return 1
end
if kind == 'rwlock' then
  local fields = redis.call('hgetall', KEYS[1])
  for i = 1, #fields, 2 do
    local f, c = fields[i], tonumber(fields[i + 1])
    if f ~= 'mode' and c ~= nil and string.sub(f, -6) ~= ':write' then
      for j = 1, c do
        redis.call('del', KEYS[3] .. ':' .. f .. ':rwlock_timeout:' .. j)
      end
    end
  end
end
if kind == 'lock' and KEYS[3] then
  local owners = redis.call('hkeys', KEYS[1])
  local ttl = redis.call('pttl', KEYS[1])
  if #owners > 0 and ttl > 0 then
    for _, o in ipairs(owners) do
      redis.call('hset', KEYS[3], o, 1)
    end
    if redis.call('pttl', KEYS[3]) < ttl then
      redis.call('pexpire', KEYS[3], ttl)
    end
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], 0)
return 1
