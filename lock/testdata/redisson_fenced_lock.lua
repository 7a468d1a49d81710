-- Test fixture: what a Redisson RFencedLock does on the wire when it takes
-- the lock and draws a token (RedissonFencedLock.tryLockInnerAsync), written
-- from a reading of Redisson's protocol, not copied.
-- KEYS[1]  the lock: a hash named after the lock
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds, set on the hash with PEXPIRE
-- ARGV[2]  the holder, "<Redisson client uuid>:<thread id>"
-- Returns {-1, token} when the lock was taken or re-entered (every entry
-- draws a new token), otherwise {pttl, -1}.
local holder = ARGV[2]
if redis.call('exists', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], holder) == 0 then
  return {redis.call('pttl', KEYS[1]), -1}
end
local token = redis.call('incr', KEYS[2])
redis.call('hincrby', KEYS[1], holder, 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {-1, token}
