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

-- head drops the lapsed waiters at the head of queue (and their grant
-- entries) and returns the first live one (false when none).
local function head(queue, timeouts, at, grants)
  while true do
    local first = redis.call('lindex', queue, 0)
    if first == false then
      return false
    end
    local deadline = tonumber(redis.call('zscore', timeouts, first))
    if deadline ~= nil and deadline > at then
      return first
    end
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, first)
    if grants then
      redis.call('hdel', grants, first)
    end
  end
end

-- woken(...) is what wake runs, as may checks it.
local function woken(publish, channel, lock, queue, timeouts, token, grants)
  if queue == nil then
    return {{publish, channel}}
  end
  local c = fenced(token)
  for _, x in ipairs({{publish, channel}, {'lindex', queue}, {'lpop', queue}, {'zscore', timeouts},
    {'zrem', timeouts}, {'hget', grants}, {'hdel', grants}, {'hset', lock}, {'pexpire', lock}}) do
    c[#c + 1] = x
  end
  return c
end

-- serve gives the free lock to first, the first live waiter: writes its hold
-- when it is relock's and grant is '1' ('0': its replica sync needs a WAIT,
-- so it tries itself), else sends it message. Returns whether it was told.
local function serve(lock, token, queue, timeouts, grants, publish, channel, message, first, at, grant)
  local entry = grant == '1' and redis.call('hget', grants, first)
  local lease, owner
  if entry then
    lease, owner = string.match(entry, '^(%d+):(.+)$')
  end
  if not owner or lease == '0' then
    return tell(publish, channel .. ':' .. first, message)
  end
  -- provisional (its deadline, at least 1 s): its watchdog renews it at once
  local ttl = tonumber(redis.call('zscore', timeouts, first)) - at
  ttl = math.min(math.max(ttl, 1000), tonumber(lease))
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, first)
  redis.call('hdel', grants, first)
  redis.call('hset', lock, owner, 1)
  redis.call('pexpire', lock, ttl)
  -- %.0f: a token has 16 digits, more than Lua's default number format keeps
  local grant = string.format('relock:grant:%.0f:%.0f:%s', fence(token), ttl, owner)
  return tell(publish, channel .. ':' .. first, grant)
end

-- wake tells the waiters that lock is free: message on channel, or for a fair
-- lock (queue given) serves its first live waiter. Returns whether told.
local function wake(publish, channel, message, lock, queue, timeouts, token, grants, grant)
  if queue == nil then
    return tell(publish, channel, message)
  end
  local at = now()
  local first = head(queue, timeouts, at, grants)
  if first then
    return serve(lock, token, queue, timeouts, grants, publish, channel, message, first, at, grant)
  end
  return true
end
