-- lumberjit_try: a plugin run in lumberjit's real sandbox, from a busted
-- spec (or any Lua 5.1+ script), through `lumberjit --try`.
--
--   local try = require "lumberjit_try"
--   local msgs = try.decode({filename = "my_decoder.lua", settings = {tz = "UTC"}},
--                           "<44>May 19 18:30:17 snack jls: foo")
--   assert.are.equal("foo", msgs[1].Payload)
--   assert.are.same({nil, "rejected", "rejected by d: no match"},
--                   {try.decode({filename = "my_decoder.lua"}, "junk")})
--
-- It writes a configuration naming the plugin (and an encoder, if given)
-- to a temporary directory, runs `lumberjit -c CONFIG --try d [--encode e]`
-- on the lines, and reads back what --try printed: the same limits, the
-- same sandbox and the same messages as a run, not a Lua imitation of them.
-- A relative filename is taken from the current directory when a file is
-- there, else left to lumberjit (relative to its bundled sandbox/).
--
-- The binary: try.bin, which is $LUMBERJIT_BIN, else the lumberjit of the
-- installation this file is part of (PREFIX/bin beside
-- PREFIX/share/lumberjit), else `lumberjit` from PATH.
--
-- A message is a table in Heka's schema, as a decoder gives inject_message
-- one (and as spec/modules/sandbox_host.lua reads them): Fields hold plain
-- values, an array for several, {value =, representation =} for a field
-- with a representation; field_types tells what Lua values do not:
--   {Timestamp = 1779186617000000000, Type = "syslog", Payload = "foo",
--    Severity = 4, Fields = {pri = 44, took = {value = 3, representation = "ms"}},
--    field_types = {pri = "double", took = "integer"},  -- or "string",
--    encoded = '{"message":"foo",...}', encoder_prints = {}} -- "bytes", "bool"
-- Timestamp is nil when the decoder set none (a run stamps the time of
-- decoding; --try stamps 0, so an encoder sees 0). Uuid is the 36-character
-- form. Integers beyond 2^53 lose precision in a Lua without integers.
local M = {}

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local data = f:read("*a")
  f:close()
  return data
end

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

local function default_bin()
  local env = os.getenv("LUMBERJIT_BIN")
  if env and env ~= "" then return env end
  local prefix = debug.getinfo(1, "S").source:match("^@(.*)/share/lumberjit/[^/]*$")
  if prefix and exists(prefix .. "/bin/lumberjit") then return prefix .. "/bin/lumberjit" end
  return "lumberjit"
end

M.bin = default_bin()

---------------------------------------------------------------------------
-- Reading --try's output: the one place that knows its format
-- (src/core/message_text.c for a message, src/cli/try.c for the rest).

