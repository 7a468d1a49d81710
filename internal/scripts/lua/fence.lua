-- fence(key) draws the next fencing token of a lock from its counter key,
-- redisson_lock_token:{<name>} (Redisson RFencedLock's, which INCRs it):
-- max(counter + 1, server time in microseconds), stored back with a TTL
-- refreshed on every acquisition, so that no counter outlives its lock by
-- more than that TTL.
--
-- Why it never goes backwards: while the counter lives, the token is
-- counter + 1, above every earlier one. When the counter is gone (expired,
-- FLUSHALL, a restart without persistence, a failover to a replica that
-- missed the last write), the token is the server's time in microseconds,
-- which is above every earlier token as long as the server's clock has not
-- stepped back since then: an earlier token is at most the time of its
-- acquisition plus the acquisitions drawn faster than one a microsecond,
-- and an expiry leaves a whole TTL between the two. What breaks it: a
-- server clock set back by more than that, or a failover to a server whose
-- clock is behind by more than the time since the last acquisition.
--
-- The token is written with %.0f: a Lua number passed to redis.call would
-- be formatted with too few digits on some servers. Numbers are doubles,
-- exact below 2^53 (the year 2255 in microseconds).
-- fenced(key) is what fence(key) runs, as may checks it.
local function fenced(key)
  return {{'time'}, {'get', key}, {'set', key}}
end

-- draw(key) is the next token of counter key, read but not yet written:
-- a script draws it before its first write, so that only keep's SET runs
-- after that write.
local function draw(key)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = (tonumber(redis.call('get', key)) or 0) + 1
  if token < now then token = now end
  return token
end

-- keep(key, token, latch, ms) writes a drawn token to counter key, and to
-- latch for ms when latch is not false (see grant).
local function keep(key, token, latch, ms)
  redis.call('set', key, string.format('%.0f', token), 'px', '3600000')
  if latch then
    redis.call('set', latch, string.format('%.0f', token), 'px', ms)
  end
  return token
end

local function fence(key)
  return keep(key, draw(key), false)
end

-- An acquisition that may run twice (a retry after a lost reply) keeps
-- its token in a short-lived acquire latch, relock_acquire_latch:{<name>}:
-- <request id>, so that the second run returns it instead of counting
-- again. latch is that key, or false for an acquisition without one.

-- grant(counter, latch, ms) draws the next token, kept in latch for ms.
local function grant(counter, latch, ms)
  return keep(counter, draw(counter), latch, ms)
end

-- granted(latch) is the token an earlier run kept in latch, or nil.
local function granted(latch)
  if latch then
    return tonumber(redis.call('get', latch))
  end
  return nil
end

-- last(counter) is the token the last acquisition drew (an owner minted
-- for one acquisition finds its own grant), or a new one when the counter
-- is gone.
local function last(counter)
  return tonumber(redis.call('get', counter)) or fence(counter)
end
