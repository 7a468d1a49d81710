-- may returns the error reply of the first check this user may not run,
-- or nil when it may run them all. Its arguments are lists of checks; a
-- check is a command and its key or channel, as redis.acl_check_cmd takes
-- it (Redis 7); false stands for a check that does not apply. A script
-- asks before its first write, so that a refusal changes nothing, and the
-- reply names the command and the key or channel refused instead of the
-- script's SHA and line. A script may leave out what runs before its
-- first write, and that write itself: their refusal changes nothing
-- either, and Go names the command from the line Redis reports
-- (internal/scripts' named). Older servers and miniredis have no
-- acl_check_cmd: nil, and a refused command fails where it stands.
local function may(...)
  local check = redis.acl_check_cmd
  if not check then
    return nil
  end
  -- Each check asks for its command on its own key or channel (a command
  -- without one, TIME, on the first key): Redis 7's selectors may allow a
  -- command on one key pattern and refuse it on another, so a key the
  -- call declares is not enough. A check listed twice is asked twice,
  -- cheaper than a table to remember it: this runs on every call.
  local k = KEYS[1] or 'x'
  for i = 1, select('#', ...) do
    local checks = select(i, ...)
    for j = 1, #checks do
      local c = checks[j]
      if c then
        local cmd, arg = c[1], c[2] or k
        -- Every check passes a command its full arguments, the key in each
        -- place: a command asked with fewer than it takes makes the server
        -- read past them (Redis 7.0 crashes on SET).
        if not check(cmd, arg, arg, arg, arg) then
          if cmd == 'publish' or cmd == 'spublish' then
            return redis.error_reply('NOPERM relock: this user may not ' .. string.upper(cmd) .. ' to channel ' .. arg)
          end
          -- Refused on the first key too: the command, most likely.
          if arg == k or not check(cmd, k, k, k, k) then
            return redis.error_reply('NOPERM relock: this user may not run ' .. string.upper(cmd))
          end
          return redis.error_reply('NOPERM relock: this user may not ' .. string.upper(cmd) .. ' on key ' .. arg)
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
