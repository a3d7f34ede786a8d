-- date: timestamps in log lines, as LPeg grammars, and their conversion to
-- lumberjit's time (nanoseconds since the epoch, UTC, as a Lua number).
--
-- Calendar arithmetic is pure (date/civil.lua): nothing depends on the
-- process's TZ or on os.time. Time zones (date/zone.lua) are fixed offsets or
-- named zones read from TZif files.
--
-- Grammars that capture the civil fields, to compose into bigger grammars:
--   date.rfc3164   "May 19 18:30:17", "May  9 08:01:02" -> month, day, hour, min,
--                  sec, fraction (0 unless the text has ".123")
--   date.rfc3339   "2026-05-19T18:30:17.123456+08:00"   -> year, month, day, hour,
--                  min, sec, fraction (0 <= f < 1), offset (seconds east)
--   date.iso8601   as rfc3339, also with a space for "T" and no offset
--                  (offset captured as false)
--   date.rfc3164_received  RFC 3164 as syslog receivers meet it (rsyslog
--                  reads these): also "May  19", a year before the month
--                  ("2026 May 19 18:30:17", Brocade) or before the time
--                  ("May 19 2026 18:30:17", Cisco) -> year (false when
--                  none), month, day, hour, min, sec, fraction
-- For each format also: date.X_text (the text, no captures), a converter
-- from that text to ns, built once per zone, and date.X_ns(zone), a pattern
-- capturing the ns. Converters memoize on the text where a second's worth of
-- lines shares it (so they cost one conversion per second):
--   date.rfc3164_to_ns(zone [, now])  memo table, for rfc3164_received texts
--                                     too; the year, when the text has none,
--                                     inferred from now() (os.time by default)
--   date.rfc3164_fields_to_ns(zone [, now])  function(month, day, hour, min,
--                                     sec), for a time read into numbers
--   date.iso8601_to_ns(zone)          function; zone only for texts without offset
--   date.mysql_to_ns(zone), date.pgsql_to_ns(zone)  memo tables
--   date.unix_to_ns                   function
-- Formatting: date.iso8601_utc_ms(ns) -> "2026-05-19T10:30:17.000Z".
-- To add a format: write its grammar once as a function of `number` (see
-- rfc3164 below), then its _text pattern, converter and _ns pattern.

local lpeg = require "lpeg"
local civil = require "date.civil"
local zone = require "date.zone"
local memo = require "memo"

local P, R, S, C, Cc = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc
local floor, format = math.floor, string.format
local byte, sub = string.byte, string.sub
local days_from_civil, civil_from_days = civil.days_from_civil, civil.civil_from_days
local seconds_from_civil = civil.seconds_from_civil

-- The grammars, fields named in `lazy`, are built when first read: a state
-- holds those its plugin uses.
local lazy = {}
local date = require "lazy" (lazy)
date.days_from_civil = days_from_civil
date.civil_from_days = civil_from_days
date.seconds_from_civil = seconds_from_civil
date.weekday = civil.weekday
date.is_leap_year = civil.is_leap_year
date.days_in_month = civil.days_in_month
date.zone = zone.get             -- date.zone("Asia/Shanghai") -> zone or nil, err
date.fixed_zone = zone.fixed     -- date.fixed_zone(28800)
date.zone_from_tzif = zone.from_tzif

-- Each grammar is written once and built twice: with `number` capturing
-- (C(p) / tonumber) for the public patterns, and with `number` matching only,
-- for the text that the memoizing *_ns patterns use as their key.
local function capture_number(p) return C(p) / tonumber end
local function match_only(p) return p end

local digit = R"09"
local d2 = digit * digit
local d4 = d2 * d2

local month_names = { "jan", "feb", "mar", "apr", "may", "jun",
                      "jul", "aug", "sep", "oct", "nov", "dec" }

local caseless = require "caseless"

