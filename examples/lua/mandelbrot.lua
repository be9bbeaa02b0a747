-- Floating point in a tight loop: which points of a size x size grid over
-- [-2, 0.5] x [-1.25, 1.25] stay bounded for 50 iterations of z^2 + c.
local size = tonumber((...)) or 500
local limit = 50

local inside, checksum = 0, 0
for y = 0, size - 1 do
  local ci = 2.5 * y / size - 1.25
  for x = 0, size - 1 do
    local cr = 2.5 * x / size - 2.0
    local zr, zi, k = 0.0, 0.0, 0
    while k < limit and zr * zr + zi * zi <= 4.0 do
      zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
      k = k + 1
    end
    if k == limit then inside = inside + 1 end
    checksum = (checksum * 31 + k) % 1000003
  end
end
print(string.format("%dx%d: %d points inside, checksum %d", size, size, inside, checksum))
