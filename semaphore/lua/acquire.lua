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
local no = may(kept(S), {{'zscore', KEYS[2]}, {'zadd', KEYS[2]}, {'hset', KEYS[3]}, {'zscore', KEYS[4]},
  {'zadd', KEYS[4]}, {'zcard', KEYS[4]}, {'hset', KEYS[5]}, ARGV[5] ~= '' and {ARGV[6], KEYS[6]}})
if no then
  return no
end
local now = server_ms()
local n, lease = tonumber(ARGV[2]), tonumber(ARGV[4])

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
if S.size == nil then
  redis.call('hset', KEYS[1], 'size', size, 'used', 0)
else
  S.grow = S.size
end
S.cap = size

local used = purge(S, now)
-- an earlier run (its reply lost) took the permits: their lease runs from
-- this run, as the caller measures it, lest another take them (docs/edges.md)
if redis.call('zscore', KEYS[2], ARGV[3]) ~= false then
  redis.call('zadd', KEYS[2], now + lease, ARGV[3])
  settle(S, now, used) -- what purge dropped counts
  return {1, size - used}
end

local first = S.head == nil or S.head == ARGV[5]
-- n <= size - used, not used + n <= size: numbers are doubles, and the
-- sum may pass 2^53 where it is no longer exact
if first and n <= size - used then
  redis.call('zadd', KEYS[2], now + lease, ARGV[3])
  redis.call('hset', KEYS[3], ARGV[3], n)
  if ARGV[5] ~= '' then
    redis.call('zrem', KEYS[4], ARGV[5])
    redis.call('hdel', KEYS[5], ARGV[5])
    -- the next waiter may fit in what is left: it is waiting for a message
    if used + n < size and redis.call('zcard', KEYS[4]) > 0 then
      tell(ARGV[6], KEYS[6], 0) -- untold (Redis 6, refused), it tries by its mark's third
    end
  end
  settle(S, now, used + n)
  return {1, size - used - n}
end

if ARGV[5] ~= '' then
  if redis.call('zscore', KEYS[4], ARGV[5]) == false then
    redis.call('zadd', KEYS[4], now, ARGV[5])
  end
  redis.call('hset', KEYS[5], ARGV[5], now + tonumber(ARGV[7]))
  settle(S, now, used, tonumber(ARGV[7])) -- the keys outlive the mark
else
  settle(S, now, used)
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
