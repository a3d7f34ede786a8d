-- rsyslog.scanner: a template's reader as generated Lua code that reads the
-- record byte by byte, for decoders that read their record by position
-- (process_record, record_byte: sandbox/README.md).
--
--   local scan = scanner.generate(steps, reader, header_of)
--   if scan(fields, headers, length) then ... end
--
-- Why: the LPeg grammar needs the record as a Lua string and makes a string
-- for every value it captures; hashing and interning those, then sweeping
-- them, cost more than the matching itself. The code written here reads
-- bytes with reader.byte (record_byte, which compiles into the decoder's
-- traces), keeps values as positions, and sets record spans, numbers and
-- the few memo lookups (timestamps) as the LPeg assembler does.
--
-- It reads exactly what the grammar of rsyslog.compile reads, step for
-- step: each step below mirrors one kind's LPeg pattern, ordered choices and
-- greedy repetitions included (a PEG never backtracks into a choice that
-- succeeded, so neither does this code), and sets the same fields. spec/
-- modules/rsyslog_scanner_spec.lua holds the two to the same results on
-- mutated lines. A template with a step this module does not know (json
-- options, structured data, other date formats, ...) gets no scanner, and
-- the decoder uses the grammar.
--
-- Steps, one per template element, made by rsyslog.compile:
--   { kind = "constant", text = "..." }
--   { kind = "optional_space" }                       sp-if-no-1st-sp
--   { kind = "pri" }                                  pri, syslogfacility, syslogseverity
--   { kind = "time", field = f, to_ns = memo,         RFC 3164 text -> to_ns[text],
--     fields_to_ns = fn }                            fn(month, day, h, m, s) without fraction
--   { kind = "word", field = f, nil_value = bool }    span, or nil for "-"
--   { kind = "text", field = f }                      span
--   { kind = "tag", permit_slash = bool }             syslogtag, programname, procid spans
-- and, on each, literal (the constant text that follows, if any), at_end,
-- and for words, follows ("literal", "any" or "end": what must come after a
-- NILVALUE); the template's ends_with_newline is on the list.

local format, concat = string.format, table.concat

local scanner = {}

-- A Lua expression true when the record has `text` at position `at` (an
-- expression).
local function has_text(text, at)
  local tests = {}
  for k = 1, #text do
    tests[k] = format("byte(%s + %d) == %d", at, k - 1, text:byte(k))
  end
  return "(" .. concat(tests, " and ") .. ")"
end

-- The end of the record at position `at`: its last byte may be one newline
-- when the template ends with one.
local function at_record_end(at, ends_with_newline)
  if ends_with_newline then
    return format("(%s == n + 1 or (%s == n and byte(n) == 10))", at, at)
  end
  return format("(%s == n + 1)", at)
end

