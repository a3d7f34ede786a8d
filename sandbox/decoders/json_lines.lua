-- Decoder: one JSON object per line (JSON Lines, NDJSON: what structured
-- loggers write) -> one message.
--
--   {"time":"2024-01-02T03:04:05.123Z","level":"warn","msg":"slow","ms":812,"req":{"id":"a1"}}
--
-- Settings (read_config):
--   message_type      the messages' Type (default "json")
--   hostname          Hostname when the object has none (default: none)
--   flatten           separator for the names of nested objects' keys
--                     (default "."; "req.id" above), or false to keep each
--                     nested object as one field of its JSON text
--   max_bytes         longer records are rejected (default 1048576)
--   timestamp_key     the key of the time: a key, a list tried in order, or
--                     false (default {"time", "@timestamp", "timestamp", "ts"})
--   timestamp_format  auto (default), rfc3339, iso8601, syslog, httpdate,
--                     epoch, epoch_ms, epoch_us, epoch_ns (lua_modules/fields.lua)
--   tz                zone of times written without an offset (default UTC)
--   message_key       Payload (default {"message", "msg"})
--   host_key          Hostname (default {"host", "hostname"})
--   level_key         Severity, from a level's name or number (default
--                     {"level", "severity", "lvl"})
--   pid_key           Pid (default "pid")
--   logger_key        Logger (default {"logger", "logger_name"})
--
-- Per record: Timestamp, Payload, Hostname, Severity, Pid and Logger from
-- the first of their keys present (the key is then no field); Payload is
-- the whole line when no message key has a string. Every other key is a
-- field (lua_modules/json_lines.lua says how each JSON value becomes one);
-- a key repeated in the object keeps its last value, as cjson reads it.
-- Rejected (-1, with the reason): a record over max_bytes, one that is not
-- JSON (cjson's reason, with the character), JSON that is not an object,
-- and a time that does not read in timestamp_format.

local decode = require("json_lines").decoder()

-- Defined in this file, as lumberjit reports process_message's line as
-- one of the plugin file's.
function process_message(record)
  return decode(record)
end
