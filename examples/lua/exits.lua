-- LuaJIT's trace exits at a controlled rate (shimlab.lua.exits): a loop of
-- blocks x 64 iterations whose every iteration does the same work, and in
-- m of each 64 iterations (evenly spaced) takes the branch its trace did not
-- record, which leaves the trace through a side exit.  Run with
-- -Ohotexit=... and -Omaxside=0, no side trace ever links that exit, so each
-- one goes through the exit handler to the interpreter, which finishes the
-- iteration and enters the trace again at the loop's JFORL.
local m = tonumber((...)) or 8
local blocks = tonumber((select(2, ...))) or 20000
local B = 64

local function loop(pat, count)
  local a, b = 0, 0
  for i = 0, count * B - 1 do
    if pat[i % B + 1] == 1 then a = a + i else b = b + i end
  end
  return a, b
end

local zeros, pat = {}, {}
for k = 1, B do zeros[k] = 0; pat[k] = 0 end
for j = 0, m - 1 do pat[math.floor(j * B / m) + 1] = 1 end

-- the trace is recorded here, on the path that stays in it
loop(zeros, 4)
local a, b = loop(pat, blocks)
print(string.format("m=%d blocks=%d: %.0f %.0f", m, blocks, a, b))
