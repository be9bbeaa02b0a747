-- The timing driver every Lua worker runs (shimlab.lua.bench): loads one
-- benchmark program once, runs it `warmup` times and then `samples` times,
-- each run timed in TSC cycles by the shimclock C module, and holds every
-- run's output to the expected output before its time is written out.
--   lua driver.lua CLOCK_SO PROGRAM EXPECTED WARMUP SAMPLES [PROGRAM ARGS...]
-- Prints "hz H", then "warmup C NS CPU" and "sample C NS CPU" lines (TSC
-- cycles, wall-clock and CPU-time nanoseconds), then "ok";
-- on a wrong output "mismatch ..." and exit status 3.
-- Lua 5.1 (LuaJIT) to 5.5: no integer division, no bit operators.
local clock_so, program, expected_path, warmup, samples = ...
local args = {select(6, ...)}
local out = io.stdout
local unpack_args = unpack or table.unpack

local open_clock = assert(package.loadlib(clock_so, "luaopen_shimclock"))
local clock = open_clock()

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

-- The program sees a copy of the globals whose print and io.write append to
-- a buffer: a plain table, no metatable on the way to its globals.
local buffer, n = {}, 0
local function put(s) n = n + 1; buffer[n] = s end
local env = {}
for k, v in pairs(_G) do env[k] = v end
env.print = function(...)
  local parts = {...}
  for i = 1, select("#", ...) do parts[i] = tostring(parts[i]) end
  put(table.concat(parts, "\t", 1, select("#", ...)) .. "\n")
end
local io_copy = {}
for k, v in pairs(io) do io_copy[k] = v end
io_copy.write = function(...)
  for i = 1, select("#", ...) do put(tostring((select(i, ...)))) end
  return io_copy
end
env.io = io_copy
env._G = env

local source = slurp(program)
local chunk = assert(load(source, "@" .. program, "t", env))
if setfenv then setfenv(chunk, env) end      -- Lua 5.1's load ignores env
local expected = slurp(expected_path)

local function run(kind, index)
  buffer, n = {}, 0
  collectgarbage()
  collectgarbage()
  clock.mark()
  chunk(unpack_args(args))
  local cycles, ns, cpu_ns = clock.since()
  local got = table.concat(buffer)
  if got ~= expected then
    out:write(string.format("mismatch %s run %d: %d bytes of output, expected %d; first "
      .. "bytes %q\n", kind, index, #got, #expected, got:sub(1, 80)))
    os.exit(3)
  end
  out:write(string.format("%s %.0f %.0f %.0f\n", kind, cycles, ns, cpu_ns))
end

out:write(string.format("hz %.0f\n", clock.hz()))
for i = 1, tonumber(warmup) do run("warmup", i) end
for i = 1, tonumber(samples) do run("sample", i) end
out:write("ok\n")
out:flush()
