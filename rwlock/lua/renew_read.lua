-- Renew a batch of read holds of one cluster slot (the watchdog): only the
-- owner's own lease keys, so that a crashed reader's hold still ends with its
-- lease (Redisson renews all). A labeled batch has a label key per hold.
-- KEYS[s*i-s+1]  the lock hash of hold i (s = #KEYS / holds: 2, or 3 labeled)
-- KEYS[s*i-s+2]  the owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
-- KEYS[s*i]      with s = 3: the holder label key of hold i
-- ARGV[2i-1]     lease i in milliseconds
-- ARGV[2i]       owner id of hold i
-- Returns an array: 1 where renewed, 0 where the hold is gone.
local n = #ARGV / 2
local s = #KEYS / n
local out = {}
for i = 1, n do
  local hash, prefix = KEYS[s * i - s + 1], KEYS[s * i - s + 2]
  local lease = tonumber(ARGV[2 * i - 1])
  local c = tonumber(redis.call('hget', hash, ARGV[2 * i]))
  local ok = 0
  if c ~= nil then
    for j = 1, c do
      if redis.call('pexpire', prefix .. ':' .. j, lease) == 1 then
        ok = 1
      end
    end
  end
  if ok == 1 then
    if redis.call('pttl', hash) < lease then
      redis.call('pexpire', hash, lease)
    end
    if s == 3 then
      redis.call('pexpire', KEYS[3 * i], lease)
    end
  end
  out[i] = ok
end
return out
