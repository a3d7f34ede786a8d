-- Decoder for rsyslog_scanner_spec.lua: reads each record both ways, with
-- the template's LPeg grammar and with rsyslog.scanner over the sandbox's
-- record readers, and injects one message of what each read. Its Fields:
-- has_scan (whether the template has a scanner), grammar and scanned
-- (whether each matched), and every field and header each one set, as
-- "grammar.NAME" and "scanned.NAME" (a field's NAME is "Fields.name"),
-- record spans read as text.
local lpeg = require "lpeg"
local rsyslog = require "rsyslog"

local HEADER_OF = { timestamp = "Timestamp", hostname = "Hostname",
                    syslogseverity = "Severity", msg = "Payload" }
-- rsyslog.compile's own clock option, so that the years both readers infer
-- do not change with the day the spec runs.
local function may_19_2026() return 1779148800 end

local compiled = rsyslog.compile(read_config("template"), {
  tz = "Asia/Shanghai", now = may_19_2026, header_of = HEADER_OF, spans = record_span,
  reader = { byte = record_byte, text = record_text, find = record_find,
             stops = record_stops, span = record_span },
})

local function put(out, prefix, fields, headers)
  local function read(value)
    if type(value) == "table" then return record_text(value[1], value[2]) end
    return value
  end
  for k, v in pairs(fields) do out[prefix .. "Fields." .. k] = read(v) end
  for k, v in pairs(headers) do out[prefix .. k] = read(v) end
end

function process_record(length)
  local out = { has_scan = compiled.scan ~= nil }
  local fields, headers = {}, {}
  out.grammar = compiled.assemble_into(fields, headers, lpeg.match(compiled.pattern, record_text()))
                and true or false
  if out.grammar then put(out, "grammar.", fields, headers) end
  if compiled.scan then
    fields, headers = {}, {}
    out.scanned = compiled.scan(fields, headers, length) and true or false
    if out.scanned then put(out, "scanned.", fields, headers) end
  end
  inject_message({ Fields = out })
  return 0
end
