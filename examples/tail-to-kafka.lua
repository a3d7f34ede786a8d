-- Tails every *.log file in logs/ and ships each line to Kafka as Logstash
-- JSON, keyed by file, with a disk buffer for broker outages.
--
--   mkdir -p logs state && build/lumberjit -c examples/tail-to-kafka.lua
--
-- Run it where logs/ and state/ are, with a broker on 127.0.0.1:9092 and
-- the topic `app-logs` created. What it guarantees (README.md, "Kafka"):
-- a line counts as delivered only when the broker acknowledged it (acks =
-- all), and a file's checkpoint in state/ moves past a line only then, or
-- once the line is fsynced in the disk buffer (state/kafka-kafka/). So a
-- broker outage, a restart of either side, or kill -9 loses nothing:
-- lines wait in memory (16 MiB), then on disk (up to 256 MiB here), then
-- the files are simply not read further until Kafka is back. A lost
-- acknowledgement or a kill -9 may send a line twice. state/metrics.prom
-- shows, every 10 s, where lines wait (README.md, "Metrics").

lumberjit = {
  state_dir = "state",
  dead_letter_path = "kafka.dead-letter.log",
  metrics_path = "state/metrics.prom",
}

app = {
  type = "tail_input",
  paths = { "logs/*.log" },
  read_from_head = true,
  decoder = "line",            -- each line is the Payload; the file is Fields[path]
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

kafka = {
  type = "kafka_output",
  message_matcher = "Type == 'app'",
  encoder = "json",
  brokers = "127.0.0.1:9092",
  topic = "%{Type}-logs",      -- app-logs
  key = "%{path}",             -- one file's lines stay in order, in one partition
  compression = "zstd",
  idempotent = true,           -- no duplicates from librdkafka's own retries
  properties = { ["linger.ms"] = 20 },
  disk_buffer = { max_bytes = 256 * 1024 * 1024 },
  max_bytes_per_second = 8 * 1024 * 1024, -- never more than 8 MiB/s on the uplink
}
