-- A user's script run under the fencing check: record.lua comes first,
-- then the user's source as "local function body(KEYS, ARGV) ... end",
-- then this.
-- KEYS[1], KEYS[2], ARGV[1], ARGV[2]  as in record.lua
-- KEYS[3..], ARGV[3..]  the user's keys and arguments: body's KEYS and ARGV
-- Reply: body's reply, or the error "STALE <highest>" with body not run.
local refused = stale()
if refused then
    return refused
end
local reply = body({unpack(KEYS, 3)}, {unpack(ARGV, 3)})
record()
return reply
