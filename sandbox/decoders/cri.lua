-- Decoder: lines in the CRI log format of containerd and CRI-O -> messages.
--
--   2024-01-02T03:04:05.123456789+00:00 stdout F GET / 200
--
-- Settings (read_config):
--   message_type  the messages' Type (default "cri")
--   hostname      Hostname to set on every message (default: none)
--
-- Per record: one message with
--   Timestamp       ns UTC from the time (RFC 3339, any offset)
--   Payload         the message: the rest of the line, bytes as they are
--   Fields.stream   "stdout" or "stderr"
--   Fields.partial  true when the tag is P (the runtime split a long line;
--                   the input joins the pieces before the decoder in the
--                   usual case, so this is rare); else absent
-- A line that is not in the format returns -1 with the reason, naming the
-- field and its byte (lua_modules/container.lua).

local container = require "container"

local decode = container.decoder(container.cri, "cri")

-- Defined in this file, as lumberjit reports process_message's line as
-- one of the plugin file's.
function process_message(record)
  return decode(record)
end
