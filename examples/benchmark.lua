-- A benchmark run with nothing but lumberjit: 1,000,000 varied syslog lines
-- from the built-in generator -> rsyslog-template decoder -> Logstash JSON
-- -> /dev/null (workload W3 without the network or a file of lines).
--
--   build/lumberjit -c examples/benchmark.lua
--
-- The summary at exit ends with the figures: the run's time, records read
-- and delivered per second, CPU seconds per million records, peak RSS, and
-- the output's latency from read to acknowledged. Change the generator's
-- format (w1, nginx), count or rate, or the decoder, to measure another
-- pipeline; write to a file to keep the JSON.
--
--   build/lumberjit bench examples/benchmark.lua --sweep 25k,50k,100k,200k \
--     --max-p99 50 --plot sweep.svg
--
-- runs it in steps at those rates instead, and reports each step's rate,
-- latency from the schedule, CPU by thread and peak RSS, and the highest
-- rate whose p99 stays under 50 ms (README.md: Benchmarks).

lumberjit = {
  dead_letter_path = "benchmark.dead-letter.log",
  metrics_path = "benchmark.prom",   -- the same figures, while it runs
}

generator = {
  type = "generator_input",
  format = "syslog",
  count = 1000000,
  decoder = "rsyslog",
}

rsyslog = {
  type = "decoder",
  filename = "decoders/rsyslog.lua",
  template = [[<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n]],
  tz = "UTC",
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

discard = {
  type = "file_output",
  path = "/dev/null",
  encoder = "json",
  message_matcher = "TRUE",
}
