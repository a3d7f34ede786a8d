-- Runs lumberjit's syslog listeners and real syslog clients side by side for
-- the end-to-end specs: lumberjit in the background with a config, the
-- addresses it logs ("input 'tcp': listening on tcp://127.0.0.1:41234"),
-- clients (logger, rsyslogd, openssl s_client, spec/e2e/syslog_client.py)
-- fed from files in the same temporary directory, and a stop by SIGTERM
-- that returns the exit status, stderr, the records written and the
-- summary lines.
--
--   local h = dofile("spec/e2e/syslog_harness.lua")
--   local lj = h.start([[ tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0" } ]] .. h.common_config)
--   h.sh(lj.dir, "logger -T -n 127.0.0.1 -P " .. lj.port.tcp .. " hello")
--   h.wait_records(lj, 1)
--   local r = h.stop(lj)   -- r.status, r.stderr, r.records (decoded JSON), r.dead (dead letters)
--   h.summary(r.stderr, "tcp").malformed
--
-- Every process runs under `timeout -s KILL`, and every wait has a limit,
-- so a hang fails its spec instead of hanging the suite. Processes are
-- stopped by the PIDs the harness wrote, never by name. A spec that needs a
-- new client adds a function here that writes its command line; the waits
-- and the stop stay the same.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local h = {}

h.client = run.root .. "/spec/e2e/syslog_client.py"

-- The settings, JSON output and decoders most specs use: dead letters in
-- dead.json, records as JSON lines in out.json, and the decoders: RFC 5424 (logger's
-- default) and RFC 3164 (logger --rfc3164, rsyslog's omfwd default
-- RSYSLOG_TraditionalForwardFormat) parsed by the rsyslog-template decoder.
h.common_config = [[
lumberjit = { dead_letter_path = "dead.json" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.json", encoder = "json", message_matcher = "TRUE" }
rfc5424 = { type = "decoder", filename = "decoders/rsyslog.lua", template = "RSYSLOG_SyslogProtocol23Format" }
rfc3164 = { type = "decoder", filename = "decoders/rsyslog.lua", template = "RSYSLOG_TraditionalForwardFormat" }
]]

function h.sh(dir, cmd)
  local ok = os.execute("cd " .. run.quote(dir) .. " && (" .. cmd .. ")")
  return ok == true or ok == 0
end

function h.sleep(seconds)
  os.execute("sleep " .. seconds)
end

-- Polls `ready` every 50 ms for at most `seconds`; true once it returned
-- true.
function h.wait_until(ready, seconds)
  for _ = 1, math.ceil(seconds / 0.05) do
    if ready() then return true end
    h.sleep(0.05)
  end
  return ready()
end

-- Starts `cmd` (a shell command line) in dir in the background as `name`:
-- name.pid holds the PID of the `timeout` that wraps it (it passes SIGTERM
-- on to the command, which the script execs), name.out and name.err its
-- output, name.status its exit status once it ended.
function h.spawn(dir, name, cmd, limit_seconds)
  run.write(dir .. "/" .. name .. ".sh", "exec " .. cmd .. "\n")
  -- --foreground: a signal sent to timeout goes on to the command once;
  -- without it timeout sends it to its process group too, so lumberjit
  -- could get a SIGTERM twice and take the second as "stop now".
  h.sh(dir, string.format("rm -f %s.status %s.pid; (sh -c 'echo $$ > %s.pid; exec timeout --foreground -s KILL %d sh %s.sh' "
    .. "> %s.out 2> %s.err < /dev/null; echo $? > %s.status) &",
    name, name, name, limit_seconds or 60, name, name, name, name))
  assert(h.wait_until(function() return run.read(dir .. "/" .. name .. ".pid") end, 5), name .. " did not start")
end

local function exit_status(dir, name)
  local status = run.read(dir .. "/" .. name .. ".status")
  return status and tonumber(status:match("%d+"))
end

-- Waits (at most `seconds`) for `name` to end; its exit status, or nil.
function h.wait_exit(dir, name, seconds)
  h.wait_until(function() return exit_status(dir, name) end, seconds or 30)
  return exit_status(dir, name)
end

function h.signal(dir, name, signal)
  h.sh(dir, "kill -" .. signal .. " $(cat " .. name .. ".pid) 2>/dev/null")
end

-- Stops `name` with SIGTERM; its exit status (nil if it did not end within
-- `seconds`, after which it is killed).
function h.terminate(dir, name, seconds)
  h.signal(dir, name, "TERM")
  local status = h.wait_exit(dir, name, seconds)
  if not status then
    h.signal(dir, name, "KILL")
    h.wait_exit(dir, name, 5)
  end
  return status
end

-- "input 'tcp': listening on tcp://127.0.0.1:41234" -> { tcp = "tcp://127.0.0.1:41234" }
local function listening(stderr)
  local address = {}
  for name, where in (stderr or ""):gmatch("input '([^']+)': listening on (%S+)") do address[name] = where end
  return address
end

local function count_keys(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- Starts lumberjit with `config` (text, in which $DIR stands for its
-- temporary directory, for unix socket paths; the files in `files` written
-- beside it) and waits until every syslog_input of the config has logged its
-- address. Returns { dir, address = { NAME = "tcp://127.0.0.1:PORT" },
-- port = { NAME = PORT }, host = { NAME = HOST }, path = { NAME = PATH } }.
-- opts.max_files: its RLIMIT_NOFILE, soft and hard (`ulimit -n`; lumberjit
-- raises the soft limit to the hard one).
function h.start(config, files, opts)
  local dir = run.tmpdir()
  config = config:gsub("%$DIR", dir)
  run.write(dir .. "/config.lua", config)
  for name, text in pairs(files or {}) do run.write(dir .. "/" .. name, text) end
  local listeners = select(2, config:gsub('type%s*=%s*"syslog_input"', ""))
  local cmd = run.quote(run.bin) .. " -c config.lua"
  if opts and opts.max_files then
    cmd = "sh -c " .. run.quote(string.format("ulimit -n %d && exec %s", opts.max_files, cmd))
  end
  h.spawn(dir, "lumberjit", cmd, 120)
  local address = {}
  h.wait_until(function()
    address = listening(run.read(dir .. "/lumberjit.err"))
    return count_keys(address) >= listeners or exit_status(dir, "lumberjit")
  end, 20)
  assert(count_keys(address) == listeners and not exit_status(dir, "lumberjit"),
    "lumberjit did not start listening:\n" .. (run.read(dir .. "/lumberjit.err") or ""))
  local lj = { dir = dir, address = address, port = {}, host = {}, path = {} }
  for name, where in pairs(address) do
    lj.host[name], lj.port[name] = where:match("^%a+://%[?([^%]]*)%]?:(%d+)$")
    lj.port[name] = tonumber(lj.port[name])
    lj.path[name] = where:match("^unix[%-%a]*:(/.*)$")
  end
  return lj
end

function h.lines(lj, file)
  return run.lines(run.read(lj.dir .. "/" .. (file or "out.json")))
end

-- The JSON objects of a file of JSON lines (default out.json).
function h.records(lj, file)
  local records = {}
  for _, line in ipairs(h.lines(lj, file)) do records[#records + 1] = cjson.decode(line) end
  return records
end

-- Waits (at most `seconds`, default 30) until `file` (default out.json)
-- holds at least n lines; true when it does.
function h.wait_records(lj, n, seconds, file)
  return h.wait_until(function() return #h.lines(lj, file) >= n end, seconds or 30)
end

-- Stops lumberjit with SIGTERM and collects what it did: { status, stderr,
-- stdout, records (out.json decoded), dead (the dead-letter file decoded) }.
function h.stop(lj)
  local status = h.terminate(lj.dir, "lumberjit", 30)
  return {
    status = status,
    stdout = run.read(lj.dir .. "/lumberjit.out"),
    stderr = run.read(lj.dir .. "/lumberjit.err"),
    records = h.records(lj),
    dead = h.records(lj, "dead.json"),
  }
end

-- The counters a syslog_input declares, as its summary line names them
-- ("input 'tcp': 3 connections, 0 refused over max_connections, ...").
local COUNTERS = {
  connections = "connections", refused = "refused over max_connections",
  refused_address = "refused over max_connections_per_address",
  refused_fd = "refused for want of a file descriptor", evicted = "silent closed to make room",
  handshake_late = "closed past tls_handshake_timeout_ms",
  message_late = "closed past first_message_timeout_ms", idle = "closed idle",
  tls_failed = "failed TLS sessions", malformed_frames = "malformed frames",
  malformed_datagrams = "malformed datagrams", dropped = "datagrams dropped by the kernel",
  empty = "empty frames", empty_datagrams = "empty datagrams",
}

-- The counters of input `name` in the summary, by the keys of COUNTERS
-- (malformed: frames or datagrams, whichever it has), or nil when it has
-- no syslog counters line.
function h.summary(stderr, name)
  local line = (stderr or ""):match("input '" .. name:gsub("%p", "%%%0") .. "': (%d+ [^\n]*"
    .. "malformed [^\n]*)")
  if not line then return nil end
  local s = {}
  for n, label in (line .. ","):gmatch("(%d+) ([^,]+),") do
    for key, text in pairs(COUNTERS) do
      if text == label then s[key] = tonumber(n) end
    end
  end
  s.malformed = s.malformed_frames or s.malformed_datagrams
  return s
end

-- The connection slots' counters of input `name` (h.summary's), or nil.
function h.slots(stderr, name)
  local s = h.summary(stderr, name)
  if not s or not s.connections then return nil end
  return { refused_address = s.refused_address, refused_fd = s.refused_fd, evicted = s.evicted,
           handshake_late = s.handshake_late, message_late = s.message_late }
end

-- How many times each value of records[i][key] occurs.
function h.count(records, key)
  local seen = {}
  for _, r in ipairs(records) do
    local v = r[key]
    if v ~= nil then seen[v] = (seen[v] or 0) + 1 end
  end
  return seen
end

-- The values of records[i][key] that match `pattern`, in arrival order.
function h.values(records, key, pattern)
  local out = {}
  for _, r in ipairs(records) do
    local v = r[key]
    if type(v) == "string" and (not pattern or v:find(pattern)) then out[#out + 1] = v end
  end
  return out
end

-- "PREFIX 1" .. "PREFIX n"
function h.numbered(prefix, n)
  local out = {}
  for i = 1, n do out[i] = prefix .. " " .. i end
  return out
end

-- Runs spec/e2e/syslog_client.py (see its header) in dir; its stdout, and
-- whether it exited 0.
function h.raw_client(dir, args)
  local p = io.popen("cd " .. run.quote(dir) .. " && timeout -s KILL 60 python3 " .. run.quote(h.client)
    .. " " .. args .. " 2>> client.err")
  local out = p:read("*a")
  local ok = p:close()
  return out, ok == true or ok == 0
end

-- rsyslogd (Debian's, with its OpenSSL driver) as a client: it reads
-- `lines` from a file through imfile and forwards them with omfwd.
-- forward = { protocol = "tcp" | "udp", port = N, framing = "traditional" |
-- "octet-counted", template = NAME (default: omfwd's,
-- RSYSLOG_TraditionalForwardFormat), tls = certs (certs.lua) to forward over
-- TLS with the ossl driver, verifying the server's name "localhost" }.
-- Its configuration is private: its own work directory and pid file, no
-- system sockets (no imuxsock, no imklog), its own messages to
-- rsyslog/internal.log. Retries forever while lumberjit is not reachable,
-- so nothing is discarded.
local function rsyslog_config(dir, forward)
  local globals = string.format('workDirectory="%s/work" processInternalMessages="on"', dir)
  local action = string.format('type="omfwd" target="127.0.0.1" port="%d" protocol="%s" '
    .. 'action.resumeRetryCount="-1" action.resumeInterval="1"', forward.port, forward.protocol)
  if forward.framing then action = action .. string.format(' TCP_Framing="%s"', forward.framing) end
  if forward.template then action = action .. string.format(' template="%s"', forward.template) end
  if forward.tls then
    globals = globals .. string.format(' defaultNetstreamDriverCAFile="%s" defaultNetstreamDriverCertFile="%s"'
      .. ' defaultNetstreamDriverKeyFile="%s"', forward.tls.ca, forward.tls.client_cert, forward.tls.client_key)
    action = action .. ' StreamDriver="ossl" StreamDriverMode="1" StreamDriverAuthMode="x509/name"'
      .. ' StreamDriverPermittedPeers="localhost"'
  end
  return string.format([[
global(%s)
module(load="imfile" mode="inotify")
input(type="imfile" file="%s/in.log" tag="app:" ruleset="forward")
ruleset(name="forward") {
  action(%s)
}
action(type="omfile" file="%s/internal.log")
]], globals, dir, action, dir)
end

-- Starts rsyslogd in lj.dir/rsyslog-NAME; returns its directory. Stop it
-- with h.stop_rsyslog once lumberjit holds everything it sent.
function h.start_rsyslog(lj, name, lines, forward)
  local dir = lj.dir .. "/rsyslog-" .. name
  assert(h.sh(lj.dir, "mkdir -p " .. run.quote(dir .. "/work")))
  run.write(dir .. "/in.log", table.concat(lines, "\n") .. "\n")
  run.write(dir .. "/rsyslog.conf", rsyslog_config(dir, forward))
  h.spawn(dir, "rsyslogd", "/usr/sbin/rsyslogd -n -f rsyslog.conf -i " .. run.quote(dir .. "/work/rsyslogd.pid"), 120)
  return dir
end

-- Stops rsyslogd (SIGTERM by its PID); its exit status.
function h.stop_rsyslog(dir)
  return h.terminate(dir, "rsyslogd", 30)
end

-- What rsyslogd said about itself (its internal messages and stderr), for
-- assertion messages.
function h.rsyslog_log(dir)
  return (run.read(dir .. "/internal.log") or "") .. (run.read(dir .. "/rsyslogd.err") or "")
end

h.cleanup, h.tmpdir = run.cleanup, run.tmpdir
h.read, h.write, h.quote = run.read, run.write, run.quote

return h
