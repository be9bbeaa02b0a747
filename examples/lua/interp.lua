-- One interpreter dispatch (shimlab.lua.exits): a loop whose body is k
-- copies of `y = 1` (one KSHORT bytecode each in LuaJIT, one LOADI in Lua
-- 5.4: a constant into a slot, no chain of data from one to the next, like
-- shimlab's LOAD_INT/POP pairs), run n times; the slope of cycles per
-- iteration against k is one bytecode's dispatch and work.  Run LuaJIT with -joff.
local k = tonumber((...)) or 16
local n = tonumber((select(2, ...))) or 200000
local body = string.rep("y = 1 ", k)
local f = assert(load("local n = ... local y = 0 for i = 1, n do " .. body .. "end return y"))
print(string.format("%d x %d: %d", k, n, f(n)))
