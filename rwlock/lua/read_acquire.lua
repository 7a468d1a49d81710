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
-- A command this user may not run is refused before anything is written
-- (may, from internal/scripts' lua/acl.lua), with an error reply naming
-- it.
--
-- Returns {count, token} when acquired; {0, ttl} when not, ttl being when
-- to try again at the latest (ms); {-2, kind} when another kind holds the
-- name (1 a lock, fair lock or election; 3 a semaphore).
local latch = ARGV[4] == 'latch' and KEYS[5]
local lease1 = KEYS[2] .. ':1'
local no = may({{'time'}, {'zrange', KEYS[3]},
  {'hget', KEYS[1]}, {'hset', KEYS[1]}, {'hincrby', KEYS[1]}, {'hdel', KEYS[1]}, {'hlen', KEYS[1]},
  {'hexists', KEYS[1]}, {'del', KEYS[1]}, {'pttl', KEYS[1]}, {'pexpire', KEYS[1]},
  {'exists', lease1}, {'set', lease1}, {'pttl', lease1}, {'pexpire', lease1}, latch and {'set', latch}}, fenced(KEYS[4]))
if no then
  return no
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])

-- renew extends the owner's lease keys 1..count, and the hash, to a
-- lease from now where they would end sooner: its holds share one lease,
-- and a second run of an acquisition returns a grant whose lease the
-- caller measures from this run's send.
local function renew(count)
  for j = 1, count do
    if redis.call('pttl', KEYS[2] .. ':' .. j) < lease then
      redis.call('pexpire', KEYS[2] .. ':' .. j, lease)
    end
  end
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
end

local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- one name serves one kind: a lock's hash (owner fields) or a
  -- semaphore's (field size) is refused, and nothing is written
  return {-2, redis.call('hexists', KEYS[1], 'size') == 1 and 3 or 1}
end
-- purge this owner's own entry when all its lease keys expired (a lost
-- hold): counting on from it would make a new read a re-entry, which
-- passes a waiting writer. Expired writer marks are left to the writers'
-- tries: a read that wrote nothing before its grant's HSET or HINCRBY is
-- refused whole by a full server, which refuses a script's first write
-- when it would grow memory, and no later one.
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
local mine = held ~= false
if mine and ARGV[4] == 'minted' then
  -- an earlier run of this acquisition took it: the same grant
  renew(tonumber(held))
  return {tonumber(held), last(KEYS[4])}
end
local done = mine and granted(latch)
if done then
  renew(tonumber(held))
  return {tonumber(held), done}
end
if mode == false or mode == 'read' or redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  if not mine and mode ~= 'write' then
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
  if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. ind, 1, 'px', lease)
  -- a re-entry renews the owner's earlier lease keys too, whichever key
  -- a release deletes
  renew(ind - 1)
  return {ind, grant(KEYS[4], latch, ARGV[5])}
end
return {0, redis.call('pttl', KEYS[1])}
