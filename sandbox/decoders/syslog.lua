-- Decoder: syslog messages as a network receiver gets them (RFC 3164 and
-- RFC 5424, one message per record, without framing) -> syslog messages.
--
-- Settings (read_config):
--   format        "auto" (default: RFC 5424 when the record starts
--                 "<PRI>1 ", else RFC 3164), "rfc3164" or "rfc5424"
--   tz            zone of RFC 3164 timestamps (they carry none): "UTC"
--                 (default), "Asia/Shanghai", "+08:00", ...; their year is
--                 inferred from the clock, across New Year too (date.lua)
--   message_type  the messages' Type (default "syslog")
--   strict        false (default): every record is decoded, as rsyslog's
--                 pmrfc3164 and pmrfc5424 decode it (header parts that do
--                 not parse are left in the msg); true: a record that is
--                 not valid RFC 3164 or RFC 5424 is rejected (-1) with the
--                 part that failed and its byte, and goes to the dead-letter
--                 path. lua_modules/syslog.lua (syslog.receiver) has the rules.
--
-- Per record: one LPeg match capturing texts, then table lookups, then
-- inject_message with
--   Timestamp  ns UTC of TIMESTAMP; absent when the record has none (or
--              "-"), and then lumberjit stamps the time of injection, as
--              rsyslog takes the time of reception
--   Hostname   HOSTNAME (absent when none; the listener adds fromhost-ip)
--   Severity   from PRI (user.notice, 13, when the record has no PRI)
--   Pid        PROCID (RFC 5424) or the tag's [pid] (RFC 3164), when numeric
--   Payload    MSG
--   Fields     pri, syslogfacility, syslogtag, programname, procid (when not
--              numeric); RFC 5424 also app-name, msgid, structured-data (the
--              text) and one field per SD parameter named "SD-ID.PARAM-NAME"
--              ("exampleSDID@32473.iut" = "3"; a name repeated in one
--              element gives an array). As rsyslog, an RFC 5424 message's
--              programname is its APP-NAME and its syslogtag APP-NAME[PROCID].
-- A record whose "<" opens no valid PRI is all Payload, without pri,
-- syslogfacility and Severity (rsyslog calls them invalid).

local lpeg = require "lpeg"
local date = require "date"
local memo = require "memo"
local syslog = require "syslog"

local match, tonumber, type = lpeg.match, tonumber, type

local format = read_config("format") or "auto"
local strict = read_config("strict") and true or false
local grammar = syslog.receiver(format, strict)
local zone = assert(date.zone(read_config("tz") or "UTC"))
local rfc3164_to_ns = date.rfc3164_to_ns(zone)
local rfc3339_to_ns = date.iso8601_to_ns(zone)

local pri_of_text = syslog.pri_of_text
local facility_of_pri_text = syslog.facility_of_pri_text
local severity_of_pri_text = syslog.severity_of_pri_text
local programname_of_tag = syslog.programname_of_tag[false]
local procid_of_tag = syslog.procid_of_tag
local DEFAULT_PRI = "13"   -- user.notice, what rsyslog gives a record without PRI

-- procid text -> Pid, false when it is not a pid.
local pid_of_procid = memo.new(function(procid)
  local pid = tonumber(procid)
  return pid ~= nil and pid >= 0 and pid <= 2147483647 and pid % 1 == 0 and pid
end)

-- Reused for every record: every field is set (nil when absent), and the
-- SD parameter fields of the previous record are cleared by name.
local fields = {}
local message = {
  Type = read_config("message_type") or "syslog",
  Timestamp = nil, Hostname = nil, Severity = nil, Pid = nil, Payload = nil,
  Fields = fields,
}
local sd_field_names, sd_field_count = {}, 0

local function add_sd_parameter(sd_id, name, value)
  local field_name = sd_id .. "." .. name
  local held = fields[field_name]
  if held == nil then
    fields[field_name] = value
    sd_field_count = sd_field_count + 1
    sd_field_names[sd_field_count] = field_name
  elseif type(held) == "table" then
    held[#held + 1] = value
  else
    fields[field_name] = { held, value }
  end
end
local sd_parameters = syslog.sd_parameters(add_sd_parameter)

local function clear_sd_fields()
  for i = 1, sd_field_count do
    fields[sd_field_names[i]] = nil
    sd_field_names[i] = nil
  end
  sd_field_count = 0
end

local function set_pri(pri)
  if pri == false then
    fields.pri, fields.syslogfacility, message.Severity = nil, nil, nil
    return
  end
  pri = pri or DEFAULT_PRI
  fields.pri = pri_of_text[pri]
  fields.syslogfacility = facility_of_pri_text[pri]
  message.Severity = severity_of_pri_text[pri]
end

-- A numeric procid is the Pid; any other stays a field.
local function set_procid(procid)
  local pid = procid and pid_of_procid[procid]
  if pid then
    message.Pid, fields.procid = pid, nil
  else
    message.Pid, fields.procid = nil, procid
  end
end

local function set_rfc3164(pri, rfc3164_time, rfc3339_time, hostname, tag, msg)
  set_pri(pri)
  message.Timestamp = rfc3164_time and rfc3164_to_ns[rfc3164_time]
                      or rfc3339_time and rfc3339_to_ns(rfc3339_time) or nil
  message.Hostname = hostname
  message.Payload = msg
  fields.syslogtag = tag
  fields.programname = tag and programname_of_tag[tag] or nil
  set_procid(tag and procid_of_tag[tag] or nil)
  fields["app-name"], fields.msgid, fields["structured-data"] = nil, nil, nil
end

local function set_rfc5424(pri, rfc3339_time, hostname, app_name, procid, msgid, sd, msg)
  set_pri(pri)
  message.Timestamp = rfc3339_time and rfc3339_to_ns(rfc3339_time) or nil
  message.Hostname = hostname
  message.Payload = msg
  fields["app-name"], fields.programname, fields.msgid = app_name, app_name, msgid
  fields.syslogtag = app_name and procid and app_name .. "[" .. procid .. "]" or app_name
  set_procid(procid)
  fields["structured-data"] = sd
  if sd then match(sd_parameters, sd) end
end

function process_message(record)
  if sd_field_count > 0 then clear_sd_fields() end
  local pri, is_rfc5424, a, b, c, d, e, f, g = match(grammar, record)
  if is_rfc5424 == nil then return -1, syslog.rejection(format, record) end
  if is_rfc5424 then
    set_rfc5424(pri, a, b, c, d, e, f, g)
  else
    set_rfc3164(pri, a, b, c, d, e)
  end
  inject_message(message)
  return 0
end
