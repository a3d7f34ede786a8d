-- Decoder: each record (a line without its newline) becomes one message
-- whose Payload is the line as is.
--
-- Settings (read_config):
--   message_type  the messages' Type (default "line")
--   hostname  Hostname to set on every message (default: none)
--
-- Timestamp is left unset, so inject_message stamps each message with the
-- time it is injected, in nanoseconds.

-- The Payload is a record span over the whole record, read by position
-- (process_record): no Lua string is made of the line.
local line = record_span()
line[1] = 1
local message = {
  Type = read_config("message_type") or "line",
  Hostname = read_config("hostname"),
  Payload = line,
}

function process_record(length)
  line[2] = length + 1
  inject_message(message)
  return 0
end
