-- json_reference: what the JSON encoder (sandbox/encoders/json.lua) writes,
-- in Lua: the reference that spec/e2e/json_writer_spec.lua checks
-- inject_message_json against, run as an encoder in the sandbox, so that
-- src/json_message.c (which writes the same bytes in C, for speed) has one
-- definition to meet.
--
--   local json_of = require "json_reference"
--   local text = json_of(read_message, read_next_field)
--
-- One JSON object per message, in the Logstash / Elasticsearch schema, on
-- one line (the output adds the newline):
--
--   {"@timestamp":"2026-05-19T10:30:17.000Z","@version":"1","message":"foo bar 32",
--    "host":"snack","type":"syslog","severity":4,"pri":44,"programname":"jls",...}
--
-- Headers: @timestamp (Timestamp, ISO 8601 UTC with milliseconds), @version
-- ("1", always), message (Payload), host (Hostname), type (Type), logger
-- (Logger), severity (Severity), pid (Pid); absent headers are left out (but
-- message is always there: "" for an empty Payload, an empty line), and
-- Uuid and EnvVersion are not written. Every field follows as a top-level
-- key, arrays as JSON arrays. A field named like one of those keys is written
-- as "fields.NAME" so it cannot clobber the header (a field "message"
-- becomes "fields.message"). Fields repeated under one name are written
-- once per value, as repeated keys.
-- Strings are escaped by json_string (always valid JSON, invalid UTF-8
-- bytes as U+FFFD); numbers that are integers print without ".0", NaN and
-- infinities as null. No settings.
--
-- The object is built as a list of pieces joined once by table.concat; keys
-- are constant strings that carry their punctuation (',"host":"'), so a
-- string value adds three pieces and a number two.

local date = require "date"
local json_string = require "json_string"
local memo = require "memo"

local escape, number_text = json_string.escape, json_string.number
local iso8601_utc_ms = date.iso8601_utc_ms
local concat, type = table.concat, type

local STRING, BYTES = 0, 1          -- value types (Heka numbering)

local reserved = { ["@timestamp"] = true, ["@version"] = true, message = true, host = true,
                   type = true, logger = true, severity = true, pid = true }

local function json_key(name)
  return ',"' .. escape(reserved[name] and "fields." .. name or name) .. '":'
end
-- Per field name, computed once: ',"name":' and, for string values, ',"name":"'.
local key_of_field = memo.new(json_key, 1024)
local string_key_of_field = memo.new(function(name) return json_key(name) .. '"' end, 1024)

local buffer = {}

local function add_string(n, key, s)
  buffer[n + 1] = key
  buffer[n + 2] = escape(s)
  buffer[n + 3] = '"'
  return n + 3
end

local function add_scalar(n, key, value)
  buffer[n + 1] = key
  buffer[n + 2] = type(value) == "boolean" and (value and "true" or "false")
                  or number_text(value)
  return n + 2
end

local function add_array(n, name, value_type, values)
  buffer[n + 1] = key_of_field[name]
  n = n + 1
  local quoted = value_type == STRING or value_type == BYTES
  for i = 1, #values do
    if quoted then
      n = add_string(n, i == 1 and '["' or ',"', values[i])
    else
      n = add_scalar(n, i == 1 and "[" or ",", values[i])
    end
  end
  buffer[n + 1] = #values == 0 and "[]" or "]"
  return n + 1
end

local function add_field(n, value_type, name, value)
  if type(value) == "table" then return add_array(n, name, value_type, value) end
  if value_type == STRING or value_type == BYTES then
    return add_string(n, string_key_of_field[name], value)
  end
  return add_scalar(n, key_of_field[name], value)
end

return function(read_message, read_next_field)
  local n
  local timestamp = read_message("Timestamp")
  if timestamp then
    buffer[1] = '{"@timestamp":"'
    buffer[2] = iso8601_utc_ms(timestamp)
    buffer[3] = '","@version":"1"'
    n = 3
  else
    buffer[1] = '{"@version":"1"'
    n = 1
  end
  local value = read_message("Payload")
  n = add_string(n, ',"message":"', value or "")
  value = read_message("Hostname")
  if value then n = add_string(n, ',"host":"', value) end
  value = read_message("Type")
  if value then n = add_string(n, ',"type":"', value) end
  value = read_message("Logger")
  if value then n = add_string(n, ',"logger":"', value) end
  value = read_message("Severity")
  if value then n = add_scalar(n, ',"severity":', value) end
  value = read_message("Pid")
  if value then n = add_scalar(n, ',"pid":', value) end

  while true do
    local value_type, name, field_value = read_next_field()
    if value_type == nil then break end
    n = add_field(n, value_type, name, field_value)
  end
  buffer[n + 1] = "}"
  return concat(buffer, "", 1, n + 1)
end
