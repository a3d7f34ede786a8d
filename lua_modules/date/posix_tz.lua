-- date.posix_tz: POSIX TZ rule strings, as found in TZif footers.
--
--   "CST-8"                          fixed: China Standard Time, UTC+8
--   "CET-1CEST,M3.5.0,M10.5.0/3"     DST from the last Sunday of March 02:00
--                                    to the last Sunday of October 03:00
--   "<-03>3"                         quoted (numeric) zone names
-- POSIX offsets count west of Greenwich, so "CET-1" is UTC+1; parse()
-- returns offsets east of UTC like the rest of lumberjit. Transition times
-- may be negative or past 24h (the TZif v3 extension). A DST name without
-- rules gets the US rules, as glibc does.
-- To extend: add a rule form to `transition_date` and a case to `rule_day`.

local lpeg = require "lpeg"
local civil = require "date.civil"

local P, R, S, C, Cc, Cg, Ct = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc, lpeg.Cg, lpeg.Ct
local floor = math.floor

local posix_tz = {}

local number = R"09"^1 / tonumber

local function to_seconds(h, m, s) return h * 3600 + (m or 0) * 60 + (s or 0) end
local hms = (number * (":" * number)^-1 * (":" * number)^-1) / to_seconds

local function apply_sign(sign, seconds) return sign == "-" and -seconds or seconds end
local signed_hms = ((C(S"+-") + Cc("+")) * hms) / apply_sign

local function east_of_utc(west) return -west end
local offset = signed_hms / east_of_utc

local zone_name = P"<" * (1 - P">")^1 * ">" + R("az", "AZ")^3

-- Jn: day 1..365 never counting Feb 29; n: day 0..365; Mm.w.d: weekday d of
-- week w (5 = last) of month m.
local julian_day = P"J" * Cg(Cc("julian"), "kind") * Cg(number, "n")
local zero_based_day = Cg(Cc("zero_based"), "kind") * Cg(number, "n")
local month_week_day = P"M" * Cg(Cc("month_week_day"), "kind") * Cg(number, "month")
                       * "." * Cg(number, "week") * "." * Cg(number, "weekday")
local transition_date = Ct(julian_day + month_week_day + zero_based_day)
local transition_time = "/" * signed_hms + Cc(7200)

local dst_rules = "," * Cg(transition_date, "start") * Cg(transition_time, "start_time")
                  * "," * Cg(transition_date, "finish") * Cg(transition_time, "finish_time")

local tz_string = Ct(zone_name * Cg(offset, "std_offset")
                     * (zone_name * Cg(offset + Cc(nil), "dst_offset") * dst_rules^-1)^-1) * -1
-- A DST zone name, even without an offset or rules, means the zone has DST.
local has_dst = zone_name * offset * zone_name

local us_rules = tz_string:match("EST5EDT,M3.2.0,M11.1.0")

-- Parses a TZ string into a rule table, or returns nil and an error.
function posix_tz.parse(text)
  local rule = tz_string:match(text)
  if not rule then return nil, "malformed POSIX TZ string '" .. text .. "'" end
  if has_dst:match(text) then
    rule.dst_offset = rule.dst_offset or rule.std_offset + 3600
    if not rule.start then
      rule.start, rule.start_time = us_rules.start, us_rules.start_time
      rule.finish, rule.finish_time = us_rules.finish, us_rules.finish_time
    end
  end
  return rule
end

-- The day number (days since 1970-01-01) a transition date falls on in `year`.
local function rule_day(date, year)
  local jan1 = civil.days_from_civil(year, 1, 1)
  if date.kind == "julian" then
    local leap_shift = (civil.is_leap_year(year) and date.n >= 60) and 1 or 0
    return jan1 + date.n - 1 + leap_shift
  elseif date.kind == "zero_based" then
    return jan1 + date.n
  end
  local first = civil.days_from_civil(year, date.month, 1)
  local last = first + civil.days_in_month(year, date.month) - 1
  local day = first + (date.weekday - civil.weekday(first)) % 7 + (date.week - 1) * 7
  while day > last do day = day - 7 end
  return day
end

-- The UTC offset (seconds east) the rule gives at `utc` seconds.
function posix_tz.offset_at(rule, utc)
  local std, dst = rule.std_offset, rule.dst_offset
  if not dst then return std end
  local year = civil.civil_from_days(floor((utc + std) / 86400))
  -- The start time is written in standard time, the end time in DST.
  local dst_starts = rule_day(rule.start, year) * 86400 + rule.start_time - std
  local dst_ends = rule_day(rule.finish, year) * 86400 + rule.finish_time - dst
  local in_dst
  if dst_starts < dst_ends then                   -- northern hemisphere
    in_dst = utc >= dst_starts and utc < dst_ends
  else                                            -- DST spans New Year
    in_dst = utc < dst_ends or utc >= dst_starts
  end
  return in_dst and dst or std
end

return posix_tz
