-- Renew a batch of permits of one cluster slot (the watchdog), by server time.
-- A permit past its expiry is not revived (an acquire may have counted it
-- free). The keys are extended, never shortened; a label key follows its keys.
-- KEYS[s*i-s+1]  the live permits zset of permit i (s = #KEYS / permits: 3 or 4)
-- KEYS[s*i-s+2]  the semaphore hash of permit i
-- KEYS[s*i-s+3]  the permit weights hash of permit i
-- KEYS[s*i]      with s = 4: the holder label key of permit i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       permit id i
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
    -- PEXPIRE first: a full server refuses a ZADD only as a script's first write
    redis.call('pexpire', permits, math.max(redis.call('pttl', permits), lease))
    redis.call('zadd', permits, 'XX', now + lease, id)
    -- the hash only while it is ours (it records the size), not another kind's
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
