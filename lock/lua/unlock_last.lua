-- Release the last count of a reentrant lock this process knows of, the
-- common unlock, with no latch key to write: a retry whose first reply was
-- lost finds the field gone and answers -1, which the caller reads as
-- released unless the lease was lost. When Redis holds more counts than
-- the caller knew, nothing is changed and -2 sends the caller to
-- unlock.lua, whose latch makes a decrement safe to retry.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{<name>}
-- KEYS[3]  a fair lock's waiter list, redisson_lock_queue:{<name>},
-- KEYS[4]  its deadlines, redisson_lock_timeout:{<name>}, KEYS[5] its
--          fencing counter and KEYS[6] its waiters hash (absent for a lock:
--          wake, from lua/wake.lua, publishes on the channel)
-- ARGV[1]  the unlock message (Redisson's UNLOCK_MESSAGE, 0)
-- ARGV[2]  owner id
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- ARGV[4]  a fair lock's: '1' when a release may write the first waiter's
--          hold (lua/wake.lua)
--
-- A command this user may not run is refused before anything is written
-- (may), with an error reply naming it.
--
-- Returns 1 when released (key deleted, message published), 2 when
-- released but the message could not be published (a server too old to
-- refuse it beforehand: the waiters were not told), -1 when the owner does
-- not hold the lock, -2 when it holds more than one count.
-- may and tell, as in internal/scripts' lua/acl.lua (a lock loads this
-- script without the libraries that hold them).
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

local fair = KEYS[3] ~= nil
local no = may({{'hget', KEYS[1]}, {'del', KEYS[1]}},
  fair and woken(ARGV[3], KEYS[2], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]) or {{ARGV[3], KEYS[2]}})
if no then
  return no
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
  return -1
end
if tonumber(count) > 1 then
  return -2
end
redis.call('del', KEYS[1])
local told
if fair then
  told = wake(ARGV[3], KEYS[2], ARGV[1], KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[4])
else
  told = tell(ARGV[3], KEYS[2], ARGV[1]) -- a lock: loaded without the libraries
end
return told and 1 or 2
