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
local me = ARGV[1]
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
local score = tonumber(redis.call('zscore', KEYS[2], me) or 0)
if other_kind(S) then
  -- the hash is another kind's (ours was lost under the permit, and the
  -- name taken): the permit goes, the other's hash is left as it is
  return run({{'zrem', KEYS[2], me}, {'hdel', KEYS[3], me}}) or {score > 0 and 1 or -1, 0, -1}
end
local used = scan(S, now)
-- its weight goes first: a full server lets that write through, and then
-- the rest, the hand-off's ZADD and HSET included (docs/edges.md)
local W = {{'hdel', KEYS[3], me}}
if score <= now then
  purge(S, W)
  S.last = latest(S, now)
  settle(S, W, now, used)
  return run(W) or {-1, 0, -1}
end
local n = tonumber(redis.call('hget', KEYS[3], me))
S.unweighed = S.unweighed + (n and 1 or 0)
n = n or 0
used = math.max(used - n, 0)
purge(S, W)
S.live = S.live - 1

local size = S.size or 0
local served, granted, last = 0, 0, now
local moved, m = {[me] = true}, 1 -- permits removed or moved, for latest
local head, at = S.head, S.at
for i = 4, #ARGV, 3 do
  local id, want, expiry = ARGV[i], tonumber(ARGV[i + 1]), now + tonumber(ARGV[i + 2])
  -- a waiter that took this permit with its own try (this release came late)
  -- is counted already; its lease runs from this run (docs/edges.md)
  if tonumber(redis.call('zscore', KEYS[2], id) or 0) > now then
    W[#W + 1] = {'zadd', KEYS[2], expiry, id}
    moved[id], m = true, m + 1
  else
    if i > 4 then
      head, at = live_from(S, now, at) -- a lapsed waiter the last one served uncovered goes too
      unline(S, W)
    end
    -- want <= size - used, not used + want <= size: see acquire.lua
    if not ((head == nil or head == id) and want <= size - used) then
      break
    end
    W[#W + 1] = {'zadd', KEYS[2], expiry, id}
    W[#W + 1] = {'hset', KEYS[3], id, want}
    if head == id then
      W[#W + 1] = {'zrem', KEYS[6], id}
      W[#W + 1] = {'hdel', KEYS[7], id}
      S.gone, at = S.gone + 1, at + 1
    end
    used, granted = used + want, granted + 1
  end
  last = math.max(last, expiry)
  served = served + 1
end
-- removed after the hand-off, so that the permits key never empties between
W[#W + 1] = {'zrem', KEYS[2], me}
S.last = math.max(last, latest(S, now, moved, m))
-- the hand-off of the last permit writes the weights anew: settle gives them a TTL
S.fresh = S.fresh or S.live == 0
S.live = S.live + granted
settle(S, W, now, used)
local free = math.max(size - used, 0)
-- the other waiters, here and elsewhere, try for what is left
local wake = served == 0 or free > 0
local no = run(W, {wake and {ARGV[2], KEYS[4]}, {'set', KEYS[5]}})
if no then
  return no
end
local res = 1
if served == 0 or (free > 0 and redis.call('zcard', KEYS[6]) > 0) then
  res = tell(ARGV[2], KEYS[4], n) and 1 or 2
end
redis.call('set', KEYS[5], res, 'px', ARGV[3])
return {res, served, free}
