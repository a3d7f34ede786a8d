-- recent: what a decoder makes of an RFC 3164 time, which has no year, on
-- the day the spec runs. The decoders take the year from the sandbox's real
-- clock (lua_modules/date.lua, infer_year): this year's, unless that puts
-- the time more than 31 days ahead (then last year's) or more than 334 days
-- past (then next year's). The specs compute their expectations by the same
-- rule from os.time, so they hold on any day.
local recent = {}

local DAY = 86400

-- Days since 1970-01-01 of a date in the proleptic Gregorian calendar.
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The year whose `month`/`day` the decoders take, `offset` seconds east of
-- UTC, at time `now` (os.time()).
function recent.year(month, day, hour, min, sec, offset, now)
  local now_local = (now or os.time()) + (offset or 0)
  local year = tonumber(os.date("!%Y", now_local))
  local candidate = days_from_civil(year, month, day) * DAY + hour * 3600 + min * 60 + sec
  if candidate - now_local > 31 * DAY then return year - 1 end
  if now_local - candidate > (365 - 31) * DAY then return year + 1 end
  return year
end

-- ns since the epoch of a wall-clock time `offset` seconds east of UTC.
function recent.wall_ns(year, month, day, hour, min, sec, offset)
  return (days_from_civil(year, month, day) * DAY + hour * 3600 + min * 60 + sec
          - (offset or 0)) * 1e9
end

-- The same in the year the decoders take it.
function recent.ns(month, day, hour, min, sec, offset)
  return recent.wall_ns(recent.year(month, day, hour, min, sec, offset), month, day,
                        hour, min, sec, offset)
end

return recent
