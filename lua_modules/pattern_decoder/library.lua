-- The named sub-patterns of the pattern decoder, as LPeg patterns that match
-- without capturing: %{NAME} in its grok syntax, %NAME in its re syntax.
-- Named and written after Logstash's grok patterns, but PEG: each takes
-- what it matches and never gives back, except DATA and GREEDYDATA, which
-- pattern_decoder.lua builds around what follows them.

local lpeg = require "lpeg"
local date = require "date"
local caseless = require "caseless"

local P, R, S, Cmt, Cp = lpeg.P, lpeg.R, lpeg.S, lpeg.Cmt, lpeg.Cp
local find, sub = string.find, string.sub

local digit, hex = R"09", R("09", "af", "AF")
local alpha, alnum = R("az", "AZ"), R("az", "AZ", "09")
local space = S" \t\r\n\f\v"
local notspace = 1 - space

local octet = "25" * R"05" + "2" * R"04" * digit + "1" * digit * digit + R"19" * digit + digit
local ipv4 = octet * "." * octet * "." * octet * "." * octet
local ipv4_whole = ipv4 * -1

-- IPv6 as RFC 4291 writes it: eight groups, or fewer around one "::", the
-- last two possibly an IPv4 address. The candidate text is taken first,
-- then checked by its shape.
local function is_ipv6(text)
  local ipv4_tail = find(text, ".", 1, true) ~= nil
  if ipv4_tail then
    local at = find(text, ":[^:]*$")
    if not ipv4_whole:match(text, at + 1) then return false end
    text = sub(text, 1, at) .. "0:0"
  end
  local double = find(text, "::", 1, true)
  if double and find(text, "::", double + 1, true) then return false end
  local groups = 0
  for group in (text .. ":"):gmatch("(.-):") do
    if group ~= "" then
      if #group > 4 then return false end
      groups = groups + 1
    end
  end
  if double then return groups < 8 and not find(text, ":::", 1, true) end
  return groups == 8 and not find(text, "^:") and not find(text, ":$")
end
local ipv6 = Cmt(Cp() * (hex + ":")^2 * (P"." * (digit + ".")^1)^-1, function(subject, at, start)
  return is_ipv6(sub(subject, start, at - 1)) and at
end)

local hostname = alnum * (alnum + "-")^0 * ("." * alnum * (alnum + "-")^0)^0 * P"."^-1
local ip = ipv4 * -alnum + ipv6
local posint = R"19" * digit^0
local int = S"+-"^-1 * digit^1
local number = S"+-"^-1 * (digit^1 * ("." * digit^0)^-1 + "." * digit^1)
               * (S"eE" * S"+-"^-1 * digit^1)^-1
local function quoted_by(q) return q * ("\\" * P(1) + (1 - S(q .. "\\")))^0 * q end
local quoted = quoted_by('"') + quoted_by("'") + quoted_by("`")

local function any_of(names)
  local p = P(false)
  for name in names:gmatch("%S+") do p = p + caseless(name) end
  return p
end
-- Longer names first: PEG takes the first that matches.
local loglevel = any_of("emergency emerg alert critical crit fatal severe error err "
                        .. "warning warn notice informational information info debug trace")

local uripath = "/" * (1 - (space + S'?#"'))^0
local uriparam = "?" * (1 - (space + S'#"'))^0
local uriproto = alpha * (alnum + S"+-.")^0
local user = (alnum + S"._-")^1
local urihost = (P"[" * ipv6 * "]" + ip + hostname) * (":" * digit^1)^-1

-- ISO 8601 as loggers write it: also a "," before the fraction (Python's
-- logging, log4j), which fields.lua's iso8601 format reads too.
local d2 = digit * digit
local iso8601 = digit^4 * "-" * d2 * "-" * d2 * S"Tt " * d2 * ":" * d2 * ":" * d2
                * (S".," * digit^1)^-1 * (S"Zz" + S"+-" * d2 * (P":"^-1 * d2)^-1)^-1

local hex4 = hex * hex * hex * hex
local library = {
  INT = int, POSINT = posint, NONNEGINT = digit^1, NUMBER = number, BASE10NUM = number,
  WORD = (alnum + "_")^1, NOTSPACE = notspace^1, SPACE = space^0, DATA = P(1)^0,
  GREEDYDATA = P(1)^0, QUOTEDSTRING = quoted, QS = quoted,
  IPV4 = ipv4 * -alnum, IPV6 = ipv6, IP = ip, HOSTNAME = hostname,
  IPORHOST = ip + hostname, HOSTPORT = (ip + hostname) * ":" * posint,
  USER = user, USERNAME = user, EMAILADDRESS = user * "@" * hostname,
  UUID = hex4 * hex4 * "-" * hex4 * "-" * hex4 * "-" * hex4 * "-" * hex4 * hex4 * hex4,
  MAC = hex * hex * (S":-" * hex * hex)^5,
  PATH = uripath, UNIXPATH = uripath, URIPATH = uripath, URIPARAM = uriparam,
  URIPATHPARAM = uripath * uriparam^-1, URIPROTO = uriproto, URIHOST = urihost,
  URI = uriproto * "://" * (user * (":" * (1 - (space + "@"))^0)^-1 * "@")^-1 * urihost
        * (uripath * uriparam^-1)^-1,
  TIMESTAMP_ISO8601 = iso8601, SYSLOGTIMESTAMP = date.rfc3164_received_text,
  HTTPDATE = digit * digit * "/" * alpha * alpha * alpha * "/" * digit^4 * ":" * digit * digit
             * ":" * digit * digit * ":" * digit * digit * " " * S"+-" * digit^4,
  LOGLEVEL = loglevel,
}

return library
