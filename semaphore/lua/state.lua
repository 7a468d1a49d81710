-- Shared by the semaphore's scripts (a library, put before each one). Its
-- keys are worth keeping only while a permit or a waiter's mark lives: purge
-- drops lapsed ones, settle makes every key expire with the last (or go).
-- S is the five keys: S.hash (size, used, kept: until when a Resize's record
-- stays), S.permits (zset, score = expiry), S.weights (permit id -> n),
-- S.waiters (zset, score = arrival), S.marks (waiter id -> mark expiry); times
-- in server ms. A redis.call costs about a small command (~1.7 µs), so each
-- script reads the hash once (load) and reuses what purge learnt (S.head).

-- kept(S) is what load, purge and settle run, as may checks it.
local function kept(S)
  return {{'time'}, {'hmget', S.hash}, {'hset', S.hash}, {'pexpire', S.hash}, {'del', S.hash},
    {'zrangebyscore', S.permits}, {'zrem', S.permits}, {'zcard', S.permits}, {'zrange', S.permits},
    {'pexpire', S.permits}, {'hget', S.weights}, {'hdel', S.weights}, {'pttl', S.weights},
    {'pexpire', S.weights}, {'zrange', S.waiters}, {'zrem', S.waiters}, {'pexpire', S.waiters},
    {'hget', S.marks}, {'hdel', S.marks}, {'hvals', S.marks}, {'pttl', S.marks}, {'pexpire', S.marks}}
end

local function server_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- guard, before an acquisition's first write (S.grow set), runs one that a
-- full server refuses (OOM): it refuses only a script's first such write, and
-- a purge's HDEL or ZREM, let through, would let the permit in after it.
local function guard(S)
  if S.grow then
    redis.call('hset', S.hash, 'size', S.grow)
    S.grow = nil
  end
end

-- head_of_line drops the waiters at the head of the line whose marks lapsed by
-- now and returns the first live one's id (nil when none waits).
local function head_of_line(S, now)
  while true do
    local head = redis.call('zrange', S.waiters, 0, 0)
    if #head == 0 then
      return nil
    end
    local mark = tonumber(redis.call('hget', S.marks, head[1]))
    if mark ~= nil and mark > now then
      return head[1]
    end
    guard(S)
    redis.call('hdel', S.marks, head[1])
    redis.call('zrem', S.waiters, head[1])
  end
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

-- recount sums the live permits' weights, where used is lost (the hash
-- evicted or deleted) or below 0. A permit whose weight is lost too counts as
-- the whole semaphore (S.size, else S.cap), so the bound holds while it lives.
local function recount(S)
  local used = 0
  for _, id in ipairs(redis.call('zrange', S.permits, 0, -1)) do
    used = used + (tonumber(redis.call('hget', S.weights, id)) or S.size or S.cap or 1)
  end
  return used
end

-- purge removes the lapsed permits and the lapsed waiters at the head of the
-- line (one behind a live one holds nobody back), returns the permits in use
-- (load first), and sets S.head, the first live waiter (nil: none).
local function purge(S, now)
  local used = S.used
  local expired = redis.call('zrangebyscore', S.permits, '-inf', now)
  for _, id in ipairs(expired) do
    guard(S)
    used = used - (tonumber(redis.call('hget', S.weights, id)) or 0)
    redis.call('hdel', S.weights, id)
    redis.call('zrem', S.permits, id)
  end
  if S.stored == nil or used < 0 then
    used = recount(S)
  end
  -- no live permit: used is 0, whatever it says, and the permits and weights
  -- written next are new, with no TTL (S.fresh: settle gives one). A script
  -- that writes a permit after removing others must write it first.
  S.fresh = redis.call('zcard', S.permits) == 0
  if S.fresh then
    used = 0
    guard(S)
    redis.call('del', S.weights)
  end
  S.head = head_of_line(S, now)
  return used
end

-- settle records used and gives the keys their TTL: the latest expiry of a
-- permit or mark, and the end of a Resize's record; with nothing left, the
-- keys are deleted. mark is the life of a mark just written (ms), if any.
-- The line and its marks expire with the latest mark, read from the marks
-- hash's TTL (each mark extends it), so a long line costs nothing here. The
-- other keys expire at last + slack_ms, kept while the weights' real TTL is
-- within [last, last + slack_ms]: one PTTL, not three PEXPIREs (docs/edges.md).
local slack_ms = 1000

local function settle(S, now, used, mark)
  local marks = now + (mark or 0)
  local m = redis.call('pttl', S.marks)
  if m == -1 then
    -- no TTL (set by hand, or by an older client): read the marks once
    for _, v in ipairs(redis.call('hvals', S.marks)) do
      if tonumber(v) > marks then marks = tonumber(v) end
    end
  elseif m > 0 and now + m > marks then
    marks = now + m
  end
  -- a Resize's record is kept until the hash's field kept (read by load)
  local last = math.max(now, marks, S.kept or 0)
  local p = redis.call('zrange', S.permits, -1, -1, 'withscores')
  if #p > 0 and tonumber(p[2]) > last then last = tonumber(p[2]) end
  if last <= now then
    redis.call('del', S.hash, S.permits, S.weights, S.waiters, S.marks)
    return
  end
  if used ~= S.stored then -- a release that handed its permits on leaves it
    redis.call('hset', S.hash, 'used', used)
  end
  -- past a day, exact (a lease of years: no TTL beyond what it asked)
  local slack = last - now > 86400000 and 0 or slack_ms
  local ttl = redis.call('pttl', S.weights)
  if S.fresh or S.size == nil or ttl < 0 or now + ttl < last or now + ttl > last + slack then
    for _, k in ipairs({S.hash, S.permits, S.weights}) do
      redis.call('pexpire', k, last + slack - now)
    end
  end
  if mark == nil and m ~= -1 then
    -- the line keeps the TTL its latest mark gave it
    return
  end
  if marks <= now then
    marks = last -- no mark lives: the line (empty, or purged at its head) goes with the rest
  end
  redis.call('pexpire', S.waiters, marks - now)
  redis.call('pexpire', S.marks, marks - now)
end
