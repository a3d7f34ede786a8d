-- A drop-in for a typical rsyslog receiver: syslog over TCP and UDP on
-- port 514 and the local /dev/log socket, RFC 3164 and RFC 5424, newline
-- or octet-counted, parsed and written as JSON lines to messages.json.
--
--   sudo build/lumberjit -c examples/rsyslog-replacement.lua
--
-- (port 514 and /dev/log need root; stop rsyslog first, it holds both.)
-- It does what these lines of rsyslog.conf do:
--   module(load="imtcp") input(type="imtcp" port="514")
--   module(load="imudp") input(type="imudp" port="514")
--   module(load="imuxsock")
--   *.* action(type="omfile" file="messages.json" template="...json...")
-- Every record carries fromhost-ip (the sender; none for /dev/log) and
-- inputname (tcp, udp or devlog). What cannot be parsed or framed goes to
-- syslog.dead-letter.log with the reason. SIGTERM stops it after the
-- messages the kernel already holds are written; SIGHUP reopens
-- messages.json after it was rotated.

lumberjit = {
  dead_letter_path = "syslog.dead-letter.log",
}

tcp = {
  type = "syslog_input",
  address = "tcp://0.0.0.0:514",     -- newline or octet-counted, per connection
  decoder = "syslog",
}

udp = {
  type = "syslog_input",
  address = "udp://0.0.0.0:514",
  decoder = "syslog",
}

devlog = {
  type = "syslog_input",
  address = "unix:/dev/log",         -- what syslog(3) and logger write to
  decoder = "syslog",
}

syslog = {
  type = "decoder",
  filename = "decoders/syslog.lua",  -- RFC 5424 or RFC 3164, told apart per message
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

messages = {
  type = "file_output",
  path = "messages.json",
  encoder = "json",
  message_matcher = "Type == 'syslog'",
}
