-- Acquire, or re-enter, a fair lock (lock.NewFair) in Redisson RFairLock's
-- layout: the lock hash of an RLock, a list of waiters in arrival order
-- and a zset of their deadlines (see lua/wake.lua, loaded before this
-- source with internal/scripts' lua/fence.lua, scripts.Tokens). The lock
-- goes to the first live waiter only: a free lock is taken when nobody
-- waits or the caller is the first in the list. A caller that must wait
-- is appended (once) and its deadline set to now + mark life; it keeps
-- its place by trying again before the deadline passes (every third of
-- it at least: the reply tells it when), and loses it if it does not.
--
-- Differences from RFairLock: deadlines are the server's time (TIME), not
-- each client's clock, and are renewed by the live waiter instead of
-- being a chain of threadWaitTime (5 min) past the one before, so a dead
-- waiter holds the line back for its mark life, not minutes; nothing is
-- subtracted from the other deadlines when the lock is taken. Lost
-- replies are handled as in lua/acquire.lua.
--
-- KEYS[1]  the lock hash (the lock name); field <owner> = reentry count
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[3]  the acquire latch (when ARGV[3] is 'latch'; else any key of the
--          slot, unused)
-- KEYS[4]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[5]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[6]  relock's waiters, relock_fair_waiter:{<name>}: each waiter
--          is listed with its lease and owner, so that a release may
--          write its hold (lua/wake.lua)
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id
-- ARGV[3]  'minted', 'latch' or '', as in lua/acquire.lua
-- ARGV[4]  the latch's life in milliseconds
-- ARGV[5]  the mark life in milliseconds; 0 takes no place in the list
--          (TryLock, a Redlock member)
-- ARGV[6]  the waiter's id in the list (its channel's suffix); a seat of
--          its process, reused by later waiters, so not the owner id
-- ARGV[7]  '1' when a release may write the waiter's hold: not where its
--          own replica sync asks for a WAIT after the acquisition, which
--          a hold written inside another process's release would not have
--
-- No ACL question is asked beforehand: the writes most likely refused
-- come first. The token (its counter, another key pattern) and the latch
-- are written before the hash; dropping lapsed waiters only shortens the
-- line; a refused PEXPIRE of a new hold deletes it. So a refusal changes
-- no hold, and internal/scripts names the command from its line.
--
-- Returns the token alone when the lock was free, {count, token} on a
-- re-entry or a second run, {0, wait} when the caller must wait: wait is
-- when to try again, in milliseconds (the lock's PTTL, or when the first
-- waiter's deadline passes), at most a third of the mark life; {-2,
-- kind} when another kind holds the name (2 an rwlock, 3 a semaphore).
local latch = ARGV[3] == 'latch' and KEYS[3]
local at = now()
local first = head(KEYS[4], KEYS[5], at, KEYS[6])
if redis.call('exists', KEYS[1]) == 0 then
  if first == false or first == ARGV[6] then
    local token = keep(KEYS[2], draw(KEYS[2]), latch, ARGV[4])
    if first then
      redis.call('lpop', KEYS[4])
      redis.call('zrem', KEYS[5], ARGV[6])
      redis.call('hdel', KEYS[6], ARGV[6])
    end
    redis.call('hset', KEYS[1], ARGV[2], '1')
    -- a refused PEXPIRE must not leave the lock held with no TTL
    local ttl = redis.pcall('pexpire', KEYS[1], ARGV[1])
    if type(ttl) == 'table' then
      redis.call('del', KEYS[1])
      redis.call('pexpire', KEYS[1], ARGV[1]) -- the refusal again, raised from its line
    end
    return token
  end
else
  local held = redis.call('hget', KEYS[1], ARGV[2])
  if held ~= false then
    if ARGV[3] == 'minted' then
      local token = last(KEYS[2])
      redis.call('pexpire', KEYS[1], ARGV[1])
      return {tonumber(held), token}
    end
    local done = granted(latch)
    if done then
      -- a second run: the hold's lease runs from it, as the caller
      -- measures it from this run's send
      redis.call('pexpire', KEYS[1], ARGV[1])
      return {tonumber(held), done}
    end
    local token = keep(KEYS[2], draw(KEYS[2]), latch, ARGV[4])
    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {count, token}
  end
  -- one name serves one kind (as in lua/acquire.lua)
  if redis.call('hexists', KEYS[1], 'mode') == 1 then
    return {-2, 2}
  elseif redis.call('hexists', KEYS[1], 'size') == 1 then
    return {-2, 3}
  end
end
local wait
if first == false or redis.call('exists', KEYS[1]) == 1 then
  wait = redis.call('pttl', KEYS[1])
else
  wait = tonumber(redis.call('zscore', KEYS[5], first)) - at
end
local life = tonumber(ARGV[5])
if life == 0 then
  return {0, wait}
end
if redis.call('zadd', KEYS[5], at + life, ARGV[6]) == 1 then
  redis.call('rpush', KEYS[4], ARGV[6])
end
-- Only a waiter minted for this acquisition, and whose hold needs no WAIT,
-- may be handed the lock by a release; the others are listed with lease
-- 0, for their owner's name, and are woken to try.
local grantable = ARGV[3] == 'minted' and ARGV[7] == '1'
redis.call('hset', KEYS[6], ARGV[6], (grantable and ARGV[1] or '0') .. ':' .. ARGV[2])
redis.call('pexpire', KEYS[6], life)
-- The list and the zset live as long as a waiter renews its place.
redis.call('pexpire', KEYS[4], life)
redis.call('pexpire', KEYS[5], life)
return {0, math.max(math.min(wait, math.floor(life / 3)), 1)}
