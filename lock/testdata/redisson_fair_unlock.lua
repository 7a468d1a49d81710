-- Test fixture: what Redisson's RFairLock.unlock() does on the server, written
-- anew from a reading of RedissonFairLock: the unlock message goes to the
-- first waiter's own channel only.
-- KEYS[1] the lock hash; KEYS[2] redisson_lock_queue:{name};
-- KEYS[3] redisson_lock_timeout:{name}; KEYS[4] redisson_lock__channel:{name}
-- ARGV[1] the unlock message (0); ARGV[2] lease ms; ARGV[3] the thread's
-- lock name; ARGV[4] the client's time in ms; ARGV[5] publish or spublish
-- Returns 1 when the lock is free after it, 0 when counts remain, nil when
-- the thread did not hold it.
local now = tonumber(ARGV[4])
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then break end
  local deadline = tonumber(redis.call('zscore', KEYS[3], first))
  if deadline ~= nil and deadline > now then break end
  redis.call('zrem', KEYS[3], first)
  redis.call('lpop', KEYS[2])
end
local function wake()
  local next = redis.call('lindex', KEYS[2], 0)
  if next ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1])
  end
end
if redis.call('exists', KEYS[1]) == 0 then
  wake()
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
wake()
return 1
