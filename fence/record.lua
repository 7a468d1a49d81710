-- The check every fenced write makes, shared by write.lua and the
-- user's scripts (Redis.Script): assembled in front of them at load time.
-- KEYS[1]  the key written (it may not exist)
-- KEYS[2]  its record: the highest token the key has accepted, in KEYS[1]'s slot
-- ARGV[1]  the writer's fencing token
-- ARGV[2]  how long the record outlives the key, in ms (0: deleted with it)

-- stale returns the refusal when the writer's token is below the record,
-- nil when the write may go on; it writes nothing.
local function stale()
    local highest = redis.call('GET', KEYS[2])
    if highest and tonumber(highest) > tonumber(ARGV[1]) then
        return redis.error_reply('STALE ' .. highest)
    end
    return nil
end

-- record keeps the writer's token as the highest, expiring the record
-- ARGV[2] ms after the key (never, while the key lives without a TTL).
local function record()
    local ttl = redis.call('PTTL', KEYS[1])
    local retain = tonumber(ARGV[2])
    if ttl == -1 then
        redis.call('SET', KEYS[2], ARGV[1])
    elseif ttl >= 0 then
        redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl + math.max(retain, 1))
    elseif retain > 0 then
        redis.call('SET', KEYS[2], ARGV[1], 'PX', retain)
    else
        redis.call('DEL', KEYS[2])
    end
end
