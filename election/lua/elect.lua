-- Record a new leader: the candidate whose fair-lock hold was just granted
-- writes the record, living as long as the hold, and tells the observers.
-- Safe to run twice: the same record and message, which observers take once.
-- KEYS[1]  the fair lock's hash (the election's name); field <owner>
-- KEYS[2]  the leader's record, relock_election:{<name>}
-- KEYS[3]  the change channel, relock_election__channel:{<name>}
-- ARGV[1]  the leader's owner id (its hold's field)
-- ARGV[2]  its epoch: the hold's fencing token
-- ARGV[3]  the value it campaigned with
-- ARGV[4]  publish command: publish, or spublish on a cluster
-- Returns {1, since ms, lease ms}, {0} when the owner no longer holds the
-- lock (its lease lapsed first), or may's NOPERM error.
local no = may({{'hexists', KEYS[1]}, {'hset', KEYS[2]}, {'pexpire', KEYS[2]}, {ARGV[4], KEYS[3]}})
if no then
  return no
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {0}
end
local pttl = redis.call('pttl', KEYS[1])
local t = redis.call('time')
local since = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('hmget', KEYS[2], 'owner', 'since')
if old[1] == ARGV[1] and old[2] then
  since = tonumber(old[2]) -- a second run keeps the first one's start
end
redis.call('hset', KEYS[2], 'owner', ARGV[1], 'epoch', ARGV[2], 'value', ARGV[3],
  'since', since, 'rev', 1, 'lease', pttl)
redis.call('pexpire', KEYS[2], pttl)
tell(ARGV[4], KEYS[3], 'L\t' .. ARGV[2] .. '\t1\t' .. since .. '\t' .. pttl .. '\t' .. ARGV[3])
return {1, since, pttl}
