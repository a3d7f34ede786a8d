-- Encoder: one JSON object per message, in the Logstash / Elasticsearch
-- schema, on one line (the output adds the newline):
--
--   {"@timestamp":"2026-05-19T10:30:17.000Z","@version":"1","message":"foo bar 32",
--    "host":"snack","type":"syslog","severity":4,"pri":44,"programname":"jls",...}
--
-- Headers: @timestamp (Timestamp, ISO 8601 UTC with milliseconds), @version
-- ("1", always), message (Payload), host (Hostname), type (Type), logger
-- (Logger), severity (Severity), pid (Pid); absent headers are left out (but
-- message is always there: "" for an empty Payload, an empty line), and
-- Uuid and EnvVersion are not written. Every field follows as a top-level
-- key, arrays as JSON arrays. A field named like one of those keys is written
-- as "fields.NAME" so it cannot clobber the header (a field "message"
-- becomes "fields.message"). Fields repeated under one name are written
-- once per value, as repeated keys.
-- Strings are escaped by json_string (always valid JSON, invalid UTF-8
-- bytes as U+FFFD); numbers that are integers print without ".0", NaN and
-- infinities as null. No settings.
--
-- The object is written by the sandbox's inject_message_json, in C
-- (src/runtime/json_message.c): in Lua each header and field became a Lua string,
-- interned and later swept, only to be copied into the output.
-- spec/modules/json_reference.lua is the same in Lua, the reference the
-- specs hold the C writer to.

function process_message()
  inject_message_json()
  return 0
end
