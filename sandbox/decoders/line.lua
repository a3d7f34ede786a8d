-- Decoder: each record (a line without its newline) becomes one message
-- whose Payload is the line as is.
--
-- Settings (read_config):
--   message_type  the messages' Type (default "line")
--   hostname  Hostname to set on every message (default: none)
--
-- Timestamp is left unset, so inject_message stamps each message with the
-- time it is injected, in nanoseconds.

local message = {
  Type = read_config("message_type") or "line",
  Hostname = read_config("hostname"),
  Payload = nil,
}

function process_message(record)
  message.Payload = record
  inject_message(message)
  return 0
end
