-- Renew a batch of write holds of one cluster slot (the watchdog).
--
-- KEYS[i]     the lock hash of hold i
-- ARGV[2i-1]  lease i in milliseconds
-- ARGV[2i]    owner id .. ':write' of hold i
--
-- Returns an array: 1 where renewed, 0 where the hold is gone.
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[2 * i]) == 1 then
    local lease = tonumber(ARGV[2 * i - 1])
    if redis.call('pttl', KEYS[i]) < lease then
      redis.call('pexpire', KEYS[i], lease)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
