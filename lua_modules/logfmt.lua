-- logfmt: lines of key=value pairs (Heroku's logfmt, as go-logfmt, logrus
-- and slog's TextHandler write them) -> one message (decoders/logfmt.lua).
--
--   time=2024-01-02T03:04:05Z level=info msg="GET \"/\" done" ms=12.5 cached
--
--   logfmt.parser(types) -> parse(line) -> the pairs as a table, or nil and
--     what is wrong and at which byte
--   logfmt.decoder() -> process_message(record), with the plugin's settings
--     read through read_config (the decoder's header lists them)
--
-- The grammar: pairs separated by bytes up to the space (spaces, tabs,
-- control characters). A key is one or more bytes other than those, "=" and
-- '"'. A bare key is the value true. A value is either quoted, "...", with
-- JSON's escapes (\" \\ \/ \b \f \n \r \t \uXXXX), or bare: bytes other
-- than separators and '"' ("=" is allowed: url=/a?b=c), possibly none
-- (key= is ""). A key given twice keeps its last value.
-- With types = "auto", a bare value that is a JSON number is a number and
-- true and false are booleans; a quoted value is always a string, as
-- quoting is how a writer says "text". With types = "string" every value
-- is its text.

local lpeg = require "lpeg"
local json_string = require "json_string"
local fields = require "fields"

local P, R, S, C, Cc, Cf, Cg, Ct, Cp = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc, lpeg.Cf,
                                       lpeg.Cg, lpeg.Ct, lpeg.Cp
local match = lpeg.match
local byte, find, sub, format = string.byte, string.find, string.sub, string.format
local rawset, tonumber = rawset, tonumber

local logfmt = {}

local separator = R"\0 "
local ends = #separator + -1
local key = C((1 - (separator + S'="'))^1)
-- Quoted without escapes, the common case, is one capture of the bytes.
local quoted = '"' * (C((1 - S'"\\')^0) * '"' + json_string.unescaped * '"')
local bare = C((1 - (separator + '"'))^0)
local digit = R"09"
local json_number = P"-"^-1 * (P"0" + R"19" * digit^0) * ("." * digit^1)^-1
                    * (S"eE" * S"+-"^-1 * digit^1)^-1
local typed = C(json_number) * ends / tonumber
              + P"true" * ends * Cc(true) + P"false" * ends * Cc(false)

local function grammar(value)
  local pair = Cg(key * ("=" * value + Cc(true)) * ends)
  return separator^0 * Cf(Ct(P(true)) * (pair * separator^0)^0, rawset) * Cp()
end

local grammars = { auto = grammar(quoted + typed + bare), string = grammar(quoted + bare) }

local ESCAPED = { ['"'] = true, ["\\"] = true, ["/"] = true, b = true, f = true, n = true,
                  r = true, t = true }

-- What stops a pair starting at byte `at` (the grammar stopped there).
local function what_is_wrong(line, at)
  local b = byte(line, at)
  if b == 61 then return format('expected a key before "=" at byte %d', at) end
  local after_key = match((1 - (separator + S'="'))^1 * Cp(), line, at)
  if not after_key then return format("unexpected quote at byte %d", at) end
  b = byte(line, after_key)
  if b ~= 61 then return format("unexpected quote in a key at byte %d", after_key) end
  local value_at = after_key + 1
  if byte(line, value_at) ~= 34 then
    return format("unexpected quote in a value at byte %d", find(line, '"', value_at, true))
  end
  local i = value_at + 1
  while true do
    i = find(line, '["\\]', i)
    if not i then
      return format("unterminated quoted value from byte %d", value_at)
    end
    if byte(line, i) == 34 then break end
    local escaped = sub(line, i + 1, i + 1)
    if ESCAPED[escaped] then
      i = i + 2
    elseif find(line, "^u%x%x%x%x", i + 1) then
      i = i + 6
    else
      return format("bad escape at byte %d", i)
    end
  end
  return format("expected a space after the quoted value at byte %d", i + 1)
end

function logfmt.parser(types)
  local pairs_of = grammars[types or "auto"]
  if not pairs_of then
    error(format('types: expected "auto" or "string", not %s', tostring(types)), 0)
  end
  return function(line)
    local t, stopped = match(pairs_of, line)
    if stopped <= #line then return nil, what_is_wrong(line, stopped) end
    return t
  end
end

function logfmt.decoder()
  local parse = logfmt.parser(read_config("types"))
  local take_headers = fields.headers("_key", {
    timestamp = { "time", "ts", "timestamp" }, message = { "msg", "message" },
    host = { "host", "hostname" }, level = { "level", "lvl", "severity" }, pid = { "pid" },
    logger = { "logger" },
  })
  local message = { Type = read_config("message_type") or "logfmt",
                    Hostname = read_config("hostname") }
  local default_hostname = message.Hostname
  local inject = inject_message
  return function(record)
    local t, problem = parse(record)
    if not t then return -1, "not logfmt: " .. problem end
    problem = take_headers(message, t)
    if problem then return -1, problem end
    message.Payload = message.Payload or record
    message.Hostname = message.Hostname or default_hostname
    message.Fields = t
    inject(message)
    return 0
  end
end

return logfmt
