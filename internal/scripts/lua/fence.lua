-- fence(key) draws a lock's next fencing token from its counter key,
-- redisson_lock_token:{<name>} (RFencedLock's): max(counter + 1, server time
-- in microseconds), kept an hour, so that tokens still increase when the
-- counter is lost (docs/edges.md). fenced(key) is what it runs, for may.
local function fenced(key)
  return {{'time'}, {'get', key}, {'set', key}}
end

-- draw(key, t) is counter key's next token, read but not written: drawn
-- before a script's first write, so that only keep's SET runs after that
-- write. t is the script's TIME reply, when it has one.
local function draw(key, t)
  t = t or redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = (tonumber(redis.call('get', key)) or 0) + 1
  if token < now then token = now end
  return token
end

-- keep(key, token, latch, ms) writes a drawn token to key, and to latch for
-- ms unless latch is false. %.0f: Lua numbers reach Redis with too few
-- digits (doubles are exact below 2^53: the year 2255 in microseconds).
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

-- granted(latch) is the token an earlier run kept in latch, or nil.
local function granted(latch)
  if latch then
    return tonumber(redis.call('get', latch))
  end
  return nil
end

-- last(counter) is the last token drawn (a minted owner's second run finds
-- its own grant), or a new one when the counter is gone.
local function last(counter)
  return tonumber(redis.call('get', counter)) or fence(counter)
end
