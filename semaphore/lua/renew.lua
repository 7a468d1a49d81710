-- Renew a batch of permits of one cluster slot (the watchdog), by Redis
-- server time. A permit already past its expiry is not revived: it may
-- have been counted free by a concurrent acquire. The semaphore's keys
-- expire with its last permit or mark, so a renewed permit extends them
-- (never shortens them).
--
-- KEYS[3i-2]  the live permits zset of permit i
-- KEYS[3i-1]  the semaphore hash of permit i
-- KEYS[3i]    the permit weights hash of permit i
-- ARGV[2i-1]  lease i in milliseconds
-- ARGV[2i]    permit id i
--
-- Returns an array: 1 where renewed, 0 where the permit is gone.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS / 3 do
  local permits, lease, id = KEYS[3 * i - 2], tonumber(ARGV[2 * i - 1]), ARGV[2 * i]
  local score = redis.call('zscore', permits, id)
  if score ~= false and tonumber(score) > now then
    redis.call('zadd', permits, 'XX', now + lease, id)
    for j = 3 * i - 2, 3 * i do
      if redis.call('pttl', KEYS[j]) < lease then
        redis.call('pexpire', KEYS[j], lease)
      end
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
