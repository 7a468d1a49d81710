-- Test kind: renew string keys whose value is the owner.
-- KEYS[i] key of lease i; ARGV[2i-1] lease ms; ARGV[2i] owner of lease i.
-- Returns 1 per renewed lease, 0 per lease whose key no longer holds owner.
local out = {}
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[2 * i] then
    redis.call('pexpire', KEYS[i], ARGV[2 * i - 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
