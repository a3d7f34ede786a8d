-- Decoder: lines read by a pattern with named parts -> one message each;
-- what grok is to Logstash, for logs no other decoder knows.
--
--   pattern = [[%{IPORHOST:client} %{USER:ident} %{USER:user} \[%{HTTPDATE:time}\] "%{WORD:method} %{NOTSPACE:path} HTTP/%{NUMBER:http_version}" %{INT:status:int} %{INT:bytes:int}%{GREEDYDATA}]]
--
-- Settings (read_config):
--   pattern           required: grok syntax (%{NAME:field[:type]} and plain
--                     text) or LPeg's re syntax with named group captures
--                     ({:field: %INT :}); it must match the whole line. The
--                     sub-patterns (IP, IPV4, IPV6, IPORHOST, HOSTNAME, INT,
--                     NUMBER, WORD, NOTSPACE, SPACE, DATA, GREEDYDATA,
--                     QUOTEDSTRING, UUID, MAC, PATH, URI, URIPATHPARAM,
--                     TIMESTAMP_ISO8601, HTTPDATE, SYSLOGTIMESTAMP, LOGLEVEL,
--                     USER, ...) are in lua_modules/pattern_decoder/library.lua
--   syntax            "auto" (default: grok when the pattern has "%{"),
--                     "grok" or "re"
--   types             { field = "int" | "double" | "bool" | "string" }: the
--                     fields' types (default: strings; an int is an INTEGER
--                     field); a grok %{NAME:field:type} declares one too
--   timestamp_field   the field of the time (default: none)
--   timestamp_format  auto (default), rfc3339, iso8601, syslog, httpdate,
--                     epoch, epoch_ms, epoch_us, epoch_ns (lua_modules/fields.lua)
--   tz                zone of times written without an offset (default UTC)
--   message_field, host_field, level_field, pid_field, logger_field
--                     the fields that become Payload, Hostname, Severity
--                     (from a level's name or number), Pid and Logger
--                     (default: none; each may be a list tried in order)
--   message_type      the messages' Type (default "pattern")
--   hostname          Hostname when no field gives one (default: none)
--
-- The pattern is compiled once, when the plugin loads; a bad one fails the
-- load, naming the setting and what is wrong ('pattern: %{FOO} at
-- character 5 names no sub-pattern').
-- Per record: the named parts are the fields, less those taken into
-- headers; Payload is the whole line unless message_field gives it.
-- Rejected (-1, with the reason): a line the pattern does not match ('no
-- match: expected %{INT:status:int} at byte 61'), a field that is not of
-- its type, a time that does not read in timestamp_format.

local decode = require("pattern_decoder").decoder()

-- Defined in this file, as lumberjit reports process_message's line as
-- one of the plugin file's.
function process_message(record)
  return decode(record)
end
