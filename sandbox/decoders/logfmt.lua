-- Decoder: logfmt lines (key=value pairs: go-kit, logrus, slog, Heroku)
-- -> one message.
--
--   time=2024-01-02T03:04:05Z level=warn msg="slow \"GET /\"" ms=812 cached
--
-- Settings (read_config):
--   message_type      the messages' Type (default "logfmt")
--   hostname          Hostname when the line has none (default: none)
--   types             "auto" (default): bare numbers are numbers, true and
--                     false booleans; "string": every value is text
--   timestamp_key     the key of the time: a key, a list tried in order, or
--                     false (default {"time", "ts", "timestamp"})
--   timestamp_format  auto (default), rfc3339, iso8601, syslog, httpdate,
--                     epoch, epoch_ms, epoch_us, epoch_ns (lua_modules/fields.lua)
--   tz                zone of times written without an offset (default UTC)
--   message_key       Payload (default {"msg", "message"})
--   host_key          Hostname (default {"host", "hostname"})
--   level_key         Severity, from a level's name or number (default
--                     {"level", "lvl", "severity"})
--   pid_key           Pid (default "pid")
--   logger_key        Logger (default "logger")
--
-- Per record: Timestamp, Payload, Hostname, Severity, Pid and Logger from
-- the first of their keys present (the key is then no field); Payload is
-- the whole line when no message key has a string. Every other pair is a
-- field; a bare key is true (lua_modules/logfmt.lua has the grammar).
-- Rejected (-1, with the reason and its byte): a line that is not logfmt
-- ('not logfmt: unterminated quoted value from byte 12'), and a time that
-- does not read in timestamp_format.

local decode = require("logfmt").decoder()

-- Defined in this file, as lumberjit reports process_message's line as
-- one of the plugin file's.
function process_message(record)
  return decode(record)
end
