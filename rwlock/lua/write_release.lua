-- Release one write acquisition (RReadWriteLock's write unlock), safe to
-- retry through the latch. At zero the lock goes, or turns to read mode (the
-- writer's own reads; readers of this process handed it unless a writer waits).
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- KEYS[3]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- KEYS[4]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[5]  fencing token counter, redisson_lock_token:{<name>}
-- KEYS[6]  key prefix of the lock, {<name>}
-- KEYS[7]  a give-back's acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (absent for a release): the count goes back only if that run counted
-- ARGV[1]  owner id .. ':write'
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- ARGV[3]  latch lifetime in milliseconds
-- ARGV[4], ARGV[5], ...  the readers to hand the lock to: owner id, then
--          lease in ms, each (none: a plain release)
-- As read_release.lua, it reads before its first write and asks the ACL
-- (may) only about the writes after that one (docs/edges.md).
-- Returns {1, token, ...} when the write lock ended (a token per reader handed
-- the read lock), {0} when write counts remain, {-1} when the owner holds no
-- write lock, {-2} when a give-back's run had not counted; a second run
-- returns the first one's code alone (docs/edges.md).
local done = redis.call('get', KEYS[3])
if done ~= false then
  return {tonumber(done)}
end
if KEYS[7] and redis.call('exists', KEYS[7]) == 0 then
  return {-2}
end
local fields = redis.call('hgetall', KEYS[1]) -- a write hold's hash is small
local h = {}
for i = 1, #fields, 2 do
  h[fields[i]] = tonumber(fields[i + 1])
end
local c = h[ARGV[1]]
if c == nil then
  if KEYS[7] then
    -- its latch goes: a resend must not read that as "did not count"
    local no = may({{'set', KEYS[3]}})
    if no then
      return no
    end
    redis.call('del', KEYS[7])
    redis.call('set', KEYS[3], -1, 'px', ARGV[3])
  end
  return {-1}
end
if c > 1 then
  local no = may({{'set', KEYS[3]}, {'hincrby', KEYS[1]}})
  if no then
    return no
  end
  -- a DEL first (the latch is absent): a full server refuses only a first
  -- write that may grow memory, such as HINCRBY
  redis.call('del', KEYS[7] or KEYS[3])
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('set', KEYS[3], 0, 'px', ARGV[3])
  return {0}
end
-- What the release leaves, read before any write: the writer's own reads,
-- and this process's readers to hand the read lock to unless a writer waits
-- (lapsed writer marks go after the first write).
local kept = #fields > 4 -- mode, this write, and more
local readers, now = {}, nil
if #ARGV >= 4 then
  local t = redis.call('time')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if redis.call('zcount', KEYS[4], '(' .. now, '+inf') == 0 then
    local counts = {}
    for i = 4, #ARGV, 2 do
      local owner = ARGV[i]
      counts[owner] = (counts[owner] or h[owner] or 0) + 1
      readers[#readers + 1] = {owner, tonumber(ARGV[i + 1]), counts[owner]}
    end
  end
end
local longest = #readers > 0 and kept and redis.call('pttl', KEYS[1]) or 0

-- Only what runs after the first write, the hash's HDEL or DEL (a full
-- server refuses only a first write that may grow memory), is asked (may).
-- The notice goes first.
local handing = #readers > 0
local no = may({{'set', KEYS[3]}, KEYS[7] and {'del', KEYS[7]} or false, now and {'zremrangebyscore', KEYS[4]} or false},
  handing and fenced(KEYS[5]) or {}, handing and {{'set', KEYS[6] .. ':' .. readers[1][1] .. ':rwlock_timeout:' .. readers[1][3]},
  {'hincrby', KEYS[1]}, {'pexpire', KEYS[1]}} or {}, (handing or kept) and {{'hset', KEYS[1]}} or {})
if no then
  return no
end
if ARGV[2] == 'spublish' then
  redis.call('spublish', KEYS[2], 1)
else
  redis.call('publish', KEYS[2], 1)
end
if #readers == 0 and not kept then
  redis.call('del', KEYS[1])
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
local out = {1}
for _, r in ipairs(readers) do
  out[#out + 1] = fence(KEYS[5])
  redis.call('set', KEYS[6] .. ':' .. r[1] .. ':rwlock_timeout:' .. r[3], 1, 'px', r[2])
  redis.call('hincrby', KEYS[1], r[1], 1)
  longest = math.max(longest, r[2])
end
if #readers > 0 then
  redis.call('pexpire', KEYS[1], longest)
end
if #readers > 0 or kept then
  redis.call('hset', KEYS[1], 'mode', 'read')
end
if now then
  redis.call('zremrangebyscore', KEYS[4], '-inf', now)
end
if KEYS[7] then
  redis.call('del', KEYS[7])
end
redis.call('set', KEYS[3], 1, 'px', ARGV[3])
return out
