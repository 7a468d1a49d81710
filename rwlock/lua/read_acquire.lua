-- Take, or re-enter, a read lock in Redisson's RReadWriteLock layout. A
-- writer waiting in the waiters set blocks new readers (not re-entries),
-- as in sync.RWMutex. Other readers whose every lease key has expired
-- are not looked for here: they block only writers, whose try purges them
-- (write_acquire.lua; a read release does too), so a read acquisition
-- costs the same however many readers hold the lock. The caller's own
-- entry is checked: a dead one is dropped, not counted on.
--
-- KEYS[1]  the lock hash: mode = read|write, <owner> = read count,
--          <owner>:write = write count
-- KEYS[2]  this owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
--          (one key :<i> per read acquisition, as Redisson)
-- KEYS[3]  waiting writers, zset {<name>}:rwlock_write_waiters (score =
--          expiry in server ms)
-- KEYS[4]  fencing token counter, redisson_lock_token:{<name>} (fence:
--          internal/scripts' lua/fence.lua, loaded before this source)
-- KEYS[5]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (with 'latch'; else any key of the slot, unused)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  owner id .. ':write'
-- ARGV[4]  'minted', 'latch' or '': how a second run of this acquisition
--          (a retry after a lost reply, go-redis's resend) is told from
--          another one, as in lock/lua/acquire.lua: an owner minted for it
--          finds its own grant; otherwise the acquire latch KEYS[5] holds
--          the first run's token ('': a Redlock member, which counts runs
--          itself)
-- ARGV[5]  the latch's life in milliseconds
--
-- No ACL question is asked beforehand: every read runs before the first
-- write, the token and the latch (another key pattern) are written before
-- the hash, and a grant whose lease key or PEXPIRE is refused is undone
-- before the refusal is raised again from its line. So a refusal changes
-- no hold, and internal/scripts names the command.
--
-- Returns {count, token} when acquired; {0, ttl} when not, ttl being when
-- to try again at the latest (ms); {-2, kind} when another kind holds the
-- name (1 a lock, fair lock or election; 3 a semaphore).
local latch = ARGV[4] == 'latch' and KEYS[5]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- one name serves one kind: a lock's hash (owner fields) or a
  -- semaphore's (field size) is refused, and nothing is written
  return {-2, redis.call('hexists', KEYS[1], 'size') == 1 and 3 or 1}
end
-- purge this owner's own entry when all its lease keys expired (a lost
-- hold): counting on from it would make a new read a re-entry, which
-- passes a waiting writer. Expired writer marks are left to the writers'
-- tries: a read that wrote nothing before its grant's writes is refused
-- whole by a full server, which refuses a script's first write when it
-- would grow memory, and no later one.
local held = redis.call('hget', KEYS[1], ARGV[2])
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
      mode = false
    end
  end
end
held = held and tonumber(held)

-- stale lists the owner's lease keys 1..count, and the hash, that would
-- end sooner than a lease from now (read before any write): its holds
-- share one lease, and a second run of an acquisition returns a grant
-- whose lease the caller measures from this run's send.
local function stale(count)
  local keys = {}
  for j = 1, count do
    if redis.call('pttl', KEYS[2] .. ':' .. j) < lease then
      keys[#keys + 1] = KEYS[2] .. ':' .. j
    end
  end
  if redis.call('pttl', KEYS[1]) < lease then
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
  return {0, redis.call('pttl', KEYS[1])}
end
if not held and mode ~= 'write' then
  -- the first live mark: lapsed ones (rare: writers purge them) are
  -- read past, since this script writes nothing before its grant
  local first, i = {}, 0
  repeat
    first = redis.call('zrange', KEYS[3], i, i, 'withscores')
    i = i + 1
  until #first == 0 or tonumber(first[2]) > now
  if #first > 0 then
    -- a writer waits: new readers queue behind it
    local ttl = tonumber(first[2]) - now
    local pttl = redis.call('pttl', KEYS[1])
    if pttl > 0 and pttl < ttl then ttl = pttl end
    return {0, ttl}
  end
end

-- the grant: a re-entry renews the owner's earlier lease keys too,
-- whichever key a release deletes
local ind = (held or 0) + 1
local keys = stale(ind - 1)
local token = keep(KEYS[4], draw(KEYS[4]), latch, ARGV[5])
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
