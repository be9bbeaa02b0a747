-- Closures and upvalues: counters, adders made by factories, function
-- composition and folds that call a closure per element.
local rounds = tonumber((...)) or 12000

local function counter()
  local c = 0
  return function(step) c = c + step; return c end
end

local function adder(k) return function(x) return x + k end end

local function compose(f, g) return function(x) return f(g(x)) end end

local function fold(t, f, init)
  local acc = init
  for i = 1, #t do acc = f(acc, t[i]) end
  return acc
end

local function map(t, f)
  local out = {}
  for i = 1, #t do out[i] = f(t[i]) end
  return out
end

local data = {}
for i = 1, 100 do data[i] = i end

local total = 0
local tick = counter()
for r = 1, rounds do
  local add = compose(adder(r % 7), adder(1))
  local mapped = map(data, add)
  local sum = fold(mapped, function(acc, x) return (acc + x * tick(1)) % 1000003 end, 0)
  total = (total + sum) % 1000000007
end
print(string.format("%d rounds: total %d, ticks %d", rounds, total, tick(0)))
