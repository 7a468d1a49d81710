-- may returns the NOPERM error reply of the first check ({command, key or
-- channel}, or false: none) this user may not run, or nil. Asked before a
-- script's first write, a refusal changes nothing and names what was refused.
-- Without redis.acl_check_cmd (Redis 6, miniredis) it is always nil.
local function may(...)
  local check = redis.acl_check_cmd
  if not check then
    return nil
  end
  -- each command on its own key or channel (TIME on the first key): Redis 7
  -- selectors may allow a command on one key pattern and refuse it on another
  local k = KEYS[1] or 'x'
  for i = 1, select('#', ...) do
    local checks = select(i, ...)
    for j = 1, #checks do
      local c = checks[j]
      if c then
        local cmd, arg = c[1], c[2] or k
        -- the key in every argument place: asked with fewer, Redis 7.0 crashes
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

-- tell publishes message on channel with cmd and reports whether it could.
-- Where may could not ask first (Redis 6), a refused publish shows only here,
-- after the writes: the script replies "waiters not told" instead of failing.
local function tell(cmd, channel, message)
  return type(redis.pcall(cmd, channel, message)) ~= 'table'
end

-- run asks may about every write of W (each {command, key, ...}, in order)
-- and about the checks a script makes after it (a publish, a latch), then
-- runs W: nil, or may's error with nothing written.
local function run(W, ...)
  local no = may(W, ...)
  if no then
    return no
  end
  for i = 1, #W do
    redis.call(unpack(W[i]))
  end
  return nil
end
