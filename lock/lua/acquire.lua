-- Acquire, or re-enter, a reentrant lock in Redisson's RLock layout, and
-- draw a fencing token from Redisson RFencedLock's counter (draw and keep,
-- from internal/scripts' lua/fence.lua, which Load puts before this
-- source with lua/acl.lua's may).
--
-- Safe to run twice for one acquisition (a retry after a lost reply,
-- go-redis's own resend after a read timeout), so that a grant is never
-- left in Redis that nobody was told of. An owner minted for this
-- acquisition cannot have a field of its own unless an earlier run of it
-- put it there: that field is the grant, at one count. Any other
-- acquisition (an owner that other holds of this process share, a
-- re-entry) leaves its token in a short-lived latch, which a second run
-- returns instead of counting again.
--
-- KEYS[1]  the lock hash (the lock name); field <owner> = reentry count
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[3]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (when ARGV[3] is 'latch'; else any key of the slot, unused)
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id, <process uuid>:<sequence>
-- ARGV[3]  'minted' (an owner made for this acquisition), 'latch', or ''
--          (a caller that keeps its own count of runs: a Redlock member)
-- ARGV[4]  the latch's life in milliseconds
--
-- Reads come before the first write (HSET, HINCRBY or PEXPIRE of the
-- hash), the token's included (draw, from lua/fence.lua): a refusal of
-- any of those changes nothing, and internal/scripts names the command
-- refused. What runs after the first write is asked beforehand (may),
-- with an error reply naming it.
--
-- Returns the token alone when the lock was free (count 1): the common
-- case, kept to the fewest calls and a scalar reply. Returns {count,
-- token} on a re-entry or a second run, {0, pttl} when another owner holds
-- it, {-2, kind} when another kind holds the name (2 an rwlock, 3 a
-- semaphore).
local latch = ARGV[3] == 'latch' and KEYS[3]
-- HGET too, though it runs before any write: the release needs it, and a
-- user who could lock but not unlock would find out with the lock held.
local no = may({{'hget', KEYS[1]}, {'pexpire', KEYS[1]}, {'set', KEYS[2]}, latch and {'set', latch}})
if no then
  return no
end
if redis.call('exists', KEYS[1]) == 0 then
  local token = draw(KEYS[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return keep(KEYS[2], token, latch, ARGV[4])
end
local held = redis.call('hget', KEYS[1], ARGV[2])
if held == false then
  -- one name serves one kind: an rwlock's hash (field mode) or a
  -- semaphore's (field size) is refused, not waited on
  if redis.call('hexists', KEYS[1], 'mode') == 1 then
    return {-2, 2}
  elseif redis.call('hexists', KEYS[1], 'size') == 1 then
    return {-2, 3}
  end
  return {0, redis.call('pttl', KEYS[1])}
end
if ARGV[3] == 'minted' then
  -- an earlier run of this acquisition took it: the same grant (the
  -- token it drew, or a new one should the counter be gone)
  local token = tonumber(redis.call('get', KEYS[2]))
  local drawn = not token and draw(KEYS[2])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {tonumber(held), token or keep(KEYS[2], drawn, false)}
end
local done = granted(latch)
if done then
  -- a second run: the hold's lease runs from it, as the caller measures
  -- it from this run's send, not from the first run's
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {tonumber(held), done}
end
local token = draw(KEYS[2])
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {count, keep(KEYS[2], token, latch, ARGV[4])}
