-- Test fixture: what Redisson's RFairLock.tryLock(wait) does on the server,
-- written anew from a reading of RedissonFairLock: client time, and deadlines
-- that form a chain, each threadWaitTime past the one before.
-- KEYS[1] the lock hash; KEYS[2] redisson_lock_queue:{name};
-- KEYS[3] redisson_lock_timeout:{name}
-- ARGV[1] lease ms; ARGV[2] the thread's lock name (<client uuid>:<thread>);
-- ARGV[3] threadWaitTime ms; ARGV[4] the client's time in ms
-- Returns nil when the thread took (or re-entered) the lock, else the time in
-- ms it should wait before trying again.
local now = tonumber(ARGV[4])
local wait = tonumber(ARGV[3])
-- drop the waiters at the head whose deadline has passed
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then break end
  local deadline = tonumber(redis.call('zscore', KEYS[3], first))
  if deadline ~= nil and deadline > now then break end
  redis.call('zrem', KEYS[3], first)
  redis.call('lpop', KEYS[2])
end
-- free, and nobody waits or this thread is first: take it, and move every
-- other deadline one threadWaitTime closer
if redis.call('exists', KEYS[1]) == 0 and
   (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  for _, waiter in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -wait, waiter)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
-- queued already: roughly how long until its turn
local mine = redis.call('zscore', KEYS[3], ARGV[2])
if mine ~= false then
  return tonumber(mine) - wait - now
end
-- join the line, with a deadline one threadWaitTime past the last one's
-- (or past the lock's expiry)
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
