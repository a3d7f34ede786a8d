-- An application's JSON lines (what structured loggers write: pino, zap,
-- logrus, structlog), tailed from logs/app.log: each object's keys become
-- typed fields, "time" the Timestamp, "level" the Severity, "msg" the
-- Payload; debug lines are sampled down to one in ten, every message gets
-- this host's name and its environment, and the rest goes to app.json as
-- Logstash JSON.
--
--   mkdir -p logs state && build/lumberjit -c examples/app-json-lines.lua
--
-- Run it where logs/ and state/ are. Try the decoder and the filters on
-- lines first (README: Trying a decoder):
--
--   build/lumberjit -c examples/app-json-lines.lua --try app examples/data/app.jsonl

lumberjit = {
  state_dir = "state",
  dead_letter_path = "app.dead-letter.log",
}

tail = {
  type = "tail_input",
  paths = { "logs/app.log" },
  read_from_head = true,
  decoder = "app",
}

app = {
  type = "decoder",
  filename = "decoders/json_lines.lua",
  message_type = "app",
}

-- Debug lines: one in ten, all of a request's or none (by its id).
debug_sample = {
  type = "filter",
  filename = "filters/sample.lua",
  message_matcher = "Type == 'app' && Severity == 7",
  keep_one_in = 10,
  key = "Fields[req.id]",
}

-- Messages without a host name get this one (without `hostname`: this
-- machine's name).
enrich = {
  type = "filter",
  filename = "filters/add_hostname.lua",
  message_matcher = "Type == 'app'",
  hostname = "app-host-1",
  fields = { env = "prod" },
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

out = {
  type = "file_output",
  path = "app.json",
  encoder = "json",
  message_matcher = "Type == 'app'",
}