-- Every byte but the digits, for record_find.
local non_digits = {}
for b = 0, 255 do
  if b < 48 or b > 57 then non_digits[#non_digits + 1] = string.char(b) end
end
non_digits = concat(non_digits)

-- Each writer appends the step's code to `code` (reading at i, leaving i
-- after the step, `return nil` when the record does not match), and any
-- definitions it needs to `prelude`, and returns its fields as { name, Lua
-- expression of the value } read after the match.
-- `k` numbers the step's locals; name(prefix, value) gives the upvalue that
-- holds a value the code uses (a span's setter, a memo, a stop set).
local writers = {}

function writers.constant(step, code)
  code[#code + 1] = format("if not %s then return nil end", has_text(step.text, "i"))
  code[#code + 1] = format("i = i + %d", #step.text)
  return {}
end

function writers.optional_space(_, code)
  code[#code + 1] = "if byte(i) == 32 then i = i + 1 end"
  return {}
end

-- syslog.prival: "19"[01] / "1"[0-8]digit / [1-9]digit / digit.
function writers.pri(_, code, k)
  code[#code + 1] = format([[
local p%d
do
  local c1, c2, c3 = byte(i), byte(i + 1), byte(i + 2)
  if c1 == 49 and c2 == 57 and (c3 == 48 or c3 == 49) then p%d = 190 + c3 - 48; i = i + 3
  elseif c1 == 49 and digit(c2) and c2 <= 56 and digit(c3) then
    p%d = 100 + (c2 - 48) * 10 + c3 - 48; i = i + 3
  elseif digit(c1) and c1 >= 49 and digit(c2) then p%d = (c1 - 48) * 10 + c2 - 48; i = i + 2
  elseif digit(c1) then p%d = c1 - 48; i = i + 1
  else return nil end
end]], k, k, k, k, k)
  local p = "p" .. k
  return { { "pri", p }, { "syslogfacility", format("(%s - %s %% 8) / 8", p, p) },
           { "syslogseverity", p .. " % 8" } }
end

-- date.rfc3164_text: month (any case) " " day " " hh:mm:ss ["." digits],
-- day being " "[1-9] / "0"[1-9] / [12]digit / "3"[01] / [1-9], hh 00-23,
-- mm 00-59, ss 00-59 or 60. Its ns is what to_ns[text] gives. Lines come
-- in runs of one second, so the last time's ns is kept, known by its
-- numbers; a new time is converted from the numbers read here
-- (fields_to_ns), not by making the text a string and parsing it again,
-- which cost ten times the rest of the line's reading. A time with a
-- fraction goes through to_ns[text].
function writers.time(step, code, k, name, _, prelude)
  prelude[#prelude + 1] = format([[
local last_key_%d, last_ns_%d
local function ns_%d(from, to, month, day, hour, min, sec)
  if not sec then return %s[text(from, to)] end
  local key = ((month * 32 + day) * 24 + hour) * 3600 + min * 60 + sec
  if key == last_key_%d then return last_ns_%d end
  last_key_%d, last_ns_%d = key, %s(month, day, hour, min, sec)
  return last_ns_%d
end]], k, k, k, name("to_ns", step.to_ns), k, k, k, k, name("fields_to_ns", step.fields_to_ns), k)
  code[#code + 1] = format([[
local t%d, e%d, month%d, day%d, hour%d, min%d, sec%d = i
do
  local m = byte(i + 2) and byte(i) * 65536 + byte(i + 1) * 256 + byte(i + 2)
  month%d = m and months[m]
  if not month%d or byte(i + 3) ~= 32 then return nil end
end
i = i + 4
do
  local d1, d2 = byte(i), byte(i + 1)
  if (d1 == 32 or d1 == 48) and digit(d2) and d2 >= 49 then i = i + 2; day%d = d2 - 48
  elseif (d1 == 49 or d1 == 50) and digit(d2) then i = i + 2; day%d = (d1 - 48) * 10 + d2 - 48
  elseif d1 == 51 and (d2 == 48 or d2 == 49) then i = i + 2; day%d = 30 + d2 - 48
  elseif digit(d1) and d1 >= 49 then i = i + 1; day%d = d1 - 48
  else return nil end
end
do
  local h1, h2, m1, m2, s1, s2 = byte(i + 1), byte(i + 2), byte(i + 4), byte(i + 5), byte(i + 7), byte(i + 8)
  if not (byte(i) == 32 and digit(h1) and digit(h2) and (h1 <= 49 or (h1 == 50 and h2 <= 51))
          and byte(i + 3) == 58 and digit(m1) and m1 <= 53 and digit(m2)
          and byte(i + 6) == 58 and digit(s1) and digit(s2) and (s1 <= 53 or (s1 == 54 and s2 == 48))) then
    return nil
  end
  hour%d, min%d, sec%d = (h1 - 48) * 10 + h2 - 48, (m1 - 48) * 10 + m2 - 48, (s1 - 48) * 10 + s2 - 48
end
i = i + 9
if byte(i) == 46 and digit(byte(i + 1)) then
  i = find(%s, i + 2)
  sec%d = nil
end
e%d = i]], k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, name("stops", non_digits), k, k)
  return { { step.field, format("ns_%d(t%d, e%d, month%d, day%d, hour%d, min%d, sec%d)",
                                k, k, k, k, k, k, k, k) } }
end

