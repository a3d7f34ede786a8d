-- Decoder: each record (a line without its newline) becomes one message
-- whose Payload is the line as is.
--
-- Settings (read_config):
--   message_type  the messages' Type (default "line")
--   hostname  Hostname to set on every message (default: none)
--
-- Timestamp is the time of decoding, os.time() in ns: whole seconds, since
-- os.time is what the sandbox offers.

local time = os.time

local message = {
  Type = read_config("message_type") or "line",
  Hostname = read_config("hostname"),
  Timestamp = nil, Payload = nil,
}

function process_message(record)
  message.Timestamp = time() * 1e9
  message.Payload = record
  inject_message(message)
  return 0
end
