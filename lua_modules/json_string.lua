-- json_string: JSON text for strings and numbers (RFC 8259), and the grammar
-- that reads an escaped JSON string body back.
--
--   json_string.escape(s)   string body without quotes: escapes '"', '\' and
--                           control characters; passes valid UTF-8 through;
--                           replaces bytes that are not UTF-8 with U+FFFD, one
--                           for each maximal subpart (a sequence cut short, or
--                           a byte), as Rust's from_utf8_lossy (Vector) and
--                           Python do, so the output is always valid JSON.
--                           Returns s itself when nothing needs escaping (the
--                           common case, checked fast).
--   json_string.quote(s)    '"' .. escape(s) .. '"'
--   json_string.number(x)   integers without ".0"; NaN and infinities as null
--   json_string.unescaped   LPeg pattern: a string body up to its closing
--                           quote (not consumed), capturing the unescaped text
-- To extend: escaping rules live in `escapes` and the `escaped` grammar.

local lpeg = require "lpeg"

local P, R, S, C, Cs = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cs
local byte, char, find, format = string.byte, string.char, string.find, string.format
local floor, huge = math.floor, math.huge

local json_string = {}

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
                  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t', ['\127'] = '\\u007f' }
for code = 0, 31 do
  escapes[char(code)] = escapes[char(code)] or format("\\u%04x", code)
end

-- Well-formed UTF-8 sequences of 2 to 4 bytes (RFC 3629: no overlongs, no
-- surrogates, nothing above U+10FFFF).
local tail = R"\128\191"
local utf8_multibyte = R"\194\223" * tail
  + P"\224" * R"\160\191" * tail + (R"\225\236" + R"\238\239") * tail * tail
  + P"\237" * R"\128\159" * tail
  + P"\240" * R"\144\191" * tail * tail + R"\241\243" * tail * tail * tail
  + P"\244" * R"\128\143" * tail * tail

local plain_ascii = R"\32\126" - S'"\\'
local needs_escape = R"\0\31" + S'"\\\127'
-- The start of a sequence cut short: a lead byte and the continuation bytes
-- that could follow it (utf8_multibyte did not match it whole).
local cut_short = P"\224" * R"\160\191" + (R"\225\236" + R"\238\239") * tail
  + P"\237" * R"\128\159"
  + (P"\240" * R"\144\191" + R"\241\243" * tail + P"\244" * R"\128\143") * tail^-1
local not_utf8 = (cut_short + P(1)) / "\239\191\189" -- U+FFFD
local escaped = Cs((plain_ascii^1 + utf8_multibyte + needs_escape / escapes + not_utf8)^0)
local valid_utf8 = (R"\0\127"^1 + utf8_multibyte)^0 * -1

-- Whether s is printable ASCII without '"' or '\' (nothing to escape).
-- Lua patterns with classes cost ~15 ns a byte; LuaJIT compiles this loop to
-- ~1 ns a byte, and LPeg's span is faster still past its call overhead.
local SHORT = 48
local plain_span = R(" !", "#[", "]~")^0 * lpeg.Cp()
local match = lpeg.match
local function is_plain(s)
  local length = #s
  if length > SHORT then return match(plain_span, s) > length end
  for i = 1, length do
    local b = byte(s, i)
    if b < 32 or b > 126 or b == 34 or b == 92 then return false end
  end
  return true
end

function json_string.escape(s)
  if is_plain(s) then return s end
  if not find(s, '[%c"\\]') and valid_utf8:match(s) then return s end
  return escaped:match(s)
end

function json_string.quote(s)
  return '"' .. json_string.escape(s) .. '"'
end

-- Small integers (severities, facilities, PRIs, ports) are the common case.
local small_integer_text = {}
for i = 0, 1023 do small_integer_text[i] = tostring(i) end

function json_string.number(x)
  local small = small_integer_text[x]
  if small then return small end
  if x ~= x or x == huge or x == -huge then return "null" end
  if x == floor(x) and x > -2^63 and x < 2^63 then return format("%d", x) end
  local text = format("%.14g", x)
  if tonumber(text) ~= x then text = format("%.17g", x) end
  return text
end

-- Reading escaped strings back (\uXXXX, surrogate pairs included, to UTF-8).
local function utf8_encode(code)
  if code < 0x80 then return char(code) end
  if code < 0x800 then return char(0xC0 + floor(code / 64), 0x80 + code % 64) end
  if code < 0x10000 then
    return char(0xE0 + floor(code / 4096), 0x80 + floor(code / 64) % 64, 0x80 + code % 64)
  end
  return char(0xF0 + floor(code / 262144), 0x80 + floor(code / 4096) % 64,
              0x80 + floor(code / 64) % 64, 0x80 + code % 64)
end

local hex = R("09", "af", "AF")
local hex4 = C(hex * hex * hex * hex) / function(h) return tonumber(h, 16) end
local function from_surrogates(high, low)
  return utf8_encode(0x10000 + (high - 0xD800) * 0x400 + (low - 0xDC00))
end
local function from_code_unit(code)
  if code >= 0xD800 and code <= 0xDFFF then return "\239\191\189" end  -- U+FFFD
  return utf8_encode(code)
end
local surrogate_pair = lpeg.Cmt(P"\\u" * hex4 * P"\\u" * hex4, function(_, pos, high, low)
  if high >= 0xD800 and high <= 0xDBFF and low >= 0xDC00 and low <= 0xDFFF then
    return pos, from_surrogates(high, low)
  end
  return false
end)
local unescapes = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f',
                    n = '\n', r = '\r', t = '\t' }
local escape_sequence = P"\\" * C(S'"\\/bfnrt') / unescapes
  + surrogate_pair
  + P"\\u" * hex4 / from_code_unit

json_string.unescaped = Cs(((1 - S'"\\')^1 + escape_sequence)^0)

return json_string