-- Matching only, the month names form a trie, so "May" is found without
-- first trying "Jan" to "Apr": this pattern runs on every RFC 3164 line.
local ci = caseless
local month_abbr_text = ci"j" * (ci"a" * ci"n" + ci"u" * (ci"n" + ci"l"))
  + ci"f" * ci"e" * ci"b" + ci"m" * ci"a" * (ci"r" + ci"y")
  + ci"a" * (ci"p" * ci"r" + ci"u" * ci"g") + ci"s" * ci"e" * ci"p"
  + ci"o" * ci"c" * ci"t" + ci"n" * ci"o" * ci"v" + ci"d" * ci"e" * ci"c"

local function month_abbr(number)
  if number == match_only then return month_abbr_text end
  local p = P(false)
  for month, name in ipairs(month_names) do p = p + caseless(name) * Cc(month) end
  return p
end

local function fraction(number)
  if number == match_only then return "." * digit^1 end
  return C("." * digit^1) / tonumber
end

local function clock(number)      -- hh:mm:ss
  return number(d2) * ":" * number(d2) * ":" * number(d2)
end

-- hh:mm:ss within a day, as rsyslog checks it (60: a leap second).
local function valid_clock(number)
  local sixty = R"05" * digit + "60"
  return number(R"01" * digit + "2" * R"03") * ":" * number(R"05" * digit)
         * ":" * number(sixty)
end

-- "May 19", "May  9" (RFC 3164), also "May 09" and "May 9" seen in the wild;
-- fractional seconds are accepted (rsyslog does too). A time out of range
-- does not match: it could not be converted.
local function rfc3164(number)
  local day = P" " * number(R"19") + number(P"0" * R"19" + R"12" * digit + P"3" * R"01")
              + number(R"19")
  local seconds = number == match_only and valid_clock(number) * fraction(number)^-1
                  or valid_clock(number) * (fraction(number) + Cc(0))
  return month_abbr(number) * " " * day * " " * seconds
end

-- rsyslog's reading (runtime/datetime.c, ParseTIMESTAMP3164): one or two
-- spaces before the day, a year in one of two places, and days and times
-- in range, so that a text that is no timestamp is left to the message.
local function rfc3164_received(number)
  local year = number(d4) * " "
  local no_year = number == match_only and P(true) or Cc(false)
  local day = number(P"0" * R"19" + R"12" * digit + P"3" * R"01" + R"19")
  local seconds = number == match_only and valid_clock(number) * fraction(number)^-1
                  or valid_clock(number) * (fraction(number) + Cc(0))
  return (year + no_year) * month_abbr(number) * " " * P" "^-1 * day * " "
         * (year + no_year) * seconds
end

local function calendar_date(number)
  return number(d4) * "-" * number(d2) * "-" * number(d2)
end

local function signed_offset(sign, hours, minutes)
  local seconds = hours * 3600 + minutes * 60
  return sign == "-" and -seconds or seconds
end
local utc_offset_text = S"Zz" + S"+-" * d2 * (P":"^-1 * d2)^-1
local utc_offset = S"Zz" * Cc(0)
  + (C(S"+-") * capture_number(d2) * (P":"^-1 * capture_number(d2) + Cc(0))) / signed_offset

function lazy.month_abbr() return month_abbr(capture_number) end
function lazy.rfc3164() return rfc3164(capture_number) end
function lazy.rfc3164_received() return rfc3164_received(capture_number) end
function lazy.rfc3339()
  return calendar_date(capture_number) * S"Tt" * clock(capture_number)
         * (fraction(capture_number) + Cc(0)) * utc_offset
end
function lazy.iso8601()
  return calendar_date(capture_number) * S"Tt " * clock(capture_number)
         * (fraction(capture_number) + Cc(0)) * (utc_offset + Cc(false))
end

