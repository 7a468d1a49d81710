-- A waiting writer gives up: remove its mark and wake the readers it was
-- holding back.
--
-- KEYS[1]  waiting writers, zset {<name>}:rwlock_write_waiters
-- KEYS[2]  the channel, redisson_rwlock:{<name>}
-- ARGV[1]  owner id (the member)
-- ARGV[2]  publish command
--
-- A command this user may not run is refused before anything is written
-- (may), with an error reply naming it. Readers the server could not tell
-- (a publish refused after the write, on a server too old to refuse it
-- beforehand) try again by the mark's end.
--
-- Returns 1 when a mark was removed.
-- may and tell come from internal/scripts' lua/acl.lua (scripts.Checks).
local no = may({{'zrem', KEYS[1]}, {ARGV[2], KEYS[2]}})
if no then
  return no
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  tell(ARGV[2], KEYS[2], 1)
  return 1
end
return 0
