-- Renew a batch of labeled lock leases (WithHolderLabel) that share one
-- cluster slot (the watchdog): the lock hash and the holder's label key.
--
-- KEYS[2i-1]   the lock hash of lease i
-- KEYS[2i]     the holder label key of lease i, relock_holder:{<name>}:<owner>
-- ARGV[2i-1]   lease i in milliseconds
-- ARGV[2i]     owner id of lease i
--
-- Returns an array: 1 where the owner still holds the lock and its TTL
-- (and its label's) was reset, 0 where the key or the owner's field is gone.
local out = {}
for i = 1, #KEYS / 2 do
  local hash, label = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('hexists', hash, ARGV[2 * i]) == 1 then
    redis.call('pexpire', hash, ARGV[2 * i - 1])
    redis.call('pexpire', label, ARGV[2 * i - 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
