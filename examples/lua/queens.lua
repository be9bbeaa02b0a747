-- Tables and recursion: counts every placement of n queens by backtracking,
-- with the occupied columns and diagonals kept in three tables.
local n = tonumber((...)) or 11

local cols, up, down = {}, {}, {}
for i = 1, 2 * n do cols[i] = false; up[i] = false; down[i] = false end

local function place(row)
  if row > n then return 1 end
  local found = 0
  for c = 1, n do
    local u, d = row + c, row - c + n
    if not cols[c] and not up[u] and not down[d] then
      cols[c], up[u], down[d] = true, true, true
      found = found + place(row + 1)
      cols[c], up[u], down[d] = false, false, false
    end
  end
  return found
end

print(string.format("%d queens: %d solutions", n, place(1)))
