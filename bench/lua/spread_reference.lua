-- The host's own spread for W3's kind of work (bench/w3-spread with
-- REFERENCE=1): a fixed job in plain LuaJIT, built from the same source as
-- lumberjit's, with no lumberjit code in it. It reads syslog lines, takes
-- each apart with string patterns into a table (as a decoder does), and
-- formats the table as a JSON object (as an encoder does), keeping the
-- last thousand: strings, tables and garbage much like W3's, on one
-- thread. The same instructions every run, so what its CPU time varies by
-- is the machine's (its other tenants, caches, clock), not lumberjit's.
--
--   luajit bench/lua/spread_reference.lua LINES_FILE
local path = arg[1] or error("usage: spread_reference.lua FILE")
local f = assert(io.open(path))
local data = f:read("*a")
f:close()

local format, kept, made = string.format, {}, 0
for line in data:gmatch("[^\n]+") do
  local pri, time, host, tag, msg =
    line:match("^<(%d+)>(%a+ +%d+ [%d:]+) (%S+) ([^:]+):? ?(.*)$")
  if pri then
    local m = { severity = tonumber(pri) % 8, facility = math.floor(tonumber(pri) / 8),
                time = time, host = host, tag = tag, msg = msg }
    kept[made % 1000 + 1] = format('{"time":"%s","host":"%s","tag":"%s","severity":%d,"facility":%d,"msg":"%s"}',
      m.time, m.host, m.tag, m.severity, m.facility, (m.msg:gsub('[%c"\\]', "")))
    made = made + 1
  end
end
io.stderr:write(made, " objects\n")
