-- Renew a batch of write holds of one cluster slot (the watchdog); a labeled
-- batch (WithHolderLabel) has a label key after each hash.
-- KEYS[s*i-s+1]  the lock hash of hold i (s = #KEYS / holds: 1, or 2 labeled)
-- KEYS[s*i]      with s = 2: the holder label key of hold i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       owner id .. ':write' of hold i
-- Returns an array: 1 where renewed, 0 where the hold is gone.
local n = #ARGV / 2
local s = #KEYS / n
local out = {}
for i = 1, n do
  local hash = KEYS[s * i - s + 1]
  if redis.call('hexists', hash, ARGV[2 * i]) == 1 then
    local lease = tonumber(ARGV[2 * i - 1])
    if redis.call('pttl', hash) < lease then
      redis.call('pexpire', hash, lease)
    end
    if s == 2 then
      redis.call('pexpire', KEYS[2 * i], lease)
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
