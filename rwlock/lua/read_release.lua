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
-- It reads what the release leaves before its first write, and asks the ACL
-- (may) only about the writes after that one (docs/edges.md).
-- Returns 1 when the lock was freed (message published), 0 when holders
-- remain, -1 when the owner holds no read lock, -2 when a give-back's run had
-- not counted; a second run returns the first one's answer.
local done = redis.call('get', KEYS[5])
if done ~= false then
  return tonumber(done)
end
if KEYS[6] and redis.call('exists', KEYS[6]) == 0 then
  return -2
end
-- The hash, read once: this owner's count, the mode, and what the release
-- leaves. Crashed readers (every lease key expired) go, as the acquire
-- scripts purge them; the hash lives as long as the longest reader lease
-- left. This owner keeps its leases 1..c-1.
local fields = redis.call('hgetall', KEYS[1])
local c, mode
for i = 1, #fields, 2 do
  if fields[i] == ARGV[1] then
    c = tonumber(fields[i + 1])
  elseif fields[i] == 'mode' then
    mode = fields[i + 1]
  end
end
if c == nil then
  if KEYS[6] then
    -- its latch goes: a resend must not read that as "did not count"
    local no = may({{'set', KEYS[5]}})
    if no then
      return no
    end
    redis.call('del', KEYS[6])
    redis.call('set', KEYS[5], -1, 'px', ARGV[3])
  end
  return -1
end
local left = #fields / 2 - (c == 1 and 1 or 0)
local gone, longest = {}, 0
if mode == 'read' then
  for i = 1, #fields, 2 do
    local f, n = fields[i], tonumber(fields[i + 1])
    if f == ARGV[1] then
      n = c > 1 and c - 1 or nil -- its last count goes: counted in left
    end
    if f ~= 'mode' and n ~= nil then
      local last = -2
      for j = 1, n do
        local p = redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. j)
        if p > last then last = p end
      end
      if last == -2 then
        gone[#gone + 1] = f
      elseif last > longest then
        longest = last
      end
    end
  end
end
local freed = left - #gone <= 1

-- Only what runs after the first write, a DEL (a full server refuses only a
-- first write that may grow memory), is asked (may): a refusal before it
-- changes nothing. The notice goes first, the latch last.
local lease = KEYS[3] .. ':' .. c
local no = may({{'set', KEYS[5]}, KEYS[6] and {'del', KEYS[6]} or false}, freed and {} or
  {{c > 1 and 'hincrby' or 'hdel', KEYS[1]}, longest > 0 and {'pexpire', KEYS[1]}, #gone > 0 and {'hdel', KEYS[1]}})
if no then
  return no
end
if freed then
  if ARGV[2] == 'spublish' then
    redis.call('spublish', KEYS[2], 0)
  else
    redis.call('publish', KEYS[2], 0)
  end
  redis.call('del', KEYS[1], KEYS[3] .. ':' .. c)
else
  redis.call('del', lease)
  if c > 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], -1)
  else
    redis.call('hdel', KEYS[1], ARGV[1])
  end
  for _, f in ipairs(gone) do
    redis.call('hdel', KEYS[1], f)
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
  end
end
if KEYS[6] then
  redis.call('del', KEYS[6])
end
redis.call('set', KEYS[5], freed and 1 or 0, 'px', ARGV[3])
return freed and 1 or 0
