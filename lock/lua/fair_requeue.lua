-- Give back a fair lock its first waiter just took, and put the waiter back
-- at the head of the line: too few replicas acknowledged its acquisition,
-- which must not cost it its place. Nobody is woken: it tries again.
-- KEYS[1]  the lock hash
-- KEYS[2]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[3]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[4]  relock's waiters, relock_fair_waiter:{<name>} (lua/wake.lua)
-- ARGV[1]  owner id
-- ARGV[2]  the mark life in milliseconds
-- ARGV[3]  the waiter's lease in milliseconds
-- ARGV[4]  the waiter's id in the list
-- Returns 1 when given back and queued again, -1 when the owner did not
-- hold the lock (nothing done), or may's NOPERM error.
local no = may({{'hget', KEYS[1]}, {'del', KEYS[1]}, {'time'}, {'zadd', KEYS[3]}, {'lpush', KEYS[2]}, {'hset', KEYS[4]},
  {'pexpire', KEYS[2]}, {'pexpire', KEYS[3]}, {'pexpire', KEYS[4]}})
if no then
  return no
end
if redis.call('hget', KEYS[1], ARGV[1]) == false then
  return -1
end
redis.call('del', KEYS[1])
local life = tonumber(ARGV[2])
if redis.call('zadd', KEYS[3], now() + life, ARGV[4]) == 1 then
  redis.call('lpush', KEYS[2], ARGV[4])
end
redis.call('hset', KEYS[4], ARGV[4], ARGV[3] .. ':' .. ARGV[1])
redis.call('pexpire', KEYS[2], life)
redis.call('pexpire', KEYS[3], life)
redis.call('pexpire', KEYS[4], life)
return 1
