-- nginx.variables: what each variable nginx documents writes, so that the
-- access-log decoder gives it a type (nginx.org/en/docs/varindex.html, the
-- http modules).
--
--   variables.of("status")          --> { type = "integer" }
--   variables.of("http_x_foo")      --> { type = "string" }
--
-- Types (nginx/scanner.lua reads them):
--   integer   whole number (a Lua number; value_type 2 with integers = true)
--   double    number with a fraction ("0.004")
--   list_*    nginx's lists of upstream servers, "a, b" and, across an
--             internal redirect to another group, "a, b : c", as one array
--             of integers, doubles or strings ("-" inside stays a string:
--             such a list is an array of strings)
--   time      a time, with the strptime format it is written in; one of
--             them becomes the Timestamp (nginx.lua: timestamp_of)
--   request   the request line, kept whole and split (nginx/scanner.lua)
--   string    every other variable: the rest nginx documents ($remote_addr,
--             $remote_user, $host, $uri, $request_uri, $args, $scheme,
--             $server_protocol, $pipe, $https, $ssl_*, $geoip_*, ...), the
--             prefixed families ($arg_, $cookie_, $http_, $sent_http_,
--             $sent_trailer_, $upstream_cookie_, $upstream_http_,
--             $upstream_trailer_, $jwt_claim_, $jwt_header_), and the
--             variables a config makes (map, set, geo): what nginx wrote
-- To type a new variable: add it to the table of its type below.

local variables = {}

local typed = {
  integer = {
    "status", "body_bytes_sent", "bytes_sent", "request_length", "connection",
    "connection_requests", "server_port", "remote_port", "content_length", "pid",
    "proxy_port", "proxy_protocol_port", "proxy_protocol_server_port",
    "realip_remote_port", "connections_active", "connections_reading",
    "connections_writing", "connections_waiting", "tcpinfo_rtt", "tcpinfo_rttvar",
    "tcpinfo_snd_cwnd", "tcpinfo_rcv_space", "ssl_client_v_remain",
    "secure_link_expires", "limit_rate",
  },
  double = { "request_time", "connection_time", "gzip_ratio", "session_time" },
  list_integer = { "upstream_status", "upstream_bytes_received", "upstream_bytes_sent",
                   "upstream_response_length" },
  list_double = { "upstream_response_time", "upstream_connect_time",
                  "upstream_header_time", "upstream_queue_time" },
  list_string = { "upstream_addr" },
  request = { "request" },
}

-- Times, and the strptime format each is written in.
local times = {
  time_local = "%d/%b/%Y:%H:%M:%S %z",
  time_iso8601 = "%Y-%m-%dT%H:%M:%S%z",
  msec = "%s",
}

local of = {}
for type_name, names in pairs(typed) do
  for _, name in ipairs(names) do of[name] = { type = type_name } end
end
for name, time_format in pairs(times) do of[name] = { type = "time", format = time_format } end

local STRING = { type = "string" }

-- What `name` (without "$") writes: a table of type and, for times, format.
function variables.of(name)
  return of[name] or STRING
end

return variables
