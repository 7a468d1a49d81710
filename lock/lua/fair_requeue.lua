-- Give back a fair lock that its first waiter just took, and put the
-- waiter back at the head of the line: its acquisition was refused after
-- the fact (too few replicas acknowledged it), and it must not lose its
-- place for that. Nobody is woken: the waiter is first and tries again.
-- (lua/wake.lua is loaded before this source, for now.)
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[3]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[4]  relock's waiters, relock_fair_waiter:{<name>} (lua/wake.lua)
-- ARGV[1]  owner id
-- ARGV[2]  the mark life in milliseconds
-- ARGV[3]  the waiter's lease in milliseconds
-- ARGV[4]  the waiter's id in the list
--
-- A command this user may not run is refused before anything is written
-- (may, from internal/scripts' lua/fence.lua, loaded before this
-- source), with an error reply naming it.
--
-- Returns 1 when given back and queued again, -1 when the owner did not
-- hold the lock (nothing done).
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
