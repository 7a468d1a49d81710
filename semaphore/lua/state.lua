-- Shared by the semaphore's scripts (a library, put before each one). Its
-- keys are worth keeping only while a permit or a waiter's mark lives: purge
-- drops lapsed ones, settle makes every key expire with the last (or go).
-- S is the five keys: S.hash (size, used, kept: until when a Resize's record
-- stays), S.permits (zset, score = expiry), S.weights (permit id -> n),
-- S.waiters (zset, score = arrival), S.marks (waiter id -> mark expiry); times
-- in server ms. A script reads all it needs first (load, scan, its own
-- reads), plans its writes in a list W, then runs them (run): may asks about
-- each before the first runs, so a refusal changes nothing.

local function server_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- load reads the hash's fields into S: S.size (nil: not recorded), S.used
-- (S.stored: as stored, nil when absent), S.kept. Every script calls it first.
local function load(S)
  local rec = redis.call('hmget', S.hash, 'size', 'used', 'kept')
  S.size, S.stored, S.kept = tonumber(rec[1]), tonumber(rec[2]), tonumber(rec[3])
  S.used = S.stored or 0
end

-- other_kind is the kind of another primitive whose hash has the name (1: a
-- lock, fair lock or election; 2: an rwlock), or nil. Only a hash without
-- size can be one (ours keeps it, bar a used or kept settle wrote after an
-- eviction), so the common path asks nothing.
local function other_kind(S)
  if S.size ~= nil then
    return nil
  end
  if S.stored or S.kept or redis.call('type', S.hash).ok ~= 'hash' then
    return nil -- ours after an eviction, or no hash at all
  end
  if redis.call('hexists', S.hash, 'mode') == 1 then
    return 2
  end
  return 1
end

