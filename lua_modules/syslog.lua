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
-- For a receiver (sandbox/decoders/syslog.lua), texts only, lenient as
-- rsyslog or strict to the RFCs (see "Records as a syslog receiver" below):
--   syslog.receiver(format, strict), syslog.rejection(format, record),
--   syslog.sd_parameters(add)
-- To extend: add a small named pattern, then use it in a header pattern.

local lpeg = require "lpeg"
local date = require "date"
local memo = require "memo"

local P, R, S, C, Cb, Cc, Cf, Cg, Cp, Cs, Ct =
  lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cb, lpeg.Cc, lpeg.Cf, lpeg.Cg, lpeg.Cp, lpeg.Cs, lpeg.Ct

-- Fields named in `lazy` are built when first read: a state pays for the
-- patterns its plugin uses, not for every one here (a syslog receiver's
-- state held about 270 KB of them, kept alive in each of its instances).
local lazy = {}
local syslog = require "lazy" (lazy)

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
function lazy.severity_name() return name_pattern(syslog.severity_number) end
function lazy.facility_name() return name_pattern(syslog.facility_number) end

local digit = R"09"

-- PRI: 0..191 without leading zeros.
syslog.prival = P"19" * R"01" + P"1" * R"08" * digit + R"19" * digit + digit

-- Lookup tables from a PRI's text ("44"), so that decoding a PRI costs table
-- reads only: pri_of_text["44"] == 44, facility_of_pri_text["44"] == 5, ...
-- Texts with leading zeros ("013", "00") are there too, as rsyslog reads
-- them on reception; any other text gives nil. A text is added when first
-- read (the 300 texts of all PRIs, in three tables, held 54 KB per state).
local pri_itself, facility_of_pri, severity_of_pri = {}, {}, {}
for pri = 0, 191 do
  pri_itself[pri] = pri
  facility_of_pri[pri] = math.floor(pri / 8)
  severity_of_pri[pri] = pri % 8
end
local function of_pri_text(of_pri)
  return setmetatable({}, { __index = function(of_text, text)
    if type(text) ~= "string" or #text > 3 or not text:find("^%d+$") then return nil end
    local value = of_pri[tonumber(text)]
    if value ~= nil then rawset(of_text, text, value) end
    return value
  end })
end
local pri_of_text = of_pri_text(pri_itself)
local facility_of_pri_text = of_pri_text(facility_of_pri)
local severity_of_pri_text = of_pri_text(severity_of_pri)
syslog.pri_of_text = pri_of_text
syslog.facility_of_pri_text = facility_of_pri_text
syslog.severity_of_pri_text = severity_of_pri_text

syslog.pri = "<" * (C(syslog.prival) / pri_of_text) * ">"

-- Facility and severity are table lookups on the pri just captured: no Lua
-- call per message.
local derived_from_pri = Cg(Cb("pri") / facility_of_pri, "syslogfacility")
                       * Cg(Cb("pri") / severity_of_pri, "syslogseverity")
syslog.pri_fields = Cg(C(syslog.prival) / pri_of_text, "pri") * derived_from_pri
function lazy.pri_text_fields()
  local pri_name = (syslog.facility_name * "." * syslog.severity_name) / 0   -- no captures
  return pri_name * "<" * syslog.pri_fields * ">"
end

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

