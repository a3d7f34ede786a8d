-- Syslog lines on stdin, enriched, masked and sampled by the bundled
-- filters, as JSON lines on stdout; a count of messages per host goes to a
-- second output.
--
--   build/lumberjit -c examples/syslog-filters.lua < examples/data/syslog-filters.txt
--
-- Filters run in the order they are written here, between the decoder and
-- the outputs (README.md, "Filters"); each of the inline ones replaces the
-- message it takes by what it injects. counts.json gets one line per host
-- each minute, and the last ones when the input ends.

lumberjit = {
  dead_letter_path = "syslog-filters.dead-letter.log",
}

stdin = {
  type = "stdin_input",
  decoder = "syslog",
}

syslog = {
  type = "decoder",
  filename = "decoders/syslog.lua",   -- RFC 3164 or RFC 5424, each line as it comes
}

-- Lines written without a host name (syslog(3) to /dev/log) get this one
-- (without `hostname`: this machine's name).
enrich = {
  type = "filter",
  filename = "filters/add_hostname.lua",
  message_matcher = "TRUE",
  hostname = "collector-1",
  fields = { env = "prod" },
}

-- Passwords never leave this machine: "password=hunter2" becomes "password=***".
mask = {
  type = "filter",
  filename = "filters/mask.lua",
  message_matcher = "TRUE",
  fields = { "Payload" },
  patterns = { "(password=)%S+" },
  replacement = "%1***",
}

-- One debug message in 4 is enough.
sample = {
  type = "filter",
  filename = "filters/sample.lua",
  message_matcher = "Severity == 7",
  keep_one_in = 4,
}

-- Watches every message that is left, and counts them per host.
counts = {
  type = "filter",
  filename = "filters/count.lua",
  mode = "tap",
  message_matcher = "Type == 'syslog'",
  key = "Hostname",
  ticker_interval_ms = 60000,
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

stdout = {
  type = "stdout_output",
  encoder = "json",
  message_matcher = "Type == 'syslog'",
}

per_host = {
  type = "file_output",
  path = "counts.json",
  encoder = "json",
  message_matcher = "Type == 'count'",
}
