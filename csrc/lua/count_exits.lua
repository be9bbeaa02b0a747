-- The exit count behind `shimlab lua exits` (shimlab.lua.exits): runs a
-- program as the timing driver does, twice, and prints how many trace exits
-- LuaJIT's "texit" event reported in the second run (after the first has
-- recorded the traces), so the sweep can check it takes m x blocks exits
-- per run more than at m = 0 before any time of it is kept.
--   luajit [-O...] count_exits.lua PROGRAM [PROGRAM ARGS...]
local program = ...
local args = {select(2, ...)}
local chunk = assert(loadfile(program))
local env = {}
for k, v in pairs(_G) do env[k] = v end
env.print = function() end
env._G = env
setfenv(chunk, env)
chunk(unpack(args))
local exits = 0
local function count() exits = exits + 1 end
jit.attach(count, "texit")
chunk(unpack(args))
jit.attach(count)
print("exits " .. exits)
