-- Renew a batch of lock leases that share one cluster slot (the watchdog).
-- A labeled hold (WithHolderLabel) has its label key after its hash, and
-- it is renewed with it; a batch is all labeled or none (its stride).
--
-- KEYS[s*i-s+1]  the lock hash of lease i (s = #KEYS / leases: 1, or 2
--                with a label)
-- KEYS[s*i]      with s = 2: the holder label key of lease i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       owner id of lease i
--
-- Returns an array: 1 where the owner still holds the lock and its TTL
-- (and its label's) was reset, 0 where the key or the owner's field is gone.
local n = #ARGV / 2
local s = #KEYS / n
local out = {}
for i = 1, n do
  local hash = KEYS[s * i - s + 1]
  if redis.call('hexists', hash, ARGV[2 * i]) == 1 then
    redis.call('pexpire', hash, ARGV[2 * i - 1])
    if s == 2 then
      redis.call('pexpire', KEYS[2 * i], ARGV[2 * i - 1])
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
