-- Tails every *.log file in logs/ (through rotation, truncation and
-- restarts), one message per line, written as JSON lines to tailed.json.
--
--   mkdir -p logs state && build/lumberjit -c examples/tail-to-file.lua
--
-- Run it where logs/ and state/ are (paths are relative to the working
-- directory; a real deployment names /var/log/app/*.log and /var/lib/...).
-- Files there at the start are read from their head (read_from_head); state/
-- keeps each file's acknowledged offset, so a restart, even after kill -9,
-- goes on where the written lines end. SIGTERM stops it; SIGHUP reopens
-- tailed.json after it was rotated.

lumberjit = {
  state_dir = "state",
  dead_letter_path = "tail.dead-letter.log",
}

app = {
  type = "tail_input",
  paths = { "logs/*.log" },
  exclude = { "*.gz" },
  read_from_head = true,
  decoder = "line",          -- each line is the Payload; the file is Fields[path]
}

line = {
  type = "decoder",
  filename = "decoders/line.lua",
  message_type = "app",
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

out = {
  type = "file_output",
  path = "tailed.json",
  encoder = "json",
  message_matcher = "Type == 'app'",
}
