-- Renew a batch of permits of one cluster slot (the watchdog), by Redis
-- server time. A permit already past its expiry is not revived: it may
-- have been counted free by a concurrent acquire.
--
-- KEYS[i]     the live permits zset of permit i
-- ARGV[2i-1]  lease i in milliseconds
-- ARGV[2i]    permit id i
--
-- Returns an array: 1 where renewed, 0 where the permit is gone.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  local score = redis.call('zscore', KEYS[i], ARGV[2 * i])
  if score ~= false and tonumber(score) > now then
    redis.call('zadd', KEYS[i], 'XX', now + tonumber(ARGV[2 * i - 1]), ARGV[2 * i])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
