-- Names the command that refused a script, which Redis's own error does
-- not: a script asks beforehand (may, from lua/acl.lua) only for what it
-- runs after its first write, so a refusal before it reaches the caller
-- as "the user executing the script can't run this command". This asks
-- for each command that script runs, as may would have.
--
-- KEYS     the refused script's keys, so that this runs where it ran and
--          asks as may asks for a declared key
-- ARGV     the commands the refused script runs, in its order
--
-- Returns may's error reply for the first command refused, or 'ok' when
-- none is (the refusal was of something else: a key or a channel).
local checks = {}
for i = 1, #ARGV do
  checks[i] = {ARGV[i]}
end
return may(checks) or 'ok'
