-- Strings: formatting, concatenation through a buffer, pattern matching,
-- substitution and byte access over generated lines of text.
local lines = tonumber((...)) or 80000

local words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
local buf = {}
for i = 1, lines do
  local w = words[i % #words + 1]
  buf[#buf + 1] = string.format("%05d:%s:%s", i, w, string.rep(w:sub(1, 2), i % 5 + 1))
end
local text = table.concat(buf, "\n")

local count, digits = 0, 0
for key, word in text:gmatch("(%d+):(%a+):") do
  count = count + 1
  digits = digits + #key + #word
end
local replaced, n_sub = text:gsub("a(%a)", "%1A")
local upper = replaced:upper()
local hash = 0
for i = 1, #upper, 7 do hash = (hash * 131 + upper:byte(i)) % 1000000007 end
local found, pos = 0, 1
while true do
  local s = upper:find("ETA:", pos, true)
  if not s then break end
  found, pos = found + 1, s + 3
end
local reversed = text:sub(1, 64):reverse()

print(string.format("%d bytes, %d records (%d chars), %d substitutions, %d ETA:, hash %d",
                    #text, count, digits, n_sub, found, hash))
print(reversed)
