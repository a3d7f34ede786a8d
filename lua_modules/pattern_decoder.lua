-- pattern_decoder: lines read by one pattern with named parts -> one message
-- each (decoders/pattern.lua), what grok is to Logstash.
--
--   pattern_decoder.compile(pattern, syntax) -> parse(line) -> a table of the
--     named parts' texts, or nil and what is wrong and at which byte; also
--     the casts the pattern declares ({ field = "int", ... }). The pattern
--     must match the whole line.
--   pattern_decoder.decoder() -> process_message(record), with the plugin's
--     settings read through read_config (the decoder's header lists them)
--
-- Two syntaxes (syntax = "auto" takes grok when the pattern has "%{"):
--   grok  %{IP:client} - %{USER:user} \[%{HTTPDATE:time}\] %{INT:status:int}
--         %{NAME}, %{NAME:field} or %{NAME:field:type} is a sub-pattern of
--         pattern_decoder/library.lua; other text matches itself, "\" making
--         the next character plain. %{DATA} takes the fewest characters and
--         %{GREEDYDATA} the most that let the rest of the pattern match;
--         every other sub-pattern takes all it can (PEG: none gives back).
--   re    LPeg's re syntax: {:client: %IP :} " - " {:user: %USER :} ...
--         named group captures are the fields; the sub-patterns are there
--         as %NAME; anonymous captures are ignored.

local lpeg = require "lpeg"
local re = require "re"
local library = require "pattern_decoder.library"
local fields = require "fields"

local P, Cg, Ct, Cp, Cmt, V = lpeg.P, lpeg.Cg, lpeg.Ct, lpeg.Cp, lpeg.Cmt, lpeg.V
local match = lpeg.match
local find, sub, format = string.find, string.sub, string.format
local pairs, tonumber, type, pcall = pairs, tonumber, type, pcall
local floor = math.floor

local pattern_decoder = {}

local LAZY = { DATA = true, GREEDYDATA = true }

-- The grok pattern as a list of items: { text = "..." } or { name =,
-- field =, cast =, source = "%{...}", at = character }.
local function grok_items(pattern)
  local items, text, i = {}, {}, 1
  local function flush()
    if #text > 0 then items[#items + 1] = { text = table.concat(text) } end
    text = {}
  end
  while i <= #pattern do
    local c = sub(pattern, i, i)
    if c == "%" and sub(pattern, i + 1, i + 1) == "{" then
      local close = find(pattern, "}", i + 2, true)
      if not close then error(format("pattern: %%{ at character %d is not closed", i), 0) end
      local source = sub(pattern, i, close)
      local name, field, cast = source:match("^%%{([%w_]+):?([^:}]*):?([%w]*)}$")
      if not name or (cast ~= "" and field == "") then
        error(format("pattern: %s at character %d is not %%{NAME}, %%{NAME:field} or "
                     .. "%%{NAME:field:type}", source, i), 0)
      end
      if not library[name] then
        error(format("pattern: %s at character %d names no sub-pattern", source, i), 0)
      end
      flush()
      items[#items + 1] = { name = name, field = field ~= "" and field or nil,
                            cast = cast ~= "" and cast or nil, source = source, at = i }
      i = close + 1
    else
      if c == "\\" and i < #pattern then
        i = i + 1
        c = sub(pattern, i, i)
      end
      text[#text + 1] = c
      i = i + 1
    end
  end
  flush()
  return items
end

-- The items as an LPeg grammar: rule k matches items k.. then `tail`; a
-- lazy item matches up to where rule k + 1 does, so rules share the rest
-- of the pattern instead of copying it into each.
local function grok_grammar(items, tail, greedy_last)
  local rules = { "1", [tostring(#items + 1)] = tail }
  for k = #items, 1, -1 do
    local item, rest = items[k], V(tostring(k + 1))
    local p
    if item.text then
      p = P(item.text)
    elseif item.name == "DATA" then
      p = (1 - rest)^0
    elseif item.name == "GREEDYDATA" then
      if k == #items then
        p = greedy_last
      else
        -- The last position the rest matches from: found from the end.
        local rest_rules = { tostring(k + 1) }
        for j = k + 1, #items + 1 do rest_rules[tostring(j)] = rules[tostring(j)] end
        local after = P(rest_rules)
        p = Cmt(P(true), function(line, at)
          for from = #line + 1, at, -1 do
            if match(after, line, from) then return from end
          end
          return false
        end)
      end
    else
      p = library[item.name]
    end
    if item.field then p = Cg(p, item.field) end   -- a group without captures: its text
    rules[tostring(k)] = p * rest
  end
  return P(rules)
end

-- Why a grok pattern does not match a line: the first item that the line
-- does not continue with, found by matching ever longer prefixes of the
-- pattern (each made when first needed).
local function grok_explainer(items)
  local prefixes = {}
  return function(line)
    local matched_to = 1
    for k = 1, #items do
      local prefix = prefixes[k]
      if not prefix then
        local head = { unpack(items, 1, k) }
        prefix = grok_grammar(head, Cp(), P(true))
        prefixes[k] = prefix
      end
      local stopped = match(prefix, line)
      if not stopped then
        local item = items[k]
        local where = (k > 1 and items[k - 1].name and LAZY[items[k - 1].name])
                      and "after byte" or "at byte"
        return format("expected %s %s %d", item.source or format("%q", item.text),
                      where, matched_to)
      end
      matched_to = stopped
    end
    return format("text after the pattern's end at byte %d", matched_to)
  end
end

local function grok(pattern)
  local items = grok_items(pattern)
  if #items == 0 then error("pattern: empty", 0) end
  local whole = Ct(grok_grammar(items, -P(1), P(1)^0))
  local explain = grok_explainer(items)
  local casts = {}
  for _, item in ipairs(items) do
    if item.cast then casts[item.field] = item.cast end
  end
  return function(line)
    local t = match(whole, line)
    if not t then return nil, explain(line) end
    return t
  end, casts
end

local function re_syntax(pattern)
  local ok, compiled = pcall(re.compile, pattern, library)
  if not ok then
    error(format("pattern: %s", tostring(compiled):gsub("^[^:]*:%d+: ", "")), 0)
  end
  local whole = Ct(compiled) * Cp()
  return function(line)
    local t, stopped = match(whole, line)
    if not t then return nil, "does not match the pattern from byte 1" end
    if stopped <= #line then
      return nil, format("text after the pattern's match at byte %d", stopped)
    end
    if t[1] ~= nil then
      for i = #t, 1, -1 do t[i] = nil end
    end
    return t
  end, {}
end

function pattern_decoder.compile(pattern, syntax)
  if type(pattern) ~= "string" then error("pattern: expected the pattern, a string", 0) end
  syntax = syntax or "auto"
  if syntax == "auto" then syntax = find(pattern, "%{", 1, true) and "grok" or "re" end
  if syntax == "grok" then return grok(pattern) end
  if syntax == "re" then return re_syntax(pattern) end
  error(format('syntax: expected "auto", "grok" or "re", not %q', tostring(syntax)), 0)
end

-- Casts: text -> value, or nil when the text is not one. An int is an
-- INTEGER field; its table is made per field once and reused (inject_message
-- copies it).
local function to_double(text)
  local x = tonumber(text)
  if x and x == x then return x end
end
local BOOLEANS = { ["true"] = true, ["false"] = false, TRUE = true, FALSE = false,
                   True = true, False = false }
local function to_boolean(text) return BOOLEANS[text] end
local function int_cast()
  local field = { value = 0, value_type = 2 }
  return function(text)
    local n = tonumber(text)
    if not n or n ~= floor(n) or n >= 2^63 or n < -2^63 then return nil end
    field.value = n
    return field
  end
end
local CASTS = { int = int_cast, integer = int_cast, long = int_cast,
                double = function() return to_double end, float = function() return to_double end,
                number = function() return to_double end,
                bool = function() return to_boolean end, boolean = function() return to_boolean end }

local function cast_list(declared, configured)
  if configured ~= nil and type(configured) ~= "table" then
    error("types: expected a table of field = type", 0)
  end
  local all = {}
  for field, cast in pairs(declared) do all[field] = cast end
  for field, cast in pairs(configured or {}) do all[field] = cast end
  local names, converters, kinds = {}, {}, {}
  for field, cast in pairs(all) do
    if cast ~= "string" then
      local make = CASTS[cast]
      if not make then
        error(format('types: %s has type %q; expected int, double, bool or string',
                     tostring(field), tostring(cast)), 0)
      end
      local n = #names + 1
      names[n], converters[n], kinds[n] = field, make(), cast
    end
  end
  return names, converters, kinds
end

function pattern_decoder.decoder()
  local parse, declared = pattern_decoder.compile(read_config("pattern"), read_config("syntax"))
  local cast_names, cast_to, cast_kinds = cast_list(declared, read_config("types"))
  local take_headers = fields.headers("_field", {})
  local message = { Type = read_config("message_type") or "pattern",
                    Hostname = read_config("hostname") }
  local default_hostname = message.Hostname
  local inject = inject_message
  return function(record)
    local t, problem = parse(record)
    if not t then return -1, "no match: " .. problem end
    problem = take_headers(message, t)
    if problem then return -1, problem end
    for i = 1, #cast_names do
      local name = cast_names[i]
      local text = t[name]
      if text ~= nil then
        local value = cast_to[i](text)
        if value == nil then
          return -1, format('"%s" is not %s: %q', name, cast_kinds[i], text)
        end
        t[name] = value
      end
    end
    message.Payload = message.Payload or record
    message.Hostname = message.Hostname or default_hostname
    message.Fields = t
    inject(message)
    return 0
  end
end

return pattern_decoder
