-- Decoder: Apache httpd access-log lines written with a given LogFormat.
--
-- Settings (read_config):
--   log_format  the LogFormat string as httpd.conf writes it (%h %l %u %t
--               \"%r\" %>s %b ...), or a name: "combined" (the default),
--               "common", "vhost_combined", "referer", "agent"
--   tz          zone of times written without an offset (%{%F %T}t, ...):
--               "UTC" (default), "Europe/Berlin", "+01:00"
--   integers    true: integer fields (%>s, %b, %D, ...) are INTEGER fields
--               (value_type 2); default false: numbers (DOUBLE), which
--               inject_message takes in half the CPU
--   message_type  the messages' Type (default "apache")
--   hostname    the messages' Hostname
--
-- Per record: one scan of the record by position (lua_modules/apache.lua on
-- nginx/scanner.lua: code generated from the LogFormat at load), then
-- inject_message with
--   Timestamp  ns UTC from the first time in the format (%t, %{...}t)
--   Payload    the line
--   Fields     one per directive, named as apache.lua's header lists
--              (remote_host, status, body_bytes_sent, http_user_agent,
--              request_time_us, ...), typed, absent when Apache wrote "-"
--              (but %b's "-", which is 0); %r also split into
--              request_method, request_uri and server_protocol
-- A record that does not match returns -1 and says where it stopped
-- matching. A bad LogFormat fails the load with its position.

local apache = require "apache"

local compiled = apache.compile(read_config("log_format") or "combined", {
  tz = read_config("tz") or "UTC",
  integers = read_config("integers") == true,
  reader = { byte = record_byte, text = record_text, find = record_find,
             stops = record_stops, span = record_span, decimal = record_decimal },
})
local scan, reason = compiled.scan, compiled.reason

-- Both tables are reused for every record (see decoders/nginx.lua).
local fields = {}
local payload = record_span()
local message = { Type = read_config("message_type") or "apache",
                  Hostname = read_config("hostname"), Timestamp = nil, Payload = payload,
                  Fields = fields }

function process_record(length)
  local ok, at, element = scan(fields, message, length)
  if not ok then return -1, reason(at, element) end
  payload[1], payload[2] = 1, length + 1
  inject_message(message)
  return 0
end
