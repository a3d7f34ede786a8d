-- plugin_harness: runs a sandbox/*.lua plugin in plain Lua 5.1 or LuaJIT,
-- in a fresh environment offering lumberjit's plugin API (sandbox/README.md):
-- read_config, read_zoneinfo, require (lpeg, cjson, then lua_modules/ loaded
-- into the plugin's environment, as the sandbox does), record_span,
-- record_byte, record_text, record_stops, record_find and record_decimal
-- (process_record decoders are run with them),
-- inject_message, inject_payload, inject_message_value, inject_message_json
-- (spec/modules/json_reference.lua's text), read_message and read_next_field.
--
--   local plugin = harness.load("sandbox/decoders/rsyslog.lua", { tz = "UTC" })
--   local rc, err, messages = plugin:decode("<44>May 19 ...")
--   local encoder = harness.load("sandbox/encoders/json.lua")
--   local text = encoder:encode(messages[1])
--
-- inject_message checks the message against Heka's schema and stores a deep
-- copy, as the C side serializes it at once, with each record span replaced
-- by its text (an error when its positions are not in the record). Messages given to encode() use
-- the same schema; Fields as a map are iterated in name order.
-- Options: zoneinfo = { [name] = bytes } to serve zones from memory,
-- clock = function() -> epoch seconds, to stand in for os.time,
-- inject = function(msg) to replace storing (benchmarks).

local json_of = require "json_reference"

local harness = {}

local SAFE_GLOBALS = { "assert", "error", "ipairs", "next", "pairs", "pcall", "print",
                       "rawequal", "rawget", "rawset", "select", "setmetatable",
                       "getmetatable", "tonumber", "tostring", "type", "unpack", "xpcall" }
local HEADERS = { Timestamp = "number", Type = "string", Logger = "string",
                  Severity = "number", Payload = "string", EnvVersion = "string",
                  Pid = "number", Hostname = "string", Uuid = "string" }
local VALUE_TYPE_OF = { string = 0, number = 3, boolean = 4 }

-- The tables record_span made; their metatable hides itself, as the
-- sandbox's does.
local spans = setmetatable({}, { __mode = "k" })
local SPAN_META = { __metatable = false }

local function record_span()
  local span = setmetatable({}, SPAN_META)
  spans[span] = true
  return span
end

-- A span's text in `record`: bytes span[1] to before span[2].
local function span_text(span, record)
  local from, to = span[1], span[2]
  assert(type(from) == "number" and type(to) == "number" and from % 1 == 0 and to % 1 == 0
         and 1 <= from and from <= to and to <= #record + 1,
         "record span whose positions are not in the record")
  return record:sub(from, to - 1)
end

-- The record readers of src/sandbox_record.c over record_of(), the current
-- record (nil outside a call), with the same results and errors:
-- { byte, text, stops, find, decimal, span }, as rsyslog.compile's reader
-- option wants them.
function harness.record_reader(record_of)
  local sets = {}
  local function current() return record_of() or "" end
  local reader = { span = record_span }
  function reader.byte(i)
    local record = current()
    if i >= 1 and i <= #record then return record:byte(i) end
    return nil
  end
  function reader.text(from, to)
    local record = current()
    if from == nil and to == nil then return record end
    if type(from) ~= "number" or type(to) ~= "number" or from % 1 ~= 0 or to % 1 ~= 0
       or from < 1 or from > to or to > #record + 1 then
      error("record_text: positions not in the record (1 <= from <= to <= "
            .. (#record + 1) .. ")", 2)
    end
    return record:sub(from, to - 1)
  end
  function reader.stops(bytes)
    if type(bytes) ~= "string" then error("record_stops: give the bytes as a string", 2) end
    local set = {}
    for k = 1, #bytes do set[bytes:byte(k)] = true end
    sets[#sets + 1] = set
    return #sets
  end
  function reader.decimal(from, to)
    local record = current()
    if not (from >= 1 and from < to and to <= #record + 1 and to - from <= 15) then return nil end
    local digits = record:sub(math.floor(from), math.floor(to) - 1)
    return digits:find("^%d+$") and tonumber(digits) or nil
  end
  function reader.find(stops, from)
    local set, record = sets[stops], current()
    if set == nil then error("record_find: not a set made by record_stops", 2) end
    if not (from >= 1) then from = 1 end
    from = math.floor(from)
    while from <= #record and not set[record:byte(from)] do from = from + 1 end
    return from
  end
  return reader
end

local function deep_copy(value, record)
  if type(value) ~= "table" then return value end
  if spans[value] then return span_text(value, record) end
  local copy = {}
  for k, v in pairs(value) do copy[k] = deep_copy(v, record) end
  return copy
end

local function sandbox_require(env)
  local loaded = {}
  return function(name)
    if loaded[name] ~= nil then return loaded[name] end
    local module
    if name == "lpeg" or name == "cjson" or name == "bit" then
      module = require(name)
    else
      local path = "lua_modules/" .. name:gsub("%.", "/") .. ".lua"
      local chunk = assert(loadfile(path))
      setfenv(chunk, env)
      module = chunk(name)
      if module == nil then module = true end
    end
    loaded[name] = module
    return module
  end
end

local function read_zone_file(name)
  local file, err = io.open("/usr/share/zoneinfo/" .. name, "rb")
  if not file then return nil, err end
  local bytes = file:read("*a")
  file:close()
  return bytes
end

-- One field as read_next_field reports it.
local function field_entry(name, field)
  local value, value_type, representation = field, nil, nil
  if type(field) == "table" and field.value ~= nil then
    value, value_type, representation = field.value, field.value_type, field.representation
  end
  local first = type(value) == "table" and not spans[value] and value[1] or value
  value_type = value_type or (spans[first] and 0) or VALUE_TYPE_OF[type(first)]
  assert(value_type, "field '" .. tostring(name) .. "' has an unsupported value: " .. tostring(first))
  local count = type(value) == "table" and not spans[value] and #value or 1
  return { name = name, value_type = value_type, value = value,
           representation = representation, count = count }
end

local function check_message(t)
  assert(type(t) == "table", "inject_message expects a table")
  for key, value in pairs(t) do
    if key ~= "Fields" then
      assert(HEADERS[key], "unknown header " .. tostring(key))
      local given = spans[value] and "string" or type(value)
      assert(given == HEADERS[key], "header " .. key .. " must be a " .. HEADERS[key]
                                    .. ", got " .. type(value))
    end
  end
  if t.Fields then
    for name, field in pairs(t.Fields) do
      assert(type(name) == "string", "field names must be strings")
      field_entry(name, field)
    end
  end
end

-- The fields of a message as an ordered list (a map is taken in name order;
-- a list of {name =, value =, value_type =} entries is kept as given).
local function field_list(fields)
  local list = {}
  if not fields then return list end
  if fields[1] then
    for _, f in ipairs(fields) do list[#list + 1] = field_entry(f.name, f) end
    return list
  end
  local names = {}
  for name in pairs(fields) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do list[#list + 1] = field_entry(name, fields[name]) end
  return list
end

local Plugin = {}
Plugin.__index = Plugin

function harness.load(path, config, options)
  config, options = config or {}, options or {}
  local plugin = setmetatable({ injected = {}, payloads = {} }, Plugin)
  local env = {}
  for _, name in ipairs(SAFE_GLOBALS) do env[name] = _G[name] end
  -- pairs through a Lua step, as src/sandbox_env.c does: under a LuaJIT
  -- built with LUAJIT_ENABLE_CHECKHOOK a compiled loop over next can spin
  -- forever (LuaJIT issue #754).
  local next = next
  local function step(t, k) return next(t, k) end
  env.pairs = function(t) return step, t, nil end
  env.string, env.table, env.math = string, table, math
  env.os = { time = options.clock or os.time, clock = os.clock, date = os.date }
  env._G = env
  -- load and loadstring take source text only, as in the sandbox.
  env.loadstring = function(source, chunk_name)
    if type(source) ~= "string" or source:byte(1) == 27 then
      return nil, "only source text can be loaded"
    end
    local chunk, err = loadstring(source, chunk_name)
    if chunk then setfenv(chunk, env) end
    return chunk, err
  end
  env.load = env.loadstring
  env.require = sandbox_require(env)
  env.read_config = function(key) return config[key] end
  env.read_zoneinfo = function(name)
    if options.zoneinfo then return options.zoneinfo[name] end
    return read_zone_file(name)
  end
  local reader = harness.record_reader(function() return plugin.in_call and plugin.record end)
  env.record_span = record_span
  env.record_byte, env.record_text = reader.byte, reader.text
  env.record_stops, env.record_find = reader.stops, reader.find
  env.record_decimal = reader.decimal
  env.inject_message = options.inject or function(t)
    check_message(t)
    plugin.injected[#plugin.injected + 1] = deep_copy(t, plugin.record)
  end
  env.inject_message_json = function()
    plugin.written[#plugin.written + 1] = json_of(env.read_message, env.read_next_field)
  end
  env.inject_message_value = function(name, field_index, array_index)
    local v = plugin:read_message(name, field_index, array_index)
    plugin.wrote = true
    if v == nil then return false end
    plugin.written[#plugin.written + 1] = tostring(v)
    return true
  end
  env.inject_payload = function(payload_type, name, ...)
    plugin.payloads[#plugin.payloads + 1] = { type = payload_type, name = name,
                                              data = table.concat({ ... }) }
  end
  env.read_message = function(name, field_index, array_index)
    return plugin:read_message(name, field_index, array_index)
  end
  env.read_next_field = function()
    plugin.cursor = plugin.cursor + 1
    local f = plugin.fields[plugin.cursor]
    if not f then return nil end
    return f.value_type, f.name, f.value, f.representation, f.count
  end
  plugin.env = env
  local chunk = assert(loadfile(path))
  setfenv(chunk, env)
  chunk()
  return plugin
end

-- Runs a decoder on one record: rc, err, and the messages it injected.
-- A decoder defining process_record gets the length and reads the record
-- with record_byte and the others, as in the sandbox.
function Plugin:decode(record)
  local first = #self.injected + 1
  self.record = record
  self.in_call = true
  local rc, err
  if self.env.process_record then
    rc, err = self.env.process_record(#record)
  else
    rc, err = self.env.process_message(record)
  end
  self.in_call = false
  local messages = {}
  for i = first, #self.injected do messages[#messages + 1] = self.injected[i] end
  return rc, err, messages
end

-- Makes `message` the current one and runs an encoder on it.
function Plugin:set_message(message)
  self.message = message
  self.fields = field_list(message.Fields)
  self.cursor = 0
end

-- What process_message returned; or, when it wrote with
-- inject_message_json or inject_message_value and returned 0, what it
-- wrote.
function Plugin:encode(message)
  self:set_message(message)
  self.written, self.wrote = {}, false
  local result, reason = self.env.process_message()
  if (result == 0 or result == nil) and (#self.written > 0 or self.wrote) then
    return table.concat(self.written)
  end
  return result, reason
end

function Plugin:read_message(name, field_index, array_index)
  local message = self.message
  -- As in lumberjit, an empty string header is one never set.
  if HEADERS[name] then
    if message[name] == "" then return nil end
    return message[name]
  end
  if name == "raw" then return message.raw end
  local field_name = name:match("^Fields%[(.*)%]$")
  if not field_name then return nil end
  local seen = 0
  for _, f in ipairs(self.fields) do
    if f.name == field_name then
      if seen == (field_index or 0) then
        if type(f.value) == "table" then return f.value[(array_index or 0) + 1] end
        return f.value
      end
      seen = seen + 1
    end
  end
  return nil
end

return harness
