-- One interpreter dispatch (shimlab.lua.exits): a loop whose body is k
-- copies of `x = x + 1` (one ADDVN bytecode each in LuaJIT, one ADDI in Lua
-- 5.4), run n times; the slope of cycles per iteration against k is one
-- bytecode's dispatch and work.  Run LuaJIT with -joff.
local k = tonumber((...)) or 16
local n = tonumber((select(2, ...))) or 200000
local body = string.rep("x = x + 1 ", k)
local f = assert(load("local n = ... local x = 0 for i = 1, n do " .. body .. "end return x"))
print(string.format("%d x %d: %.0f", k, n, f(n)))
