-- may and tell: the same as lua/acl.lua, which holds them for the scripts
-- that load no library.
--
-- may returns the error reply of the first check this user may not run,
-- or nil when it may run them all. Its arguments are lists of checks; a
-- check is a command and its key or channel, as redis.acl_check_cmd takes
-- it (Redis 7); false stands for a check that does not apply. A script
-- asks before its first write, so that a refusal changes nothing, and the
-- reply names the command and the key or channel refused instead of the
-- script's SHA and line. Older servers and miniredis have no
-- acl_check_cmd: nil, and a refused command fails where it stands.
local function may(...)
  local check = redis.acl_check_cmd
  if not check then
    return nil
  end
  -- The keys a script declares are checked, for reading and writing, with
  -- the call itself: for those the command alone is asked (a command
  -- listed twice is asked twice, cheaper than a table to remember it). A
  -- channel is asked for whatever the keys say. No table is built here:
  -- this runs on every call, and a table costs as much as a check.
  local k = KEYS[1] or 'x'
  for i = 1, select('#', ...) do
    local checks = select(i, ...)
    for j = 1, #checks do
      local c = checks[j]
      if c then
        local cmd, arg = c[1], c[2]
        local channel = cmd == 'publish' or cmd == 'spublish'
        local undeclared = arg ~= nil and not channel
        if undeclared then
          for n = 1, #KEYS do
            if KEYS[n] == arg then
              undeclared = false
              break
            end
          end
        end
        -- Every check passes a command its full arguments, the key (or a
        -- declared one) in each place: a command asked with fewer than it
        -- takes makes the server read past them (Redis 7.0 crashes on SET).
        if channel or undeclared then
          if not check(cmd, arg, arg, arg, arg) then
            -- A command refused whatever its channel reads as refused on
            -- this one: there is no channel to ask it with that is sure
            -- to be allowed.
            if not channel and not check(cmd, k, k, k, k) then
              return redis.error_reply('NOPERM relock: this user may not run ' .. string.upper(cmd))
            end
            return redis.error_reply('NOPERM relock: this user may not ' .. string.upper(cmd) ..
              (channel and ' to channel ' or ' on key ') .. arg)
          end
        elseif not check(cmd, k, k, k, k) then
          return redis.error_reply('NOPERM relock: this user may not run ' .. string.upper(cmd))
        end
      end
    end
  end
  return nil
end

-- tell publishes message on channel with cmd (PUBLISH or SPUBLISH) and
-- reports whether it could. Where may could not ask beforehand (Redis 6),
-- a refused channel shows only here, after the writes, which stand: the
-- script then says so in its reply ("released, waiters not told")
-- instead of failing after it changed the lock.
local function tell(cmd, channel, message)
  return type(redis.pcall(cmd, channel, message)) ~= 'table'
end

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

local function fence(key)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = (tonumber(redis.call('get', key)) or 0) + 1
  if token < now then token = now end
  redis.call('set', key, string.format('%.0f', token), 'px', 3600000)
  return token
end

-- An acquisition that may run twice (a retry after a lost reply) keeps
-- its token in a short-lived acquire latch, relock_acquire_latch:{<name>}:
-- <request id>, so that the second run returns it instead of counting
-- again. latch is that key, or false for an acquisition without one.

-- grant(counter, latch, ms) draws the next token, kept in latch for ms.
local function grant(counter, latch, ms)
  local token = fence(counter)
  if latch then
    redis.call('set', latch, string.format('%.0f', token), 'px', ms)
  end
  return token
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
