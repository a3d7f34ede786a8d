-- rsyslog.format: writes messages with an rsyslog template, the other way
-- round from rsyslog.lua (whose grammars read lines written with one).
--
--   local format = require "rsyslog.format"
--   local render = format.compile(
--     "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
--     { tz = "Asia/Shanghai" })
--   render(read_message, read_next_field)   -- an encoder's API (sandbox/README.md)
--   --> "<44>May 19 18:30:17 snack jls: foo bar 32\n"
--
-- The template may be a built-in name (rsyslog.templates). Options: tz (zone
-- the dates are written in; default "UTC"), now (clock of the $now family;
-- default os.time). Everything the template says is written, its final "\n"
-- included. An unknown property, an unsupported option or position, or a
-- malformed template raises an error naming it and its position.
--
-- What each property writes, from the message as the decoders make it:
--   msg                    Payload ("" when absent)
--   rawmsg                 the original record (read_message "raw"), else Payload
--   hostname, source       Hostname, else fromhost
--   fromhost               field fromhost, else field fromhost-ip
--   fromhost-ip, inputname the fields of that name
--   syslogtag              field syslogtag, else APP-NAME[PROCID] (APP-NAME alone
--                          without a procid), as rsyslog makes it for RFC 5424
--   programname            field programname, else field app-name, else "-"
--   app-name               field app-name, else field programname, else "-"
--   procid                 Pid, else field procid, else "-"
--   msgid                  field msgid, else "-"
--   structured-data        field structured-data, else built from the fields
--                          named "<SD-ID>.<PARAM>" (format.structured_data_of_fields),
--                          else "-"
--   pri                    field pri, else field syslogfacility * 8 + Severity,
--                          each defaulting as rsyslog's does: user, notice
--   pri-text               "local4.debug": facility and severity names, as
--                          rsyslog 8 writes it (no "<PRI>" suffix)
--   syslogfacility(-text), syslogseverity(-text), syslogpriority(-text): of pri
--   timestamp, timereported  Timestamp
--   timegenerated          field timegenerated (ns), else Timestamp
--   protocol-version       field protocol-version, else "1"; iut: "1"
--   $now $year $month $day $hour $minute  the clock in tz (rsyslog's system
--                          properties); with "-utc" appended, in UTC
--   $!name                 field name, case kept (rsyslog's JSON variables;
--                          rsyslog lower-cases them unless option.caseSensitive)
-- Dates: without an option, RFC 3164 ("May  9 08:01:02", day padded with a
-- space). date-rfc3339 writes microseconds unless the time is a whole second
-- (so whole-second times read back as they were written, as rsyslog does for
-- times it received without a fraction) and the zone's offset, "+00:00" in
-- UTC as rsyslog does. date-subseconds: the 6 digits, or "0" for a whole
-- second. Also date-rfc3164-buggyday, date-mysql, date-pgsql,
-- date-unixtimestamp, date-year/-month/-day/-hour/-minute/-second, date-wday,
-- date-wdayname, date-ordinal, date-tzoffshour/-tzoffsmin/-tzoffsdirection,
-- date-utc. rsyslog has no date-iso.
-- Other options, applied in rsyslog's order (runtime/msg.c, MsgGetProp):
-- from:to substrings (1-based, "$" for the end; pos-end-relative, fixed-width
-- pads with spaces), sp-if-no-1st-sp (a space when the value is not empty and
-- does not start with one, else nothing; never the value), uppercase,
-- lowercase, drop-cc / space-cc / escape-cc ("#009"; the last one given wins),
-- secpath-drop, secpath-replace, drop-last-lf (not with escape-cc),
-- compressspace, then one of csv (RFC 4180 quoting), json (escaped for a
-- JSON string; "/" is not escaped) and jsonf ("name":"value", name being
-- the outname after the options, else the property's name).
-- Not supported, each an error at compile: regular-expression (R) and field
-- (F) extraction, jsonr, jsonfr, mandatory-field, date-week and the ISO week.
--
-- How it is fast: compile turns the template into a small generated Lua
-- function that reads each property once into a local and returns one
-- concatenation of constants and closures over those locals; dates are
-- formatted once per second per element. No parsing per message.
-- To support a property: add its reader to `readers` (or `time_readers`
-- for times); an option: add a step to `text_steps` and its place in
-- `steps_of`.

local date = require "date"
local memo = require "memo"
local syslog = require "syslog"
local json_string = require "json_string"
local rsyslog = require "rsyslog"
local template = require "rsyslog.template"

local floor, abs = math.floor, math.abs
local string_format, byte, sub, find, gsub, rep, upper, lower =
  string.format, string.byte, string.sub, string.find, string.gsub, string.rep,
  string.upper, string.lower
local concat, tostring, tonumber, type = table.concat, tostring, tonumber, type
local escape_json, number_text = json_string.escape, json_string.number
local civil_from_days, weekday = date.civil_from_days, date.weekday

local format = {}

-- Text of a field value: numbers as integers when they are, "" when absent.
local function text(value)
  if value == nil then return "" end
  local kind = type(value)
  if kind == "string" then return value end
  if kind == "number" then return number_text(value) end
  return tostring(value)
end

---------------------------------------------------------------------------
-- Syslog values of a message, shared with sandbox/encoders/rfc5424.lua.

local DEFAULT_FACILITY, DEFAULT_SEVERITY = 1, 5         -- user.notice

local function in_range(value, high)
  value = tonumber(value)
  if value and value >= 0 and value <= high and value % 1 == 0 then return value end
end

-- PRI: field pri, else field syslogfacility * 8 + Severity, each part
-- defaulting to default_facility / default_severity (user, notice).
function format.priority(read_message, default_facility, default_severity)
  local pri = in_range(read_message("Fields[pri]"), 191)
  if pri then return pri end
  local facility = in_range(read_message("Fields[syslogfacility]"), 23)
                   or default_facility or DEFAULT_FACILITY
  local severity = in_range(read_message("Severity"), 7) or default_severity or DEFAULT_SEVERITY
  return facility * 8 + severity
end

function format.app_name(read_message)
  local value = read_message("Fields[app-name]") or read_message("Fields[programname]")
  return value and text(value) or "-"
end

function format.procid(read_message)
  local value = read_message("Pid") or read_message("Fields[procid]")
  return value and text(value) or "-"
end

-- SD-IDs are "name@<enterprise number>" or one registered with IANA
-- (RFC 5424 section 7); so "origin.ip" is a parameter, "kubernetes.pod" is not.
local registered_sd_ids = { timeQuality = true, origin = true, meta = true }
local SD_NAME = "^[!#-<>-\\^-~]+$"        -- PRINTUSASCII but '=', ']' and '"'

local function split_sd_field(name)
  local id, param = name:match("^([^.@]+@%d+)%.(.+)$")
  if not id then
    id, param = name:match("^(%a+)%.(.+)$")
    if not registered_sd_ids[id] then return false end
  end
  if #id > 32 or #param > 32 or not find(id, SD_NAME) or not find(param, SD_NAME) then
    return false
  end
  return { id = id, param = " " .. param .. '="' }
end
local sd_field_of_name = memo.new(split_sd_field, 1024)

local function sd_value(value)
  return (gsub(text(value), '["\\%]]', "\\%0"))
end

-- STRUCTURED-DATA built from the fields named "<SD-ID>.<PARAM>" (an array
-- field gives the parameter once per value), elements in the order their
-- first field comes; nil when there are none. Iterates read_next_field.
function format.structured_data_of_fields(read_next_field)
  local order, params
  while true do
    local value_type, name, value = read_next_field()
    if value_type == nil then break end
    local sd = sd_field_of_name[name]
    if sd then
      if not order then order, params = {}, {} end
      local list = params[sd.id]
      if not list then
        list = {}
        params[sd.id] = list
        order[#order + 1] = sd.id
      end
      local values = type(value) == "table" and value or { value }
      for i = 1, #values do list[#list + 1] = sd.param .. sd_value(values[i]) .. '"' end
    end
  end
  if not order then return nil end
  for i, id in ipairs(order) do order[i] = "[" .. id .. concat(params[id]) .. "]" end
  return concat(order)
end

---------------------------------------------------------------------------
-- Dates.

local month_names = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" }
local weekday_names = { [0] = "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }
local two_digits, three_digits = {}, {}
for i = 0, 999 do
  two_digits[i] = string_format("%02d", i)
  three_digits[i] = string_format("%03d", i)
end

-- The wall-clock time in `zone` of a UTC second.
local function civil_time(zone, second)
  local offset = zone:offset_at(second)
  local local_seconds = second + offset
  local days = floor(local_seconds / 86400)
  local of_day = local_seconds - days * 86400
  local year, month, day = civil_from_days(days)
  return { year = year, month = month, day = day, hour = floor(of_day / 3600),
           minute = floor(of_day % 3600 / 60), second = of_day % 60,
           offset = offset, days = days, epoch = second }
end

local function offset_text(offset, utc_text)
  if offset == 0 and utc_text then return utc_text end
  local magnitude = abs(offset)
  return (offset < 0 and "-" or "+") .. two_digits[floor(magnitude / 3600)] .. ":"
         .. two_digits[floor(magnitude % 3600 / 60)]
end

local function clock_text(t)
  return two_digits[t.hour] .. ":" .. two_digits[t.minute] .. ":" .. two_digits[t.second]
end

local function day_of_year(t)
  return t.days - date.days_from_civil(t.year, 1, 1) + 1
end

-- Formats whose text changes once a second: civil time -> text.
local second_formats = {
  rfc3164 = function(t)
    return string_format("%s %2d ", month_names[t.month], t.day) .. clock_text(t)
  end,
  ["rfc3164-buggyday"] = function(t)
    return month_names[t.month] .. " " .. two_digits[t.day] .. " " .. clock_text(t)
  end,
  rfc3339 = function(t)                -- without fraction and offset
    return string_format("%04d-%s-%sT", t.year, two_digits[t.month], two_digits[t.day])
           .. clock_text(t)
  end,
  mysql = function(t)
    return string_format("%04d%s%s%s%s%s", t.year, two_digits[t.month], two_digits[t.day],
                         two_digits[t.hour], two_digits[t.minute], two_digits[t.second])
  end,
  pgsql = function(t)
    return string_format("%04d-%s-%s ", t.year, two_digits[t.month], two_digits[t.day])
           .. clock_text(t)
  end,
  unixtimestamp = function(t) return string_format("%d", t.epoch) end,
  year = function(t) return string_format("%04d", t.year) end,
  month = function(t) return two_digits[t.month] end,
  day = function(t) return two_digits[t.day] end,
  hour = function(t) return two_digits[t.hour] end,
  minute = function(t) return two_digits[t.minute] end,
  second = function(t) return two_digits[t.second] end,
  wday = function(t) return tostring(weekday(t.days)) end,
  wdayname = function(t) return weekday_names[weekday(t.days)] end,
  ordinal = function(t) return three_digits[day_of_year(t)] end,
  tzoffshour = function(t) return two_digits[floor(abs(t.offset) / 3600)] end,
  tzoffsmin = function(t) return two_digits[floor(abs(t.offset) % 3600 / 60)] end,
  tzoffsdirection = function(t) return t.offset < 0 and "-" or "+" end,
}

-- A function of a UTC second giving second_formats[name]'s text in `zone`
-- and the zone's offset then, computed once per second.
local function per_second(zone, name)
  local text_of = second_formats[name]
  local cached_second, cached_text, cached_offset
  return function(second)
    if second ~= cached_second then
      local t = civil_time(zone, second)
      cached_second, cached_text, cached_offset = second, text_of(t), t.offset
    end
    return cached_text, cached_offset
  end
end

-- ns -> microseconds since the epoch, rounded first: near 2^60 a double
-- steps by 256 ns, so x.250 s may be stored as x.249999872 s.
local function split_ns(ns)
  local micros = floor(ns / 1e3 + 0.5)
  local second = floor(micros / 1e6)
  return second, micros - second * 1e6
end

local function fraction_text(micros)
  return "." .. three_digits[floor(micros / 1000)] .. three_digits[micros % 1000]
end

-- RFC 3339 writer: microseconds always, or only when not a whole second;
-- utc_text ("Z") replaces "+00:00" when given. The date and offset texts
-- are kept for the last second, the whole text for the last time.
local function rfc3339_writer(zone, always_fraction, utc_text)
  local date_of = per_second(zone, "rfc3339")
  local cached_second, date_text, zone_text, cached_ns, cached_text
  return function(ns)
    if ns == cached_ns then return cached_text end
    if ns == nil then return "" end
    local second, micros = split_ns(ns)
    if second ~= cached_second then
      local offset
      date_text, offset = date_of(second)
      cached_second, zone_text = second, offset_text(offset, utc_text)
    end
    cached_ns = ns
    if micros == 0 and not always_fraction then
      cached_text = date_text .. zone_text
    else
      cached_text = date_text .. "." .. three_digits[floor(micros / 1000)]
                    .. three_digits[micros % 1000] .. zone_text
    end
    return cached_text
  end
end

-- "2026-05-19T10:30:17.000000Z": RFC 5424's TIMESTAMP in `zone`.
function format.rfc5424_timestamp(zone)
  return rfc3339_writer(zone, true, "Z")
end

-- ns -> text of the date option `name` ("rfc3164", "mysql", ...) in zone.
local function time_writer(zone, name)
  if name == "rfc3339" then return rfc3339_writer(zone, false) end
  if name == "subseconds" then
    return function(ns)
      if ns == nil then return "" end
      local _, micros = split_ns(ns)
      return micros == 0 and "0" or sub(fraction_text(micros), 2)
    end
  end
  local text_of = per_second(zone, name)
  return function(ns)
    if ns == nil then return "" end
    return (text_of((split_ns(ns))))
  end
end

---------------------------------------------------------------------------
-- Properties: readers of the message, each called once per message.

local function field_reader(name)
  local key = "Fields[" .. name .. "]"
  return function(read_message) return text(read_message(key)) end
end

local function fromhost(read_message)
  return text(read_message("Fields[fromhost]") or read_message("Fields[fromhost-ip]"))
end

local function priority(read_message) return format.priority(read_message) end

local readers = {
  msg = function(read_message) return read_message("Payload") or "" end,
  rawmsg = function(read_message)
    local raw = read_message("raw")
    if raw == nil or raw == "" then return read_message("Payload") or "" end
    return raw
  end,
  hostname = function(read_message) return read_message("Hostname") or fromhost(read_message) end,
  fromhost = fromhost,
  ["fromhost-ip"] = field_reader("fromhost-ip"),
  inputname = field_reader("inputname"),
  syslogtag = function(read_message)
    local tag = read_message("Fields[syslogtag]")
    if tag then return text(tag) end
    local procid = format.procid(read_message)
    if procid == "-" then return format.app_name(read_message) end
    return format.app_name(read_message) .. "[" .. procid .. "]"
  end,
  programname = function(read_message)
    local value = read_message("Fields[programname]") or read_message("Fields[app-name]")
    return value and text(value) or "-"
  end,
  ["app-name"] = format.app_name,
  procid = format.procid,
  msgid = function(read_message)
    local value = read_message("Fields[msgid]")
    return value and text(value) or "-"
  end,
  ["structured-data"] = function(read_message, read_next_field)
    local value = read_message("Fields[structured-data]")
    if value then return text(value) end
    return format.structured_data_of_fields(read_next_field) or "-"
  end,
  pri = function(read_message) return number_text(priority(read_message)) end,
  ["pri-text"] = function(read_message)
    local pri = priority(read_message)
    return syslog.facility_names[floor(pri / 8)] .. "." .. syslog.severity_names[pri % 8]
  end,
  syslogfacility = function(read_message) return number_text(floor(priority(read_message) / 8)) end,
  ["syslogfacility-text"] = function(read_message)
    return syslog.facility_names[floor(priority(read_message) / 8)]
  end,
  syslogseverity = function(read_message) return number_text(priority(read_message) % 8) end,
  ["syslogseverity-text"] = function(read_message)
    return syslog.severity_names[priority(read_message) % 8]
  end,
  ["protocol-version"] = function(read_message)
    local value = read_message("Fields[protocol-version]")
    return value and text(value) or "1"
  end,
  iut = function() return "1" end,
}
readers.source = readers.hostname
readers.syslogpriority = readers.syslogseverity
readers["syslogpriority-text"] = readers["syslogseverity-text"]

-- Times, as ns; the element's date option turns them into text.
local time_readers = {
  timestamp = function(read_message) return read_message("Timestamp") end,
  timegenerated = function(read_message)
    return tonumber(read_message("Fields[timegenerated]")) or read_message("Timestamp")
  end,
}
time_readers.timereported = time_readers.timestamp

-- rsyslog's system properties of the clock: name -> date format.
local clock_formats = { ["$now"] = "pgsql", ["$year"] = "year", ["$month"] = "month",
                        ["$day"] = "day", ["$hour"] = "hour", ["$minute"] = "minute" }

local function clock_reader(name, context)
  local utc_name = name:match("^(.*)%-utc$")
  local zone = utc_name and date.fixed_zone(0, "UTC") or context.zone
  local of_second = per_second(zone, clock_formats[utc_name or name])
  local now = context.now
  if (utc_name or name) == "$now" then       -- the date only: "2026-05-19"
    return function() return (sub((of_second(floor(now()))), 1, 10)) end
  end
  return function() return (of_second(floor(now()))) end
end

local function build_error(element, message, ...)
  error(string_format("rsyslog template: %s (%%%s%% at position %d)",
                      string_format(message, ...), element.name, element.position), 0)
end

-- The element's property: { key (one local per key), read, time, field_name }.
local function property_of(element, context)
  local name = element.name
  local json_name = name:match("^%$!(.+)$")
  if json_name then
    return { key = name, read = field_reader(json_name), field_name = json_name }
  end
  local lower_name = lower(name)
  if clock_formats[lower_name] or clock_formats[lower_name:match("^(.*)%-utc$") or ""] then
    return { key = lower_name, read = clock_reader(lower_name, context), field_name = name }
  end
  local read = readers[lower_name]
  if read then return { key = lower_name, read = read, field_name = name } end
  read = time_readers[lower_name]
  if read then return { key = lower_name, read = read, time = true, field_name = name } end
  build_error(element, "unknown property '%s'", name)
end

---------------------------------------------------------------------------
-- Options: each a step, a function from text to text.

local control_escapes = {}
for code = 0, 31 do control_escapes[string.char(code)] = string_format("#%03d", code) end
control_escapes["\127"] = "#127"

local text_steps = {
  ["sp-if-no-1st-sp"] = function(s)
    if s == "" then return s end
    return byte(s, 1) == 32 and "" or " "
  end,
  uppercase = upper,
  lowercase = lower,
  ["drop-cc"] = function(s)
    if not find(s, "%c") then return s end
    return (gsub(s, "%c", ""))
  end,
  ["space-cc"] = function(s)
    if not find(s, "%c") then return s end
    return (gsub(s, "%c", " "))
  end,
  ["escape-cc"] = function(s)
    if not find(s, "%c") then return s end
    return (gsub(s, "%c", control_escapes))
  end,
  ["secpath-drop"] = function(s)
    s = gsub(s, "/", "")
    if s == "" or s == "." then return "_" end
    return s == ".." and "_." or s
  end,
  ["secpath-replace"] = function(s)
    s = gsub(s, "/", "_")
    if s == "" or s == "." then return "_" end
    return s == ".." and "_." or s
  end,
  ["drop-last-lf"] = function(s)
    if byte(s, -1) == 10 then return sub(s, 1, -2) end
    return s
  end,
  compressspace = function(s)
    if not find(s, "  ", 1, true) then return s end
    return (gsub(s, "  +", " "))
  end,
  csv = function(s) return '"' .. gsub(s, '"', '""') .. '"' end,
  json = escape_json,
}

local date_option_names = {
  "rfc3164", "rfc3164-buggyday", "rfc3339", "mysql", "pgsql", "unixtimestamp",
  "subseconds", "year", "month", "day", "hour", "minute", "second", "wday",
  "wdayname", "ordinal", "tzoffshour", "tzoffsmin", "tzoffsdirection",
}
local date_options = {}
for _, name in ipairs(date_option_names) do date_options["date-" .. name] = name end

local case_options = { uppercase = true, lowercase = true }
local cc_options = { ["drop-cc"] = true, ["space-cc"] = true, ["escape-cc"] = true }
local secpath_options = { ["secpath-drop"] = true, ["secpath-replace"] = true }
local format_options = { csv = true, json = true, jsonf = true }
local flag_options = { ["sp-if-no-1st-sp"] = true, ["drop-last-lf"] = true,
                       compressspace = true, ["fixed-width"] = true,
                       ["pos-end-relative"] = true, ["date-utc"] = true }

-- The element's options, checked: { set = {...}, date, case, cc, secpath, format }.
local function read_options(element, property)
  local chosen = { set = {} }
  for _, option in ipairs(element.options) do
    if date_options[option] then
      if not property.time then
        build_error(element, "option '%s' needs a time property", option)
      end
      chosen.date = date_options[option]
    elseif case_options[option] then chosen.case = option
    elseif cc_options[option] then chosen.cc = option
    elseif secpath_options[option] then chosen.secpath = option
    elseif format_options[option] then
      if chosen.format then
        build_error(element, "options '%s' and '%s' exclude each other", chosen.format, option)
      end
      chosen.format = option
    elseif flag_options[option] then chosen.set[option] = true
    else
      build_error(element, "unsupported option '%s'", option)
    end
  end
  if chosen.set["date-utc"] and not property.time then
    build_error(element, "option 'date-utc' needs a time property")
  end
  return chosen
end

-- from/to text -> number: "" is 0, "$" (to only) the end.
local function position_number(element, text_value, is_to)
  if text_value == nil or text_value == "" then return 0 end
  if is_to and text_value == "$" then return 9999999 end
  local number = text_value:match("^%d+$") and tonumber(text_value)
  if number then return number end
  if text_value:find("^R") then build_error(element, "regular-expression extraction is not supported") end
  if text_value:find("^F") then build_error(element, "field extraction is not supported") end
  build_error(element, "malformed position '%s'", text_value)
end

-- rsyslog's substring: from/to 1-based (0-based from the end with
-- pos-end-relative); fixed-width pads with spaces to the asked width.
local function substring_step(from, to, fixed_width, end_relative)
  return function(s)
    local length = #s
    local first, last
    if end_relative then
      first = length < from and 0 or length - from
      last = length < to and 0 or length - to
    else
      first = from > 0 and from - 1 or 0
      last = to > 0 and to - 1 or 0
    end
    if first >= length then return "" end
    if first == 0 and last >= length and not fixed_width then return s end
    if last >= length and not fixed_width then last = length - 1 end
    local piece = sub(s, first + 1, last + 1)
    local width = last - first + 1
    if #piece < width then piece = piece .. rep(" ", width - #piece) end
    return piece
  end
end

local function jsonf_step(name)
  local key = '"' .. escape_json(name) .. '":"'
  return function(s) return key .. escape_json(s) .. '"' end
end

-- The steps of an element, in rsyslog's order (MsgGetProp).
local function steps_of(element, property, context)
  local options = read_options(element, property)
  local steps = {}
  if property.time then
    local zone = options.set["date-utc"] and date.fixed_zone(0, "UTC") or context.zone
    steps[1] = time_writer(zone, options.date or "rfc3164")
  end
  local from = position_number(element, element.from, false)
  local to = position_number(element, element.to, true)
  if from ~= 0 or to ~= 0 then
    local end_relative = options.set["pos-end-relative"]
    if (end_relative and to > from) or (not end_relative and to < from) then
      from, to = to, from
    end
    steps[#steps + 1] = substring_step(from, to, options.set["fixed-width"], end_relative)
  end
  local function add(option) if option then steps[#steps + 1] = text_steps[option] end end
  add(options.set["sp-if-no-1st-sp"] and "sp-if-no-1st-sp")
  add(options.case)
  add(options.cc)
  add(options.secpath)
  add(options.set["drop-last-lf"] and options.cc ~= "escape-cc" and "drop-last-lf")
  add(options.set.compressspace and "compressspace")
  if options.format == "jsonf" then
    steps[#steps + 1] = jsonf_step(element.outname or property.field_name)
  else
    add(options.format)
  end
  return steps
end

---------------------------------------------------------------------------
-- Compiling.

-- Writes the render function. For W3's template, with f the functions:
--   return function(read_message, read_next_field)
--     local v1 = f[1](read_message, read_next_field)     -- pri
--     ...
--     local v5 = f[5](read_message, read_next_field)     -- msg
--     return "<" .. v1 .. ">" .. f[6](v2) .. " " .. v3 .. " " .. v4
--            .. f[7](v5) .. f[8](v5) .. "\n"
--   end
-- Long templates join a table instead: one concatenation has a register per
-- operand.
local MAX_CONCAT_OPERANDS = 100

local function write_render(elements, context)
  local functions, locals, pieces, value_of_key = {}, {}, {}, {}
  local function function_ref(f)
    functions[#functions + 1] = f
    return "f[" .. #functions .. "]"
  end
  for _, element in ipairs(elements) do
    if element.kind == "constant" then
      pieces[#pieces + 1] = string_format("%q", element.text)
    else
      local property = property_of(element, context)
      local steps = steps_of(element, property, context)
      local value = value_of_key[property.key]
      if not value then
        value = "v" .. (#locals + 1)
        value_of_key[property.key] = value
        locals[#locals + 1] = string_format("  local %s = %s(read_message, read_next_field)",
                                            value, function_ref(property.read))
      end
      for _, step in ipairs(steps) do value = function_ref(step) .. "(" .. value .. ")" end
      pieces[#pieces + 1] = value
    end
  end
  local result = #pieces <= MAX_CONCAT_OPERANDS and table.concat(pieces, " .. ")
                 or "concat({ " .. table.concat(pieces, ", ") .. " })"
  local source = "local f, concat = ...\nreturn function(read_message, read_next_field)\n"
                 .. table.concat(locals, "\n") .. "\n  return " .. result .. "\nend"
  local chunk = assert((loadstring or load)(source, "=rsyslog format"))
  return chunk(functions, concat)
end

local function zone_of(tz)
  if type(tz) ~= "string" then return tz end
  local zone, err = date.zone(tz)
  if not zone then error("rsyslog template: " .. err, 0) end
  return zone
end

-- The render function of a template: render(read_message, read_next_field)
-- -> the message's text. Raises an error naming what is wrong in the template.
function format.compile(template_or_name, options)
  options = options or {}
  local elements = template.parse(rsyslog.template_text(template_or_name))
  local context = { zone = zone_of(options.tz or "UTC"), now = options.now or os.time }
  return write_render(elements, context)
end

return format
