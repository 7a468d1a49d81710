-- Release a lock's last count and hand it to the next owner, the head of
-- this process's local queue: one round trip, no message. Safe to retry with
-- no latch: until told, the next owner cannot have re-entered or left.
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>}
-- ARGV[1]  owner id releasing
-- ARGV[2]  next owner id
-- ARGV[3]  next owner's lease in milliseconds
-- Returns {1, token} when handed over (the next owner's token), {-1, 0} when
-- the owner does not hold the lock, {-2, 0} when it holds more than one
-- count (nothing changed: unlock.lua decrements), or a refusal's error.
-- It reads first and asks may only about the writes after its first.
local count = redis.call('hget', KEYS[1], ARGV[1])
if count == false then
  if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return {1, tonumber(redis.call('get', KEYS[2]))} -- a retry: handed over already
  end
  return {-1, 0}
end
if tonumber(count) > 1 then
  return {-2, 0}
end
local token = draw(KEYS[2])
-- the DEL first, which a full server lets through; may asks about the rest
local no = may({{'hset', KEYS[1]}, {'pexpire', KEYS[1]}, {'set', KEYS[2]}})
if no then
  return no
end
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[3])
return {1, keep(KEYS[2], token, false)}