-- live_from returns the first live waiter at or after place i (from 0) of
-- the line, and its place (nil and the line's end: none). The lapsed ones
-- it passes go to S.lapsed (S.gone counts the waiters the script removes);
-- S.out, a waiter the script removes itself, is passed over.
local function live_from(S, now, i)
  while true do
    local w = redis.call('zrange', S.waiters, i, i)
    if #w == 0 then
      return nil, i
    end
    if w[1] ~= S.out then
      local mark = tonumber(redis.call('hget', S.marks, w[1]))
      if mark ~= nil and mark > now then
        return w[1], i
      end
      S.lapsed[#S.lapsed + 1] = w[1]
      S.gone = S.gone + 1
    end
    i = i + 1
  end
end

-- scan reads what purge drops: the lapsed permits (S.expired) and the
-- lapsed waiters at the head of the line (one behind a live one holds
-- nobody back). It sets S.head, the first live waiter (nil: none), and
-- S.at, its place; S.live, the live permits; S.fresh, none lives (the
-- permits and weights written next are new: settle gives them a TTL). It
-- returns the permits in use: used less the lapsed ones, else, where used
-- is lost (the hash evicted or deleted) or below 0, the live permits'
-- weights; a permit whose weight is lost too counts as the whole semaphore
-- (S.size, else S.cap), so the bound holds while it lives.
local function scan(S, now)
  local used = S.used
  S.expired, S.unweighed = redis.call('zrangebyscore', S.permits, '-inf', now), 0
  for _, id in ipairs(S.expired) do
    local n = tonumber(redis.call('hget', S.weights, id))
    used, S.unweighed = used - (n or 0), S.unweighed + (n and 1 or 0)
  end
  S.live = redis.call('zcard', S.permits) - #S.expired
  S.fresh = S.live == 0
  if S.fresh then
    used = 0
  elseif S.stored == nil or used < 0 then
    used = 0
    for _, id in ipairs(redis.call('zrangebyscore', S.permits, '(' .. now, '+inf')) do
      used = used + (tonumber(redis.call('hget', S.weights, id)) or S.size or S.cap or 1)
    end
  end
  S.lapsed, S.gone = {}, 0
  S.head, S.at = live_from(S, now, 0)
  return used
end

-- latest is the latest expiry of a live permit, else now; skip is a set of
-- n ids the script removes or moves, left out. S.top is that permit's id.
local function latest(S, now, skip, n)
  if S.fresh then
    return now
  end
  local p = redis.call('zrange', S.permits, -1 - (n or 0), -1, 'withscores')
  for i = #p - 1, 1, -2 do
    if not (skip and skip[p[i]]) then
      S.top = tonumber(p[i + 1]) > now and p[i] or nil
      return math.max(now, tonumber(p[i + 1]))
    end
  end
  return now
end

-- many plans cmd on key for every id of ids, a few hundred to a command.
local function many(W, cmd, key, ids)
  for i = 1, #ids, 500 do
    W[#W + 1] = {cmd, key, unpack(ids, i, math.min(i + 499, #ids))}
  end
end

-- unline plans the removal of the lapsed waiters live_from found since
-- unline last ran; S.keep, a waiter the script writes anew, stays.
local function unline(S, W)
  for i = (S.unlined or 0) + 1, #S.lapsed do
    local id = S.lapsed[i]
    if id ~= S.keep then
      W[#W + 1] = {'hdel', S.marks, id}
      W[#W + 1] = {'zrem', S.waiters, id}
    end
  end
  S.unlined = #S.lapsed
end

-- purge plans the removal of what scan found lapsed.
local function purge(S, W)
  if S.fresh then
    W[#W + 1] = {'del', S.weights}
  elseif #S.expired > 0 then
    many(W, 'hdel', S.weights, S.expired)
  end
  many(W, 'zrem', S.permits, S.expired)
  unline(S, W)
end

-- settle plans what records used and gives the keys their TTL: the latest
-- expiry of a permit (S.last, the script's own writes folded in) or mark,
-- and the end of a Resize's record; with nothing left, the keys are
-- deleted. S.mark is the life of a mark the script writes (ms), if any;
-- S.live, the live permits the script leaves. The line and its marks expire
-- with the latest mark, read from the marks hash's TTL (each mark extends
-- it), so a long line costs nothing here. The other keys expire at last +
-- slack_ms, kept while the weights' TTL is within [last, last + slack_ms]:
-- one PTTL, not three PEXPIREs (docs/edges.md).
local slack_ms = 1000

local function settle(S, W, now, used)
  local marks = now + (S.mark or 0)
  local m = redis.call('pttl', S.marks)
  if m > 0 and S.gone > 0 and redis.call('zcard', S.waiters) <= S.gone then
    m = -2 -- the script removes every waiter, their marks, and so the hash
  end
  if m == -1 then
    -- no TTL (set by hand, or by an older client): read the marks once,
    -- those the script removes included (the line lives a mark longer)
    for _, v in ipairs(redis.call('hvals', S.marks)) do
      if tonumber(v) > marks then marks = tonumber(v) end
    end
  elseif m > 0 and now + m > marks then
    marks = now + m
  end
  local last = math.max(marks, S.kept or 0, S.last or now)
  if last <= now then
    W[#W + 1] = {'del', S.hash, S.permits, S.weights, S.waiters, S.marks}
    return
  end
  if used ~= S.stored then -- a release that handed its permits on leaves it
    W[#W + 1] = {'hset', S.hash, 'used', used}
  end
  -- past a day, exact (a lease of years: no TTL beyond what it asked)
  local slack = last - now > 86400000 and 0 or slack_ms
  -- the weights' TTL stands for the three keys' while a live permit keeps
  -- its weight there (else the weights may be gone, or written anew)
  local fit = not S.fresh and S.size ~= nil and S.live > 0
  if fit then
    local ttl = redis.call('pttl', S.weights)
    fit = ttl >= 0 and now + ttl >= last and now + ttl <= last + slack and
      (S.unweighed == 0 or (S.top ~= nil and redis.call('hget', S.weights, S.top) ~= false))
  end
  if not fit then
    for _, k in ipairs({S.hash, S.permits, S.weights}) do
      W[#W + 1] = {'pexpire', k, last + slack - now}
    end
  end
  if S.mark == nil and m ~= -1 then
    -- the line keeps the TTL its latest mark gave it
    return
  end
  if marks <= now then
    marks = last -- no mark lives: the line (empty, or purged at its head) goes with the rest
  end
  W[#W + 1] = {'pexpire', S.waiters, marks - now}
  W[#W + 1] = {'pexpire', S.marks, marks - now}
end
