-- Renew a batch of permits of one cluster slot (the watchdog), by Redis
-- server time. A permit already past its expiry is not revived: it may
-- have been counted free by a concurrent acquire. The semaphore's keys
-- expire with its last permit or mark, so a renewed permit extends them
-- (never shortens them). A labeled permit (WithHolderLabel) has its label
-- key after its keys, renewed with it; a batch is all labeled or none
-- (its stride).
--
-- A renewal adds no memory, and must go on on a full server (maxmemory
-- reached, noeviction): Redis refuses a ZADD or HSET there only while a
-- script has written nothing, so each permit's first write is a PEXPIRE,
-- always sent for the permits zset, and the ZADD comes after it. The hash
-- is extended only while it is the semaphore's (it records the size): a
-- hash of another kind that took the name after ours was lost is left as
-- it is.
--
-- KEYS[s*i-s+1]  the live permits zset of permit i (s = #KEYS / permits:
--                3, or 4 with a label)
-- KEYS[s*i-s+2]  the semaphore hash of permit i
-- KEYS[s*i-s+3]  the permit weights hash of permit i
-- KEYS[s*i]      with s = 4: the holder label key of permit i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       permit id i
--
-- Returns an array: 1 where renewed, 0 where the permit is gone.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #ARGV / 2
local s = #KEYS / n
local out = {}
for i = 1, n do
  local first = s * i - s + 1
  local permits, lease, id = KEYS[first], tonumber(ARGV[2 * i - 1]), ARGV[2 * i]
  local score = redis.call('zscore', permits, id)
  if score ~= false and tonumber(score) > now then
    redis.call('pexpire', permits, math.max(redis.call('pttl', permits), lease))
    redis.call('zadd', permits, 'XX', now + lease, id)
    for j = first + 1, first + 2 do
      if redis.call('pttl', KEYS[j]) < lease and (j == first + 2 or redis.call('hexists', KEYS[j], 'size') == 1) then
        redis.call('pexpire', KEYS[j], lease)
      end
    end
    if s == 4 then
      redis.call('pexpire', KEYS[4 * i], lease)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
