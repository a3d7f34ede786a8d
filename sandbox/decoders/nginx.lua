-- Decoder: nginx access-log lines written with a given log_format.
--
-- Settings (read_config):
--   log_format  the log_format string (its parts joined, as nginx joins
--               them), or "combined" (the default), nginx's predefined one
--   escape      the log_format's escape= parameter: "default" (the
--               default), "json" or "none"
--   tz          zone of times written without an offset: "UTC" (default);
--               nginx's own times carry one, so this is for custom formats
--   integers    true: integer fields ($status, $body_bytes_sent, ...) are
--               INTEGER fields (value_type 2); default false: numbers
--               (DOUBLE), which inject_message takes in half the CPU
--   message_type  the messages' Type (default "nginx")
--   hostname    the messages' Hostname; without it, $hostname when the
--               format logs it
--
-- Per record: one scan of the record by position (lua_modules/nginx.lua,
-- nginx/scanner.lua: code generated from the log_format at load), then
-- inject_message with
--   Timestamp  ns UTC from $msec, else $time_iso8601, else $time_local
--              (none of them: the time of injection)
--   Payload    the line
--   Hostname   the hostname setting, else $hostname
--   Fields     one per variable, named as nginx names it without "$"
--              (status, remote_addr, http_user_agent, ...), typed (numbers,
--              arrays for $upstream_* lists), absent when nginx wrote "-";
--              $request also split into request_method, request_uri and
--              server_protocol
-- A record that does not match returns -1 and says where it stopped
-- matching. A bad log_format fails the load with its position.

local nginx = require "nginx"

local hostname = read_config("hostname")
local compiled = nginx.compile(read_config("log_format") or "combined", {
  escape = read_config("escape") or "default",
  tz = read_config("tz") or "UTC",
  integers = read_config("integers") == true,
  header_of = not hostname and { hostname = "Hostname" } or nil,
  reader = { byte = record_byte, text = record_text, find = record_find,
             stops = record_stops, span = record_span, decimal = record_decimal },
})
local scan, reason = compiled.scan, compiled.reason

-- Both tables are reused for every record: the scanner sets every field the
-- format makes (nil when absent), and inject_message copies them.
local fields = {}
local payload = record_span()
local message = { Type = read_config("message_type") or "nginx", Hostname = hostname,
                  Timestamp = nil, Payload = payload, Fields = fields }

function process_record(length)
  local ok, at, element = scan(fields, message, length)
  if not ok then return -1, reason(at, element) end
  payload[1], payload[2] = 1, length + 1
  inject_message(message)
  return 0
end
