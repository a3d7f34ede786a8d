-- Encoder: each message as one RFC 5424 syslog message, to forward onwards:
--
--   <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG
--   <44>1 2026-05-19T10:30:17.000000Z snack jls 1234 - - foo bar 32
--
-- Settings (read_config):
--   tz                zone of TIMESTAMP: "UTC" (default, written "Z"),
--                     "Asia/Shanghai", "+08:00", ...
--   hostname          HOSTNAME of messages without a Hostname (default "-")
--   default_facility  facility of messages without pri or syslogfacility:
--                     a name ("local0") or a number (default "user")
--   default_severity  severity of messages without pri or Severity
--                     (default "notice")
--   octet_counted     prefix "LEN " (RFC 6587 octet counting), for TCP and
--                     TLS; give the output newline = false (default false)
--   bom               write a UTF-8 BOM before MSG, as RFC 5424 asks of
--                     UTF-8 text (default false)
--   structured_data_from_fields  build STRUCTURED-DATA from SD parameter
--                     fields when the message has no structured-data field
--                     (default true); false writes "-" and saves going through
--                     every field of every such message (about 40% of this
--                     encoder's time on W3's messages)
--
-- Where each part comes from:
--   PRI        field pri, else field syslogfacility * 8 + Severity, each part
--              defaulting to the settings above
--   TIMESTAMP  Timestamp, RFC 3339 with microseconds in tz; "-" when absent
--   HOSTNAME   Hostname, else the hostname setting, else "-"
--   APP-NAME   field app-name, else field programname, else "-"
--   PROCID     Pid, else field procid, else "-"
--   MSGID      field msgid, else "-"
--   STRUCTURED-DATA  field structured-data as it is, else built from the
--              fields named "<SD-ID>.<PARAM>" with '"', '\' and ']' escaped
--              (SD-IDs "name@<number>" or IANA's timeQuality, origin, meta;
--              see format.structured_data_of_fields), else "-"
--   MSG        Payload, after one space; left out (with its space) when empty
-- RFC 5424 allows only printable US-ASCII (33-126) in HOSTNAME, APP-NAME,
-- PROCID and MSGID, at most 255, 48, 128 and 32 of them. rsyslog writes
-- these fields as it holds them, unchecked, so a space in one would shift
-- every later field for the receiver; this encoder instead replaces each
-- other byte with "_" and cuts a longer field to its limit, and writes "-"
-- for an empty one.

local date = require "date"
local syslog = require "syslog"
local format = require "rsyslog.format"
local json_string = require "json_string"
local memo = require "memo"

local find, gsub, sub, tostring = string.find, string.gsub, string.sub, tostring
local number_text = json_string.number

local function setting_number(key, numbers, default, high)
  local value = read_config(key) or default
  local number = numbers[value] or tonumber(value)
  if not number or number < 0 or number > high or number % 1 ~= 0 then
    error(string.format("rfc5424 encoder: %s: unknown value '%s'", key, tostring(value)), 0)
  end
  return number
end

local tz = read_config("tz") or "UTC"
local zone, zone_error = date.zone(tz)
if not zone then error("rfc5424 encoder: tz: " .. zone_error, 0) end
local timestamp_text = format.rfc5424_timestamp(zone)
local default_hostname = read_config("hostname")
local default_facility = setting_number("default_facility", syslog.facility_number, "user", 23)
local default_severity = setting_number("default_severity", syslog.severity_number, "notice", 7)
local octet_counted = read_config("octet_counted") == true
-- What comes between STRUCTURED-DATA and a MSG.
local msg_separator = read_config("bom") == true and " \239\187\191" or " "

-- A header field as RFC 5424 allows it (see the top of this file).
local function header_field(value, max_length)
  if value == "" then return "-" end
  if find(value, "[^!-~]") then value = gsub(value, "[^!-~]", "_") end
  if #value > max_length then value = sub(value, 1, max_length) end
  return value
end

-- Memo tables per header, from a value to its header field: hosts, programs,
-- pids and message ids repeat, and a table lookup keeps the JIT's trace
-- whole where a pattern or a loop over the bytes would break it.
local function header_memo(max_length)
  return memo.new(function(value) return header_field(value, max_length) end)
end
local hostname_field, app_name_field = header_memo(255), header_memo(48)
local procid_field, msgid_field = header_memo(128), header_memo(32)

local from_fields = read_config("structured_data_from_fields") ~= false

local function structured_data()
  local value = read_message("Fields[structured-data]")
  if value and value ~= "" then return value end
  return from_fields and format.structured_data_of_fields(read_next_field) or "-"
end

function process_message()
  local timestamp = read_message("Timestamp")
  local msgid = read_message("Fields[msgid]")
  local msg = read_message("Payload") or ""
  local line = "<" .. number_text(format.priority(read_message, default_facility, default_severity))
    .. ">1 " .. (timestamp and timestamp_text(timestamp) or "-")
    .. " " .. hostname_field[read_message("Hostname") or default_hostname or ""]
    .. " " .. app_name_field[format.app_name(read_message)]
    .. " " .. procid_field[format.procid(read_message)]
    .. " " .. msgid_field[msgid and tostring(msgid) or ""]
    .. " " .. structured_data() .. (msg == "" and "" or msg_separator) .. msg
  if octet_counted then return #line .. " " .. line end
  return line
end
