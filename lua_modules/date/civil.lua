-- date.civil: proleptic Gregorian calendar arithmetic, no time zones, no os.time.
--
-- Days are counted from 1970-01-01 (day 0), so a UTC instant in seconds is
-- days * 86400 + seconds of the day. The conversions are Howard Hinnant's
-- days_from_civil / civil_from_days, valid for any year a double can hold,
-- which keeps them independent of the process's TZ and of time_t's range.
-- Extend here only with pure calendar functions; zones live in date/zone.lua.

local floor = math.floor

local civil = {}

-- Days from 1970-01-01 to year-month-day (month 1..12, day 1..31).
function civil.days_from_civil(year, month, day)
  if month <= 2 then year = year - 1 end
  local era = floor(year / 400)
  local year_of_era = year - era * 400                            -- 0..399
  local month_from_march = (month + 9) % 12                       -- Mar = 0
  local day_of_year = floor((153 * month_from_march + 2) / 5) + day - 1
  local day_of_era = year_of_era * 365 + floor(year_of_era / 4)
                     - floor(year_of_era / 100) + day_of_year
  return era * 146097 + day_of_era - 719468
end

-- The inverse of days_from_civil: year, month, day.
function civil.civil_from_days(days)
  days = days + 719468
  local era = floor(days / 146097)
  local day_of_era = days - era * 146097                          -- 0..146096
  local year_of_era = floor((day_of_era - floor(day_of_era / 1460)
                             + floor(day_of_era / 36524)
                             - floor(day_of_era / 146096)) / 365)
  local day_of_year = day_of_era - (365 * year_of_era + floor(year_of_era / 4)
                                    - floor(year_of_era / 100))
  local month_from_march = floor((5 * day_of_year + 2) / 153)
  local day = day_of_year - floor((153 * month_from_march + 2) / 5) + 1
  local month = month_from_march < 10 and month_from_march + 3 or month_from_march - 9
  local year = year_of_era + era * 400
  if month <= 2 then year = year + 1 end
  return year, month, day
end

-- Seconds since the epoch of a civil date and time read as UTC.
function civil.seconds_from_civil(year, month, day, hour, min, sec)
  return civil.days_from_civil(year, month, day) * 86400
         + (hour or 0) * 3600 + (min or 0) * 60 + (sec or 0)
end

-- Day of the week of a day number: 0 = Sunday .. 6 = Saturday.
function civil.weekday(days)
  return (days + 4) % 7                    -- 1970-01-01 was a Thursday
end

function civil.is_leap_year(year)
  return year % 4 == 0 and (year % 100 ~= 0 or year % 400 == 0)
end

local month_lengths = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

function civil.days_in_month(year, month)
  if month == 2 and civil.is_leap_year(year) then return 29 end
  return month_lengths[month]
end

return civil
