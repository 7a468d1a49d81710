-- Acquire, or re-enter, a reentrant lock in Redisson's RLock layout, and
-- draw a fencing token from Redisson RFencedLock's counter: INCR while it
-- lives (RFencedLock's own way), the server's time in microseconds when it
-- was gone, so that tokens keep increasing across its loss. The script
-- stands alone (no library): this is the common path.
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
--          (only when ARGV[3] is 'latch'; else absent, with ARGV[4])
-- ARGV[1]  lease in milliseconds (PEXPIRE of the hash)
-- ARGV[2]  owner id, <process uuid>:<sequence>
-- ARGV[3]  'minted' (an owner made for this acquisition), 'latch', or ''
--          (a caller that keeps its own count of runs: a Redlock member)
-- ARGV[4]  the latch's life in milliseconds
--
-- It asks the ACL nothing: the writes run in the order their refusal is
-- most likely, the counter's (another key pattern) first, then the
-- latch's, then the hash's, so that a refusal changes no hold (a token may
-- be skipped), and internal/scripts names the command refused from the
-- line Redis reports. A refused PEXPIRE of the hash deletes it, so that
-- it is not left without a TTL; a user allowed a
-- command on one key pattern and refused it on another is a stated limit,
-- which relock doctor's ACL DRYRUN checks. The INCR may grow memory, so a
-- full server (maxmemory, noeviction) refuses the whole acquisition.
--
-- Returns the token alone when the lock was free (count 1): the common
-- case, kept to the fewest calls and a scalar reply. Returns {count,
-- token} on a re-entry or a second run, {0, pttl} when another owner holds
-- it, {-2, kind} when another kind holds the name (2 an rwlock, 3 a
-- semaphore).
local latch = ARGV[3] == 'latch' and KEYS[3]
-- A Redlock member's token is the largest of max(counter + 1, server
-- time in microseconds) on each master, so that tokens drawn from
-- different masters follow one another as closely as their clocks agree.
local member = ARGV[3] == ''

-- Refusals: a second run returns what the first took, another owner's
-- hold its TTL, another kind's hash its kind; none of them writes.
local held
if redis.call('exists', KEYS[1]) == 1 then
  held = redis.call('hget', KEYS[1], ARGV[2])
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
  -- an earlier run of this acquisition took it: the same grant, with the
  -- token it drew (a new one below should a minted owner's counter be
  -- gone); the hold's lease runs from this run, as the caller measures
  -- it from this run's send
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

-- The token: the counter's next value, and the counter kept an hour past
-- it (internal/scripts' FenceTTL). A counter below 2^50 (before 2005 in
-- microseconds) was not written from the server's clock: gone (INCR made
-- it 1), left by a refused SET, or a Redisson RFencedLock's from 0. The
-- token is then the server's time in microseconds, above every earlier
-- one, written from TIME's digits (a Lua number passed to Redis is cut to
-- 14 digits, and printed; every number here goes as a string).
-- INCR runs first of all the writes, and the counter's expiry is set
-- before the hash is written: their refusal changes no hold (a free
-- lock's new counter gets its expiry with its SET, and the hash's PEXPIRE
-- is guarded below).
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
  -- a PEXPIRE refused (a new counter was set with PX, so none ran yet)
  -- must not leave the lock held with no TTL
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
