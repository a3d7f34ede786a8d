-- json_lines: one JSON object per line -> one message (decoders/json_lines.lua).
--
--   json_lines.decoder() -> process_message(record), with the plugin's
--   settings read through read_config (the decoder's header lists them).
--
-- The object cjson decodes is the message's Fields table itself, changed in
-- place: no key or value is copied. Its values become fields as they are
-- (strings, numbers as doubles, booleans); null makes no field; an array
-- whose items are all strings, all numbers or all booleans is an array
-- field, any other array is its JSON text; a nested object is flattened
-- ("a": {"b": 1} -> "a.b" = 1, with the separator `flatten`) or, with
-- flatten = false, kept as its JSON text. An empty array or object makes no
-- field (cjson decodes [] and {} alike). JSON text made here has its keys in
-- name order, and numbers that read back the same.

local cjson = require "cjson.safe"
local fields = require "fields"
local json_string = require "json_string"

local decode, null = cjson.decode, cjson.null
local type, next, pairs, tostring = type, next, pairs, tostring
local byte, find, format = string.byte, string.find, string.format
local concat, sort = table.concat, table.sort
local quote, number_text = json_string.quote, json_string.number

local json_lines = {}

local function is_array(t) return type(next(t)) == "number" end

-- JSON text of a decoded value, keys sorted so the same object always
-- reads the same.
local function json_text(value)
  local kind = type(value)
  if kind == "string" then return quote(value) end
  if kind == "number" then return number_text(value) end
  if kind == "boolean" then return tostring(value) end
  if value == null then return "null" end
  local parts = {}
  if is_array(value) then
    for i = 1, #value do parts[i] = json_text(value[i]) end
    return "[" .. concat(parts, ",") .. "]"
  end
  local keys = {}
  for key in pairs(value) do keys[#keys + 1] = key end
  sort(keys)
  for i = 1, #keys do parts[i] = quote(keys[i]) .. ":" .. json_text(value[keys[i]]) end
  return "{" .. concat(parts, ",") .. "}"
end

local SCALAR = { string = true, number = true, boolean = true }

-- An array as a field: itself when its items share a scalar type.
local function array_field(array)
  local kind = type(array[1])
  if SCALAR[kind] then
    for i = 2, #array do
      if type(array[i]) ~= kind then return json_text(array) end
    end
    return array
  end
  return json_text(array)
end

-- The field a table value makes (nil for none), or false when it is an
-- object to flatten.
local function table_field(value, flatten)
  local first = next(value)
  if first == nil then return nil end
  if type(first) == "number" then return array_field(value) end
  if flatten then return false end
  return json_text(value)
end

-- Sets in t the fields of object, their names prefixed.
local function flatten_into(t, prefix, object, separator)
  for key, value in pairs(object) do
    local name = prefix .. key
    if type(value) == "table" then
      local field = table_field(value, true)
      if field == false then
        flatten_into(t, name .. separator, value, separator)
      else
        t[name] = field
      end
    elseif value ~= null then
      t[name] = value
    end
  end
end

local function settings()
  local flatten = read_config("flatten")
  if flatten == nil or flatten == true then flatten = "." end
  if flatten ~= false and (type(flatten) ~= "string" or flatten == "") then
    error(format("flatten: expected a separator or false, not %s", tostring(flatten)), 0)
  end
  local max_bytes = read_config("max_bytes") or 1048576
  if type(max_bytes) ~= "number" or max_bytes < 1 then
    error("max_bytes: expected a positive number of bytes", 0)
  end
  return flatten, max_bytes
end

-- What a JSON text that is not an object is, for the reason.
local function what_json(value)
  if type(value) == "table" then return "an array" end
  if value == null then return "null" end
  return "a " .. type(value)
end

function json_lines.decoder()
  local flatten, max_bytes = settings()
  local take_headers = fields.headers("_key", {
    timestamp = { "time", "@timestamp", "timestamp", "ts" }, message = { "message", "msg" },
    host = { "host", "hostname" }, level = { "level", "severity", "lvl" }, pid = { "pid" },
    logger = { "logger", "logger_name" },
  })
  local message = { Type = read_config("message_type") or "json",
                    Hostname = read_config("hostname") }
  local default_hostname = message.Hostname
  local inject = inject_message
  -- Nested objects met while walking a record's keys, flattened after the
  -- walk (next() allows no new keys during it): key, object, key, ...
  local nested, nested_count = {}, 0

  -- Makes the decoded object's values fields, in place.
  local function settle(object)
    for key, value in pairs(object) do
      if type(value) == "table" then
        local field = table_field(value, flatten)
        if field == false then
          object[key] = nil
          nested[nested_count + 1], nested[nested_count + 2] = key, value
          nested_count = nested_count + 2
        else
          object[key] = field
        end
      elseif value == null then
        object[key] = nil
      end
    end
    for i = 1, nested_count, 2 do
      flatten_into(object, nested[i] .. flatten, nested[i + 1], flatten)
      nested[i], nested[i + 1] = nil, nil
    end
    nested_count = 0
  end

  return function(record)
    local length = #record
    if length > max_bytes then
      return -1, format("the record is %d bytes, over max_bytes (%d)", length, max_bytes)
    end
    local object, problem = decode(record)
    if object == nil then return -1, "not JSON: " .. problem end
    -- [] and {} decode alike: an object is what starts with "{".
    local first = byte(record, 1)
    if type(object) ~= "table" or (first ~= 123 and not find(record, "^%s*{")) then
      return -1, "not a JSON object but " .. what_json(object)
    end
    -- Only a record with a nested value or a null needs its keys walked:
    -- plain searches tell (a Lua pattern with a class costs ~15 ns a byte),
    -- and lines of flat loggers skip the walk.
    if find(record, "{", 2, true) or find(record, "[", 2, true)
       or find(record, "null", 2, true) then
      settle(object)
    end
    problem = take_headers(message, object)
    if problem then return -1, problem end
    message.Payload = message.Payload or record
    message.Hostname = message.Hostname or default_hostname
    message.Fields = object
    inject(message)
    return 0
  end
end

return json_lines
