-- fields: what the structured decoders (decoders/json_lines.lua, logfmt.lua,
-- pattern.lua) share: reading times and levels, and taking a record's keys
-- into the message's headers.
--
--   fields.time_converter(format, tz) -> convert(value) -> ns, or nil and
--     why. value is a string or a number; format one of:
--       "auto"      (default) a string as "rfc3339", else as "iso8601",
--                   "syslog", "httpdate", else as a number; a number as
--                   epoch seconds, ms, us or ns by its size (below 1e11,
--                   1e14, 1e17, above)
--       "rfc3339"   2024-01-02T03:04:05.123Z, any offset
--       "iso8601"   also a space for the "T"; no offset: in zone tz (UTC)
--       "syslog"    May 19 18:30:17 (RFC 3164), in tz, the year inferred
--       "httpdate"  10/Oct/2000:13:55:36 -0700 (the common log format)
--       "epoch", "epoch_ms", "epoch_us", "epoch_ns"
--     An unknown format or zone is an error (the plugin does not load).
--   fields.severity(value) -> 0..7 for a level ("warn", "ERROR", 4, pino's
--     30...), else nil.
--   fields.headers(suffix, defaults) -> take(message, t) -> nil, or the
--     reason the record is rejected. Settings, read with read_config:
--     timestamp<suffix>, message<suffix>, host<suffix>, level<suffix>,
--     pid<suffix>, logger<suffix> (suffix "_key" or "_field"): a key, a list
--     of keys tried in order, or false for none; defaults[name] when unset.
--     Also timestamp_format and tz. take sets the headers Timestamp, Payload,
--     Hostname, Severity, Pid and Logger of message from the first of their
--     keys present in t and converted (Payload, Hostname, Logger: strings;
--     Pid: a whole number, or its digits), and removes that key from t; a
--     value that does not convert stays in t and the header is left unset,
--     except a time, which rejects the record.

local lpeg = require "lpeg"
local date = require "date"
local container = require "container"
local memo = require "memo"

local C, S, R = lpeg.C, lpeg.S, lpeg.R
local match = lpeg.match
local type, tonumber, tostring = type, tonumber, tostring
local byte, format, sub, lower = string.byte, string.format, string.sub, string.lower
local floor, huge = math.floor, math.huge

local fields = {}

-- Levels: syslog's names, the usual spellings of loggers, and numbers: 0-7
-- are syslog severities, 10-60 pino's and bunyan's levels.
local severities = {
  emerg = 0, emergency = 0, panic = 0, alert = 1, crit = 2, critical = 2, fatal = 2,
  err = 3, error = 3, eror = 3, warn = 4, warning = 4, notice = 5, info = 6,
  information = 6, informational = 6, debug = 7, dbug = 7, trace = 7,
  [0] = 0, 1, 2, 3, 4, 5, 6, 7, [10] = 7, [20] = 7, [30] = 6, [40] = 4, [50] = 3, [60] = 2,
}
-- "INFO" and "Info" found without making a lower-case copy.
for name, severity in pairs(severities) do
  if type(name) == "string" then
    severities[name:upper()] = severity
    severities[name:sub(1, 1):upper() .. name:sub(2)] = severity
  end
end

function fields.severity(value)
  local severity = severities[value]
  if severity or type(value) ~= "string" then return severity end
  return severities[lower(value)]
end

-- A bad value as reasons show it: quoted, at most 40 bytes.
local function shown(value)
  if type(value) ~= "string" then return tostring(value) end
  if #value > 40 then value = sub(value, 1, 40) .. "..." end
  return '"' .. value .. '"'
end

local function finite(x) return x == x and x ~= huge and x ~= -huge end

local function epoch(scale, what)
  return function(value)
    local seconds = tonumber(value)
    if not seconds or not finite(seconds) then return nil, "not " .. what end
    return seconds * scale
  end
end

local function epoch_by_size(value)
  local n = tonumber(value)
  if not n or not finite(n) then return nil, "not a time or a number" end
  local size = n < 0 and -n or n
  if size < 1e11 then return n * 1e9 end
  if size < 1e14 then return n * 1e6 end
  if size < 1e17 then return n * 1e3 end
  return n
end

local function text_converter(text_pattern, to_ns, what)
  local whole = text_pattern * -1
  return function(value)
    if type(value) ~= "string" or not match(whole, value) then return nil, "not " .. what end
    return to_ns(value)
  end
end

-- Common log format: 10/Oct/2000:13:55:36 -0700; one text per second, so
-- converted once each.
local digit = R"09"
local function number(p) return C(p) / tonumber end
local httpdate = number(digit * digit) * "/" * date.month_abbr * "/" * number(digit^4)
  * ":" * number(digit * digit) * ":" * number(digit * digit) * ":" * number(digit * digit)
  * " " * C(S"+-") * number(digit * digit) * number(digit * digit) * -1
