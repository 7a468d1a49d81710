-- Renew a batch of lock leases of one cluster slot (the watchdog), with the
-- keys kept with each hold (its holder label, an election's record); every
-- hold of a batch has as many keys (the stride s).
-- KEYS[s*i-s+1]  the lock hash of lease i (s = #KEYS / leases: 1 to 3)
-- KEYS[s*i-s+j]  for j = 2..s: the keys renewed with lease i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       owner id of lease i
-- Returns an array: 1 where the owner still holds the lock (TTLs reset), 0
-- where the key or the owner's field is gone.
local n = #ARGV / 2
local s = #KEYS / n
local out = {}
for i = 1, n do
  local hash = KEYS[s * i - s + 1]
  if redis.call('hexists', hash, ARGV[2 * i]) == 1 then
    redis.call('pexpire', hash, ARGV[2 * i - 1])
    for j = 2, s do
      redis.call('pexpire', KEYS[s * i - s + j], ARGV[2 * i - 1])
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
