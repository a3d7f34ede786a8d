-- Decoder: lines of Docker's json-file log driver -> messages.
--
--   {"log":"GET / 200\n","stream":"stdout","time":"2024-01-02T03:04:05.123456789Z"}
--
-- Settings (read_config):
--   message_type  the messages' Type (default "docker")
--   hostname      Hostname to set on every message (default: none)
--
-- Per record: one message with
--   Timestamp       ns UTC from "time"
--   Payload         "log" without its final "\n"
--   Fields.stream   "stdout" or "stderr"
--   Fields.partial  true when "log" had no final "\n" (Docker splits longer
--                   lines into 16 KiB pieces; the input joins them before the
--                   decoder in the usual case, so this is rare); else absent
-- A line that is not such an entry (bad JSON, a key missing, a bad stream or
-- time) returns -1 with the reason (lua_modules/container.lua).

local container = require "container"

local decode = container.decoder(container.docker, "docker")

-- Defined in this file, as lumberjit reports process_message's line as
-- one of the plugin file's.
function process_message(record)
  return decode(record)
end
