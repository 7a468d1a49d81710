-- Take n permits of a weighted semaphore whose permits are leases.
-- Expired permits (their holder crashed or lost them) are reclaimed first,
-- by Redis server time. Waiters are served first come first served across
-- processes: a waiter that could not be served marks itself, and while
-- an older mark exists no one else takes permits, so a large request is
-- not starved by a stream of small ones (golang.org/x/sync/semaphore's
-- manner). A mark is a lease too: it lapses if its waiter dies. Every key
-- expires with the last permit or mark (purge, settle: state.lua, put
-- before this source).
--
-- KEYS[1]  the semaphore hash: size, used, kept (state.lua)
-- KEYS[2]  live permits, zset {<name>}:permits (member permit id, score
--          its expiry in server ms)
-- KEYS[3]  permit weights, hash {<name>}:weights (permit id -> n)
-- KEYS[4]  waiters, zset {<name>}:waiters (member waiter id, score arrival)
-- KEYS[5]  waiter marks' expiry, hash {<name>}:waiter_expiry
-- KEYS[6]  the channel, redisson_sc:{<name>}
-- ARGV[1]  size as this client knows it
-- ARGV[2]  n
-- ARGV[3]  permit id (one per acquisition: a second run of the same
--          acquisition finds its permit and returns it)
-- ARGV[4]  lease in milliseconds
-- ARGV[5]  waiter id, or "" for an attempt that must not mark (a single
--          attempt, or one made before the waiter queued locally)
-- ARGV[6]  publish command: publish, or spublish on a cluster
-- ARGV[7]  life of a waiter's mark in milliseconds (at most the lease): a
--          mark left by a waiter that gave up and could not take it back
--          (Redis unreachable then) holds the others back this long at most
-- ARGV[8]  "recorded": use the size Redis records when it differs
--          (WithRecordedSize); "" refuses it
--
-- A command this user may not run is refused before anything is written
-- (may, kept: state.lua), with an error reply naming it.
--
-- On a full server (maxmemory reached) the first write is one Redis
-- refuses there (the size's HSET, the guard's HSETNX, the permit's ZADD,
-- the mark's ZADD or HSET), so the try fails whole with OOM.
--
-- Returns {1, available} when acquired; {0, ttl} when it must wait (ttl:
-- when to try at the latest: the earliest permit expiry, at most a third
-- of the mark's life so the mark stays fresh); {-2, size} when Redis records
-- another size; {-3, size} when n exceeds the recorded size; {-4, kind}
-- when another kind holds the name (other_kind), with nothing written.
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
-- an earlier run of this acquisition (its reply lost) took the permits:
-- their lease runs from this run, as the caller measures it from this
-- run's send; left at the earlier run's, it would end before the caller
-- is told, and another could take the permits while it still holds them
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
