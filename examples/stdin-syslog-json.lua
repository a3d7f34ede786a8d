-- Syslog lines on stdin -> rsyslog-template decoder -> Logstash JSON -> stdout:
-- workload W3 (shared/WORKLOADS.md) without the network.
--
--   build/lumberjit -c examples/stdin-syslog-json.lua < examples/data/syslog.txt
--
-- Lines that do not match the template go to syslog.dead-letter.log with the
-- reason and the byte offset where they stopped matching.

lumberjit = {
  dead_letter_path = "syslog.dead-letter.log",
}

stdin = {
  type = "stdin_input",
  decoder = "rsyslog",
}

rsyslog = {
  type = "decoder",
  filename = "decoders/rsyslog.lua",
  -- The template rsyslog wrote these lines with (RSYSLOG_TraditionalForwardFormat).
  template = [[<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n]],
  tz = "Asia/Shanghai",   -- the zone of the senders' clocks: the lines carry none
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
