-- Renew a batch of read holds of one cluster slot (the watchdog): only the
-- owner's own lease keys, so a crashed reader's hold still ends with its
-- lease while others renew theirs (unlike Redisson, which renews all).
--
-- KEYS[2i-1]  the lock hash of hold i
-- KEYS[2i]    the owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
-- ARGV[2i-1]  lease i in milliseconds
-- ARGV[2i]    owner id of hold i
--
-- Returns an array: 1 where renewed, 0 where the hold is gone.
local out = {}
for i = 1, #KEYS / 2 do
  local hash, prefix = KEYS[2 * i - 1], KEYS[2 * i]
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
  if ok == 1 and redis.call('pttl', hash) < lease then
    redis.call('pexpire', hash, lease)
  end
  out[i] = ok
end
return out
