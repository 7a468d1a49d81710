-- Take, or re-enter, a write lock in Redisson's RReadWriteLock layout. A
-- writer that has to wait marks itself in the waiters set, which blocks new
-- readers until it gets in, gives up, or its mark (a lease) expires.
--
-- KEYS[1]  the lock hash (mode, <owner> read counts, <owner>:write count)
-- KEYS[2]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[3]  fencing token counter, redisson_lock_token:{<name>} (fence:
--          internal/scripts' lua/fence.lua, loaded before this source)
-- KEYS[4]  key prefix of the lock, {<name>}, for readers' lease keys
-- KEYS[5]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (with 'latch'; else any key of the slot, unused)
-- ARGV[1]  lease in milliseconds (also the life of the waiting mark)
-- ARGV[2]  owner id .. ':write'
-- ARGV[3]  owner id (its read hold makes this an upgrade, refused)
-- ARGV[4]  owner id as the member of the waiters set, or "" for an
--          attempt that must not mark (one made before the writer queued
--          locally: the local queue's head is the process's one writer in
--          line)
-- ARGV[5]  'minted', 'latch' or '': how a second run of this acquisition
--          (a retry after a lost reply, go-redis's resend) is told from
--          another one, as in lock/lua/acquire.lua: an owner minted for it
--          finds its own grant; otherwise the acquire latch KEYS[5] holds
--          the first run's token ('': a Redlock member, which counts runs
--          itself)
-- ARGV[6]  the latch's life in milliseconds
--
-- No ACL question is asked beforehand: the token and the latch (another
-- key pattern) are written before the hash, and a new hold whose PEXPIRE
-- is refused is deleted, so a refusal changes no hold, and internal/scripts
-- names the command from its line. Only a crashed reader's fields, dropped
-- first, may be gone.
--
-- Returns {count, token} when acquired; {-1, 0} when the owner holds only
-- a read lock (upgrade); {0, ttl} when it must wait, ttl being when to try
-- again at the latest: the earliest reader lease end, the hash's TTL, and
-- no more than a third of the lease, so that the mark is kept fresh;
-- {-2, kind} when another kind holds the name (1 a lock, fair lock or
-- election; 3 a semaphore).
local latch = ARGV[5] == 'latch' and KEYS[5]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])

local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- one name serves one kind: a lock's hash (owner fields) or a
  -- semaphore's (field size) is refused, and nothing is written
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

-- Expired writer marks are purged after the first write that may grow
-- memory (the token's SET, ZADD): a full server refuses a script's first
-- such write and no later one, so a new acquisition is refused whole
-- there; and before the hold, so that their refusal leaves no hold.
if mode == false then
  local token = keep(KEYS[3], draw(KEYS[3]), latch, ARGV[6])
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
  local token = keep(KEYS[3], draw(KEYS[3]), latch, ARGV[6])
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
