-- date.strptime: strptime-style time formats, each compiled once into a
-- parser written as Lua code for that format (no pattern interpreted per
-- line, no string made of the time), giving lumberjit's time: ns since the
-- epoch, UTC.
--
--   local parse = strptime.compile("%d/%b/%Y:%H:%M:%S %z")
--   parse("19/May/2026:18:30:17 +0800", 1)  --> 1779186617e9, 27
--   parse("19/Mai/2026...", 1)              --> nil, 4 (where it stopped)
--   strptime.compile("%F %T", { tz = "Asia/Shanghai" })  -- no offset: the zone
--   strptime.compile("%d/%b/%Y:%H:%M:%S %z", { byte = record_byte })
--     -- reads the sandbox's record instead: parse(nil, at)
--
-- A parser reads from `at` and returns ns and the position after the time,
-- or nil and the position of the first byte that did not fit; it need not
-- reach the end of the text (the caller checks what follows).
--
-- Directives (anything else is matched as written; "%%" is "%"):
--   %Y  year, 4 digits          %m  month, 01-12       %d  day, 01-31
--   %e  day, 1-31, 1 or 2 digits or space-padded ("%e" of " 9")
--   %b  %h  month abbreviation, any case ("May", "may")
--   %a  weekday abbreviation, any case (read, not checked against the date)
--   %H  hour, 00-23             %M  minute, 00-59      %S  second, 00-60
--   %f  a fraction of a second, "." or "," and 1 or more digits, or nothing
--   %z  UTC offset: "Z", "+hh", "+hhmm", "+hh:mm" (or "-")
--   %Z  the same or nothing; nothing means the zone (options.tz) applies.
--       Not strftime's zone abbreviation: "CET" and the like are ambiguous.
--   %T  %H:%M:%S                %F  %Y-%m-%d
--   %s  seconds since the epoch, with an optional fraction ("1779186617.123",
--       nginx's $msec)
--   %Q  milliseconds since the epoch (Ruby's %Q)
-- A day past its month's end (31 April) does not match. Without %z (or
-- with %Z and no offset) the time is read in options.tz, a name for
-- date.zone ("UTC", the default, "Asia/Shanghai", "+08:00") or a zone.
-- strptime.formats names common ones: nginx's $time_local, ISO 8601 /
-- RFC 3339 ($time_iso8601), epoch seconds and milliseconds.
-- To add a directive: a writer in `directives` appending its code.

local civil = require "date.civil"
local zone = require "date.zone"

local format, concat = string.format, table.concat

local strptime = {}

strptime.formats = {
  nginx = "%d/%b/%Y:%H:%M:%S %z",      -- $time_local, Apache's %t
  iso8601 = "%Y-%m-%dT%H:%M:%S%f%Z",   -- $time_iso8601, offset optional
  rfc3339 = "%Y-%m-%dT%H:%M:%S%f%z",
  epoch = "%s",                        -- $msec
  epoch_ms = "%Q",
}

local months, weekdays = {}, {}
-- Three-letter names in every case, by their bytes as one number.
local function index_names(names, into)
  for number, name in ipairs(names) do
    local function cases(prefix, rest)
      if rest == "" then
        local a, b, c = prefix:byte(1, 3)
        into[a * 65536 + b * 256 + c] = number
        return
      end
      local ch = rest:sub(1, 1)
      cases(prefix .. ch, rest:sub(2))
      cases(prefix .. ch:upper(), rest:sub(2))
    end
    cases("", name)
  end
end
index_names({ "jan", "feb", "mar", "apr", "may", "jun",
              "jul", "aug", "sep", "oct", "nov", "dec" }, months)
index_names({ "sun", "mon", "tue", "wed", "thu", "fri", "sat" }, weekdays)

-- Code reading `count` digits at i into the local `var`, checked to lie in
-- [low, high]; on failure the parser returns nil, i.
local function fixed_digits(var, count, low, high)
  local reads, tests, sum = {}, {}, {}
  for k = 1, count do
    reads[k] = format("local d%d = B(i + %d)", k, k - 1)
    tests[k] = format("digit(d%d)", k)
    sum[k] = format("(d%d - 48) * %d", k, 10 ^ (count - k))
  end
  return format([[
do
  %s
  if not (%s) then return nil, i end
  %s = %s
  if %s < %d or %s > %d then return nil, i end
  i = i + %d
end]], concat(reads, "; "), concat(tests, " and "), var, concat(sum, " + "),
    var, low, var, high, count)
end

-- Reading a fraction: ".123" or ",123" -> frac = 123000000 (ns); nothing
-- -> 0. Nanoseconds are whole up to 9 digits, so that seconds * 1e9 + frac
-- rounds once, as the time's text does; more digits are read and dropped.
local fraction_code = [[
do
  local c = B(i)
  if (c == 46 or c == 44) and digit(B(i + 1)) then
    i = i + 1
    local value, scale = 0, 1
    c = B(i)
    while digit(c) do
      if scale < 1e9 then value, scale = value * 10 + c - 48, scale * 10 end
      i = i + 1
      c = B(i)
    end
    frac = value * (1e9 / scale)
  end
end]]

-- "Z", or a sign, hh, and optionally mm with or without ":".
local function offset_code(optional)
  return format([[
do
  local c = B(i)
  if c == 90 or c == 122 then
    off = 0; i = i + 1
  elseif (c == 43 or c == 45) and digit(B(i + 1)) and digit(B(i + 2)) then
    local sign = c == 45 and -1 or 1
    local hours = (B(i + 1) - 48) * 10 + B(i + 2) - 48
    local minutes = 0
    i = i + 3
    local colon = B(i) == 58 and 1 or 0
    if digit(B(i + colon)) and digit(B(i + colon + 1)) then
      minutes = (B(i + colon) - 48) * 10 + B(i + colon + 1) - 48
      i = i + colon + 2
    end
    if hours > 23 or minutes > 59 then return nil, i end
    off = sign * (hours * 3600 + minutes * 60)
  elseif not %s then
    return nil, i
  end
end]], optional and "true" or "false")
end

-- Digits as one number into `var` (at least one), for epoch times.
local function epoch_digits(var)
  return format([[
do
  if not digit(B(i)) then return nil, i end
  local value = 0
  while digit(B(i)) do value = value * 10 + B(i) - 48; i = i + 1 end
  %s = value
end]], var)
end

-- Each writer returns the code of its directive, and what it reads: "civil"
-- (a calendar field), "offset", "epoch".
local directives = {
  Y = function() return fixed_digits("Y", 4, 0, 9999), "civil" end,
  m = function() return fixed_digits("M", 2, 1, 12), "civil" end,
  d = function() return fixed_digits("D", 2, 1, 31), "civil" end,
  e = function()
    return [[
do
  local c1, c2 = B(i), B(i + 1)
  if c1 == 32 and digit(c2) then D = c2 - 48; i = i + 2
  elseif digit(c1) and digit(c2) then D = (c1 - 48) * 10 + c2 - 48; i = i + 2
  elseif digit(c1) then D = c1 - 48; i = i + 1
  else return nil, i end
  if D < 1 or D > 31 then return nil, i end
end]], "civil"
  end,
  b = function()
    return [[
do
  local c1, c2, c3 = B(i), B(i + 1), B(i + 2)
  M = c3 and months[c1 * 65536 + c2 * 256 + c3]
  if not M then return nil, i end
  i = i + 3
end]], "civil"
  end,
  a = function()
    return [[
do
  local c1, c2, c3 = B(i), B(i + 1), B(i + 2)
  if not (c3 and weekdays[c1 * 65536 + c2 * 256 + c3]) then return nil, i end
  i = i + 3
end]], "civil"
  end,
  H = function() return fixed_digits("h", 2, 0, 23), "civil" end,
  M = function() return fixed_digits("mi", 2, 0, 59), "civil" end,
  S = function() return fixed_digits("sec", 2, 0, 60), "civil" end,
  f = function() return fraction_code, "civil" end,
  z = function() return offset_code(false), "offset" end,
  Z = function() return offset_code(true), "offset" end,
  s = function()
    return epoch_digits("epoch") .. "\n" .. fraction_code, "epoch"
  end,
  Q = function()
    return epoch_digits("epoch") .. "\nfrac = epoch % 1000 * 1e6; epoch = (epoch - epoch % 1000) / 1000",
           "epoch"
  end,
}
directives.h = directives.b
local composites = { T = "%H:%M:%S", F = "%Y-%m-%d" }

local function literal_code(text)
  local tests = {}
  for k = 1, #text do
    tests[k] = format("if B(i + %d) ~= %d then return nil, i + %d end", k - 1, text:byte(k), k - 1)
  end
  return concat(tests, "\n") .. format("\ni = i + %d", #text)
end

local function as_zone(tz)
  if type(tz) == "table" then return tz end
  local found, err = zone.get(tz or "UTC")
  if not found then error("strptime: " .. err, 0) end
  return found
end

-- The parser of `fmt` (see the top). options: tz, byte (record_byte: read
-- the record instead of a string).
function strptime.compile(fmt, options)
  options = options or {}
  if type(fmt) ~= "string" or fmt == "" then error("strptime: expected a format string", 2) end
  fmt = strptime.formats[fmt] or fmt
  local code, reads, literal = {}, {}, {}
  local k = 1
  while k <= #fmt do
    local c = fmt:sub(k, k)
    if c == "%" and fmt:sub(k + 1, k + 1) ~= "%" then
      local name = fmt:sub(k + 1, k + 1)
      if composites[name] then
        fmt = fmt:sub(1, k - 1) .. composites[name] .. fmt:sub(k + 2)
        name = fmt:sub(k + 1, k + 1)
      end
      local writer = directives[name]
      if not writer then
        error(format("strptime: unsupported directive %%%s at position %d in %q", name, k, fmt), 0)
      end
      if #literal > 0 then code[#code + 1] = literal_code(concat(literal)); literal = {} end
      local text, reads_what = writer()
      code[#code + 1] = text
      reads[reads_what] = true
      k = k + 2
    else
      literal[#literal + 1] = c
      k = k + (c == "%" and 2 or 1)
    end
  end
  if #literal > 0 then code[#code + 1] = literal_code(concat(literal)) end
  if reads.epoch and (reads.civil or reads.offset) then
    error(format("strptime: %%s or %%Q cannot be mixed with calendar fields in %q", fmt), 0)
  end

  local result
  if reads.epoch then
    result = "return epoch * 1e9 + frac, i"
  else
    -- The day is checked against its month here, once the year is known.
    result = [[
if D > days_in_month(Y, M) then return nil, start end
local seconds = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec
if off then return (seconds - off) * 1e9 + frac, i end
if seconds ~= last_local then last_local, last_utc = seconds, in_zone:utc_from_local(seconds) end
return last_utc * 1e9 + frac, i]]
  end
  local source = format([[
local byte, months, weekdays, days_from_civil, days_in_month, in_zone = ...
local function digit(c) return c and c >= 48 and c <= 57 end
local last_local, last_utc
return function(s, i)
  local start = i
  local Y, M, D, h, mi, sec, frac, off, epoch = 1970, 1, 1, 0, 0, 0, 0, nil, 0
%s
%s
end]], concat(code, "\n"), result)
  source = source:gsub("B%(", options.byte and "byte(" or "byte(s, ")
  local chunk = assert((loadstring or load)(source, "=strptime " .. fmt))
  return chunk(options.byte or string.byte, months, weekdays, civil.days_from_civil,
               civil.days_in_month, as_zone(options.tz))
end

return strptime
