-- Read the current leader: the record, only while its owner's hold is in
-- the fair lock's hash, so that a leadership whose lease lapsed on the
-- server (or that a crash left half-written) is never reported.
-- KEYS[1]  the fair lock's hash (the election's name)
-- KEYS[2]  the leader's record, relock_election:{<name>}
-- Returns {epoch, rev, since ms, lease ms, pttl ms, value}, or {} when the
-- election is vacant.
local rec = redis.call('hmget', KEYS[2], 'owner', 'epoch', 'rev', 'since', 'lease', 'value')
if not rec[1] or redis.call('hexists', KEYS[1], rec[1]) == 0 then
  return {}
end
local pttl = redis.call('pttl', KEYS[1])
return {tonumber(rec[2]), tonumber(rec[3]), tonumber(rec[4]), tonumber(rec[5]), pttl, rec[6]}
