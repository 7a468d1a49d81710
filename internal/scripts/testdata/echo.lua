-- Returns its key and its arguments, to check that both reach the script.
local out = {KEYS[1]}
for i = 1, #ARGV do
  out[#out + 1] = ARGV[i]
end
return out