-- Records as a syslog receiver gets them (sandbox/decoders/syslog.lua).
-- syslog.receiver(format, strict) returns a pattern whose match returns
-- texts only, in one of two layouts told apart by the second value:
--   pri, false, rfc3164_time, rfc3339_time, hostname, tag, msg     RFC 3164
--   pri, true,  rfc3339_time, hostname, app_name, procid, msgid,
--               structured_data, msg                               RFC 5424
-- Absent parts are nil; pri is nil when the record has no PRI and false
-- when it has a "<" that opens no valid PRI; a strict receiver's match
-- returns nil when the record is not valid. NILVALUE ("-") is nil, and so
-- is an empty tag. msg loses one trailing "\n", and in RFC 3164 one leading
-- space (the one after the tag); a BOM starting an RFC 5424 MSG is dropped.
-- The caller turns the texts into fields with table lookups
-- (pri_of_text, date.rfc3164_to_ns, programname_of_tag, ...).
--
-- format: "auto" (RFC 5424 when the record starts "<PRI>1 ", else RFC
-- 3164), "rfc3164" or "rfc5424".
-- Lenient (strict false), every record matches, read as rsyslog's
-- pmrfc3164 and pmrfc5424 read them:
--   RFC 3164: [<PRI>][TIMESTAMP SP][HOSTNAME SP][TAG][SP]MSG, each part
--     optional, tried in that order where the last one stopped. TIMESTAMP
--     is RFC 3164 (date.rfc3164_received, optionally after one space or
--     followed by ":") or RFC 3339 with an offset. HOSTNAME is letters,
--     digits, ".", "_", "-" ending in a letter or digit and followed by a
--     space: so the tag of a local "<13>May 19 10:30:17 sshd[7]: hi" is not
--     taken for a hostname (and the first word of "<13>hello world" is).
--     TAG runs to the first ":" (included) or space. Records whose text
--     after the PRI starts (after blanks) with "{" or "[" have no header;
--     "last message repeated N times" (syslogd's) has no tag.
--   RFC 5424: a TIMESTAMP that is neither "-" nor RFC 3339 with an offset
--     ends the header (the rest is msg); HOSTNAME to MSGID are whatever runs
--     to the next space; STRUCTURED-DATA runs from "[" to the first "]"
--     followed by a space or the end (an escaped "\]" does not end it);
--     something else there starts the msg.
--   rfc5424 records without "<PRI>1 ": PRI, then everything as msg.
--   A "<" that opens no valid PRI (1 to 3 digits, at most 191): the whole
--   record is msg.
-- Strict, a record matches only if it is valid RFC 3164 (<PRI>, a TIMESTAMP
-- "Mmm dd hh:mm:ss", SP, a HOSTNAME as above, SP, then MSG) or RFC 5424 (its
-- ABNF: field lengths, SD-NAMEs, escapes in PARAM-VALUEs); then
-- syslog.rejection(format, record) says where it failed.

local function rest_but_final_newline()
  -- Spans, so as fast as P(1)^0.
  return (1 - P"\n")^0 * (P"\n" * #P(1) * (1 - P"\n")^0)^0
end
local msg_text = C(rest_but_final_newline()) * P"\n"^-1
local space_or_end = P" " + -1
local alnum = R("az", "AZ", "09")
local any_prival = ("0" * digit * digit + "1" * (R"08" * digit + "9" * R"01")) + digit * digit + digit
local lenient_pri = "<" * C(any_prival) * ">"
local strict_pri = "<" * C(syslog.prival) * ">"

-- RFC 3164 parts.
local rfc3164_hostname = (S"._-"^0 * alnum^1)^1
local last_message_repeated = P"last message repeated " * digit^1 * " times" * P"\n"^-1 * -1
local tag_and_msg = (#last_message_repeated * Cc(nil) + C((1 - S" :\n")^1 * P":"^-1 + ":") + Cc(nil))
                    * P" "^-1 * msg_text

local function month_names_pattern()
  local p = P(false)
  for _, name in ipairs({ "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                          "Oct", "Nov", "Dec" }) do
    p = p + name
  end
  return p
end
local hour = R"01" * digit + "2" * R"03"
local minute = R"05" * digit
local strict_rfc3164_time = month_names_pattern() * " "
  * (P" " * R"19" + R"12" * digit + "3" * R"01") * " " * hour * ":" * minute * ":" * minute

-- After the PRI, from the layout's second value on. A record with a
-- timestamp can be neither headerless nor syslogd's "last message repeated",
-- so the common case is tried first.
local rfc3164_time = P" "^-1 * C(date.rfc3164_received_text) * P":"^-1 * space_or_end * Cc(nil)
                   + Cc(nil) * C(date.rfc3339_text) * space_or_end
local rfc3164_host = C(rfc3164_hostname) * space_or_end + Cc(nil)
local headerless = #(S" \t"^0 * S"{[") * Cc(nil, nil, nil, nil) * msg_text
local lastmsg_alone = #(P" "^0 * last_message_repeated) * Cc(nil, nil, nil, nil) * msg_text
local lenient_rfc3164_after_pri = Cc(false) * ( rfc3164_time * rfc3164_host * tag_and_msg
                                              + headerless + lastmsg_alone
                                              + Cc(nil, nil) * rfc3164_host * tag_and_msg)
local invalid_pri = #P"<" * Cc(false)
local whole_record_rfc3164 = Cc(nil, nil, nil, nil) * msg_text

-- RFC 5424 parts.
local two_digits_month = "0" * R"19" + "1" * R"02"
local two_digits_day = "0" * R"19" + R"12" * digit + "3" * R"01"
local function rfc3339_time(max_fraction_digits)
  local fraction = max_fraction_digits and digit * digit^-(max_fraction_digits - 1) or digit^1
  return digit * digit * digit * digit * "-" * two_digits_month * "-" * two_digits_day
         * "T" * hour * ":" * minute * ":" * minute * ("." * fraction)^-1
         * ("Z" + S"+-" * hour * ":" * minute)
end
local byte_order_mark_opt = P"\239\187\191"^-1
local version_1 = P"1 "

local lenient_field = (syslog.nil_value * #space_or_end * Cc(nil) + C((1 - P" ")^1) + Cc(nil))
                      * space_or_end
-- Spans, since SD is long: a backslash escapes the next character, and a
-- "]" not followed by a space or the end (as in "][") does not end it.
local lenient_sd = "[" * ((1 - S"]\\")^1 + "\\" * P(1) + "]" * -space_or_end)^0 * "]"
local lenient_rfc5424_after_version =
  (syslog.nil_value * Cc(nil) + C(rfc3339_time())) * space_or_end
  * lenient_field * lenient_field * lenient_field * lenient_field
  * ((C(lenient_sd) + syslog.nil_value * Cc(nil)) * P" "^-1 + Cc(nil))
  * byte_order_mark_opt * msg_text
  + Cc(nil, nil, nil, nil, nil, nil) * msg_text
local lenient_rfc5424_after_pri = Cc(true) * version_1 * lenient_rfc5424_after_version
local not_rfc5424_after_pri = Cc(true, nil, nil, nil, nil, nil, nil) * msg_text

-- Strict RFC 5424, as named steps so that a rejection can name the first
-- one that fails (PEG sequences never backtrack into an earlier step). Built
-- for the first strict receiver or rejection: a field's length bound
-- repeats its pattern up to 255 times, some 100 KB that a lenient
-- receiver's state need not hold.
local strict_steps
local function strict_rfc_steps()
  if strict_steps then return strict_steps end
  local print_us_ascii = R"\33\126"
  local function field(max_length)
    return syslog.nil_value * #P" " * Cc(nil) + C(print_us_ascii * print_us_ascii^-(max_length - 1)) * #P" "
  end
  local strict_sd_name = (print_us_ascii - S'= ]"') * (print_us_ascii - S'= ]"')^-31
  local strict_sd_value = (P"\\" * P(1) + (1 - S'"\\]'))^0
  local strict_sd_element = "[" * strict_sd_name * (" " * strict_sd_name * '="' * strict_sd_value * '"')^0 * "]"
  strict_steps = {
    rfc5424 = {
      { "PRI (<0> to <191>)", strict_pri },
      { 'VERSION "1" and SP', version_1 * Cc(true) },
      { "TIMESTAMP (RFC 3339 with an offset, or -)", syslog.nil_value * Cc(nil) + C(rfc3339_time(6)) },
      { "SP", P" " }, { "HOSTNAME (1 to 255 printable characters, or -)", field(255) },
      { "SP", P" " }, { "APP-NAME (1 to 48 printable characters, or -)", field(48) },
      { "SP", P" " }, { "PROCID (1 to 128 printable characters, or -)", field(128) },
      { "SP", P" " }, { "MSGID (1 to 32 printable characters, or -)", field(32) },
      { "SP", P" " },
      { "STRUCTURED-DATA ([SD-ID PARAM=\"VALUE\" ...] or -)",
        syslog.nil_value * Cc(nil) + C(strict_sd_element^1) },
      { "SP and MSG, or the end", " " * byte_order_mark_opt * msg_text + P"\n"^-1 * -1 * Cc("") },
    },
    rfc3164 = {
      { "PRI (<0> to <191>)", strict_pri },
      { 'TIMESTAMP ("Mmm dd hh:mm:ss")', Cc(false) * C(strict_rfc3164_time) * Cc(nil) },
      { "SP", P" " },
      { "HOSTNAME (letters, digits, '.', '_', '-')", C(rfc3164_hostname) * #P" " },
      { "SP", P" " },
      { "MSG", tag_and_msg },
    },
  }
  return strict_steps
end

-- The steps after the PRI, in sequence.
local function after_pri(steps)
  local p = P(true)
  for i = 2, #steps do p = p * steps[i][2] end
  return p
end
local starts_rfc5424 = #(lenient_pri * version_1)

-- Each receiver is built when first asked for, and then kept.
local build_receiver = {
  [false] = {
    auto = function()
      return lenient_pri * (lenient_rfc5424_after_pri + lenient_rfc3164_after_pri)
             + invalid_pri * Cc(false) * whole_record_rfc3164
             + Cc(nil) * lenient_rfc3164_after_pri
    end,
    rfc3164 = function()
      return lenient_pri * lenient_rfc3164_after_pri
             + invalid_pri * Cc(false) * whole_record_rfc3164
             + Cc(nil) * lenient_rfc3164_after_pri
    end,
    rfc5424 = function()
      return lenient_pri * (lenient_rfc5424_after_pri + not_rfc5424_after_pri)
             + invalid_pri * not_rfc5424_after_pri
             + Cc(nil) * not_rfc5424_after_pri
    end,
  },
  [true] = {
    auto = function()
      local steps = strict_rfc_steps()
      return strict_pri * (#version_1 * after_pri(steps.rfc5424) + after_pri(steps.rfc3164))
    end,
    rfc3164 = function() return strict_pri * after_pri(strict_rfc_steps().rfc3164) end,
    rfc5424 = function() return strict_pri * after_pri(strict_rfc_steps().rfc5424) end,
  },
}
local receivers = { [false] = {}, [true] = {} }

function syslog.receiver(format, strict)
  strict = strict and true or false
  local pattern = receivers[strict][format]
  if pattern then return pattern end
  local build = format ~= nil and build_receiver[strict][format]
  if not build then
    error(string.format("syslog: unknown format '%s' (auto, rfc3164 or rfc5424)", tostring(format)), 2)
  end
  pattern = build()
  receivers[strict][format] = pattern
  return pattern
end

-- Why a strict receiver rejects `record`: the first part that does not
-- parse and the byte where it was tried. For the error path only.
function syslog.rejection(format, record)
  local steps, name = strict_rfc_steps().rfc3164, "RFC 3164"
  if format == "rfc5424" or (format == "auto" and starts_rfc5424:match(record)) then
    steps, name = strict_rfc_steps().rfc5424, "RFC 5424"
  end
  local at = 1
  for _, step in ipairs(steps) do
    local next_at = (step[2] / 0 * Cp()):match(record, at)
    if not next_at then
      return string.format("not %s: expected %s at byte %d", name, step[1], at)
    end
    at = next_at
  end
  return string.format("not %s", name)
end

-- Calls add(sd_id, param_name, value) for each parameter of an RFC 5424
-- STRUCTURED-DATA text, values unescaped, in order; when the text does not
-- parse, calls nothing and returns nil. `add` is fixed when the pattern is
-- built (once), so reading SD costs no closure per record.
function syslog.sd_parameters(add)
  local param = (Cb("sd_id") * C(sd_name) * '="' * sd_value_unescaped * '"') / add
  local element = "[" * Cg(C(sd_name), "sd_id") * (" " * param)^0 * "]"
  return element^1 * -1 * Cc(true)
end

return syslog
