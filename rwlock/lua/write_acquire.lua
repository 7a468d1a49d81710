-- Take or re-enter a write lock (Redisson RReadWriteLock's layout). A writer
-- that must wait marks itself in the waiters set, which blocks new readers
-- until it gets in, gives up, or its mark (a lease) expires.
-- KEYS[1]  the lock hash (mode, <owner> read counts, <owner>:write count)
-- KEYS[2]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[3]  fencing token counter, redisson_lock_token:{<name>}
-- KEYS[4]  key prefix of the lock, {<name>}, for readers' lease keys
-- KEYS[5]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (with 'latch'; else any key of the slot, unused)
-- ARGV[1]  lease in milliseconds (also the life of the waiting mark)
-- ARGV[2]  owner id .. ':write'
-- ARGV[3]  owner id (its read hold makes this an upgrade, refused)
-- ARGV[4]  owner id as waiters set member, or "" not to mark (not queued locally)
-- ARGV[5]  'minted', 'latch' or '', as in lock/lua/acquire.lua
-- ARGV[6]  the latch's life in milliseconds
-- Asks the ACL nothing: a new hold whose PEXPIRE is refused is deleted.
-- Returns {count, token} when acquired; {-1, 0} when the owner holds only a
-- read lock (upgrade); {0, ttl} when it must wait (ms: the earliest reader
-- lease end or the TTL, at most a third of the lease, to keep the mark fresh);
-- {-2, kind} when another kind holds the name (1 a lock, 3 a semaphore).
local latch = ARGV[5] == 'latch' and KEYS[5]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])

local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- one name, one kind: a lock's or a semaphore's hash is refused
  return {-2, redis.call('hexists', KEYS[1], 'size') == 1 and 3 or 1}
end
local wake = -1 -- earliest end of a live reader's lease
if mode == 'read' then
  local fields = redis.call('hgetall', KEYS[1])
  for i = 1, #fields, 2 do
    local f, c = fields[i], tonumber(fields[i + 1])
    if f ~= 'mode' and c ~= nil then
      local last = -2
      for j = 1, c do
        local p = redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. j)
        if p > last then last = p end
      end
      if last == -2 then
        redis.call('hdel', KEYS[1], f)
      elseif last > 0 and (wake < 0 or last < wake) then
        wake = last
      end
    end
  end
  if redis.call('hlen', KEYS[1]) <= 1 then
    redis.call('del', KEYS[1])
    mode = false
  end
end

-- lapsed marks go after the first write that may grow memory (a full server
-- refuses only that one: a new acquisition fails whole) and before the hold
if mode == false then
  local token = keep(KEYS[3], draw(KEYS[3], t), latch, ARGV[6])
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  redis.call('zrem', KEYS[2], ARGV[4])
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], '1')
  -- a refused PEXPIRE must not leave the lock held with no TTL
  if type(redis.pcall('pexpire', KEYS[1], ARGV[1])) == 'table' then
    redis.call('del', KEYS[1])
    redis.call('pexpire', KEYS[1], ARGV[1]) -- the refusal again, raised from its line
  end
  return {1, token}
end
local held = redis.call('hget', KEYS[1], ARGV[2])
if mode == 'write' and held ~= false then
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  if ARGV[5] == 'minted' then
    -- an earlier run of this acquisition took it: the same grant
    return {tonumber(held), last(KEYS[3])}
  end
  local done = granted(latch)
  if done then
    return {tonumber(held), done}
  end
  local token = keep(KEYS[3], draw(KEYS[3], t), latch, ARGV[6])
  return {redis.call('hincrby', KEYS[1], ARGV[2], 1), token}
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return {-1, 0}
end

if ARGV[4] ~= '' then
  redis.call('zadd', KEYS[2], now + lease, ARGV[4])
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  if redis.call('pttl', KEYS[2]) < lease then
    redis.call('pexpire', KEYS[2], lease)
  end
end
local ttl = redis.call('pttl', KEYS[1])
if wake > 0 and (ttl < 0 or wake < ttl) then ttl = wake end
local fresh = math.floor(lease / 3)
if ttl < 0 or ttl > fresh then ttl = fresh end
return {0, ttl}
