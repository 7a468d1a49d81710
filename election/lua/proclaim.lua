-- Change the leader's value, only while the leadership asking is the
-- current one: its hold still in the fair lock's hash, and the record its
-- own (same owner, same epoch). Anything else writes nothing.
-- KEYS[1]  the fair lock's hash (the election's name)
-- KEYS[2]  the leader's record, relock_election:{<name>}
-- KEYS[3]  the change channel, relock_election__channel:{<name>}
-- ARGV[1]  the leader's owner id
-- ARGV[2]  its epoch
-- ARGV[3]  the new value
-- ARGV[4]  publish command: publish, or spublish on a cluster
-- Returns the record's new revision, 0 when the leadership is not the
-- current one, or may's NOPERM error.
local no = may({{'hexists', KEYS[1]}, {'hset', KEYS[2]}, {ARGV[4], KEYS[3]}})
if no then
  return no
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local rec = redis.call('hmget', KEYS[2], 'owner', 'epoch', 'since', 'lease')
if rec[1] ~= ARGV[1] or rec[2] ~= ARGV[2] then
  return 0
end
local rev = redis.call('hincrby', KEYS[2], 'rev', 1)
redis.call('hset', KEYS[2], 'value', ARGV[3])
tell(ARGV[4], KEYS[3], 'L\t' .. ARGV[2] .. '\t' .. rev .. '\t' .. rec[3] .. '\t' .. rec[4] .. '\t' .. ARGV[3])
return rev
