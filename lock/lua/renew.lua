-- Renew a batch of lock leases that share one cluster slot (the watchdog).
--
-- KEYS[i]      the lock hash of lease i
-- ARGV[2i-1]   lease i in milliseconds
-- ARGV[2i]     owner id of lease i
--
-- Returns an array: 1 where the owner still holds the lock and its TTL was
-- reset, 0 where the key or the owner's field is gone.
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[2 * i]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[2 * i - 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