local httpdate_ns = memo.new(function(text)
  local day, month, year, hour, min, sec, sign, off_h, off_m = match(httpdate, text)
  if not day or day < 1 or day > date.days_in_month(year, month) or hour > 23 or min > 59
     or sec > 60 then
    return false
  end
  local offset = off_h * 3600 + off_m * 60
  if sign == "-" then offset = -offset end
  return (date.seconds_from_civil(year, month, day, hour, min, sec) - offset) * 1e9
end)
local function httpdate_to_ns(value)
  local ns = type(value) == "string" and httpdate_ns[value]
  if not ns then return nil, "not a time like 10/Oct/2000:13:55:36 -0700" end
  return ns
end

local function rfc3339_to_ns(value)
  if type(value) ~= "string" then return nil, "not an RFC 3339 time" end
  local ns, problem = container.time_ns(value)
  if not ns then return nil, "not an RFC 3339 time (" .. problem .. ")" end
  return ns
end

local converters = {
  rfc3339 = function() return rfc3339_to_ns end,
  iso8601 = function(zone)
    local to_ns = text_converter(date.iso8601_text, date.iso8601_to_ns(zone), "an ISO 8601 time")
    -- "2024-01-02 03:04:05,123" (Python's logging, log4j) as with a ".".
    return function(value)
      if type(value) == "string" and byte(value, 20) == 44 then
        value = sub(value, 1, 19) .. "." .. sub(value, 21)
      end
      return to_ns(value)
    end
  end,
  syslog = function(zone)
    local to_ns = date.rfc3164_to_ns(zone)
    return text_converter(date.rfc3164_received_text,
                          function(text) return to_ns[text] end, "a syslog time")
  end,
  httpdate = function() return httpdate_to_ns end,
  epoch = function() return epoch(1e9, "epoch seconds") end,
  epoch_ms = function() return epoch(1e6, "epoch milliseconds") end,
  epoch_us = function() return epoch(1e3, "epoch microseconds") end,
  epoch_ns = function() return epoch(1, "epoch nanoseconds") end,
}

function converters.auto(zone)
  local texts = { converters.iso8601(zone), converters.syslog(zone), httpdate_to_ns }
  return function(value)
    if type(value) == "string" then
      local ns = container.time_ns(value)
      if ns then return ns end
      for i = 1, #texts do
        ns = texts[i](value)
        if ns then return ns end
      end
      if not tonumber(value) then
        return nil, "not a time in a known format (RFC 3339, ISO 8601, syslog, HTTP date) "
                    .. "nor a number"
      end
    end
    return epoch_by_size(value)
  end
end

function fields.time_converter(time_format, tz)
  local make = converters[time_format or "auto"]
  if not make then
    error(format('timestamp_format: unknown format %s (auto, rfc3339, iso8601, syslog, '
                 .. 'httpdate, epoch, epoch_ms, epoch_us, epoch_ns)', shown(time_format)), 0)
  end
  local zone = date.zone("UTC")
  if tz then
    local problem
    zone, problem = date.zone(tz)
    if not zone then error(format("tz: %s", problem), 0) end
  end
  return make(zone)
end

local function as_string(value) return type(value) == "string" and value or nil end
local function as_pid(value)
  local pid = tonumber(value)
  if pid and pid >= 0 and pid == floor(pid) and pid < 2^53
     and (type(value) == "number" or not value:find("[^0-9]")) then
    return pid
  end
end

-- The headers in the order they are taken: a key named by two settings
-- goes to the first.
local HEADERS = {
  { "timestamp", "Timestamp" }, { "message", "Payload", as_string },
  { "host", "Hostname", as_string }, { "level", "Severity", fields.severity },
  { "pid", "Pid", as_pid }, { "logger", "Logger", as_string },
}

local function key_list(setting, value)
  if value == false then return {} end
  if type(value) == "string" then return { value } end
  if type(value) == "table" and #value > 0 then
    local all_strings = true
    for _, key in ipairs(value) do all_strings = all_strings and type(key) == "string" end
    if all_strings then return value end
  end
  error(format("%s: expected a key, a list of keys or false, not %s", setting, shown(value)), 0)
end

function fields.headers(suffix, defaults)
  local to_ns = fields.time_converter(read_config("timestamp_format"), read_config("tz"))
  -- Flat lists, walked in order: keys[i] goes to header names[i] through
  -- convert[i] (nil for the time).
  local keys, names, convert, n = {}, {}, {}, 0
  for _, header in ipairs(HEADERS) do
    local setting = header[1] .. suffix
    local value = read_config(setting)
    if value == nil then value = defaults[header[1]] or false end
    for _, key in ipairs(key_list(setting, value)) do
      n = n + 1
      keys[n], names[n], convert[n] = key, header[2], header[3]
    end
  end
  return function(message, t)
    message.Timestamp, message.Payload, message.Hostname = nil, nil, nil
    message.Severity, message.Pid, message.Logger = nil, nil, nil
    for i = 1, n do
      local name = names[i]
      if message[name] == nil then
        local key = keys[i]
        local value = t[key]
        if value ~= nil then
          local converter = convert[i]
          if converter then
            value = converter(value)
            if value ~= nil then
              message[name] = value
              t[key] = nil
            end
          else
            local ns, why = to_ns(value)
            if not ns then return format('"%s" is %s: %s', key, shown(value), why) end
            message.Timestamp = ns
            t[key] = nil
          end
        end
      end
    end
  end
end

return fields
