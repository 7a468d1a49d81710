-- Delete a lock whoever holds it (Redisson's forceUnlock) and wake waiters.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- ARGV[1]  the unlock message (0)
-- ARGV[2]  publish command: publish, or spublish on a cluster
--
-- Returns 1 when a lock was deleted, 0 when there was none.
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
