-- Turn one write acquisition into a read one atomically: take a read count
-- and give back a write count; at zero writes the lock turns to read mode and
-- readers are woken. Safe to resend: a second run returns the latched answer.
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- KEYS[3]  this owner's lease keys prefix, {<name>}:<owner>:rwlock_timeout
-- KEYS[4]  fencing token counter, redisson_lock_token:{<name>}
-- KEYS[5]  the latch, redisson_unlock_latch:{<name>}:<request id>
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  owner id .. ':write'
-- ARGV[4]  publish command
-- ARGV[5]  latch lifetime in milliseconds
-- Returns {read count, token}, {-1, 0} when the owner holds no write lock,
-- or may's NOPERM error. Readers left untold (Redis 6) try by the lock's TTL.
local no = may({{'get', KEYS[5]}, {'hget', KEYS[1]}, {'hincrby', KEYS[1]}, {'set', KEYS[3] .. ':1'}, {'pttl', KEYS[3] .. ':1'},
  {'pexpire', KEYS[3] .. ':1'}, {'pttl', KEYS[1]}, {'pexpire', KEYS[1]}, {'hdel', KEYS[1]}, {'hset', KEYS[1]},
  {ARGV[4], KEYS[2]}, {'set', KEYS[5]}}, fenced(KEYS[4]))
if no then
  return no
end
local done = redis.call('get', KEYS[5])
if done ~= false then
  local ind, token = string.match(done, '^(%d+):(%d+)$')
  return {tonumber(ind), tonumber(token)}
end
local c = tonumber(redis.call('hget', KEYS[1], ARGV[3]))
if c == nil then
  return {-1, 0}
end
local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[3] .. ':' .. ind, 1, 'px', ARGV[1])
for j = 1, ind - 1 do -- renew the owner's earlier read leases, as read_acquire
  if redis.call('pttl', KEYS[3] .. ':' .. j) < tonumber(ARGV[1]) then
    redis.call('pexpire', KEYS[3] .. ':' .. j, ARGV[1])
  end
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
if c > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
else
  redis.call('hdel', KEYS[1], ARGV[3])
  redis.call('hset', KEYS[1], 'mode', 'read')
  tell(ARGV[4], KEYS[2], 1)
end
local token = fence(KEYS[4])
-- %.0f: a token has 16 digits, more than Lua's default number format keeps
redis.call('set', KEYS[5], string.format('%.0f:%.0f', ind, token), 'px', ARGV[5])
return {ind, token}
