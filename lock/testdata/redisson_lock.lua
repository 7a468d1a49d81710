-- Test fixture: what a Redisson client does on the wire when it takes an
-- RLock (RedissonLock.tryLockInnerAsync), written from a reading of
-- Redisson's protocol, not copied.
-- KEYS[1]  the lock: a hash named after the lock
-- ARGV[1]  lease in milliseconds, set on the hash with PEXPIRE
-- ARGV[2]  the holder, "<Redisson client uuid>:<thread id>"; its field in
--          the hash counts how many times it entered
-- Returns nil when the lock was taken or re-entered, otherwise the lock's
-- PTTL in milliseconds.
local holder = ARGV[2]
if redis.call('exists', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], holder) == 0 then
  return redis.call('pttl', KEYS[1])
end
redis.call('hincrby', KEYS[1], holder, 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return nil
