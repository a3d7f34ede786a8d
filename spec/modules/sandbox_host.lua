-- sandbox_host: runs a sandbox/*.lua plugin in lumberjit's real sandbox, in
-- a spec/c/sandbox_host process (its comment gives the protocol), so the
-- specs test the runtime lumberjit runs. The binary is $SANDBOX_HOST, which
-- ctest sets, else build/sandbox_host.
--
--   local decoder = host.decoder("sandbox/decoders/rsyslog.lua", { tz = "UTC" })
--   local rc, err, messages = decoder:decode("<44>May 19 ...")
--   local encoder = host.encoder("sandbox/encoders/json.lua")
--   local text = encoder:encode(messages[1])
--
-- A plugin that does not load raises the sandbox's error. decode gives 0,
-- or -1 and the reason the decoder returned, or nil and the reason the call
-- failed; and the messages as tables in Heka's schema, as message_text
-- printed them (every field, none or more, in Fields; a field with a
-- representation as { value =, representation = }). A message always has a
-- Timestamp: inject_message stamps one the decoder left out with the time
-- it was injected (decoder:unstamped says whether it was).
--
-- An encoder is given its message through a decoder, message_feeder.lua,
-- that injects the table (written as Lua source) with inject_message, so it
-- reaches the encoder as a real message, as a decoder's would; message.raw,
-- apart, is the original record encoders read as "raw" (none without it).
-- encode gives the bytes written, or -2 (skipped), or -1 and the reason the
-- encoder returned, or nil and the reason the call failed.
--
-- A filter is given its messages through message_feeder.lua too:
--
--   local f = host.filter("sandbox/filters/sample.lua", { keep_one_in = 2 })
--   local messages = f:filter({ Payload = "a", Fields = { user = "u1" } })
--   local summary = f:timer(1e9, true)
--
-- filter gives the messages the filter injected for the message (none: it
-- dropped it), or nil, the reason and "rejected" (it returned -1) or
-- "failed" (the call failed); timer runs timer_event(ns, shutdown) and gives
-- what it injected, or nil and the reason it failed. Messages lose their
-- value types as decode's do (an integer field reads as a number).
--
-- Each plugin is a process; at most MAX_OPEN run at once, the least
-- recently used is ended to make room, and using it after that is an error.

local host = {}

local MAX_OPEN = 16
local FEEDER = "spec/modules/message_feeder.lua"

local function binary()
  local path = os.getenv("SANDBOX_HOST") or "build/sandbox_host"
  local file = io.open(path, "rb")
  if not file then
    error("the sandbox host " .. path .. " is missing: build it (cmake --build build --target "
          .. "sandbox_host) or set SANDBOX_HOST to its path", 0)
  end
  file:close()
  return path
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- A value as Lua source that reads back as the same value.
local function source_of(value)
  local kind = type(value)
  if kind == "string" then
    return string.format("%q", value)
  elseif kind == "number" then
    if value ~= value then return "0/0" end
    if value == math.huge then return "1/0" end
    if value == -math.huge then return "-1/0" end
    return string.format("%.17g", value)
  elseif kind == "boolean" then
    return tostring(value)
  elseif kind == "table" then
    local parts = {}
    for k, v in pairs(value) do
      parts[#parts + 1] = "[" .. source_of(k) .. "]=" .. source_of(v)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  error("sandbox_host: cannot pass a " .. kind .. " to a plugin", 3)
end

-- message_text's quoted strings: \" \\ \n \r \t and \xHH.
local UNESCAPE = { ['"'] = '"', ["\\"] = "\\", n = "\n", r = "\r", t = "\t" }

-- The value message_text wrote at `pos` of `text`, and the position after it.
local function parse_value(text, pos)
  local first = text:sub(pos, pos)
  if first == "b" and text:sub(pos + 1, pos + 1) == '"' then pos, first = pos + 1, '"' end
  if first == '"' then
    local out, i = {}, pos + 1
    while true do
      local c = text:sub(i, i)
      if c == "" then error("sandbox_host: unterminated string in " .. text) end
      if c == '"' then return table.concat(out), i + 1 end
      if c == "\\" then
        local e = text:sub(i + 1, i + 1)
        if e == "x" then
          out[#out + 1] = string.char(tonumber(text:sub(i + 2, i + 3), 16))
          i = i + 4
        else
          out[#out + 1] = assert(UNESCAPE[e], "sandbox_host: unknown escape in " .. text)
          i = i + 2
        end
      else
        out[#out + 1] = c
        i = i + 1
      end
    end
  end
  if first == "[" then
    local list, i = {}, pos + 1
    if text:sub(i, i) == "]" then return list, i + 1 end
    while true do
      list[#list + 1], i = parse_value(text, i)
      local sep = text:sub(i, i)
      if sep == "]" then return list, i + 1 end
      i = i + 2 -- ", "
    end
  end
  local token = text:match("^[^,%] ]+", pos)
  local words = { ["true"] = true, ["false"] = false, nan = 0 / 0, inf = math.huge,
                  ["-inf"] = -math.huge }
  local value = words[token]
  if value == nil then value = tonumber(token) end
  if value == nil then error("sandbox_host: cannot read a value in " .. text) end
  return value, pos + #token
end

local function uuid_bytes(text)
  return (text:gsub("-", ""):gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

local Process = {}
Process.__index = Process
local open = {} -- the running processes, least recently used first

local function touch(process)
  for i, p in ipairs(open) do
    if p == process then table.remove(open, i) break end
  end
  open[#open + 1] = process
end

function Process:close()
  if self.closed then return end
  self.closed = true
  self.input:close()
  self.output:close()
  for i, p in ipairs(open) do
    if p == self then table.remove(open, i) break end
  end
end

function Process:line()
  local line = self.pending or self.output:read("*l")
  self.pending = nil
  if line == nil then
    error("sandbox_host: the host process ended (its errors are above)", 0)
  end
  return line
end

function Process:bytes(n)
  local data = n == 0 and "" or self.output:read(n)
  if data == nil or #data ~= n then error("sandbox_host: the host process ended", 0) end
  return data
end

-- Starts a host for the plugins in `args`: { file, settings or nil, ... },
-- "--filter" before a filter's file.
local function start(args)
  while #open >= MAX_OPEN do open[1]:close() end
  local command, i = { shell_quote(binary()) }, 1
  while i <= #args do
    if args[i] == "--filter" then
      command[#command + 1] = args[i]
      i = i + 1
    end
    command[#command + 1] = shell_quote(args[i])
    command[#command + 1] = shell_quote("return " .. source_of(args[i + 1] or {}))
    i = i + 2
  end
  local fifo = os.tmpname()
  os.remove(fifo)
  assert(os.execute("mkfifo " .. shell_quote(fifo)) == 0, "sandbox_host: mkfifo failed")
  local process = setmetatable({}, Process)
  process.input = assert(io.popen(table.concat(command, " ") .. " > " .. shell_quote(fifo), "w"))
  process.output = assert(io.open(fifo, "rb"))
  os.remove(fifo)
  touch(process)
  local first = process.output:read("*l")
  if first == nil then
    process:close()
    error("sandbox_host: the host process ended before it loaded " .. args[1], 0)
  end
  local length = tonumber(first:match("^error (%d+)$"))
  if length then
    local err = process:bytes(length)
    process:close()
    error(err, 0)
  end
  assert(first == "ready", "sandbox_host: unexpected first line " .. first)
  return process
end

-- Sends one request and reads the status of its decoder call.
function Process:request(record, origin)
  if self.closed then
    error("sandbox_host: this plugin's process was ended to make room for newer ones", 2)
  end
  touch(self)
  self.input:write(#record, origin and " " .. #origin or "", "\n", record, origin or "")
  self.input:flush()
  self.started = os.time()
  return self:line()
end

-- The message whose "message" line was just read.
function Process:message()
  local message, fields = { Fields = {} }, nil
  while true do
    local line = self:line()
    if line:sub(1, 2) ~= "  " then
      self.pending = line
      return message
    end
    if line == "  Fields:" then
      fields = message.Fields
    elseif fields then
      local name, rest = line:match("^    (.-): (.*)$")
      local value, after = parse_value(rest, 1)
      local representation = rest:match('^ %(representation (.*)%)$', after)
      if representation then
        value = { value = value, representation = (parse_value(representation, 1)) }
      end
      fields[name] = value
    else
      local name, rest = line:match("^  (%a+): (.*)$")
      if name == "Timestamp" then
        message.Timestamp = tonumber(rest:match("%((%-?%d+)%)$"))
      elseif name == "Uuid" then
        message.Uuid = uuid_bytes(rest)
      else
        message[name] = (parse_value(rest, 1))
      end
    end
  end
end

-- The end of a reply: what the call's status line said, in the API's terms.
local function outcome(status, who)
  local reason = status:match("^rejected (.*)$")
  if reason then
    return -1, (reason:gsub("^rejected by " .. who .. ": ", ""))
  end
  return nil, assert(status:match("^failed (.*)$"), "sandbox_host: unexpected reply " .. status)
end

local Decoder = {}
Decoder.__index = Decoder

function host.decoder(filename, settings)
  return setmetatable({ process = start({ filename, settings }) }, Decoder)
end

function Decoder:decode(record)
  local process = self.process
  local status = process:request(record)
  local rc, err, messages = 0, nil, {}
  local count = tonumber(status:match("^ok (%d+)$"))
  if count then
    for _ = 1, count do
      assert(process:line() == "message", "sandbox_host: expected a message")
      messages[#messages + 1] = process:message()
    end
  else
    rc, err = outcome(status, "decoder")
  end
  assert(process:line() == "end", "sandbox_host: expected the end of a reply")
  -- os.time() may read a coarse clock, a few ms behind the one the sandbox
  -- stamps with: a second's slack either side.
  self.window = { (process.started - 1) * 1e9, (os.time() + 2) * 1e9 }
  return rc, err, messages
end

-- `message` of the last decode without its Timestamp, once that is seen
-- to be the time of injection (the decoder set none).
function Decoder:unstamped(message)
  local ns = message.Timestamp
  assert(type(ns) == "number" and ns >= self.window[1] and ns < self.window[2],
         "Timestamp " .. tostring(ns) .. " is not the time of the decoder call")
  message.Timestamp = nil
  return message
end

local Encoder = {}
Encoder.__index = Encoder

function host.encoder(filename, settings)
  return setmetatable({ process = start({ FEEDER, false, filename, settings }) }, Encoder)
end

function Encoder:encode(message)
  local process, fields = self.process, {}
  for k, v in pairs(message) do
    if k ~= "raw" then fields[k] = v end
  end
  local status = process:request("return " .. source_of(fields), message.raw or "")
  if status ~= "ok 1" then
    local _, reason = outcome(status, "decoder")
    error("sandbox_host: the message does not inject: " .. tostring(reason), 2)
  end
  assert(process:line() == "message", "sandbox_host: expected a message")
  process:message()
  local result = process:line()
  local length = tonumber(result:match("^encoded (%d+)$"))
  local rc, err
  if length then
    rc = process:bytes(length)
    process:line() -- the newline after the bytes
  elseif result == "skipped" then
    rc = -2
  else
    rc, err = outcome(result, "encoder")
  end
  assert(process:line() == "end", "sandbox_host: expected the end of a reply")
  return rc, err
end

local Filter = {}
Filter.__index = Filter

function host.filter(filename, settings)
  return setmetatable({ process = start({ FEEDER, false, "--filter", filename, settings }) }, Filter)
end

-- "ok K" and K messages, or a failure, then the end of the reply.
local function injected(process, status, who)
  local count = tonumber(status:match("^ok (%d+)$") or status:match("^filtered (%d+)$"))
  local messages, err, kind = {}, nil, nil
  if count then
    for _ = 1, count do
      assert(process:line() == "message", "sandbox_host: expected a message")
      messages[#messages + 1] = process:message()
    end
  else
    local rc
    rc, err = outcome(status, who)
    messages, kind = nil, rc == -1 and "rejected" or "failed"
  end
  assert(process:line() == "end", "sandbox_host: expected the end of a reply")
  return messages, err, kind
end

function Filter:filter(message)
  local process = self.process
  local status = process:request("return " .. source_of(message), "")
  if status ~= "ok 1" then
    local _, reason = outcome(status, "decoder")
    error("sandbox_host: the message does not inject: " .. tostring(reason), 2)
  end
  assert(process:line() == "message", "sandbox_host: expected a message")
  process:message()
  return injected(process, process:line(), "filter")
end

function Filter:timer(ns, shutdown)
  local process = self.process
  if process.closed then
    error("sandbox_host: this plugin's process was ended to make room for newer ones", 2)
  end
  touch(process)
  process.input:write(string.format("timer %.0f %d\n", ns, shutdown and 1 or 0))
  process.input:flush()
  return injected(process, process:line(), "filter")
end

-- What the specs of each plugin ask of one: the one message a record
-- makes, the reason it was rejected, the error a plugin's load raised (each
-- failing the spec otherwise).
local luassert = require "luassert"

function host.one(plugin, record)
  local rc, err, messages = plugin:decode(record)
  luassert.equal(0, rc, err)
  luassert.equal(1, #messages)
  return messages[1]
end

function host.rejection(plugin, record)
  local rc, err, messages = plugin:decode(record)
  luassert.equal(-1, rc)
  luassert.same({}, messages)
  return err
end

function host.load_error(load, ...)
  local ok, err = pcall(load, ...)
  luassert.is_false(ok)
  return err
end

return host
