-- Acquire or re-enter a fair lock (RFairLock's layout, lua/wake.lua): a free
-- lock goes to the caller when nobody waits or it is first; else it is queued
-- once, its deadline now + mark life, kept by trying within a third of that.
-- KEYS[1]  the lock hash (the lock name); field <owner> = reentry count
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[3]  the acquire latch with 'latch'; else any key of the slot, unused
-- KEYS[4]  the waiter list, redisson_lock_queue:{<name>}
-- KEYS[5]  the waiters' deadlines, redisson_lock_timeout:{<name>}
-- KEYS[6]  relock's waiters, relock_fair_waiter:{<name>} (lua/wake.lua)
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id
-- ARGV[3]  'minted', 'latch' or '', as in lua/acquire.lua
-- ARGV[4]  the latch's life in milliseconds
-- ARGV[5]  the mark life in milliseconds; 0 (TryLock, Redlock) takes no place
-- ARGV[6]  the waiter's id (its channel's suffix): a seat of its process
-- ARGV[7]  '1' when a release may write the waiter's hold (not where its
--          replica sync asks for a WAIT after the acquisition)
-- Unlike RFairLock's, deadlines are server time, renewed by the live waiter
-- (docs/edges.md). Asks the ACL nothing, as lua/acquire.lua.
-- Returns the token alone when the lock was free, {count, token} on a re-entry
-- or a second run, {0, wait} when it must wait (ms until it tries again, at
-- most a third of the mark life), {-2, kind} when another kind holds the name.
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
      -- a second run: the lease runs from it, as the caller measures it
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
-- only a minted waiter whose hold needs no WAIT may be handed the lock by a
-- release; the others are listed with lease 0, to be woken
local grantable = ARGV[3] == 'minted' and ARGV[7] == '1'
redis.call('hset', KEYS[6], ARGV[6], (grantable and ARGV[1] or '0') .. ':' .. ARGV[2])
redis.call('pexpire', KEYS[6], life)
-- the list and the zset live as long as a waiter renews its place
redis.call('pexpire', KEYS[4], life)
redis.call('pexpire', KEYS[5], life)
return {0, math.max(math.min(wait, math.floor(life / 3)), 1)}
