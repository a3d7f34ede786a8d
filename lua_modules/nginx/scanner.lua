-- nginx.scanner: an access-log format's reader as generated Lua code, for
-- decoders that read their record by position (process_record, record_byte:
-- sandbox/README.md). nginx.lua and apache.lua turn their formats into the
-- elements below; this module writes the code that reads them.
--
--   local scan = scanner.generate(elements, options)
--   local ok, at, element = scan(fields, headers, length)
--   -- ok: true, fields and headers set; else at (the byte where reading
--   -- stopped) and the element (its index) that did not fit
--
-- Why generated code: as rsyslog/scanner.lua, it reads bytes with
-- record_byte and skips with record_find (both compile into the decoder's
-- traces), keeps values as positions and hands strings over as record
-- spans, so that a line makes no Lua string unless a value has an escape or
-- is a list. The rare paths (escapes, a delimiter's first byte inside a
-- value, a request line without the usual protocol) are functions of their
-- own, so the code run per line has no loop.
--
-- Elements, in the format's order:
--   { literal = "text" }
--   { field = name, type = t, label = "$status" [, header = "Timestamp"]
--     [, time = parser] [, dash_zero = true] }
-- with t one of nginx/variables.lua's types: integer, double, list_integer,
-- list_double, list_string, time (time = a strptime parser reading the
-- record), request, string. dash_zero: "-" is 0 (Apache's %b).
--
-- How a value is read: up to the first occurrence of the literal text that
-- follows it (or to the end of the record), skipping escapes, as nginx
-- writes the delimiter escaped inside values (default and json escaping;
-- with none, a value holding the delimiter cannot be told apart). A value
-- directly followed by another is read by its syntax: only integers,
-- doubles and times can be; generate raises an error for the others. Then:
--   absent     "-" or nothing (options.absent = "dash"), or nothing
--              ("empty": nginx writes a missing value as "" with escape=json
--              and none): no field (nil)
--   integer    record_decimal; double: digits "." digits; a value that is
--              not a number is kept as the string it is
--   time       read by its strptime parser, not up to the delimiter (a
--              time may hold it: "%F %T" a space); where the parser stops,
--              the record is rejected; the ns go to the element's header
--              (the Timestamp) or field
--   request    the line as it is, and split at its first and last space:
--              request_method, request_uri, server_protocol (the last
--              part, when it starts "HTTP/"; else the rest is the URI)
--   list_*     split at ", " and " : " into an array (lists.lua)
--   escapes    a value holding a backslash is unescaped (options.unescape)
--              into a string; the others are record spans.
-- options: absent, unescape (nil: values as written), integers (true:
-- integer fields get value_type 2, which inject_message's fast path does
-- not take: twice the CPU a line), reader = { byte, text, find,
-- stops, span, decimal } (the sandbox's record_* functions).

local lists = require "nginx.lists"

local format, concat = string.format, table.concat

local scanner = {}

-- A Lua expression true when the record has `text` at position `at`.
local function has_text(text, at)
  local tests = {}
  for k = 1, #text do
    tests[k] = format("byte(%s + %d) == %d", at, k - 1, text:byte(k))
  end
  return "(" .. concat(tests, " and ") .. ")"
end

local non_digits = {}
for b = 0, 255 do
  if b < 48 or b > 57 then non_digits[#non_digits + 1] = string.char(b) end
end
non_digits = concat(non_digits)

local HTTP = has_text("HTTP/", "q + 1")

-- The code's state while writing it: the values the code uses (U[n]: a
-- Lua function has at most 60 upvalues, and a format may have more
-- values), stop sets by their numbers, and code lines.
local Writer = {}
Writer.__index = Writer

function Writer:upvalue(value)
  local values = self.upvalues.U
  values[#values + 1] = value
  return format("U[%d]", #values)
end

function Writer:stops(bytes)
  self.stop_sets[bytes] = self.stop_sets[bytes] or self.reader.stops(bytes)
  return tostring(self.stop_sets[bytes])
end

function Writer:span()
  return self:upvalue(self.reader.span())
end

function Writer:line(text, ...)
  self.code[#self.code + 1] = select("#", ...) > 0 and format(text, ...) or text
end

-- Where the value of element k ends: sets a_k, b_k (the value's bytes) and
-- e_k (true when it holds an escape), and moves i past the literal.
function Writer:bounds(k, literal)
  local unescape = self.options.unescape ~= nil
  self:line("local a%d, b%d, e%d = i", k, k, k)
  if not literal then
    if unescape then self:line("e%d = find(%s, i) <= n", k, self:stops("\\")) end
    self:line("i = n + 1; b%d = i", k)
    return
  end
  local stops = self:stops(literal:sub(1, 1) .. (unescape and "\\" or ""))
  self:line([[
i = find(%s, i)
if not %s then
  i, e%d = seek(i, n, %s, %s, %s)
  if not i then return nil, a%d, %d end
end
b%d = i
i = i + %d]], stops, has_text(literal, "i"), k, stops, format("%q", literal), tostring(unescape),
    k, k, k, #literal)
end

-- The expression of element k's value as a string field: a span, or the
-- unescaped text.
function Writer:string_value(k)
  local span = self:span()
  if self.options.unescape then
    return format("(e%d and unescape(text(a%d, b%d)) or set(%s, a%d, b%d))", k, k, k, span, k, k)
  end
  return format("set(%s, a%d, b%d)", span, k, k)
end

function Writer:absent(k)
  if self.options.absent == "dash" then
    return format("(b%d == a%d or (b%d == a%d + 1 and byte(a%d) == 45))", k, k, k, k, k)
  end
  return format("(b%d == a%d)", k, k)
end

function Writer:store(element, value)
  local target = element.header and format("headers[%q]", element.header)
                 or format("t[%q]", element.field)
  self:line("%s = %s", target, value)
end

-- A number as the field's value: with options.integers, in a table of
-- value_type 2, reused for every line.
function Writer:integer(expression)
  if not self.options.integers then return expression end
  local typed = { value = 0, value_type = 2 }
  return format("%s(%s)", self:upvalue(function(value)
    typed.value = value
    return typed
  end), expression)
end

local readers = {}

function readers.string(w, element, k)
  w:store(element, format("not %s and %s or nil", w:absent(k), w:string_value(k)))
end

function readers.integer(w, element, k)
  w:line("local v%d = decimal(a%d, b%d)", k, k, k)
  w:line("if %s then v%d = %s end", w:absent(k), k, element.dash_zero and "0" or "false")
  w:line("if v%d then", k)
  w:store(element, w:integer("v" .. k))
  w:line("elseif v%d == false then", k)
  w:store(element, "nil")
  w:line("else")
  w:store(element, w:string_value(k))
  w:line("end")
end

function readers.double(w, element, k)
  w:line("local v%d = decimal(a%d, b%d) or fraction(a%d, b%d)", k, k, k, k, k)
  w:store(element, format("v%d or not %s and %s or nil", k, w:absent(k), w:string_value(k)))
end

local function list_reader(kind)
  return function(w, element, k)
    local split = w:upvalue(lists.splitter(kind, w.options.integers))
    local value = w.options.unescape and format("e%d and unescape(text(a%d, b%d)) or text(a%d, b%d)", k, k, k, k, k)
                  or format("text(a%d, b%d)", k, k)
    w:store(element, format("not %s and %s(%s) or nil", w:absent(k), split, value))
  end
end
readers.list_integer = list_reader("integer")
readers.list_double = list_reader("double")
readers.list_string = list_reader("string")

-- The request line: whole, and its parts as spans. The usual line ends in
-- " HTTP/x.y" and is split here; the others go to split_request (a loop
-- for the last space), and an escaped one to split_text.
function readers.request(w, element, k)
  local whole, method, uri, protocol = w:span(), w:span(), w:span(), w:span()
  local names = format("%q, %q, %q, %q", element.field, "request_method", "request_uri",
                       "server_protocol")
  w:line([[
if %s then
  t[%q], t.request_method, t.request_uri, t.server_protocol = nil
elseif e%d then
  split_text(t, %s, unescape(text(a%d, b%d)))
else
  t[%q] = set(%s, a%d, b%d)
  local p, q = find(%s, a%d), b%d - 9
  if p >= b%d then
    t.request_method, t.request_uri, t.server_protocol = nil
  else
    if not (q > p and byte(q) == 32 and %s and byte(q + 6) ~= 32 and byte(q + 7) ~= 32
            and byte(q + 8) ~= 32) then
      q = last_space(p, b%d)
    end
    t.request_method = p > a%d and set(%s, a%d, p) or nil
    if q then
      t.request_uri = q > p + 1 and set(%s, p + 1, q) or nil
      t.server_protocol = set(%s, q + 1, b%d)
    else
      t.request_uri = b%d > p + 1 and set(%s, p + 1, b%d) or nil
      t.server_protocol = nil
    end
  end
end]], w:absent(k), element.field, k, names, k, k, element.field, whole, k, k, w:stops(" "), k, k,
    k, HTTP, k, k, method, k, uri, protocol, k, k, uri, k)
end

-- The rare paths and helpers, shared by every generated scanner.
local helpers = [[
local function set(span, from, to)
  span[1], span[2] = from, to
  return span
end
-- The end of a value when its delimiter's first byte is not where
-- record_find stopped: past escapes (a backslash and the byte after it)
-- and bytes that only start like the delimiter.
local function seek(i, n, stops, literal, escapes)
  local escaped, length = false, #literal
  while i <= n do
    if escapes and byte(i) == 92 then
      escaped, i = true, find(stops, i + 2)
    else
      local k = 1
      while k <= length and byte(i + k - 1) == literal:byte(k) do k = k + 1 end
      if k > length then return i, escaped end
      i = find(stops, i + 1)
    end
  end
  return nil
end
local function digit(c) return c and c >= 48 and c <= 57 end
-- digits "." digits, exactly as tonumber reads it: one rounding.
local function fraction(a, b)
  local dot = find(non_digits, a)
  if dot == a or dot >= b - 1 or byte(dot) ~= 46 then return nil end
  local whole, part = decimal(a, dot), decimal(dot + 1, b)
  if not (whole and part) or dot - a + b - dot - 1 > 15 then return tonumber(text(a, b)) end
  local scale = 10 ^ (b - dot - 1)
  return (whole * scale + part) / scale
end
-- The last space after p and before b, when a protocol "HTTP/" follows it.
local function last_space(p, b)
  for q = b - 1, p + 1, -1 do
    if byte(q) == 32 then
      if HAS_HTTP then return q end
      return nil
    end
  end
  return nil
end
-- A request line as a string: the same split.
local function split_text(t, name, method, uri, protocol, line)
  t[name] = line
  local p = line:find(" ", 1, true)
  if not p then t[method], t[uri], t[protocol] = nil return end
  local q = line:match(".*() ")
  if q > p and line:sub(q + 1, q + 5) == "HTTP/" then
    t[protocol] = line:sub(q + 1)
  else
    q, t[protocol] = #line + 1, nil
  end
  t[method] = p > 1 and line:sub(1, p - 1) or nil
  t[uri] = q > p + 1 and line:sub(p + 1, q - 1) or nil
end]]

-- The scan function of `elements` (see the top).
function scanner.generate(elements, options)
  local reader = options.reader
  local w = setmetatable({ options = options, reader = reader, code = {}, stop_sets = {},
                           upvalues = { byte = reader.byte, text = reader.text,
                                        find = reader.find, decimal = reader.decimal,
                                        unescape = options.unescape or false,
                                        tonumber = tonumber, U = {} } }, Writer)
  w.upvalues.non_digits = reader.stops(non_digits)
  local k = 1
  while k <= #elements do
    local element = elements[k]
    if element.literal then
      w:line("if not %s then return nil, i, %d end", has_text(element.literal, "i"), k)
      w:line("i = i + %d", #element.literal)
      k = k + 1
    else
      local after = elements[k + 1]
      -- A block per value: its locals end with it (at most 200 in a function).
      w:line("do")
      local by_syntax = element.type == "time" or (after and not after.literal)
      if by_syntax then
        w:syntax(element, k)
      else
        w:bounds(k, after and after.literal)
        readers[element.type](w, element, k)
      end
      w:line("end")
      k = k + ((by_syntax or not after) and 1 or 2)
    end
  end
  w:line("if i ~= n + 1 then return nil, i, %d end", #elements + 1)
  local lines = { "local upvalues = ..." }
  for name in pairs(w.upvalues) do lines[#lines + 1] = format("local %s = upvalues.%s", name, name) end
  lines[#lines + 1] = (helpers:gsub("HAS_HTTP", HTTP))
  lines[#lines + 1] = "return function(t, headers, n)\n  local i = 1"
  lines[#lines + 1] = concat(w.code, "\n")
  lines[#lines + 1] = "  return true\nend"
  local chunk = assert((loadstring or load)(concat(lines, "\n"), "=access log scanner"))
  return chunk(w.upvalues)
end

-- A time, or a value followed directly by another value: read by its
-- syntax ("-" is absent), which only numbers and times have.
function Writer:syntax(element, k)
  if element.type == "time" then
    self:line("local v%d, i%d = %s(nil, i)", k, k, self:upvalue(element.time))
    self:line("if not v%d then return nil, i%d, %d end", k, k, k)
    self:line("i = i%d", k)
    self:store(element, "v" .. k)
  elseif element.type == "integer" or element.type == "double" then
    local digits = self:stops(non_digits)
    self:line("local a%d, v%d = i", k, k)
    self:line("if byte(i) == 45 then i = i + 1; v%d = %s else", k, element.dash_zero and "0" or "nil")
    self:line("  i = find(%s, i)", digits)
    if element.type == "double" then
      self:line("  if byte(i) == 46 and digit(byte(i + 1)) then i = find(%s, i + 1) end", digits)
    end
    self:line("  v%d = decimal(a%d, i) or fraction(a%d, i)", k, k, k)
    self:line("  if not v%d then return nil, a%d, %d end", k, k, k)
    self:line("end")
    self:store(element, element.type == "integer" and self:integer("v" .. k) or "v" .. k)
  else
    error(format("cannot tell where %s ends: the next value follows it with no text between",
                 element.label), 0)
  end
end

return scanner
