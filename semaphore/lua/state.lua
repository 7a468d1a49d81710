-- Shared by the semaphore's scripts (scripts.Lib: put before each one's
-- source). A semaphore's keys are only worth keeping while a permit or a
-- waiter's mark lives: purge drops the lapsed ones, and settle deletes
-- every key when none is left, else makes every key expire with the last
-- of them, so that a semaphore nobody touches again leaves nothing behind.
--
-- S is the five keys: S.hash (size, used, and kept: until when a Resize's
-- record stays, server ms), S.permits (zset, score = expiry in server
-- ms), S.weights (permit id -> n), S.waiters (zset, score = arrival),
-- S.marks (waiter id -> mark expiry in server ms).
--
-- A redis.call costs about as much as a small command itself (~1.7 µs of
-- server time here), so each script reads the hash once (load) and reuses
-- what purge learnt of the line (S.head).

-- kept(S) is what load, purge and settle run, as may checks it: each
-- script asks before its first write, so that a refusal changes nothing.
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

-- guard runs, before an acquisition's first write (S.grow set), one that
-- Redis refuses on a full server (maxmemory reached: OOM): it refuses a
-- command that may add memory only until a script has written, and a
-- purge's HDEL or ZREM, let through, would let the permit in after it.
-- Refused first, the acquisition fails whole with OOM and nothing is
-- written. HSET of the size that S.grow holds changes nothing. Only a
-- purge that has something to drop runs it: on the common path the
-- permit's own ZADD or the mark's HSET comes first.
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

-- load reads the hash's fields into S: S.size (nil when not recorded:
-- the hash is new), S.used (S.stored: as stored, nil when absent),
-- S.kept. Every script calls it first, once.
local function load(S)
  local rec = redis.call('hmget', S.hash, 'size', 'used', 'kept')
  S.size, S.stored, S.kept = tonumber(rec[1]), tonumber(rec[2]), tonumber(rec[3])
  S.used = S.stored or 0
end

-- other_kind is the kind of another primitive whose hash sits at the
-- semaphore's name (errs.KindLock 1: owner fields alone, a lock, a fair
-- lock or an election; errs.KindRWLock 2: a field mode), or nil. Only a
-- hash without size can be one (load: S.size nil), since ours records the
-- size as long as it lives, bar a used or kept that settle wrote after an
-- eviction: so the common path, where the size is there, asks nothing.
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

-- recount is the permits in use, summed from the live permits' weights:
-- used as the hash records it is lost (the hash evicted or deleted under
-- live permits) or wrong (below 0). A permit whose weight is lost too
-- counts as the whole semaphore (S.size, else S.cap: the size the caller
-- knows), so that nothing is granted past the bound while it lives.
local function recount(S)
  local used = 0
  for _, id in ipairs(redis.call('zrange', S.permits, 0, -1)) do
    used = used + (tonumber(redis.call('hget', S.weights, id)) or S.size or S.cap or 1)
  end
  return used
end

-- purge removes the permits that lapsed by now, and the waiters at the
-- head of the line whose marks lapsed, and returns the permits in use
-- after it (from S.used: load first). A lapsed waiter behind a live one
-- holds nobody back (only the first waiter is served), so it is dropped
-- when it reaches the head: each call costs the lapsed entries it drops,
-- not the length of the line. S.head is the first live waiter after it
-- (nil when none waits), valid until the line changes.
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
  -- used is a sum kept beside the permits; with no live permit it is 0,
  -- whatever it says (the permits zset was deleted or evicted under it)
  -- S.fresh: no permit lives, so the permits and weights keys written
  -- next are new and have no TTL yet (settle gives them one). A script
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

-- settle records used and gives the keys their TTL: the latest expiry of
-- a permit or a mark, and the end of a Resize's record (the hash's field
-- kept); with nothing to keep, the keys are deleted. mark is the life of
-- a mark just written (ms), if any.
--
-- The waiters and their marks expire with the latest mark alone, read from
-- the marks hash's own TTL, which each mark written extends and nothing
-- shortens, instead of from every mark: a line of waiters costs nothing
-- here, and a permit's lease or a Resize's record does not keep a lapsed
-- mark alive. With no mark written, theirs stay as they are.
--
-- The hash, permits and weights expire together, at last + slack_ms,
-- and keep their TTLs while the weights hash's own end (read after the
-- script's writes, so a key made anew shows without a TTL) lies in [last,
-- last + slack_ms]: on a busy semaphore most settles leave the TTLs alone
-- (one PTTL instead of three PEXPIREs), and the keys outlive their last
-- permit or mark by at most slack_ms. The real TTL is read, not one
-- recorded, since a renewal or a relock version before this rule moves it
-- alone. A new hash (S.size nil) or a new permits zset (S.fresh) is given
-- its TTL whatever the weights say.
local slack_ms = 1000

local function settle(S, now, used, mark)
  local marks = now + (mark or 0)
  local m = redis.call('pttl', S.marks)
  if m == -1 then
    -- no TTL (set by hand, or by a client older than this rule): read
    -- the marks once; the keys get a TTL below
    for _, v in ipairs(redis.call('hvals', S.marks)) do
      if tonumber(v) > marks then marks = tonumber(v) end
    end
  elseif m > 0 and now + m > marks then
    marks = now + m
  end
  -- a size recorded by Resize is kept until the hash's field kept (read
  -- by load, which every script runs first)
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
    -- the line's TTL is the latest mark's, unchanged (or there is no
    -- mark: a line left without one has the TTL its last mark gave it)
    return
  end
  if marks <= now then
    marks = last -- no mark lives: the line (empty, or purged at its head) goes with the rest
  end
  redis.call('pexpire', S.waiters, marks - now)
  redis.call('pexpire', S.marks, marks - now)
end
