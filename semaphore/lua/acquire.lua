-- Take n permits of a weighted semaphore whose permits are leases, first come
-- first served across processes: while an older waiter's mark lives nobody
-- else takes permits (x/sync/semaphore's manner). state.lua comes first.
-- KEYS[1]  the semaphore hash: size, used, kept (state.lua)
-- KEYS[2]  live permits, zset {<name>}:permits (permit id, score: its expiry)
-- KEYS[3]  permit weights, hash {<name>}:weights (permit id -> n)
-- KEYS[4]  waiters, zset {<name>}:waiters (member waiter id, score arrival)
-- KEYS[5]  waiter marks' expiry, hash {<name>}:waiter_expiry
-- KEYS[6]  the channel, redisson_sc:{<name>}
-- ARGV[1]  size as this client knows it
-- ARGV[2]  n
-- ARGV[3]  permit id (one per acquisition: a second run finds its permit)
-- ARGV[4]  lease in milliseconds
-- ARGV[5]  waiter id, or "" not to mark (a single attempt, or not queued locally)
-- ARGV[6]  publish command: publish, or spublish on a cluster
-- ARGV[7]  life of a waiter's mark in milliseconds (at most the lease)
-- ARGV[8]  "recorded": take the size Redis records (WithRecordedSize); "" refuses
-- Returns {1, available} when acquired; {0, ttl} when it must wait (ms: the
-- earliest permit expiry, at most a third of the mark's life); {-2, size} when
-- Redis records another size, {-3, size} when n exceeds it, {-4, kind} when
-- another kind holds the name (nothing written); or may's NOPERM error.
local S = {hash = KEYS[1], permits = KEYS[2], weights = KEYS[3], waiters = KEYS[4], marks = KEYS[5]}
local now = server_ms()
local n, lease, id, waiter = tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[3], ARGV[5]

load(S)
local other = other_kind(S)
if other then
  return {-4, other}
end
local size = S.size or tonumber(ARGV[1])
if S.size ~= nil and size ~= tonumber(ARGV[1]) and ARGV[8] ~= 'recorded' then
  return {-2, size}
end
if n > size then
  return {-3, size} -- before anything is written: a hash without TTL would stay
end
S.cap = size
local used = scan(S, now)
-- an earlier run (its reply lost) took the permits: their lease runs from
-- this run, as the caller measures it, lest another take them (docs/edges.md)
local held = not S.fresh and tonumber(redis.call('zscore', KEYS[2], id) or 0) > now
-- n <= size - used, not used + n <= size: numbers are doubles, and the
-- sum may pass 2^53 where it is no longer exact
local take = not held and (S.head == nil or S.head == waiter) and n <= size - used
local marked = not held and not take and waiter ~= ''

-- The first write is one a full server refuses (OOM), lest a purge's HDEL
-- or ZREM, let through, let the permit or mark in after it.
local W = {}
if S.size == nil then
  S.stored = take and used + n or used
  W[1] = {'hset', KEYS[1], 'size', size, 'used', S.stored}
end
if held or take then
  W[#W + 1] = {'zadd', KEYS[2], now + lease, id}
  S.last = now + lease
  for i, e in ipairs(S.expired) do
    if e == id then
      table.remove(S.expired, i) -- its lapsed permit is taken anew, not purged
      break
    end
  end
elseif marked then
  W[#W + 1] = {'hset', KEYS[5], waiter, now + tonumber(ARGV[7])}
  -- not in line, or its lapsed place at the head lost: it joins at the end
  local join = redis.call('zscore', KEYS[4], waiter) == false
  for _, e in ipairs(S.lapsed) do
    join = join or e == waiter
  end
  if join then
    W[#W + 1] = {'zadd', KEYS[4], now, waiter}
  end
  S.keep = waiter -- written anew, not purged
  S.mark = tonumber(ARGV[7]) -- the keys outlive the mark
end
purge(S, W)
S.last = math.max(S.last or now, held and latest(S, now, {[id] = true}, 1) or latest(S, now))

local more = false
if take then
  W[#W + 1] = {'hset', KEYS[3], id, n}
  S.live = S.live + 1
  used = used + n
  if S.head == waiter then
    W[#W + 1] = {'zrem', KEYS[4], waiter}
    W[#W + 1] = {'hdel', KEYS[5], waiter}
    S.gone = S.gone + 1
    -- the next waiter may fit in what is left: it is waiting for a message
    more = used < size and redis.call('zcard', KEYS[4]) > S.at + 1
  end
end
settle(S, W, now, used)
local no = run(W, {more and {ARGV[6], KEYS[6]}})
if no then
  return no
end
if more then
  tell(ARGV[6], KEYS[6], 0) -- untold (Redis 6, refused), it tries by its mark's third
end
if held or take then
  return {1, size - used}
end
-- try again by then at the latest: the mark is refreshed in time
local ttl = math.floor(tonumber(ARGV[7]) / 3)
local soonest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if #soonest > 0 then
  local left = tonumber(soonest[2]) - now
  if left < ttl then ttl = left end
end
if ttl < 0 then ttl = 0 end
return {0, ttl}
