-- Waking a lock's waiters, shared by the scripts that free a lock (a
-- library: Load puts it before a script's source).
--
-- A lock wakes its waiters with one message on its channel. A fair lock
-- (lock.NewFair, Redisson RFairLock's layout) keeps its waiters in a list,
-- redisson_lock_queue:{<name>}, each with a deadline in a zset,
-- redisson_lock_timeout:{<name>} (server time in ms), and wakes only the
-- first of them, on its own channel <channel>:<waiter id>. A waiter whose
-- deadline passed (it stopped renewing it: it died, or gave up without a
-- word) is dropped when it reaches the head of the list.

-- now is the server's time in milliseconds.
local function now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- head drops the lapsed waiters at the head of queue and returns the first
-- live one (false when none).
local function head(queue, timeouts, at)
  while true do
    local first = redis.call('lindex', queue, 0)
    if first == false then
      return false
    end
    local deadline = tonumber(redis.call('zscore', timeouts, first))
    if deadline ~= nil and deadline > at then
      return first
    end
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, first)
  end
end

-- wake tells the waiters that the lock is free: the message on channel, or
-- for a fair lock (queue given) on the first live waiter's channel.
local function wake(publish, channel, message, queue, timeouts)
  if queue == nil then
    redis.call(publish, channel, message)
    return
  end
  local first = head(queue, timeouts, now())
  if first then
    redis.call(publish, channel .. ':' .. first, message)
  end
end
