-- End a leadership's record and tell the observers the election is vacant;
-- the caller then releases the fair lock, which elects the next candidate.
-- Safe to run twice: a second run finds no record of this leadership.
-- KEYS[1]  the leader's record, relock_election:{<name>}
-- KEYS[2]  the change channel, relock_election__channel:{<name>}
-- ARGV[1]  the leader's owner id
-- ARGV[2]  its epoch
-- ARGV[3]  publish command: publish, or spublish on a cluster
-- Returns 1 when the record was this leadership's and is gone, 0 when it was
-- not (already resigned, lapsed, or another leader's), or may's NOPERM error.
local no = may({{'hmget', KEYS[1]}, {'del', KEYS[1]}, {ARGV[3], KEYS[2]}})
if no then
  return no
end
local rec = redis.call('hmget', KEYS[1], 'owner', 'epoch')
if rec[1] ~= ARGV[1] or rec[2] ~= ARGV[2] then
  return 0
end
redis.call('del', KEYS[1])
tell(ARGV[3], KEYS[2], 'V\t' .. ARGV[2])
return 1
