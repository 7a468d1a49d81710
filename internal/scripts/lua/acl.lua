-- may returns the error reply of the first check this user may not run,
-- or nil when it may run them all. Its arguments are lists of checks; a
-- check is a command and its key or channel, as redis.acl_check_cmd takes
-- it (Redis 7); false stands for a check that does not apply. A script
-- asks before its first write, so that a refusal changes nothing, and the
-- reply names the command and the key or channel refused instead of the
-- script's SHA and line. A script may leave out what runs before its
-- first write, and that write itself: their refusal changes nothing
-- either, and Go names the command (lua/explain.lua) at no cost to the
-- calls that pass. Older servers and miniredis have no acl_check_cmd:
-- nil, and a refused command fails where it stands.
local function may(...)
  local check = redis.acl_check_cmd
  if not check then
    return nil
  end
  -- The keys a script declares are checked, for reading and writing, with
  -- the call itself: for those the command alone is asked (a command
  -- listed twice is asked twice, cheaper than a table to remember it). A
  -- channel is asked for whatever the keys say. No table is built here:
  -- this runs on every call, and a table costs as much as a check.
  local k = KEYS[1] or 'x'
  for i = 1, select('#', ...) do
    local checks = select(i, ...)
    for j = 1, #checks do
      local c = checks[j]
      if c then
        local cmd, arg = c[1], c[2]
        local channel = cmd == 'publish' or cmd == 'spublish'
        local undeclared = arg ~= nil and not channel
        if undeclared then
          for n = 1, #KEYS do
            if KEYS[n] == arg then
              undeclared = false
              break
            end
          end
        end
        -- Every check passes a command its full arguments, the key (or a
        -- declared one) in each place: a command asked with fewer than it
        -- takes makes the server read past them (Redis 7.0 crashes on SET).
        if channel or undeclared then
          if not check(cmd, arg, arg, arg, arg) then
            -- A command refused whatever its channel reads as refused on
            -- this one: there is no channel to ask it with that is sure
            -- to be allowed.
            if not channel and not check(cmd, k, k, k, k) then
              return redis.error_reply('NOPERM relock: this user may not run ' .. string.upper(cmd))
            end
            return redis.error_reply('NOPERM relock: this user may not ' .. string.upper(cmd) ..
              (channel and ' to channel ' or ' on key ') .. arg)
          end
        elseif not check(cmd, k, k, k, k) then
          return redis.error_reply('NOPERM relock: this user may not run ' .. string.upper(cmd))
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