local escapes = {n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\"}

-- The quoted string at s[i] (its opening quote); its text and the index
-- after its closing quote.
local function unquote(s, i)
  local out, j = {}, i + 1
  while true do
    local c = s:sub(j, j)
    if c == "" then error("lumberjit_try: unterminated string in: " .. s) end
    if c == '"' then return table.concat(out), j + 1 end
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      if e == "x" then
        out[#out + 1] = string.char(tonumber(s:sub(j + 2, j + 3), 16))
        j = j + 4
      else
        out[#out + 1] = assert(escapes[e], "lumberjit_try: unknown escape \\" .. e)
        j = j + 2
      end
    else
      out[#out + 1] = c
      j = j + 1
    end
  end
end

-- One value at s[i]: its Lua value, its type name and the index after it.
local function value(s, i)
  local c = s:sub(i, i)
  if c == '"' then
    local v, j = unquote(s, i)
    return v, "string", j
  elseif s:sub(i, i + 1) == 'b"' then
    local v, j = unquote(s, i + 1)
    return v, "bytes", j
  end
  local word = s:match("^[^,%]%s]+", i)
  if word == "true" or word == "false" then return word == "true", "bool", i + #word end
  if word == "nan" then return 0 / 0, "double", i + 3 end
  if word == "inf" or word == "-inf" then
    return word == "inf" and math.huge or -math.huge, "double", i + #word
  end
  local n = tonumber(word)
  if not n then error("lumberjit_try: cannot read a value in: " .. s) end
  return n, word:find("[.e]") and "double" or "integer", i + #word
end

-- A field line's text after its indent: `name: value`, `name: [v, ...]`,
-- either followed by ` (representation "...")`.
local function field(m, text)
  local name, i = text:match("^(.-): ()")
  local v, kind
  if text:sub(i, i) == "[" then
    v, i = {}, i + 1
    while text:sub(i, i) ~= "]" do
      local x
      x, kind, i = value(text, i)
      v[#v + 1] = x
      if text:sub(i, i + 1) == ", " then i = i + 2 end
    end
    i = i + 1
  else
    v, kind, i = value(text, i)
  end
  if text:sub(i, i + 16) == ' (representation ' then
    v = {value = v, representation = (unquote(text, i + 17))}
  end
  m.Fields[name], m.field_types[name] = v, kind or "string"
end

local string_headers = {Type = true, Logger = true, Hostname = true, Payload = true,
                        EnvVersion = true}

-- A dump line of message m, without its indent of two spaces.
local function header(m, text)
  local name, rest = text:match("^(%a+): (.*)$")
  if name == "Timestamp" then
    if not rest:find(", unset: ", 1, true) then m.Timestamp = tonumber(rest:match("%((%-?%d+)%)")) end
  elseif string_headers[name] then
    m[name] = unquote(rest, 1)
  elseif name == "Severity" or name == "Pid" then
    m[name] = tonumber(rest)
  elseif name == "Uuid" then
    m.Uuid = rest
  else
    error("lumberjit_try: unknown line in a message: " .. text)
  end
end

local function new_message()
  return {Fields = {}, field_types = {}, encoder_prints = {}}
end

-- The body of one sample line's block (the lines after its head) into r.
local function body(r, text)
  local m, in_fields
  local i = 1
  while i <= #text do
    local line_end = text:find("\n", i, true) or #text + 1
    local line = text:sub(i, line_end - 1)
    local next_i = line_end + 1
    if line:sub(1, 11) == "  encoded: " then
      -- What an encoder made is raw: it may hold newlines. It runs to the
      -- next message's head or the block's end.
      local stop = text:find("\n  -- message ", i, true)
      m.encoded = text:sub(i + 11, (stop or #text + 1) - 1):gsub("\n$", "")
      m.encode_status = "ok"
      next_i = stop and stop + 1 or #text + 1
    elseif line:sub(1, 9) == "  print: " then
      r.prints[#r.prints + 1] = line:sub(10)
    elseif line:sub(1, 17) == "  encoder print: " then
      m.encoder_prints[#m.encoder_prints + 1] = line:sub(18)
    elseif line == "  encoder skipped it" then
      m.encode_status = "skipped"
    elseif line:find("^  encoder rejected it: ") or line:find("^  encoder failed: ") then
      m.encode_status = line:find("^  encoder rejected") and "rejected" or "failed"
      m.encode_reason = line:match("^  encoder [%a ]-: (.*)$")
    elseif line:find("^  %-%- message %d+ of %d+$") then
      m = nil
    elseif line == "  Fields:" then
      in_fields = true
    elseif in_fields and line:sub(1, 4) == "    " then
      field(m, line:sub(5))
    else
      if not m then
        m, in_fields = new_message(), false
        r.messages[#r.messages + 1] = m
      end
      header(m, line:sub(3))
    end
    i = next_i
  end
end

-- What --try printed (stdout) for the sample `source`, as one result a
-- sample line, in order:
--   {line = N, status = "ok" | "rejected" | "failed", reason = TEXT or nil,
--    messages = {...}, prints = {what the decoder print()ed}}
function M.parse(stdout, source)
  local results, head = {}, source .. ":"
  local starts = {}
  local at = 1
  while at <= #stdout do
    if stdout:sub(at, at + #head - 1) == head and stdout:find("^%d+: ", at + #head) then
      starts[#starts + 1] = at
    end
    local nl = stdout:find("\n", at, true)
    if not nl then break end
    at = nl + 1
  end
  for k, start in ipairs(starts) do
    local block = stdout:sub(start, (starts[k + 1] or #stdout + 1) - 1)
    local n, what = block:match("^(%d+): ([^\n]*)", #head + 1)
    local nl = block:find("\n", 1, true)
    local r = {line = tonumber(n), messages = {}, prints = {}}
    local status, reason = what:match("^(rejected): (.*)$")
    if not status then status, reason = what:match("^(failed): (.*)$") end
    r.status, r.reason = status or "ok", reason
    body(r, nl and block:sub(nl + 1) or "")
    results[#results + 1] = r
  end
  return results
end

---------------------------------------------------------------------------
-- Running lumberjit.

-- A Lua constructor of v, for the configuration.
local function lua_of(v)
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      error("lumberjit_try: a setting cannot be nan or inf")
    end
    return string.format("%.17g", v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "table" then
    local parts = {}
    for key, x in pairs(v) do
      parts[#parts + 1] = "[" .. lua_of(key) .. "] = " .. lua_of(x)
    end
    table.sort(parts)
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  error("lumberjit_try: a setting cannot be a " .. t)
end

local function cwd()
  local p = io.popen("pwd")
  local dir = p:read("*l")
  p:close()
  return dir
end

-- `name = { type = ..., filename = ..., settings... }`.
local function plugin_entry(name, kind, plugin)
  if type(plugin) == "string" then plugin = {filename = plugin} end
  local file = assert(plugin.filename, "lumberjit_try: the plugin needs a filename")
  if file:sub(1, 1) ~= "/" and exists(file) then file = cwd() .. "/" .. file end
  local parts = {"type = " .. lua_of(kind), "filename = " .. lua_of(file)}
  for key, v in pairs(plugin.settings or {}) do
    parts[#parts + 1] = "[" .. lua_of(key) .. "] = " .. lua_of(v)
  end
  return name .. " = { " .. table.concat(parts, ", ") .. " }\n"
end

-- Runs the decoder (and opts.encoder) on lines, a string or a list of
-- strings, each one record; returns the results (M.parse) and the run:
-- {status = EXIT STATUS, stdout = ..., stderr = ...}. Raises an error when
-- lumberjit could not run them (a plugin that does not load, say).
function M.run(decoder, lines, opts)
  opts = opts or {}
  if type(lines) == "string" then lines = {lines} end
  local p = io.popen("mktemp -d /tmp/lumberjit-try-XXXXXX")
  local dir = p:read("*l")
  p:close()
  local config, sample = dir .. "/config.lua", dir .. "/sample"
  local text = plugin_entry("d", "decoder", decoder)
  if opts.encoder then text = text .. plugin_entry("e", "encoder", opts.encoder) end
  write(config, text)
  write(sample, #lines > 0 and table.concat(lines, "\n") .. "\n" or "")
  local cmd = string.format("%s -c %s --try d %s %s </dev/null >%s 2>%s; echo $?",
    quote(M.bin), quote(config), opts.encoder and "--encode e" or "", quote(sample),
    quote(dir .. "/stdout"), quote(dir .. "/stderr"))
  p = io.popen(cmd)
  local run = {status = tonumber(p:read("*l"))}
  p:close()
  run.stdout, run.stderr = read(dir .. "/stdout") or "", read(dir .. "/stderr") or ""
  os.execute("rm -rf " .. quote(dir))
  if not run.stderr:find("lumberjit: --try d: ", 1, true) then
    error("lumberjit_try: " .. M.bin .. " did not run the plugin (status " ..
          tostring(run.status) .. "): " .. run.stderr, 2)
  end
  return M.parse(run.stdout, sample), run
end

-- The messages the decoder made of one line (with opts.encoder, each with
-- what the encoder made of it), and what it print()ed as their `prints`;
-- or nil, "rejected" or "failed", and the reason.
function M.decode(decoder, line, opts)
  local r = M.run(decoder, {line}, opts)[1]
  if r.status ~= "ok" then return nil, r.status, r.reason end
  r.messages.prints = r.prints
  return r.messages
end

return M
