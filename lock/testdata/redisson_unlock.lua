-- Test fixture: what a Redisson client does on the wire when it releases an
-- RLock (RedissonLock.unlockInnerAsync), written from a reading of
-- Redisson's protocol, not copied.
-- KEYS[1]  the lock: a hash named after the lock
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  the unlock latch, redisson_unlock_latch:{<name>}:<request id>,
--          which keeps the answer so that a retried unlock does not release twice
-- ARGV[1]  the unlock message, 0 (Redisson's LockPubSub.UNLOCK_MESSAGE)
-- ARGV[2]  lease in milliseconds, set again while entries remain
-- ARGV[3]  the holder, "<Redisson client uuid>:<thread id>"
-- ARGV[4]  the publish command: publish (spublish on a sharded cluster)
-- ARGV[5]  how long the latch lives, in milliseconds
-- Returns 1 when the last entry was released (lock deleted, message
-- published), 0 when entries remain, nil when the holder does not hold the
-- lock (Redisson then throws IllegalMonitorStateException).
local earlier = redis.call('get', KEYS[3])
if earlier then
  return tonumber(earlier)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local released = 0
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
else
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  released = 1
end
redis.call('set', KEYS[3], released, 'px', ARGV[5])
return released