-- What a NILVALUE must be followed by (rsyslog.lua's nil_value).
local function follows_nil(step, at, ends_with_newline)
  local after
  if step.follows == "literal" then after = has_text(step.literal, at)
  elseif step.follows == "any" then return "true"
  else after = at_record_end(at, ends_with_newline) end
  return format("(%s or byte(%s) == 32 or byte(%s) == 9)", after, at, at)
end

-- (1 - S(" \t" .. first byte of the literal))^1, or "-" as nil.
function writers.word(step, code, k, name, ends_with_newline)
  local stops = " \t" .. (step.literal and step.literal:sub(1, 1) or "")
  local word = format([[
a%d = i
i = find(%s, i)
if i == a%d then return nil end
b%d = i]], k, name("stops", stops), k, k)
  code[#code + 1] = format("local a%d, b%d", k, k)
  if step.nil_value then
    code[#code + 1] = format("if byte(i) == 45 and %s then\n  i = i + 1\nelse\n%s\nend",
                             follows_nil(step, "i + 1", ends_with_newline), word)
  else
    code[#code + 1] = "do\n" .. word .. "\nend"
  end
  return { { step.field, format("a%d and %s(a%d, b%d)", k, name("span", step.span), k, k) } }
end

-- Free text: up to the first occurrence of the literal or, ending the
-- template (rsyslog.compile refuses it anywhere else), to the end of the
-- record (but a final newline when the template ends with one).
function writers.text(step, code, k, name, ends_with_newline)
  code[#code + 1] = format("local a%d, b%d = i", k, k)
  if step.literal then
    local first = name("stops", step.literal:sub(1, 1))
    if #step.literal > 1 then
      code[#code + 1] = format([[
i = find(%s, i)
while i <= n and not %s do i = find(%s, i + 1) end]],
        first, has_text(step.literal:sub(2), "i + 1"), first)
    else
      code[#code + 1] = format("i = find(%s, i)", first)
    end
    code[#code + 1] = "if i > n then return nil end"
  elseif ends_with_newline then
    code[#code + 1] = "if n >= i and byte(n) == 10 then i = n else i = n + 1 end"
  else
    code[#code + 1] = "i = n + 1"
  end
  code[#code + 1] = format("b%d = i", k)
  return { { step.field, format("%s(a%d, b%d)", name("span", step.span), k, k) } }
end

-- syslog.tag: (1 - S" :")^1 ":"^-1 / ":". Within it, programname is the
-- longest start without " :[" (nor "/" unless permitted), and procid the
-- text after the first "[" (not the first byte), up to a "]", without
-- " :[]": syslog.split_tag.
function writers.tag(step, code, k, name)
  code[#code + 1] = format([[
local g%d, h%d, pn%d, q%d, r%d = i
if byte(i) == 58 then
  i = i + 1
else
  i = find(%s, i)
  if i == g%d then return nil end
  if byte(i) == 58 then i = i + 1 end
end
h%d = i
do
  local j = find(%s, g%d)
  if j > g%d then pn%d = j end
  j = find(%s, g%d)
  if j > g%d and j < i then
    local to = find(%s, j + 1)
    if to > j + 1 and to < i and byte(to) == 93 then q%d, r%d = j + 1, to end
  end
end]], k, k, k, k, k, name("stops", " :"), k, k,
    name("stops", step.permit_slash and " :[" or " :[/"), k, k, k,
    name("stops", "["), k, k, name("stops", " :[]"), k, k)
  return { { "syslogtag", format("%s(g%d, h%d)", name("span", step.spans[1]), k, k) },
           { "programname", format("pn%d and %s(g%d, pn%d)", k, name("span", step.spans[2]), k, k) },
           { "procid", format("q%d and %s(q%d, r%d)", k, name("span", step.spans[3]), k, k) } }
end

-- Month names in every case, by their three bytes as one number: the
-- month's number.
local months = {}
for number, month in ipairs({ "jan", "feb", "mar", "apr", "may", "jun",
                              "jul", "aug", "sep", "oct", "nov", "dec" }) do
  local function cases(prefix, rest)
    if rest == "" then
      local a, b, c = prefix:byte(1, 3)
      months[a * 65536 + b * 256 + c] = number
      return
    end
    local ch = rest:sub(1, 1)
    cases(prefix .. ch, rest:sub(2))
    cases(prefix .. ch:upper(), rest:sub(2))
  end
  cases("", month)
end

-- The function that sets a record span's positions and returns it.
local function span_setter(span)
  return function(from, to)
    span[1], span[2] = from, to
    return span
  end
end

-- The scan function of `steps` (see the top), or nil when a step is of a
-- kind this module does not read. reader = { byte = record_byte, text =
-- record_text, find = record_find, stops = record_stops, span =
-- record_span }. header_of renames fields into headers as rsyslog.compile's
-- option does.
function scanner.generate(steps, reader, header_of)
  local upvalues = { byte = reader.byte, text = reader.text, find = reader.find,
                     months = months }
  local name_of, count = {}, 0
  -- The upvalue holding `value` (a stop set made of the string's bytes,
  -- for "stops"), named prefix_N.
  local function name(prefix, value)
    if name_of[value] then return name_of[value] end
    count = count + 1
    name_of[value] = prefix .. "_" .. count
    upvalues[name_of[value]] = prefix == "stops" and reader.stops(value) or value
    return name_of[value]
  end
  local code, fields, prelude = {}, {}, {}
  for k, step in ipairs(steps) do
    local writer = writers[step.kind]
    if not writer then return nil end
    if step.kind == "word" or step.kind == "text" then
      step.span = span_setter(reader.span())
    elseif step.kind == "tag" then
      step.spans = { span_setter(reader.span()), span_setter(reader.span()),
                     span_setter(reader.span()) }
    end
    for _, field in ipairs(writer(step, code, k, name, steps.ends_with_newline, prelude)) do
      fields[#fields + 1] = field
    end
  end
  code[#code + 1] = format("if not %s then return nil end",
                           at_record_end("i", steps.ends_with_newline))
  for _, field in ipairs(fields) do
    local header = header_of[field[1]]
    code[#code + 1] = header and format("headers[%q] = %s", header, field[2])
                      or format("t[%q] = %s", field[1], field[2])
  end
  local lines = { "local upvalues = ..." }
  for n in pairs(upvalues) do lines[#lines + 1] = format("local %s = upvalues.%s", n, n) end
  lines[#lines + 1] = "local function digit(c) return c and c >= 48 and c <= 57 end"
  lines[#lines + 1] = concat(prelude, "\n")
  lines[#lines + 1] = [[
return function(t, headers, n)
  local i = 1]]
  lines[#lines + 1] = concat(code, "\n")
  lines[#lines + 1] = "  return t\nend"
  local chunk = assert((loadstring or load)(concat(lines, "\n"), "=rsyslog scanner"))
  return chunk(upvalues)
end

return scanner
