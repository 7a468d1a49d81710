-- A write to one key, made only when the writer's fencing token is not
-- below the highest one the key has accepted (record.lua comes first).
-- KEYS[1], KEYS[2], ARGV[1], ARGV[2]  as in record.lua
-- ARGV[3]  the command: set, hset, del, pexpire, or admit (no write)
-- ARGV[4..]  its arguments after the key: value [PX ms]; field value ...; ms
-- Reply: the command's reply ("admit": 1), or the error "STALE <highest>"
-- with nothing written.
local refused = stale()
if refused then
    return refused
end
local op, reply = ARGV[3], 1
if op == 'set' then
    reply = redis.call('SET', KEYS[1], unpack(ARGV, 4))
elseif op == 'hset' then
    reply = redis.call('HSET', KEYS[1], unpack(ARGV, 4))
elseif op == 'del' then
    reply = redis.call('DEL', KEYS[1])
elseif op == 'pexpire' then
    reply = redis.call('PEXPIRE', KEYS[1], ARGV[4])
elseif op ~= 'admit' then
    return redis.error_reply('ERR unknown fenced command ' .. op)
end
record()
return reply