-- Years for timestamps that have none (RFC 3164): the year that puts the
-- time closest to now, where "closest" allows up to a month of future (clock
-- skew, late delivery) before a time is taken to be from last year. So in
-- January "Dec 31" is last year's, and on Dec 31 "Jan  1" is next year's.
local MAX_FUTURE = 31 * 86400
local YEAR = 365 * 86400

function date.infer_year(in_zone, now, month, day, hour, min, sec)
  local now_local = now + in_zone:offset_at(now)
  local year = civil_from_days(floor(now_local / 86400))
  local candidate = seconds_from_civil(year, month, day, hour, min, sec)
  if candidate - now_local > MAX_FUTURE then return year - 1 end
  if now_local - candidate > YEAR - MAX_FUTURE then return year + 1 end
  return year
end

local function as_zone(in_zone)
  if type(in_zone) == "string" then return assert(zone.get(in_zone)) end
  return in_zone or zone.get("UTC")
end

-- Text-only versions of the grammars: what a timestamp's text looks like.
function lazy.rfc3164_text() return rfc3164(match_only) end
function lazy.rfc3164_received_text() return rfc3164_received(match_only) end
-- RFC 3339 as written: "T", an offset (no zone applies).
function lazy.rfc3339_text()
  return calendar_date(match_only) * S"Tt" * clock(match_only)
         * fraction(match_only)^-1 * utc_offset_text
end
function lazy.iso8601_text()
  return calendar_date(match_only) * S"Tt " * clock(match_only)
         * fraction(match_only)^-1 * utc_offset_text^-1
end
local function mysql(number)
  return number(d4) * number(d2) * number(d2) * number(d2) * number(d2) * number(d2)
end
local function pgsql(number)
  return calendar_date(number) * " " * clock(number)
end
function lazy.mysql_text() return mysql(match_only) end
function lazy.pgsql_text() return pgsql(match_only) end
function lazy.unix_text() return P"-"^-1 * digit^1 end

-- Converters from a timestamp's text to ns. Those for formats with one text
-- per second are memo tables (index them: to_ns[text]); the others are
-- functions (call them: to_ns(text)). An RFC 3164 text keeps the year it was
-- given when first seen until its memo starts over: after 4096 distinct
-- texts (about an hour of a busy stream), or at the first new text a day
-- after the memo started, so that a quiet stream's "May 19 18:30:17" is not
-- given last year's year a year later, or before it started: a clock
-- stepped back (NTP fixing a clock that ran ahead) would else keep the
-- years it gave until it caught up again.
local RECONSIDER_YEARS_AFTER = 86400

-- ns of an RFC 3164 time in in_zone's wall clock; year nil: inferred.
local function rfc3164_ns(in_zone, now_seconds, year, month, day, hour, min, sec, frac)
  year = year or date.infer_year(in_zone, now_seconds, month, day, hour, min, sec)
  return (in_zone:utc_from_local(seconds_from_civil(year, month, day, hour, min, sec))
          + frac) * 1e9
end

function date.rfc3164_to_ns(in_zone, now)
  in_zone = as_zone(in_zone)
  now = now or os.time
  local converted, started = nil, now()
  converted = memo.new(function(text)
    local now_seconds = now()
    if now_seconds - started > RECONSIDER_YEARS_AFTER or now_seconds < started then
      for stored in pairs(converted) do converted[stored] = nil end
      started = now_seconds
    end
    local year, month, day, year_before_time, hour, min, sec, frac =
      date.rfc3164_received:match(text)
    return rfc3164_ns(in_zone, now_seconds, year or year_before_time, month, day,
                      hour, min, sec, frac)
  end)
  return converted
end

-- The same for a time already read into numbers (no year, no fraction):
-- function(month, day, hour, min, sec) -> ns, what rfc3164_to_ns gives
-- for its text.
function date.rfc3164_fields_to_ns(in_zone, now)
  in_zone = as_zone(in_zone)
  now = now or os.time
  return function(month, day, hour, min, sec)
    return rfc3164_ns(in_zone, now(), nil, month, day, hour, min, sec, 0)
  end
