-- An edge box: an arm64 gateway with 512 MB of memory, an SD card, a
-- cellular uplink that drops for minutes and is paid by the byte, power
-- that goes away without a shutdown (README: Edge boxes).
--
--   lumberjit -c /etc/lumberjit/edge.lua
--
-- It tails the applications' logs and the local syslog socket, parses both
-- with the syslog decoder, and forwards them over TLS to a central
-- collector (rsyslog, syslog-ng, lumberjit) as RFC 5424. While the uplink
-- is away the records go to a disk buffer on the SD card, capped; when the
-- cap is reached the oldest are dropped (counted and logged) so the box
-- keeps the newest. The uplink never takes more than 32 KB/s, the drain
-- after an outage included.

lumberjit = {
  state_dir = "/var/lib/lumberjit",   -- checkpoints and the disk buffer
  -- Memory: records in flight at most 8 MiB, one worker thread, and each
  -- sandbox held to 4 MiB below.
  memory_budget = 8 * 1024 * 1024,
  workers = 1,
  -- The SD card: checkpoints every 5 s rather than every second (a power
  -- cut reads again at most 5 s of lines: duplicates, never losses), and
  -- dead letters capped at 4 MiB, two files kept.
  checkpoint_interval_ms = 5000,
  dead_letter_path = "/var/lib/lumberjit/dead-letter.log",
  dead_letter_max_bytes = 4 * 1024 * 1024,
  dead_letter_keep = 2,
}

apps = {
  type = "tail_input",
  paths = { "/var/log/apps/*.log" },
  decoder = "syslog",
  max_open_files = 64,
}

devlog = {
  type = "syslog_input",
  address = "unix:/run/lumberjit/log.sock", -- point the local syslog at it
  decoder = "syslog",
  max_connections = 64,
}

syslog = {
  type = "decoder",
  filename = "decoders/syslog.lua",  -- RFC 5424 or 3164, told apart per line
  memory_limit = 4 * 1024 * 1024,
  cpu_limit_ms = 50,
}

rfc5424 = {
  type = "encoder",
  filename = "encoders/rfc5424.lua",
  memory_limit = 4 * 1024 * 1024,
}

uplink = {
  type = "syslog_output",
  address = "tls://collector.example.net:6514",
  encoder = "rfc5424",
  message_matcher = "TRUE",
  max_bytes_per_second = 32 * 1024,
  reconnect_max_ms = 60000,           -- a cellular link: no storm of attempts
  send_timeout_ms = 30000,            -- a blackholed path is found in 30 s
  disk_buffer = {
    path = "/var/lib/lumberjit/uplink",
    max_bytes = 256 * 1024 * 1024,    -- of the SD card
    segment_bytes = 4 * 1024 * 1024,
    when_full = "drop_oldest",        -- keep the newest records
  },
}
