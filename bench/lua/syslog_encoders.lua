-- Micro-benchmark of the syslog encoders in Lua: rfc5424.lua and
-- template.lua with W3's template and with RSYSLOG_FileFormat (RFC 3339
-- dates), each on the messages the rsyslog decoder makes of varied W3 lines
-- (bench/lib/gen_lines.py). Not a test. (json.lua writes in C: its cost is
-- in bench/w3-pipeline.)
--
--   luajit bench/lua/syslog_encoders.lua [iterations]     (from the repo root;
--   Debian's luajit package: apt-get install luajit; needs python3, and
--   build/sandbox_host, which decodes the lines in the real sandbox)
--
-- read_message and read_next_field are reduced to
-- table reads, so the figures are the encoders' own cost (the C API calls
-- they make cost extra in lumberjit). Timestamps get a varying microsecond
-- part, so RFC 3339 dates are written anew for every message, as they are
-- for messages that came with fractional seconds.

package.path = "./lua_modules/?.lua;./spec/modules/?.lua;./bench/lua/?.lua;" .. package.path
local host = require "sandbox_host"
local plugin_env = require "plugin_env"
local best_of = require "best_of"

local iterations = tonumber(arg[1]) or 1000000
local LINE_COUNT = 10000
local w3_template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n"

local function varied_lines()
  local path = os.tmpname()
  assert(os.execute(string.format("python3 bench/lib/gen_lines.py w3 %d %s", LINE_COUNT, path)))
  local lines = {}
  for line in io.lines(path) do lines[#lines + 1] = line end
  os.remove(path)
  return lines
end

-- The decoded messages, frozen, each with its fields as read_next_field
-- gives them.
local function decoded_messages(lines)
  local messages = {}
  local decoder = host.decoder("sandbox/decoders/rsyslog.lua",
                               { template = w3_template, tz = "Asia/Shanghai" })
  for _, line in ipairs(lines) do
    local _, _, decoded = decoder:decode(line)
    for _, message in ipairs(decoded) do
      local frozen, fields = {}, {}
      for k, v in pairs(message) do frozen[k] = v end
      for name, value in pairs(message.Fields) do
        frozen["Fields[" .. name .. "]"] = value
        fields[#fields + 1] = { name = name, value = value,
          value_type = type(value) == "number" and 3 or 0 }
      end
      table.sort(fields, function(a, b) return a.name < b.name end)
      frozen.fields = fields
      frozen.Timestamp = frozen.Timestamp + #messages % 1000 * 1e3 + 1e3
      messages[#messages + 1] = frozen
    end
  end
  return messages
end

local messages = decoded_messages(varied_lines())
local current, cursor

-- An encoder whose read_message and read_next_field read `current`.
local function encoder_of(path, settings)
  return plugin_env.load(path, settings, {
    read_message = function(name) return current[name] end,
    read_next_field = function()
      cursor = cursor + 1
      local f = current.fields[cursor]
      if f then return f.value_type, f.name, f.value, nil, 1 end
    end,
  }).process_message
end

local function measure(label, encode)
  local count = #messages
  local function run(n)
    for i = 1, n do
      current, cursor = messages[i % count + 1], 0
      encode()
    end
  end
  local best = best_of(run, iterations)
  current, cursor = messages[1], 0
  print(string.format("%-30s %6.0f ns/message %10.0f messages/s   %s", label,
                      best / iterations * 1e9, iterations / best, (encode():gsub("\n", "\\n"))))
end

measure("rfc5424", encoder_of("sandbox/encoders/rfc5424.lua", { tz = "Asia/Shanghai" }))
measure("template (W3)", encoder_of("sandbox/encoders/template.lua",
                                    { template = w3_template, tz = "Asia/Shanghai" }))
measure("template (RSYSLOG_FileFormat)", encoder_of("sandbox/encoders/template.lua",
                                    { template = "RSYSLOG_FileFormat", tz = "Asia/Shanghai" }))
