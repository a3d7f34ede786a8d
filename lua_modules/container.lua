-- container: the log lines container runtimes write for each container.
--
--   container.docker(line) -> log, stream, time_ns, partial
--     Docker's json-file driver:
--     {"log":"text\n","stream":"stdout","time":"2024-01-02T03:04:05.123456789Z"}
--     Keys in any order; others ("attrs") are ignored. log is the text
--     without its final "\n"; partial is true when there was none (Docker
--     splits lines longer than 16 KiB, and a container's last output may end
--     without one).
--   container.cri(line) -> message, stream, time_ns, partial, tag
--     The CRI format of containerd and CRI-O:
--     2024-01-02T03:04:05.123456789+00:00 stdout F message text
--     tag is the text of the tag, a ':'-separated list whose first element
--     is P (partial: the runtime split the line) or F (full); message is the
--     rest of the line, its bytes as they are, possibly empty.
--   container.time_ns(text) -> ns, or nil and what is wrong with the text
--     RFC 3339 ("2024-01-02T03:04:05.123456789+08:00", "...05Z"), any offset,
--     any number of fraction digits (cut at the nanosecond).
--   container.decoder(parse, default_type) -> the process_message of a
--     decoder plugin of docker or cri lines (sandbox/decoders/docker.lua).
-- stream is "stdout" or "stderr"; time_ns is nanoseconds since the epoch,
-- UTC, an integer-valued Lua number (the nearest double: a 256 ns grain
-- from 2006 to 2043). A malformed line returns nil and a reason naming the
-- field at fault and where it is.

local lpeg = require "lpeg"
local cjson = require "cjson"
local date = require "date"
local memo = require "memo"

local R, S, C = lpeg.R, lpeg.S, lpeg.C
local match = lpeg.match
local byte, find, sub, format = string.byte, string.find, string.sub, string.format
local type, pcall, tonumber = type, pcall, tonumber
local decode = cjson.decode

local container = {}

-- Time. The date and clock are the same for a second's lines, so their UTC
-- seconds are memoized by their text ("2024-01-02T03:04:05"); so are
-- offsets other than "Z". The fraction, new on every line, is read byte by
-- byte, in a third of the time tonumber takes on its text.
local digit = R"09"
local d2 = C(digit * digit) / tonumber
local d4 = C(digit * digit * digit * digit) / tonumber
local civil_text = d4 * "-" * d2 * "-" * d2 * S"Tt" * d2 * ":" * d2 * ":" * d2 * -1
local offset_text = C(S"+-") * d2 * ":" * d2 * -1

local utc_seconds_of = memo.new(function(text)
  local year, month, day, hour, min, sec = match(civil_text, text)
  if not year or month < 1 or month > 12 or day < 1 or day > date.days_in_month(year, month)
     or hour > 23 or min > 59 or sec > 60 then                  -- 60: a leap second
    return false
  end
  return date.seconds_from_civil(year, month, day, hour, min, sec)
end)

local offset_seconds_of = memo.new(function(text)
  local sign, hours, minutes = match(offset_text, text)
  if not sign or hours > 23 or minutes > 59 then return false end
  local seconds = hours * 3600 + minutes * 60
  return sign == "-" and -seconds or seconds
end, 256)

-- The time starting at byte `at` of text: ns and the byte after the time,
-- or nil and what is wrong with it.
local function read_time(text, at)
  local seconds = utc_seconds_of[sub(text, at, at + 18)]
  if not seconds then return nil, "bad date or clock" end
  local ns = 0
  at = at + 19
  local b = byte(text, at)
  if b == 46 then                                               -- "."
    local first = at + 1
    local unit = 1e8                                            -- ns per unit of this digit
    at = first
    b = byte(text, at)
    while b and b >= 48 and b <= 57 do
      if unit >= 1 then ns = ns + (b - 48) * unit end           -- digits past the 9th are cut
      unit = unit / 10
      at = at + 1
      b = byte(text, at)
    end
    if at == first then return nil, "bad fraction" end
  end
  if b == 90 or b == 122 then return seconds * 1e9 + ns, at + 1 end   -- "Z"
  local offset = offset_seconds_of[sub(text, at, at + 5)]
  if not offset then return nil, "bad offset" end
  -- (seconds - offset) * 1e9 is exact; adding ns rounds once.
  return (seconds - offset) * 1e9 + ns, at + 6
end

function container.time_ns(text)
  local ns, after = read_time(text, 1)
  if not ns then return nil, after end
  if after <= #text then return nil, "text after the offset" end
  return ns
