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
-- may and tell, as in internal/scripts' lua/acl.lua (this script loads
-- no library).
--
-- may returns the error reply of the first check this user may not run,
-- or nil when it may run them all. Its arguments are lists of checks; a
-- check is a command and its key or channel, as redis.acl_check_cmd takes
-- it (Redis 7); false stands for a check that does not apply. A script
-- asks before its first write, so that a refusal changes nothing, and the
-- reply names the command and the key or channel refused instead of the
-- script's SHA and line. Older servers and miniredis have no
-- acl_check_cmd: nil, and a refused command fails where it stands.
local function may(...)
  local check = redis.acl_check_cmd
  if not check then
    return nil
  end
  -- The keys a script declares are checked, for reading and writing, with
  -- the call itself: for those the command alone is asked, once. A
  -- channel is asked for whatever the keys say.
  local declared, seen = {}, {}
  for _, k in ipairs(KEYS) do
    declared[k] = true
  end
  for _, checks in ipairs({...}) do
    for _, c in ipairs(checks) do
      local cmd, arg = c and string.upper(c[1]), c and c[2]
      local channel = cmd == 'PUBLISH' or cmd == 'SPUBLISH'
      -- Every check passes a command its full arguments, the key (or a
      -- declared one) in each place: a command asked with fewer than it
      -- takes makes the server read past them (Redis 7.0 crashes on SET).
      local k = KEYS[1] or 'x'
      if c and (channel or (arg ~= nil and not declared[arg])) then
        if not check(c[1], arg, arg, arg, arg) then
          -- A command refused whatever its channel reads as refused on
          -- this one: there is no channel to ask it with that is sure to
          -- be allowed.
          if not channel and not check(c[1], k, k, k, k) then
            return redis.error_reply('NOPERM relock: this user may not run ' .. cmd)
          end
          return redis.error_reply('NOPERM relock: this user may not ' .. cmd ..
            (channel and ' to channel ' or ' on key ') .. arg)
        end
      elseif c and not seen[cmd] then
        seen[cmd] = true
        if not check(c[1], k, k, k, k) then
          return redis.error_reply('NOPERM relock: this user may not run ' .. cmd)
        end
      end
    end
  end
  return nil
end

-- tell publishes message on channel with cmd (PUBLISH or SPUBLISH) and
-- reports whether it could. Where may could not ask beforehand (Redis 6),
-- a refused channel shows only here, after the writes, which stand: the
-- script then says so in its reply ("released, waiters not told")
-- instead of failing after it changed the lock.
local function tell(cmd, channel, message)
  return type(redis.pcall(cmd, channel, message)) ~= 'table'
end

local no = may({{'zrem', KEYS[1]}, {ARGV[2], KEYS[2]}})
if no then
  return no
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  tell(ARGV[2], KEYS[2], 1)
  return 1
end
return 0
