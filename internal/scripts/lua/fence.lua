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
local function fence(key)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = (tonumber(redis.call('get', key)) or 0) + 1
  if token < now then token = now end
  redis.call('set', key, string.format('%.0f', token), 'px', 3600000)
  return token
end
