-- Micro-benchmark of the W3 hot path in Lua: the rsyslog decoder and the JSON
-- encoder, each on its own, on W3's line (and the decoder on an
-- RSYSLOG_FileFormat line, whose timestamps differ on every line). Not a test.
--
--   luajit bench/lua/decode_encode.lua [iterations]     (from the repo root;
--   Debian's luajit package: apt-get install luajit)
--
-- The plugins run in plugin_harness's environment, with inject_message
-- keeping the message without copying it and, for the encoder,
-- read_message / read_next_field reduced to table reads, so the figures are
-- the plugins' own cost (the C API calls they make cost extra in lumberjit).

package.path = "./lua_modules/?.lua;./spec/modules/?.lua;./bench/lua/?.lua;" .. package.path
local harness = require "plugin_harness"

local iterations = tonumber(arg[1]) or 1000000
local line = "<44>May 19 18:30:17 snack jls: foo bar 32"
local w3_template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n"

local best_of = require "best_of"

local function measure(label, run)
  local best = best_of(run, iterations)
  print(string.format("%-28s %8.0f ns/line  %10.0f lines/s", label,
                      best / iterations * 1e9, iterations / best))
end

local w3_settings = { template = w3_template, tz = "Asia/Shanghai" }
local decoder = harness.load("sandbox/decoders/rsyslog.lua", w3_settings,
                             { inject = function() end })
local process_record = decoder.env.process_message
measure("rsyslog decoder (W3)", function(n)
  for _ = 1, n do process_record(line) end
end)

local file_format_line = "2026-05-19T18:30:17.512345+08:00 snack sshd[1234]: Accepted publickey for alice"
local file_format = harness.load("sandbox/decoders/rsyslog.lua", { template = "RSYSLOG_FileFormat" },
                                 { inject = function() end })
local process_file_format = file_format.env.process_message
measure("rsyslog decoder (FileFormat)", function(n)
  for _ = 1, n do process_file_format(file_format_line) end
end)

-- The decoded W3 message (its record spans made strings by the harness),
-- frozen, as the encoder's current message.
local _, _, decoded = harness.load("sandbox/decoders/rsyslog.lua", w3_settings):decode(line)
local last, message = decoded[1], {}
for k, v in pairs(last) do message[k] = v end
local fields = {}
for name, value in pairs(last.Fields) do
  fields[#fields + 1] = { name = name, value = value,
                          value_type = type(value) == "number" and 3 or 0 }
end
table.sort(fields, function(a, b) return a.name < b.name end)

local encoder = harness.load("sandbox/encoders/json.lua")
local cursor = 0
encoder.env.read_message = function(name) return message[name] end
encoder.env.read_next_field = function()
  cursor = cursor + 1
  local f = fields[cursor]
  if f then return f.value_type, f.name, f.value, nil, 1 end
end
local encode = encoder.env.process_message
print("encoded: " .. encode())
measure("json encoder (W3 message)", function(n)
  for _ = 1, n do
    cursor = 0
    encode()
  end
end)

measure("decode + encode", function(n)
  for _ = 1, n do
    process_record(line)
    cursor = 0
    encode()
  end
end)
