-- Permits free now, after reclaiming expired ones.
--
-- KEYS[1]  the semaphore hash
-- KEYS[2]  live permits zset
-- KEYS[3]  permit weights hash
-- ARGV[1]  size as this client knows it
--
-- Returns {1, available}; {-2, size} when Redis records another size; a
-- semaphore never acquired has all of ARGV[1] free (nothing is written).
local size = tonumber(redis.call('hget', KEYS[1], 'size'))
if size == nil then
  return {1, tonumber(ARGV[1])}
end
if size ~= tonumber(ARGV[1]) then
  return {-2, size}
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used = tonumber(redis.call('hget', KEYS[1], 'used')) or 0
local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now)
for _, id in ipairs(expired) do
  used = used - (tonumber(redis.call('hget', KEYS[3], id)) or 0)
  redis.call('hdel', KEYS[3], id)
  redis.call('zrem', KEYS[2], id)
end
if used < 0 then used = 0 end
-- used is a sum kept beside the permits; with no live permit it is 0,
-- whatever it says (the permits zset was deleted or evicted under it)
if redis.call('zcard', KEYS[2]) == 0 then
  used = 0
  redis.call('del', KEYS[3])
end
redis.call('hset', KEYS[1], 'used', used)
-- after a Resize below what is held, nothing is free (not a negative count)
return {1, math.max(size - used, 0)}
