-- Floating point and calls through closures: the largest singular value of
-- the infinite matrix a(i, j) = 1 / ((i + j)(i + j + 1) / 2 + i + 1),
-- truncated to n x n, by ten rounds of power iteration on A^T A.
local n = tonumber((...)) or 300

local function a(i, j)
  local ij = i + j
  return 1.0 / (ij * (ij + 1) * 0.5 + i + 1)
end

local function times(v, out, transposed)
  for i = 0, n - 1 do
    local sum = 0.0
    for j = 0, n - 1 do
      sum = sum + (transposed and a(j, i) or a(i, j)) * v[j]
    end
    out[i] = sum
  end
end

local function times_ata(v, out, tmp)
  times(v, tmp, false)
  times(tmp, out, true)
end

local u, v, tmp = {}, {}, {}
for i = 0, n - 1 do u[i] = 1.0; v[i] = 0.0; tmp[i] = 0.0 end
for _ = 1, 10 do
  times_ata(u, v, tmp)
  times_ata(v, u, tmp)
end
local vbv, vv = 0.0, 0.0
for i = 0, n - 1 do
  vbv = vbv + u[i] * v[i]
  vv = vv + v[i] * v[i]
end
print(string.format("%.9f", math.sqrt(vbv / vv)))
