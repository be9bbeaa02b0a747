-- Recursion: calls and returns dominate (the naive doubly recursive Fibonacci).
local n = tonumber((...)) or 32

local function fib(k)
  if k < 2 then return k end
  return fib(k - 1) + fib(k - 2)
end

print(string.format("fib(%d) = %d", n, fib(n)))
