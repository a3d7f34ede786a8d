-- date.zone: time zones by name, and the two conversions a decoder needs.
--
--   local z = zone.get("Asia/Shanghai")   -- or "UTC", "Z", "+08:00", "-0530"
--   z:offset_at(utc_seconds)   --> seconds east of UTC in force at that instant
--   z:utc_from_local(seconds)  --> UTC seconds of a wall-clock time in z
--
-- Named zones come from compiled TZif files: inside the sandbox through the
-- global read_zoneinfo(name), in plain Lua (specs, benches) from
-- /usr/share/zoneinfo. The transition table decides offsets inside its range;
-- after its last transition the file's POSIX TZ footer rule does (so "slim"
-- files and dates past 2037 get DST right); without a usable footer the last
-- offset stays in force. Zones are parsed once and cached per name.
-- To add a kind of zone, give it offset_at(); utc_from_local() comes with it.

local lpeg = require "lpeg"
-- Required with the first named zone (zone.from_tzif): a state whose zones
-- are all fixed offsets does not hold them.
local tzif, posix_tz

local floor = math.floor
local P, R, S, C, Cc = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc

local ZONEINFO_DIR = "/usr/share/zoneinfo/"

local zone = {}

-- Wall-clock time -> UTC. In a gap (spring forward) the wall time is read
-- with the offset in force before the transition; in a fold (fall back) the
-- first occurrence wins. Both match Python's fold=0 and mktime(tm_isdst=-1)
-- on glibc. Assumes transitions are more than two days apart, true of every
-- zone in use since 1970.
local function utc_from_local(self, local_seconds)
  local before = self:offset_at(local_seconds - 86400)
  local after = self:offset_at(local_seconds + 86400)
  if before == after then return local_seconds - before end
  local as_before = local_seconds - before
  local as_after = local_seconds - after
  local before_fits = self:offset_at(as_before) == before
  local after_fits = self:offset_at(as_after) == after
  if before_fits and after_fits then return math.min(as_before, as_after) end
  if after_fits then return as_after end
  return as_before
end

local FixedZone = { utc_from_local = utc_from_local }
FixedZone.__index = FixedZone

function FixedZone:offset_at()
  return self.offset
end

local TzifZone = { utc_from_local = utc_from_local }
TzifZone.__index = TzifZone

function TzifZone:offset_at(utc)
  local transitions = self.transitions
  local count = #transitions
  if count == 0 or utc < transitions[1] then
    if count == 0 and self.rule then return posix_tz.offset_at(self.rule, utc) end
    return self.initial_offset
  end
  if utc >= transitions[count] then
    if self.rule then return posix_tz.offset_at(self.rule, utc) end
    return self.offsets[count]
  end
  local low, high = 1, count       -- the last transition at or before utc
  while low < high do
    local middle = floor((low + high + 1) / 2)
    if transitions[middle] <= utc then low = middle else high = middle - 1 end
  end
  return self.offsets[low]
end

function zone.fixed(offset_seconds, name)
  return setmetatable({ name = name, offset = offset_seconds }, FixedZone)
end

-- A zone from the bytes of a TZif file; nil and an error if they are not one.
function zone.from_tzif(bytes, name)
  tzif = tzif or require "date.tzif"
  posix_tz = posix_tz or require "date.posix_tz"
  local data, err = tzif.parse(bytes)
  if not data then return nil, err end
  data.name = name
  if data.footer then data.rule = posix_tz.parse(data.footer) end
  return setmetatable(data, TzifZone)
end

-- "UTC", "GMT", "Z", "+08:00", "+0800", "+08", "-05:30".
local digit = R"09"
local two_digits = C(digit * digit) / tonumber
local function signed_offset(sign, hours, minutes)
  local seconds = hours * 3600 + minutes * 60
  return sign == "-" and -seconds or seconds
end
local fixed_offset_name = ((P"UTC" + P"GMT" + P"Z") * Cc(0)
  + (C(S"+-") * two_digits * ((P":"^-1 * two_digits) + Cc(0))) / signed_offset) * -1

local zone_file_name = R("az", "AZ", "09") * (R("az", "AZ", "09") + S"_+-/")^0 * -1

local function read_zone_bytes(name)
  if read_zoneinfo then return read_zoneinfo(name) end   -- inside the sandbox
  if not (io and io.open) then return nil, "no zoneinfo reader available" end
  if not zone_file_name:match(name) then return nil, "invalid zone name" end
  local file, err = io.open(ZONEINFO_DIR .. name, "rb")
  if not file then return nil, err end
  local bytes = file:read("*a")
  file:close()
  return bytes
end

local zones_by_name = {}

-- The zone called `name`, or nil and an error naming it.
function zone.get(name)
  local cached = zones_by_name[name]
  if cached then return cached end
  local found, err
  local offset = fixed_offset_name:match(name)
  if offset then
    found = zone.fixed(offset, name)
  else
    local bytes
    bytes, err = read_zone_bytes(name)
    if bytes then found, err = zone.from_tzif(bytes, name) end
  end
  if not found then
    return nil, "unknown time zone '" .. name .. "': " .. tostring(err)
  end
  zones_by_name[name] = found
  return found
end

return zone
