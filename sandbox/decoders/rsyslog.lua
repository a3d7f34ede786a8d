-- Decoder: lines written by rsyslog with a given template -> syslog messages.
--
-- Settings (read_config):
--   template  rsyslog template string, or a built-in name such as
--             "RSYSLOG_FileFormat" (default "RSYSLOG_TraditionalFileFormat")
--   tz        zone of timestamps that carry no offset (RFC 3164, mysql,
--             pgsql): "UTC" (default), "Asia/Shanghai", "+08:00", ...
--   message_type  the messages' Type (default "syslog")
--
-- Per record: one scan of the record (rsyslog.scanner) or, for templates it
-- does not read, one LPeg match, then inject_message with
--   Timestamp  ns UTC from timestamp (timereported), else timegenerated
--   Hostname   hostname
--   Severity   syslogseverity (from pri, or the severity properties)
--   Pid        procid when it is a number (procid stays a field otherwise)
--   Payload    msg
--   Fields     everything else the template captured: pri, syslogfacility,
--              syslogtag, programname, app-name, msgid, structured-data, ...
-- A record that does not match returns -1 and says where it stopped matching.
-- The grammar is built when the plugin loads; a bad template or zone fails
-- the load with a message naming it.

local lpeg = require "lpeg"
local rsyslog = require "rsyslog"

local match = lpeg.match
local tonumber = tonumber

-- Properties that become headers; the rest are Fields. timegenerated stands
-- in for the Timestamp of templates without timereported.
local template = read_config("template") or "RSYSLOG_TraditionalFileFormat"
local header_of = { timestamp = "Timestamp", hostname = "Hostname",
                    syslogseverity = "Severity", msg = "Payload" }
-- Text and words (msg, hostname, ...) go to inject_message as record spans:
-- the bytes are copied from the record, and no Lua string is made for them.
-- Where every element of the template is one rsyslog.scanner reads, the
-- decoder reads the record by position (process_record, record_byte): no Lua
-- string is made of the record either.
local options = { tz = read_config("tz") or "UTC", header_of = header_of,
                  spans = record_span,
                  reader = { byte = record_byte, text = record_text, find = record_find,
                             stops = record_stops, span = record_span } }
local compiled = rsyslog.compile(template, options)
if not compiled.produces.timestamp and compiled.produces.timegenerated then
  header_of.timegenerated = "Timestamp"
  compiled = rsyslog.compile(template, options)
end
local pattern, assemble_into, scan = compiled.pattern, compiled.assemble_into, compiled.scan

-- Both tables are reused for every record: the assembler sets every field
-- and header the template makes (nil when absent), and inject_message copies
-- them.
local fields = {}
local message = {
  Type = read_config("message_type") or "syslog",
  Timestamp = nil, Hostname = nil, Severity = nil, Pid = nil, Payload = nil,
  Fields = fields,
}

-- A numeric procid is the Pid; any other stays a field.
local function set_pid(pid)
  if pid and pid >= 0 and pid <= 2147483647 and pid % 1 == 0 then
    fields.procid = nil
  else
    pid = nil
  end
  message.Pid = pid
end

-- What tonumber reads in a span of the record; digits are read in place.
local function span_number(span)
  local from, to = span[1], span[2]
  return record_decimal(from, to) or tonumber(record_text(from, to))
end

if scan then
  function process_record(length)
    if not scan(fields, message, length) then
      return -1, rsyslog.mismatch_reason(compiled, record_text())
    end
    local procid = fields.procid
    set_pid(procid and span_number(procid))
    inject_message(message)
    return 0
  end
else
  function process_message(record)
    if not assemble_into(fields, message, match(pattern, record)) then
      return -1, rsyslog.mismatch_reason(compiled, record)
    end
    -- procid is a span when the template writes it (%procid%), a string
    -- when the tag has it.
    local procid = fields.procid
    if type(procid) == "table" then procid = record:sub(procid[1], procid[2] - 1) end
    set_pid(procid and tonumber(procid))
    inject_message(message)
    return 0
  end
end
