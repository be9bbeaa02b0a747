-- Tables as arrays: the sieve of Eratosthenes, run over the same bound a few times.
local limit = tonumber((...)) or 1000000
local rounds = tonumber((select(2, ...))) or 4

local function sieve(m)
  local composite = {}
  for i = 1, m do composite[i] = false end
  local count, last = 0, 0
  for i = 2, m do
    if not composite[i] then
      count = count + 1
      last = i
      for j = i * i, m, i do composite[j] = true end
    end
  end
  return count, last
end

local total = 0
local count, last
for _ = 1, rounds do
  count, last = sieve(limit)
  total = total + count
end
print(string.format("primes up to %d: %d, the largest %d (%d over %d rounds)",
                    limit, count, last, total, rounds))
