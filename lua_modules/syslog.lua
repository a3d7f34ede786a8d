-- syslog: the pieces of syslog messages as small LPeg patterns.
--
-- Patterns ending in _fields produce named groups (Cg), to be used directly
-- inside an lpeg.Ct; their names are rsyslog's property names, so grammars
-- built from them (here and in rsyslog.lua) agree on what things are called:
--   pri, syslogfacility, syslogseverity, timestamp (ns), hostname, syslogtag,
--   programname, procid, app-name, msgid, structured-data, msg.
-- Values that are numbers in syslog (pri, facility, severity) are captured as
-- numbers; everything else as text. NILVALUE ("-") fields are left out.
--
--   syslog.pri               "<44>" -> 44
--   syslog.pri_fields        "44" -> pri, syslogfacility, syslogseverity
--   syslog.pri_text_fields   "local0.err<131>" -> the same three
--   syslog.tag_fields(permit_slash)  "sshd[123]:" -> syslogtag, programname, procid
--   syslog.rfc3164_header(zone, now), syslog.rfc5424_header(zone)
--   syslog.rfc3164(zone, now), syslog.rfc5424(zone): whole lines -> table
--   syslog.structured_data, syslog.sd_element (text), syslog.structured_data_table
--   syslog.severity_name, syslog.facility_name  "err", "local0" -> number
-- For grammars that capture texts and look the rest up (rsyslog.lua):
-- syslog.pri_of_text, facility_of_pri_text, severity_of_pri_text (tables
-- keyed by the PRI's text) and programname_of_tag, procid_of_tag (memo
-- tables keyed by the tag's text).
-- To extend: add a small named pattern, then use it in a header pattern.

local lpeg = require "lpeg"
local date = require "date"
local memo = require "memo"

local P, R, S, C, Cb, Cc, Cf, Cg, Cs, Ct =
  lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cb, lpeg.Cc, lpeg.Cf, lpeg.Cg, lpeg.Cs, lpeg.Ct

local syslog = {}

-- Names as rsyslog prints them (RFC 5424 tables 1 and 2), indexed by number.
syslog.severity_names = { [0] = "emerg", "alert", "crit", "err", "warning",
                          "notice", "info", "debug" }
syslog.facility_names = { [0] = "kern", "user", "mail", "daemon", "auth", "syslog",
                          "lpr", "news", "uucp", "cron", "authpriv", "ftp", "ntp",
                          "audit", "alert", "clock", "local0", "local1", "local2",
                          "local3", "local4", "local5", "local6", "local7" }

-- Name -> number, with the aliases syslog.conf accepts.
local function numbers_by_name(names, aliases)
  local numbers = {}
  for number = 0, #names do numbers[names[number]] = number end
  for name, number in pairs(aliases) do numbers[name] = number end
  return numbers
end
syslog.severity_number = numbers_by_name(syslog.severity_names,
  { panic = 0, error = 3, warn = 4 })
syslog.facility_number = numbers_by_name(syslog.facility_names, { security = 4 })

local caseless = require "caseless"

-- A pattern matching any name of `numbers` (longest first, so "authpriv"
-- is not read as "auth"), capturing its number.
local function name_pattern(numbers)
  local names = {}
  for name in pairs(numbers) do names[#names + 1] = name end
  table.sort(names, function(a, b) return #a > #b or (#a == #b and a < b) end)
  local p = P(false)
  for _, name in ipairs(names) do p = p + caseless(name) * Cc(numbers[name]) end
  return p
end
syslog.severity_name = name_pattern(syslog.severity_number)
syslog.facility_name = name_pattern(syslog.facility_number)

local digit = R"09"

-- PRI: 0..191 without leading zeros.
syslog.prival = P"19" * R"01" + P"1" * R"08" * digit + R"19" * digit + digit

-- Lookup tables from a PRI's text ("44"), so that decoding a PRI costs table
-- reads only: pri_of_text["44"] == 44, facility_of_pri_text["44"] == 5, ...
local pri_of_text, facility_of_pri, severity_of_pri = {}, {}, {}
local facility_of_pri_text, severity_of_pri_text = {}, {}
for pri = 0, 191 do
  local text = tostring(pri)
  pri_of_text[text] = pri
  facility_of_pri[pri] = math.floor(pri / 8)
  severity_of_pri[pri] = pri % 8
  facility_of_pri_text[text] = facility_of_pri[pri]
  severity_of_pri_text[text] = severity_of_pri[pri]
end
syslog.pri_of_text = pri_of_text
syslog.facility_of_pri_text = facility_of_pri_text
syslog.severity_of_pri_text = severity_of_pri_text

syslog.pri = "<" * (C(syslog.prival) / pri_of_text) * ">"

-- Facility and severity are table lookups on the pri just captured: no Lua
-- call per message.
local derived_from_pri = Cg(Cb("pri") / facility_of_pri, "syslogfacility")
                       * Cg(Cb("pri") / severity_of_pri, "syslogseverity")
syslog.pri_fields = Cg(C(syslog.prival) / pri_of_text, "pri") * derived_from_pri
local pri_name = (syslog.facility_name * "." * syslog.severity_name) / 0   -- no captures
syslog.pri_text_fields = pri_name * "<" * syslog.pri_fields * ">"

syslog.nil_value = P"-"
syslog.hostname = (1 - S" \t")^1

-- TAG as rsyslog parses RFC 3164: up to and including the first colon, or up
-- to a space. "sshd[123]:" has the pid in brackets; programname is the tag up
-- to "[", ":" or (unless permit_slash) "/", so "postfix/smtpd[42]:" is from
-- "postfix", as rsyslog names it by default.
syslog.tag = (1 - S" :")^1 * P":"^-1 + P":"
local pid_text = (1 - S" :[]")^1
syslog.tag_with_pid = (1 - S" :[")^1 * "[" * pid_text * "]" * (P":" + #P" " + -1)

local function programname_char(permit_slash)
  return 1 - S(permit_slash and " :[" or " :[/")
end

local procid_in_tag = (1 - P"[")^1 * "[" * C(pid_text) * "]"

-- programname, procid of a tag (nil when it has none).
function syslog.split_tag(tag, permit_slash)
  local programname = C(programname_char(permit_slash)^1):match(tag)
  return programname, procid_in_tag:match(tag)
end

-- Memo tables from a tag's text to its programname and procid, false when
-- the tag has none: syslog.programname_of_tag[permit_slash][tag],
-- syslog.procid_of_tag[tag].
syslog.procid_of_tag = memo.new(function(tag) return procid_in_tag:match(tag) or false end)
syslog.programname_of_tag = {
  [false] = memo.new(function(tag) return syslog.split_tag(tag, false) or false end),
  [true] = memo.new(function(tag) return syslog.split_tag(tag, true) or false end),
}

-- The tag is matched once; programname and procid are then looked up in
-- memo tables keyed by the tag's text. A look-ahead picks which of them the
-- tag has, so that absent ones are absent, not empty strings.
function syslog.tag_fields(permit_slash)
  permit_slash = permit_slash and true or false
  local tag = Cg(C(syslog.tag), "syslogtag")
  local programname = Cg(Cb("syslogtag") / syslog.programname_of_tag[permit_slash], "programname")
  local procid = Cg(Cb("syslogtag") / syslog.procid_of_tag, "procid")
  return #syslog.tag_with_pid * #programname_char(permit_slash) * tag * programname * procid
       + #programname_char(permit_slash) * tag * programname
       + tag
end

-- RFC 5424 STRUCTURED-DATA: "-" or [id param="value" ...]..., where a value
-- escapes '"', '\' and ']' with a backslash.
local sd_name = (R"\33\126" - S'= ]"')^1
local sd_value = (P"\\" * P(1) + (1 - S'"\\'))^0
syslog.sd_element = "[" * sd_name * (" " * sd_name * '="' * sd_value * '"')^0 * "]"
syslog.structured_data = syslog.nil_value + syslog.sd_element^1

-- { [sd_id] = { [param] = value } }; a repeated param keeps its last value.
local sd_value_unescaped = Cs((P"\\" / "" * S'"\\]' + P"\\" + (1 - S'"\\'))^0)
local sd_param = Cg(C(sd_name) * '="' * sd_value_unescaped * '"')
local sd_element_table = "[" * Cg(C(sd_name) * Cf(Ct(true) * (" " * sd_param)^0, rawset)) * "]"
syslog.structured_data_table = syslog.nil_value * Ct(true)
                               + Cf(Ct(true) * sd_element_table^1, rawset)

-- A printable token that may be NILVALUE: "-" is left out of the captures.
local function optional_token(name)
  local token = R"\33\126"^1
  return syslog.nil_value * #(P" " + -1) + Cg(C(token), name)
end

-- RFC 3164: [<PRI>]TIMESTAMP SP HOSTNAME SP, then TAG and MSG.
function syslog.rfc3164_header(zone, now)
  return ("<" * syslog.pri_fields * ">")^-1
         * Cg(date.rfc3164_ns(zone, now), "timestamp") * " "
         * Cg(C(syslog.hostname), "hostname") * " "
end

-- RFC 5424: <PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP
-- MSGID SP STRUCTURED-DATA. `zone` applies to timestamps without an offset.
function syslog.rfc5424_header(zone)
  local timestamp = syslog.nil_value + Cg(date.iso8601_ns(zone), "timestamp")
  return "<" * syslog.pri_fields * ">"
         * Cg(C(R"19" * digit^-2) / tonumber, "protocol-version") * " "
         * timestamp * " "
         * optional_token("hostname") * " "
         * optional_token("app-name") * " "
         * optional_token("procid") * " "
         * optional_token("msgid") * " "
         * (syslog.nil_value + Cg(C(syslog.sd_element^1), "structured-data"))
end

local byte_order_mark = P"\239\187\191"
local rest = C(P(1)^0)

function syslog.rfc3164(zone, now)
  return Ct(syslog.rfc3164_header(zone, now) * syslog.tag_fields()
            * P" "^-1 * Cg(rest, "msg"))
end

function syslog.rfc5424(zone)
  return Ct(syslog.rfc5424_header(zone)
            * (" " * byte_order_mark^-1 * Cg(rest, "msg"))^-1 * -1)
end

return syslog
