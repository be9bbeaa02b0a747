-- LuaJIT's trace exits at a controlled rate (shimlab.lua.exits): a loop of
-- blocks x 64 iterations whose every iteration does the same work, and in
-- m of each 64 iterations (evenly spaced) takes the branch its trace did not
-- record, which leaves the trace through a side exit.  Run with
-- -Ohotexit=1000000000 -Omaxside=0, no side trace ever links that exit, so
-- each one goes through the exit handler to the interpreter, which finishes
-- the iteration and enters the trace again at the loop's JFORL.
--
-- The loop is in the main chunk, not in a function: a trace is specialized
-- to the closure it was recorded in, and the timing driver runs the chunk
-- again for every run, which would make a new closure each time (and every
-- entry into the old trace would then leave it at once).
local m = tonumber((...)) or 8
local blocks = tonumber((select(2, ...))) or 20000
local B = 64

local zeros, pat = {}, {}
for k = 1, B do zeros[k] = 0; pat[k] = 0 end
for j = 0, m - 1 do pat[math.floor(j * B / m) + 1] = 1 end

-- phase 1 runs 4 blocks without a taken branch: the trace is recorded there,
-- on the path that stays in it; phase 2 is the measured loop
local patterns, counts = {zeros, pat}, {4, blocks}
local a, b = 0, 0
for phase = 1, 2 do
  local p, n = patterns[phase], counts[phase] * B - 1
  a, b = 0, 0
  for i = 0, n do
    if p[i % B + 1] == 1 then a = a + 1 else b = b + 1 end
  end
end
print(string.format("m=%d blocks=%d: %d %d", m, blocks, a, b))
