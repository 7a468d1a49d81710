-- Waking a lock's waiters (a library, after internal/scripts' lua/fence.lua).
-- A fair lock (RFairLock's layout) lists its waiters in
-- redisson_lock_queue:{<name>}, their deadlines (server ms) in
-- redisson_lock_timeout:{<name>}, and serves only the first live one, on
-- <channel>:<waiter id>. relock's waiters are also in
-- relock_fair_waiter:{<name>}, waiter id -> "<lease ms>:<owner id>" (lease 0:
-- wake it, do not hand it the lock); a Redisson thread gets the unlock message.

-- now is the server's time in milliseconds.
local function now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- line walks queue from its head: the first live waiter (false: none) and
-- the lapsed ones before it, whose deadlines passed by at.
local function line(queue, timeouts, at)
  local gone = {}
  while true do
    local first = redis.call('lindex', queue, #gone)
    if first == false then
      return false, gone
    end
    local deadline = tonumber(redis.call('zscore', timeouts, first))
    if deadline ~= nil and deadline > at then
      return first, gone
    end
    gone[#gone + 1] = first
  end
end

-- drop plans in W the removal of the lapsed waiters gone from the head of
-- queue, and of their grant entries.
local function drop(W, gone, queue, timeouts, grants)
  for _, id in ipairs(gone) do
    W[#W + 1] = {'lpop', queue}
    W[#W + 1] = {'zrem', timeouts, id}
    W[#W + 1] = {'hdel', grants, id}
  end
end

-- head drops the lapsed waiters at the head of queue (and their grant
-- entries) and returns the first live one (false when none).
local function head(queue, timeouts, at, grants)
  local first, gone = line(queue, timeouts, at)
  for _, id in ipairs(gone) do
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, id)
    redis.call('hdel', grants, id)
  end
  return first
end

-- grant plans in W the lock's hold for owner, first in line, for ttl ms,
-- and returns its token, drawn from counter token.
local function grant(W, lock, token, queue, timeouts, grants, first, owner, ttl)
  local t = draw(token)
  W[#W + 1] = {'lpop', queue}
  W[#W + 1] = {'zrem', timeouts, first}
  W[#W + 1] = {'hdel', grants, first}
  W[#W + 1] = {'hset', lock, owner, 1}
  W[#W + 1] = {'pexpire', lock, ttl}
  -- as fence.lua's keep: %.0f, since a token has 16 digits
  W[#W + 1] = {'set', token, string.format('%.0f', t), 'px', '3600000'}
  return t
end

-- served plans in W the serving of first, the first live waiter of the free
-- lock: its hold when it is relock's and granting is '1' ('0': its replica
-- sync needs a WAIT, so it tries itself). Returns the message to tell it.
local function served(W, lock, token, queue, timeouts, grants, message, first, at, granting)
  local entry = granting == '1' and redis.call('hget', grants, first)
  local lease, owner
  if entry then
    lease, owner = string.match(entry, '^(%d+):(.+)$')
  end
  if not owner or lease == '0' then
    return message
  end
  -- provisional (its deadline, at least 1 s): its watchdog renews it at once
  local ttl = tonumber(redis.call('zscore', timeouts, first)) - at
  ttl = math.min(math.max(ttl, 1000), tonumber(lease))
  local t = grant(W, lock, token, queue, timeouts, grants, first, owner, ttl)
  return string.format('relock:grant:%.0f:%.0f:%s', t, ttl, owner)
end

-- waking plans in W what serves the first live waiter of a lock just freed
-- (the lapsed ones before it dropped), and returns the channel and message
-- to tell it (nil: nobody waits).
local function waking(W, channel, message, lock, queue, timeouts, token, grants, granting)
  local at = now()
  local first, gone = line(queue, timeouts, at)
  drop(W, gone, queue, timeouts, grants)
  if first then
    return channel .. ':' .. first, served(W, lock, token, queue, timeouts, grants, message, first, at, granting)
  end
  return nil
end

-- wake runs what waking plans, then tells; it returns whether told. Its
-- callers ask may first, about woken(...).
local function wake(publish, channel, message, lock, queue, timeouts, token, grants, granting)
  local W = {}
  local ch, msg = waking(W, channel, message, lock, queue, timeouts, token, grants, granting)
  for _, w in ipairs(W) do
    redis.call(unpack(w))
  end
  return not ch or tell(publish, ch, msg)
end

-- woken(...) is what wake may run, as may checks it.
local function woken(publish, channel, lock, queue, timeouts, token, grants)
  local c = fenced(token)
  for _, x in ipairs({{publish, channel}, {'lindex', queue}, {'lpop', queue}, {'zscore', timeouts},
    {'zrem', timeouts}, {'hget', grants}, {'hdel', grants}, {'hset', lock}, {'pexpire', lock}}) do
    c[#c + 1] = x
  end
  return c
end
