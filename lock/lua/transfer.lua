-- Release the last count of a reentrant lock and hand the lock straight to
-- the next owner (a goroutine of this process waiting at the head of its
-- local queue) instead of freeing it: one round trip instead of a release
-- and an acquire. No message is published: the lock never became free.
-- Safe to retry without a latch: once handed over, the next owner holds
-- the lock and has not been told, so it cannot have re-entered or left,
-- and the token counter still holds its token.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing token counter, redisson_lock_token:{<name>} (fence:
--          internal/scripts' lua/fence.lua, loaded before this source)
-- ARGV[1]  owner id releasing
-- ARGV[2]  next owner id
-- ARGV[3]  next owner's lease in milliseconds
--
-- A command this user may not run is refused before anything is written
-- (may, from internal/scripts' lua/fence.lua), with an error reply naming
-- it.
--
-- Returns {1, token} when handed over (token: the next owner's fencing
-- token), {-1, 0} when the owner does not hold the lock, {-2, 0} when it
-- holds more than one count (nothing changed: unlock.lua decrements).
local no = may({{'hget', KEYS[1]}, {'hexists', KEYS[1]}, {'del', KEYS[1]}, {'hset', KEYS[1]}, {'pexpire', KEYS[1]}}, fenced(KEYS[2]))
if no then
  return no
end
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
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[3])
return {1, fence(KEYS[2])}
