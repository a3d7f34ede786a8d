-- Tails an nginx access log written with a custom log_format and writes
-- each request as a JSON line to access.json: every variable of the format
-- a typed field, the request split into method, URI and protocol, the time
-- as @timestamp.
--
--   mkdir -p logs state && build/lumberjit -c examples/nginx-to-json.lua
--
-- Run it where logs/ and state/ are (paths are relative to the working
-- directory; a real deployment names /var/log/nginx/access.log). The
-- log_format below is the one nginx.conf declares, copied as it is:
--
--   log_format timed '$remote_addr - $remote_user [$time_local] "$request" '
--                    '$status $body_bytes_sent "$http_referer" '
--                    '"$http_user_agent" $request_time $upstream_response_time';
--   access_log /var/log/nginx/access.log timed;
--
-- Try the decoder on a few lines first (README: Writing a parser in 10
-- minutes):
--
--   build/lumberjit -c examples/nginx-to-json.lua --try nginx examples/data/access.log

lumberjit = {
  state_dir = "state",
  dead_letter_path = "nginx.dead-letter.log",
}

access = {
  type = "tail_input",
  paths = { "logs/access.log" },
  read_from_head = true,
  decoder = "nginx",
}

nginx = {
  type = "decoder",
  filename = "decoders/nginx.lua",
  log_format = [[$remote_addr - $remote_user [$time_local] "$request" ]] ..
               [[$status $body_bytes_sent "$http_referer" ]] ..
               [["$http_user_agent" $request_time $upstream_response_time]],
}

json = {
  type = "encoder",
  filename = "encoders/json.lua",
}

out = {
  type = "file_output",
  path = "access.json",
  encoder = "json",
  message_matcher = "Type == 'nginx'",
}
