-- Acquire or re-enter a lock (Redisson RLock's layout) and draw a fencing
-- token from RFencedLock's counter. Stands alone (no library): the common
-- path. Safe to run twice for one acquisition (docs/edges.md).
-- KEYS[1]  the lock hash (the lock name); field <owner> = reentry count
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- KEYS[3]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--          (only when ARGV[3] is 'latch'; else absent, with ARGV[4])
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id, <process uuid>:<sequence>
-- ARGV[3]  'minted' (an owner made for this acquisition), 'latch', or ''
--          (a caller that counts its own runs: a Redlock member)
-- ARGV[4]  the latch's life in milliseconds
-- Asks the ACL nothing: the likeliest refused writes (counter, latch) come first.
-- Returns the token alone when the lock was free (count 1), {count, token}
-- on a re-entry or a second run, {0, pttl} when another owner holds it,
-- {-2, kind} when another kind holds the name (2 an rwlock, 3 a semaphore).
local latch = ARGV[3] == 'latch' and KEYS[3]
-- a Redlock member draws max(counter + 1, server time), so that the tokens
-- of its masters follow one another as closely as their clocks agree
local member = ARGV[3] == ''

-- a second run returns what the first took; a refusal writes nothing
local held
if redis.call('exists', KEYS[1]) == 1 then
  held = redis.call('hget', KEYS[1], ARGV[2])
  if held == false then
    -- one name, one kind: an rwlock (field mode) or a semaphore (size)
    if redis.call('hexists', KEYS[1], 'mode') == 1 then
      return {-2, 2}
    elseif redis.call('hexists', KEYS[1], 'size') == 1 then
      return {-2, 3}
    end
    return {0, redis.call('pttl', KEYS[1])}
  end
  -- an earlier run of this acquisition took it: the same grant and token;
  -- the lease runs from this run, as the caller measures it from its send
  local done
  if ARGV[3] == 'minted' then
    done = tonumber(redis.call('get', KEYS[2]))
  elseif latch then
    done = tonumber(redis.call('get', latch))
  end
  if done then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {tonumber(held), done}
  end
end

-- The token: INCR before every other write. A counter below 2^50 (before
-- 2005 in microseconds) was lost, refused or Redisson's: the token is then
-- the server's time, written from TIME's digits (a Lua number loses digits).
local n = redis.call('incr', KEYS[2])
local us
if n < 1125899906842624 or member then
  local t = redis.call('time')
  us = t[1] .. string.sub('00000' .. t[2], -6)
  local now = tonumber(us)
  if now > n then
    n = now
  else
    us = nil
  end
end
if us and not held then
  redis.call('set', KEYS[2], us, 'px', '3600000')
else
  if us then
    redis.call('set', KEYS[2], us)
  end
  redis.call('pexpire', KEYS[2], '3600000')
end
if latch then
  redis.call('set', latch, string.format('%.0f', n), 'px', ARGV[4])
end

if not held then
  redis.call('hset', KEYS[1], ARGV[2], '1')
  -- a refused PEXPIRE must not leave the lock held with no TTL
  local ttl = redis.pcall('pexpire', KEYS[1], ARGV[1])
  if type(ttl) == 'table' then
    redis.call('del', KEYS[1])
    redis.call('pexpire', KEYS[1], ARGV[1]) -- the refusal again, raised from its line
    return ttl
  end
  return n
end
-- a minted owner's second run whose counter was gone keeps its count
local count = ARGV[3] == 'minted' and tonumber(held) or redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {count, n}