end

-- A bad value as reasons show it: quoted, at most 40 bytes.
local function shown(text)
  if #text > 40 then text = sub(text, 1, 40) .. "..." end
  return '"' .. text .. '"'
end

local is_stream = { stdout = true, stderr = true }

-- Docker, with cjson, which reads the whole line in C. Measured in
-- lumberjit on 100,000 varied lines (app text, JSON app logs, access logs,
-- stack traces, UTF-8; 216 bytes on average, a fifth with attrs), the
-- docker decoder took 0.41 CPU-seconds; with an LPeg grammar instead (any
-- key order, json_string.unescaped for the log), 0.76.
local function not_a_string(key, value)
  if value == nil then return format('"%s" is missing', key) end
  return format('"%s" is not a string but %s', key,
                value == cjson.null and "null" or "a " .. type(value))
end

function container.docker(line)
  local ok, entry = pcall(decode, line)
  if not ok then return nil, "not JSON: " .. entry end
  if type(entry) ~= "table" then return nil, "not a JSON object" end
  local log, stream, time = entry.log, entry.stream, entry.time
  if type(log) ~= "string" then return nil, not_a_string("log", log) end
  if not is_stream[stream] then
    if type(stream) ~= "string" then return nil, not_a_string("stream", stream) end
    return nil, format('"stream" is %s, not "stdout" or "stderr"', shown(stream))
  end
  if type(time) ~= "string" then return nil, not_a_string("time", time) end
  local ns, problem = container.time_ns(time)
  if not ns then
    return nil, format('"time" is not an RFC 3339 time (%s): %s', problem, shown(time))
  end
  local last = #log
  if byte(log, last) == 10 then return sub(log, 1, last - 1), stream, ns, false end
  return log, stream, ns, true
end

-- CRI: "TIME STREAM TAG MESSAGE", single spaces between them; the message
-- may be empty, with or without the space before it. Read byte by byte,
-- which LuaJIT compiles: on the same 100,000 lines in CRI form the cri
-- decoder took 0.17 CPU-seconds, and 0.24 with one LPeg match for the fields.

-- What a reason says was found at byte `at`: the text up to the next space.
local function found_at(line, at)
  if at > #line then return "the end of the line" end
  return shown(sub(line, at, (find(line, " ", at + 1, true) or #line + 1) - 1))
end

local function expected(what, line, at)
  return nil, format("expected %s at byte %d, found %s", what, at, found_at(line, at))
end

function container.cri(line)
  local ns, at = read_time(line, 1)
  if not ns then return expected(format("an RFC 3339 time (%s)", at), line, 1) end
  local b = byte(line, at)
  if b ~= 32 then
    if b then return expected("an RFC 3339 time (text after the offset)", line, 1) end
    return expected("a space", line, at)
  end
  local stream = sub(line, at + 1, at + 6)
  b = byte(line, at + 7)
  if not is_stream[stream] or (b and b ~= 32) then
    return expected('"stdout" or "stderr"', line, at + 1)
  end
  if not b then return expected("a space", line, at + 7) end
  local tag_at = at + 8
  local first = byte(line, tag_at)
  at = tag_at + 1
  b = byte(line, at)
  if b == 58 then                                               -- ":", more tag elements
    repeat
      at = at + 1
      b = byte(line, at)
    until b == 32 or not b
  end
  if (first ~= 70 and first ~= 80) or (b and b ~= 32) then      -- "F", "P"
    return expected('a tag ("F" or "P", then ":..." if any)', line, tag_at)
  end
  local message = b and sub(line, at + 1) or ""
  return message, stream, ns, first == 80, sub(line, tag_at, at - 1)
end

-- The whole of a decoder plugin: `parse` (container.docker or container.cri)
-- reads each record, and one message is injected for it. Settings, read
-- with the plugin's read_config: message_type (default: default_type) and
-- hostname. The message table is reused for every record (inject_message
-- copies it): Timestamp, Payload, Fields.stream and Fields.partial (true,
-- or absent) are set from the line.
function container.decoder(parse, default_type)
  local fields = {}
  local message = { Type = read_config("message_type") or default_type,
                    Hostname = read_config("hostname"), Fields = fields }
  local inject = inject_message
  return function(record)
    local text, stream, ns, partial = parse(record)
    if not text then return -1, stream end
    message.Timestamp, message.Payload = ns, text
    fields.stream, fields.partial = stream, partial or nil
    inject(message)
    return 0
  end
end

return container
