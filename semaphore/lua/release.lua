-- Give back one acquisition's permits, hand what fits to the local waiters
-- offered (the front of this process's queue, each served as an acquire would,
-- until one is not), and wake the others; safe to retry through the latch.
-- KEYS[1]  the semaphore hash
-- KEYS[2]  live permits zset
-- KEYS[3]  permit weights hash
-- KEYS[4]  the channel, redisson_sc:{<name>}
-- KEYS[5]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- KEYS[6]  waiters zset
-- KEYS[7]  waiter marks' expiry hash
-- ARGV[1]  permit id
-- ARGV[2]  publish command: publish, or spublish on a cluster
-- ARGV[3]  latch lifetime in milliseconds
-- ARGV[4+3i], ARGV[5+3i], ARGV[6+3i]  offered waiter i (from 0): its
--          permit id (also its waiter id), n, lease in milliseconds
-- Returns {1, served, free} when released (served: offered waiters now holding
-- permits; free: permits left, -1 unknown), {2, served, free} with the waiters
-- not told (Redis 6), {-1, 0, -1} when not held, or may's NOPERM error.
local S = {hash = KEYS[1], permits = KEYS[2], weights = KEYS[3], waiters = KEYS[6], marks = KEYS[7]}
local no = may(kept(S), {{'get', KEYS[5]}, {'zscore', KEYS[2]}, {'zadd', KEYS[2]}, {'hset', KEYS[3]}, {'zcard', KEYS[6]},
  {ARGV[2], KEYS[4]}, {'set', KEYS[5]}})
if no then
  return no
end
local done = redis.call('get', KEYS[5])
if done ~= false then
  -- an earlier run released it, and served the offered waiters holding permits
  local served = 0
  for i = 4, #ARGV, 3 do
    if redis.call('zscore', KEYS[2], ARGV[i]) == false then
      break
    end
    served = served + 1
  end
  return {tonumber(done), served, -1}
end
local now = server_ms()
load(S)
if other_kind(S) then
  -- the hash is another kind's (ours was lost under the permit, and the
  -- name taken): the permit goes, the other's hash is left as it is
  local res = redis.call('zrem', KEYS[2], ARGV[1]) == 1 and 1 or -1
  redis.call('hdel', KEYS[3], ARGV[1])
  return {res, 0, -1}
end
local used = purge(S, now)
if redis.call('zscore', KEYS[2], ARGV[1]) == false then
  redis.call('hdel', KEYS[3], ARGV[1])
  settle(S, now, used)
  return {-1, 0, -1}
end
local n = tonumber(redis.call('hget', KEYS[3], ARGV[1])) or 0
-- its weight goes first: a full server lets that write through, and then the
-- rest, the hand-off's ZADD and HSET included (docs/edges.md)
redis.call('hdel', KEYS[3], ARGV[1])
used = used - n
if used < 0 then used = 0 end

local size = S.size or 0
local served = 0
local head = S.head
for i = 4, #ARGV, 3 do
  local id, want = ARGV[i], tonumber(ARGV[i + 1])
  -- a waiter that took this permit with its own try (this release came late)
  -- is counted already; its lease runs from this run (docs/edges.md)
  if redis.call('zscore', KEYS[2], id) ~= false then
    redis.call('zadd', KEYS[2], now + tonumber(ARGV[i + 2]), id)
  else
    if i > 4 then
      head = head_of_line(S, now) -- a lapsed waiter the last one served uncovered goes too
    end
    -- want <= size - used, not used + want <= size: see acquire.lua
    if not ((head == nil or head == id) and want <= size - used) then
      break
    end
    redis.call('zadd', KEYS[2], now + tonumber(ARGV[i + 2]), id)
    redis.call('hset', KEYS[3], id, want)
    redis.call('zrem', KEYS[6], id)
    redis.call('hdel', KEYS[7], id)
    used = used + want
  end
  served = served + 1
end
-- removed after the hand-off, so that the permits key never empties between
-- (settle gives the weights a TTL again if the hand-off made them anew)
redis.call('zrem', KEYS[2], ARGV[1])
settle(S, now, used)
local free = math.max(size - used, 0)
-- the other waiters, here and elsewhere, try for what is left
local res = 1
if served == 0 or (free > 0 and redis.call('zcard', KEYS[6]) > 0) then
  res = tell(ARGV[2], KEYS[4], n) and 1 or 2
end
redis.call('set', KEYS[5], res, 'px', ARGV[3])
return {res, served, free}
