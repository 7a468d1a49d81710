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
-- Returns {1, token, ...} when the write lock ended (a token per reader handed
-- the read lock), {2, token, ...} with the waiters not told (Redis 6), {0} when
-- write counts remain, {-1} when the owner holds no write lock, {-2} when a
-- give-back's run had not counted, or may's NOPERM error; a second run returns
-- the first one's code alone (docs/edges.md).
local lease1 = KEYS[6] .. ':' .. ARGV[1] .. ':rwlock_timeout:1' -- a reader's lease key
local no = may({{'get', KEYS[3]}, {'hget', KEYS[1]}, {'set', KEYS[3]}, {'hincrby', KEYS[1]}, {'hdel', KEYS[1]}, {'hlen', KEYS[1]}, {'pttl', KEYS[1]},
  {'pexpire', KEYS[1]}, {'hset', KEYS[1]}, {'del', KEYS[1]}, {'time'}, {'zremrangebyscore', KEYS[4]},
  {'zcard', KEYS[4]}, {'set', lease1}, {ARGV[2], KEYS[2]}}, #ARGV >= 4 and fenced(KEYS[5]) or {},
  KEYS[7] and {{'del', KEYS[7]}} or {})
if no then
  return no
end
local done = redis.call('get', KEYS[3])
if done ~= false then
  return {tonumber(done)}
end
if KEYS[7] and redis.call('del', KEYS[7]) == 0 then
  return {-2}
end
local c = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if c == nil then
  if KEYS[7] then
    -- its latch went above: a resend must not read that as "did not count"
    redis.call('set', KEYS[3], -1, 'px', ARGV[3])
  end
  return {-1}
end
if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('set', KEYS[3], 0, 'px', ARGV[3])
  return {0}
end
redis.call('hdel', KEYS[1], ARGV[1])
local kept = redis.call('hlen', KEYS[1]) > 1 -- the writer's own reads
local out = {1}
if #ARGV >= 4 then
  local t = redis.call('time')
  redis.call('zremrangebyscore', KEYS[4], '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  if redis.call('zcard', KEYS[4]) == 0 then
    local longest = kept and redis.call('pttl', KEYS[1]) or 0
    for i = 4, #ARGV, 2 do
      local lease = tonumber(ARGV[i + 1])
      local ind = redis.call('hincrby', KEYS[1], ARGV[i], 1)
      redis.call('set', KEYS[6] .. ':' .. ARGV[i] .. ':rwlock_timeout:' .. ind, 1, 'px', lease)
      longest = math.max(longest, lease)
      out[#out + 1] = fence(KEYS[5])
    end
    kept = true
    redis.call('pexpire', KEYS[1], longest)
  end
end
if kept then
  redis.call('hset', KEYS[1], 'mode', 'read')
else
  redis.call('del', KEYS[1])
end
if not tell(ARGV[2], KEYS[2], 1) then
  out[1] = 2
end
redis.call('set', KEYS[3], out[1], 'px', ARGV[3])
return out
