-- Take or re-enter a read lock (Redisson RReadWriteLock's layout). A waiting
-- writer blocks new readers, not re-entries (as sync.RWMutex). Other readers'
-- lapsed entries are left to writers: a read costs the same however many.
-- KEYS[1]  the lock hash: mode, <owner> = read count, <owner>:write = write count
-- KEYS[2]  this owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
-- KEYS[3]  waiting writers, zset {<name>}:rwlock_write_waiters (score: expiry)
-- KEYS[4]  fencing token counter, redisson_lock_token:{<name>}
-- KEYS[5]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (with 'latch'; else any key of the slot, unused)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  owner id .. ':write'
-- ARGV[4]  'minted', 'latch' or '', as in lock/lua/acquire.lua
-- ARGV[5]  the latch's life in milliseconds
-- Asks the ACL nothing: a grant whose lease key or PEXPIRE is refused is undone.
-- Returns {count, token} when acquired; {0, ttl} when not (ms until it tries
-- again); {-2, kind} when another kind holds the name (1 a lock, 3 a semaphore).
local latch = ARGV[4] == 'latch' and KEYS[5]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local rec = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, held = rec[1], rec[2]
local pttl = redis.call('pttl', KEYS[1]) -- -2: no hash
if mode == false and pttl ~= -2 then
  -- one name, one kind: a lock's or a semaphore's hash is refused
  return {-2, redis.call('hexists', KEYS[1], 'size') == 1 and 3 or 1}
end
-- an own entry whose lease keys all expired (a lost hold) is dropped: counted
-- on, a new read would be a re-entry and pass a waiting writer. Lapsed writer
-- marks are left to writers: a full server refuses only a script's first write.
if held ~= false and mode == 'read' then
  local alive = false
  for j = 1, tonumber(held) do
    if redis.call('exists', KEYS[2] .. ':' .. j) == 1 then
      alive = true
      break
    end
  end
  if not alive then
    redis.call('hdel', KEYS[1], ARGV[2])
    held = false
    if redis.call('hlen', KEYS[1]) <= 1 then
      redis.call('del', KEYS[1])
      mode, pttl = false, -2
    end
  end
end
held = held and tonumber(held)

-- stale lists the owner's lease keys 1..count and the hash that end within a
-- lease (read before any write): a grant, first or returned again, renews them.
local function stale(count)
  local keys = {}
  for j = 1, count do
    if redis.call('pttl', KEYS[2] .. ':' .. j) < lease then
      keys[#keys + 1] = KEYS[2] .. ':' .. j
    end
  end
  if pttl < lease then
    keys[#keys + 1] = KEYS[1]
  end
  return keys
end

local function renew(keys)
  for _, k in ipairs(keys) do
    redis.call('pexpire', k, lease)
  end
end

if held and ARGV[4] == 'minted' then
  -- an earlier run of this acquisition took it: the same grant
  local keys = stale(held)
  local token = last(KEYS[4])
  renew(keys)
  return {held, token}
end
local done = held and granted(latch)
if done then
  renew(stale(held))
  return {held, done}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return {0, pttl}
end
if not held and mode ~= 'write' then
  -- the first live mark: lapsed ones (rare) are read past, not purged, as
  -- this script writes nothing before its grant
  local first, i = {}, 0
  repeat
    first = redis.call('zrange', KEYS[3], i, i, 'withscores')
    i = i + 1
  until #first == 0 or tonumber(first[2]) > now
  if #first > 0 then
    -- a writer waits: new readers queue behind it
    local ttl = tonumber(first[2]) - now
    if pttl > 0 and pttl < ttl then ttl = pttl end
    return {0, ttl}
  end
end

-- the grant: a re-entry renews the owner's earlier lease keys too
local ind = (held or 0) + 1
local keys = stale(ind - 1)
local token = keep(KEYS[4], draw(KEYS[4], t), latch, ARGV[5])
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], '1') -- stale listed it: no TTL
else
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
end
local leaseKey = KEYS[2] .. ':' .. ind
local failed -- 'set', or the key whose PEXPIRE was refused
local r = redis.pcall('set', leaseKey, '1', 'px', ARGV[1])
if r.err then -- a status reply is a table too: {ok = 'OK'}
  failed = 'set'
else
  for _, k in ipairs(keys) do
    if type(redis.pcall('pexpire', k, lease)) == 'table' then
      failed = k
      break
    end
  end
end
if failed then
  -- undo the grant, then raise the refusal again from its line
  if failed ~= 'set' then
    redis.call('del', leaseKey)
  end
  if mode == false then
    redis.call('del', KEYS[1])
  elseif ind == 1 then
    redis.call('hdel', KEYS[1], ARGV[2])
  else
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
  end
  if failed == 'set' then
    redis.call('set', leaseKey, '1', 'px', ARGV[1])
  end
  redis.call('pexpire', failed, lease)
end
return {ind, token}
