-- date.tzif: reads compiled time-zone files (TZif, RFC 8536), versions 1 to 4.
--
-- parse(bytes) returns the zone's history as plain data:
--   { transitions = {utc_seconds...},   -- ascending
--     offsets     = {utc_offset...},    -- offset in force from transitions[i]
--     initial_offset = seconds,         -- before the first transition
--     footer      = "CET-1CEST,M3.5.0,M10.5.0/3" or nil }
-- For version 2+ files the 64-bit block is used and the 32-bit one skipped.
-- Leap-second records are skipped: lumberjit's clocks are POSIX clocks.
-- Pure Lua 5.1 (no bit library): integers are assembled with arithmetic.
-- To read more of the file (abbreviations, isdst flags), extend read_block.

local byte, sub, find = string.byte, string.sub, string.find

local tzif = {}

local HEADER_SIZE = 44

local function uint32(s, pos)
  local a, b, c, d = byte(s, pos, pos + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function int32(s, pos)
  local v = uint32(s, pos)
  if v >= 2147483648 then v = v - 4294967296 end
  return v
end

-- Exact for |v| < 2^53, which covers every real transition; the "big bang"
-- sentinel (-2^59) rounds harmlessly.
local function int64(s, pos)
  return int32(s, pos) * 4294967296 + uint32(s, pos + 4)
end

local function read_header(s, pos)
  if #s < pos + HEADER_SIZE - 1 or sub(s, pos, pos + 3) ~= "TZif" then
    return nil, "not a TZif file"
  end
  local version = byte(s, pos + 4)
  return {
    version = version == 0 and 1 or version - 48,    -- '\0', '2', '3', '4'
    isutcnt = uint32(s, pos + 20), isstdcnt = uint32(s, pos + 24),
    leapcnt = uint32(s, pos + 28), timecnt = uint32(s, pos + 32),
    typecnt = uint32(s, pos + 36), charcnt = uint32(s, pos + 40),
  }
end

local function block_size(h, time_size)
  return h.timecnt * time_size + h.timecnt + h.typecnt * 6 + h.charcnt
         + h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt
end

-- Reads one data block starting at pos; time_size is 4 (v1) or 8 (v2+).
local function read_block(s, h, pos, time_size)
  if #s < pos + block_size(h, time_size) - 1 then
    return nil, "truncated TZif data"
  end
  if h.typecnt == 0 then return nil, "TZif file without local time types" end
  local read_time = time_size == 8 and int64 or int32
  local times_at = pos
  local indexes_at = times_at + h.timecnt * time_size
  local types_at = indexes_at + h.timecnt

  local type_offsets = {}
  for i = 0, h.typecnt - 1 do
    type_offsets[i] = int32(s, types_at + i * 6)
  end

  local transitions, offsets = {}, {}
  for i = 1, h.timecnt do
    local type_index = byte(s, indexes_at + i - 1)
    local offset = type_offsets[type_index]
    if offset == nil then return nil, "TZif transition names a missing type" end
    transitions[i] = read_time(s, times_at + (i - 1) * time_size)
    offsets[i] = offset
  end
  -- RFC 8536: local time type 0 applies before the first transition.
  return { transitions = transitions, offsets = offsets,
           initial_offset = type_offsets[0] }
end

function tzif.parse(s)
  local h, err = read_header(s, 1)
  if not h then return nil, err end
  if h.version < 2 then return read_block(s, h, HEADER_SIZE + 1, 4) end

  local second_at = HEADER_SIZE + 1 + block_size(h, 4)
  local h2
  h2, err = read_header(s, second_at)
  if not h2 then return nil, err end
  local data_at = second_at + HEADER_SIZE
  local zone
  zone, err = read_block(s, h2, data_at, 8)
  if not zone then return nil, err end
  local footer_at = data_at + block_size(h2, 8)
  local _, _, footer = find(s, "^\n([^\n]*)\n", footer_at)
  if footer and footer ~= "" then zone.footer = footer end
  return zone
end

return tzif
