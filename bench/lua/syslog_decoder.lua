-- Micro-benchmark of the syslog receiver's decoder (sandbox/decoders/syslog.lua)
-- in Lua, on varied lines: W3's RFC 3164 lines from bench/lib/gen_lines.py,
-- and the same lines rewritten as RFC 5424 (an RFC 3339 time with
-- microseconds, PROCID, and structured data in half of them). Not a test.
-- (The rsyslog-template decoder reads by position, through the sandbox's
-- record readers, which plain LuaJIT does not have: bench/w3-pipeline.)
--
--   python3 bench/lib/gen_lines.py w3 200000 /tmp/w3.log
--   luajit bench/lua/syslog_decoder.lua /tmp/w3.log [rounds]    (from the repo root;
--   lpeg from Debian's lua-lpeg: LUA_CPATH=/usr/lib/x86_64-linux-gnu/lua/5.1/?.so)
--
-- The plugins run in plugin_env's environment with inject_message
-- keeping nothing, so the figures are the decoders' own cost (inject_message
-- costs extra in lumberjit).

package.path = "./lua_modules/?.lua;./bench/lua/?.lua;" .. package.path
local plugin_env = require "plugin_env"

local path = assert(arg[1], "usage: luajit bench/lua/syslog_decoder.lua LINES_FILE [rounds]")
local rounds = tonumber(arg[2]) or 5

local rfc3164_lines, rfc5424_lines = {}, {}
for line in io.lines(path) do
  rfc3164_lines[#rfc3164_lines + 1] = line
  local pri, day, time, host, program, pid, msg =
    line:match("^<(%d+)>%a+ +(%d+) (%d%d:%d%d:%d%d) (%S+) ([^%[]+)%[(%d+)%]: (.*)$")
  local sd = #rfc5424_lines % 2 == 0 and "-"
             or string.format('[origin@32473 seq="%d" software="bench"]', #rfc5424_lines)
  rfc5424_lines[#rfc5424_lines + 1] = string.format("<%s>1 2026-05-%02dT%s.%06d+08:00 %s %s %s - %s %s",
    pri, tonumber(day), time, #rfc5424_lines % 1000000, host, program, pid, sd, msg)
end

local best_of = require "best_of"

-- Passes over all lines; the best of `rounds`.
local function measure(label, process, lines)
  local best = best_of(function() for i = 1, #lines do process(lines[i]) end end,
                       #lines, rounds)
  print(string.format("%-34s %6.0f ns/line  %9.0f lines/s", label,
                      best / #lines * 1e9, #lines / best))
end

local function decoder(file, config)
  return plugin_env.load(file, config, { inject_message = function() end }).process_message
end

measure("syslog decoder, RFC 3164", decoder("sandbox/decoders/syslog.lua", { tz = "Asia/Shanghai" }),
        rfc3164_lines)
measure("syslog decoder, RFC 5424", decoder("sandbox/decoders/syslog.lua", {}), rfc5424_lines)
measure("syslog decoder, strict RFC 3164",
        decoder("sandbox/decoders/syslog.lua", { tz = "Asia/Shanghai", strict = true }), rfc3164_lines)
measure("syslog decoder, strict RFC 5424",
        decoder("sandbox/decoders/syslog.lua", { strict = true }), rfc5424_lines)
