-- A waiting writer gives up: remove its mark and wake the readers it held back.
-- KEYS[1]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- ARGV[1]  owner id (the member)
-- ARGV[2]  publish command
-- Returns 1 when a mark was removed, 0 when none was, or may's NOPERM error.
-- Readers left untold (Redis 6) try again by the mark's end.
local no = may({{'zrem', KEYS[1]}, {ARGV[2], KEYS[2]}})
if no then
  return no
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  tell(ARGV[2], KEYS[2], 1)
  return 1
end
return 0