end

-- Wall-clock seconds of "YYYY-MM-DDThh:mm:ss" (or with a space), memoized;
-- the fraction and offset vary per line and are read with string functions.
local local_seconds_grammar
local local_seconds_of = memo.new(function(text)
  local_seconds_grammar = local_seconds_grammar
                          or calendar_date(capture_number) * S"Tt " * clock(capture_number)
  return seconds_from_civil(local_seconds_grammar:match(text))
end)
local offset_of = memo.new(function(text) return (utc_offset * -1):match(text) end, 256)

function date.iso8601_to_ns(in_zone)
  in_zone = as_zone(in_zone)
  return function(text)
    local local_seconds = local_seconds_of[sub(text, 1, 19)]
    local frac, offset_at = 0, 20
    if byte(text, 20) == 46 then                                -- "."
      offset_at = 21
      local b = byte(text, offset_at)
      while b and b >= 48 and b <= 57 do                        -- digits
        offset_at = offset_at + 1
        b = byte(text, offset_at)
      end
      frac = tonumber(sub(text, 20, offset_at - 1))
    end
    if offset_at > #text then
      return (in_zone:utc_from_local(local_seconds) + frac) * 1e9
    end
    return (local_seconds - offset_of[sub(text, offset_at)] + frac) * 1e9
  end
end

local function wall_clock_to_ns(number_grammar, in_zone)
  in_zone = as_zone(in_zone)
  return memo.new(function(text)
    return in_zone:utc_from_local(seconds_from_civil(number_grammar:match(text))) * 1e9
  end)
end
function date.mysql_to_ns(in_zone) return wall_clock_to_ns(mysql(capture_number), in_zone) end
function date.pgsql_to_ns(in_zone) return wall_clock_to_ns(pgsql(capture_number), in_zone) end
function date.unix_to_ns(text) return tonumber(text) * 1e9 end

-- Patterns capturing ns, for composing grammars.
function date.rfc3164_ns(in_zone, now) return C(date.rfc3164_text) / date.rfc3164_to_ns(in_zone, now) end
function date.iso8601_ns(in_zone) return C(date.iso8601_text) / date.iso8601_to_ns(in_zone) end
function date.mysql_ns(in_zone) return C(date.mysql_text) / date.mysql_to_ns(in_zone) end
function date.pgsql_ns(in_zone) return C(date.pgsql_text) / date.pgsql_to_ns(in_zone) end
function lazy.unix_ns() return C(date.unix_text) / date.unix_to_ns end

-- "2026-05-19T10:30:17.000Z" for a time in ns. Called once per event by
-- encoders, so the text of the last second and of the last ns are kept.
-- A millisecond's suffix is made when first needed: the thousand of them
-- made at load held 48 KB in every state that loads date, decoders too.
local millisecond_suffix = setmetatable({}, { __index = function(suffix, ms)
  local text = format(".%03dZ", ms)
  rawset(suffix, ms, text)
  return text
end })
local cached_second, cached_second_text, cached_ns, cached_ns_text

function date.iso8601_utc_ms(ns)
  if ns == cached_ns then return cached_ns_text end
  -- Round to the microsecond first: near 2^60 a double steps by 256 ns, so
  -- x.250 s may be stored as x.249999872 s.
  local ms_total = floor(floor(ns / 1e3 + 0.5) / 1e3)
  local second = floor(ms_total / 1000)
  if second ~= cached_second then
    local days = floor(second / 86400)
    local of_day = second - days * 86400
    local year, month, day = civil_from_days(days)
    cached_second_text = format("%04d-%02d-%02dT%02d:%02d:%02d", year, month, day,
                                floor(of_day / 3600), floor(of_day % 3600 / 60), of_day % 60)
    cached_second = second
  end
  cached_ns = ns
  cached_ns_text = cached_second_text .. millisecond_suffix[ms_total - second * 1000]
  return cached_ns_text
end

return date
