-- Acquire, or re-enter, a reentrant lock in Redisson's RLock layout, and
-- draw a fencing token from Redisson RFencedLock's counter.
--
-- KEYS[1]  the lock hash (the lock name); field <owner> = reentry count
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id, <process uuid>:<sequence>
--
-- Returns the token alone when the lock was free (count 1): the common
-- case, kept to the fewest calls and a scalar reply. Returns {count,
-- token} on a re-entry (count > 1), {0, pttl} when another owner holds it.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return redis.call('incr', KEYS[2])
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {count, redis.call('incr', KEYS[2])}
end
return {0, redis.call('pttl', KEYS[1])}
