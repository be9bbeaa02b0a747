-- Floating point on table fields: five bodies (a sun and four planets, in
-- solar masses, AU and AU per day times 365.24) moved by n steps of 0.01
-- with pairwise gravity; prints the system's energy before and after.
local steps = tonumber((...)) or 100000

local pi = 3.141592653589793
local solar_mass = 4 * pi * pi
local year = 365.24

local function body(x, y, z, vx, vy, vz, mass)
  return {x = x, y = y, z = z, vx = vx * year, vy = vy * year, vz = vz * year,
          mass = mass * solar_mass}
end

local bodies = {
  body(0, 0, 0, 0, 0, 0, 1),
  body(4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
       1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
       9.54791938424326609e-04),
  body(8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
       -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
       2.85885980666130812e-04),
  body(1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
       2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
       4.36624404335156298e-05),
  body(1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
       2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
       5.15138902046611451e-05),
}
local nb = #bodies

-- the sun moves so that the total momentum is zero
local px, py, pz = 0, 0, 0
for i = 1, nb do
  local b = bodies[i]
  px, py, pz = px + b.vx * b.mass, py + b.vy * b.mass, pz + b.vz * b.mass
end
bodies[1].vx, bodies[1].vy, bodies[1].vz =
  -px / solar_mass, -py / solar_mass, -pz / solar_mass

local function energy()
  local e = 0
  for i = 1, nb do
    local a = bodies[i]
    e = e + 0.5 * a.mass * (a.vx * a.vx + a.vy * a.vy + a.vz * a.vz)
    for j = i + 1, nb do
      local b = bodies[j]
      local dx, dy, dz = a.x - b.x, a.y - b.y, a.z - b.z
      e = e - a.mass * b.mass / math.sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end

local sqrt = math.sqrt
local function advance(dt)
  for i = 1, nb do
    local a = bodies[i]
    local ax, ay, az, am = a.x, a.y, a.z, a.mass
    for j = i + 1, nb do
      local b = bodies[j]
      local dx, dy, dz = ax - b.x, ay - b.y, az - b.z
      local d2 = dx * dx + dy * dy + dz * dz
      local mag = dt / (d2 * sqrt(d2))
      local bm, amag = b.mass * mag, am * mag
      a.vx, a.vy, a.vz = a.vx - dx * bm, a.vy - dy * bm, a.vz - dz * bm
      b.vx, b.vy, b.vz = b.vx + dx * amag, b.vy + dy * amag, b.vz + dz * amag
    end
  end
  for i = 1, nb do
    local a = bodies[i]
    a.x, a.y, a.z = a.x + dt * a.vx, a.y + dt * a.vy, a.z + dt * a.vz
  end
end

print(string.format("%.9f", energy()))
for _ = 1, steps do advance(0.01) end
print(string.format("%.9f", energy()))
