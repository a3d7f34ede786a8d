-- nginx.escape: undoes the escapes web servers write in access logs.
--
--   escape.unescape([[GET /a\x22b HTTP/1.1]])  --> 'GET /a"b HTTP/1.1'
--
-- One function serves every escaping these decoders meet, since none of
-- them writes a backslash that does not start an escape:
--   nginx escape=default  \xHH for '"', '\', bytes below 0x20 and above 0x7e
--   nginx escape=json     \" \\ \n \r \t \b \f and \u00HH for other controls
--   Apache                \" \\ \n \r \t \b \v and \xhh
-- \uHHHH is written as UTF-8 (a surrogate pair as one character). A
-- backslash before anything else stands for that character; a lone one at
-- the end is kept. Only values that hold a backslash come here: the
-- scanners hand the others over as record spans, untouched.

local char, tonumber, floor = string.char, tonumber, math.floor

local escape = {}

local simple = { n = "\n", r = "\r", t = "\t", b = "\b", f = "\f", v = "\v" }

local function utf8(code)
  if code < 0x80 then return char(code) end
  if code < 0x800 then return char(0xC0 + floor(code / 64), 0x80 + code % 64) end
  if code < 0x10000 then
    return char(0xE0 + floor(code / 4096), 0x80 + floor(code / 64) % 64, 0x80 + code % 64)
  end
  return char(0xF0 + floor(code / 262144), 0x80 + floor(code / 4096) % 64,
              0x80 + floor(code / 64) % 64, 0x80 + code % 64)
end

local find, sub, concat = string.find, string.sub, table.concat

-- One pass, left to right: a byte an escape writes is never read again (a
-- "\x5C" followed by "n" stays a backslash and an n).
function escape.unescape(s)
  local out, from = {}, 1
  while true do
    local at = find(s, "\\", from, true)
    if not at then break end
    out[#out + 1] = sub(s, from, at - 1)
    local c = sub(s, at + 1, at + 1)
    local hex4 = c == "u" and sub(s, at + 2, at + 5)
    if c == "x" and find(s, "^%x%x", at + 2) then
      out[#out + 1] = char(tonumber(sub(s, at + 2, at + 3), 16))
      from = at + 4
    elseif hex4 and find(hex4, "^%x%x%x%x$") then
      local code = tonumber(hex4, 16)
      from = at + 6
      local low = code >= 0xD800 and code < 0xDC00 and find(s, "^\\u[dD][c-fC-F]%x%x", from)
                  and tonumber(sub(s, from + 2, from + 5), 16)
      if low then
        code = 0x10000 + (code - 0xD800) * 1024 + low - 0xDC00
        from = from + 6
      end
      out[#out + 1] = utf8(code)
    elseif c == "" then
      out[#out + 1] = "\\"
      from = at + 1
    else
      out[#out + 1] = simple[c] or c
      from = at + 2
    end
  end
  if from == 1 then return s end
  out[#out + 1] = sub(s, from)
  return concat(out)
end

return escape
