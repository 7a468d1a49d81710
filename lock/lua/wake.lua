-- Waking a lock's waiters, shared by the scripts that free a lock (a
-- library: Load puts it after internal/scripts' lua/fence.lua and before a
-- script's source).
--
-- A lock wakes its waiters with one message on its channel. A fair lock
-- (lock.NewFair, Redisson RFairLock's layout) keeps its waiters in a list,
-- redisson_lock_queue:{<name>}, each with a deadline in a zset,
-- redisson_lock_timeout:{<name>} (server time in ms), and serves only the
-- first of them, on its own channel <channel>:<waiter id>. A waiter whose
-- deadline passed (it stopped renewing it: it died, or gave up without a
-- word) is dropped when it reaches the head of the list.
--
-- relock's own waiters are also listed in relock_fair_waiter:{<name>},
-- waiter id -> "<lease ms>:<owner id>" (a waiter's id is a seat of its
-- process, reused by its later waiters, so not its owner; lease 0: an
-- owner not minted for the acquisition, lent by an earlier hold of the
-- lock in its context, to be woken, not handed the lock): the release
-- writes the hold for such a first waiter's owner itself and sends it the
-- token ("relock:grant:<token>:<ttl ms>:<owner>"), so that it need not
-- try; the hold's TTL is provisional (the waiter's deadline, at least
-- 1 s) until the waiter's watchdog renews it at once, so a waiter that
-- died holds the line no longer than it would have in the list. A
-- Redisson thread is not listed there and gets the unlock message, to try.

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

-- woken(publish, channel, lock, queue, timeouts, token, grants) is what
-- wake runs, as may (lua/fence.lua) checks it.
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

-- serve gives the free lock to first, the first live waiter: writes its
-- hold when it is a relock waiter and grant is '1', else sends it the
-- unlock message (a hold written here has no WAIT after it: where replica
-- sync asks for one, the caller passes '0' and the waiter tries). It
-- returns whether the waiter was told (tell, lua/fence.lua).
local function serve(lock, token, queue, timeouts, grants, publish, channel, message, first, at, grant)
  local entry = grant == '1' and redis.call('hget', grants, first)
  local lease, owner
  if entry then
    lease, owner = string.match(entry, '^(%d+):(.+)$')
  end
  if not owner or lease == '0' then
    return tell(publish, channel .. ':' .. first, message)
  end
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

-- wake tells the waiters that lock is free: the message on channel, or
-- for a fair lock (queue given) serves its first live waiter; it returns
-- whether they were told (tell).
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
