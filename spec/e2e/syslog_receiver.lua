-- An rsyslogd (Debian's 8.x) receiving on 127.0.0.1 for the specs of
-- syslog_output (syslog_output_spec.lua, flaky_uplink_spec.lua,
-- disk_buffer_full_spec.lua), and check-records.py's verdict on what it
-- wrote.
--
-- The receiver writes each message's "line N" (a regex over %msg%, so the
-- same template serves RFC 5424 and RFC 3164) to DIR/out.log. rsyslogd runs
-- with its own pid file, which is what kill -9 and the stop use: by PID.
--
--   local r = dofile("spec/e2e/syslog_receiver.lua")
--   local port = r.start_receiver(dir, {})   -- { port =, udp =, tls = certs }
--   r.received(dir); r.check(dir)            -- DIR/in.log holds the lines expected
--   r.stop_receiver(dir)
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")

local CHECK = "/work/shared/check-records.py"

-- A port nothing listens on now, for TCP and UDP (run.free_ports).
local function free_port()
  return (run.free_ports())
end

local function receiver_config(dir, opts)
  local lines = {
    string.format('global(workDirectory="%s/work" processInternalMessages="on"%s)', dir, opts.tls
      and string.format(' defaultNetstreamDriver="ossl" defaultNetstreamDriverCAFile="%s"'
        .. ' defaultNetstreamDriverCertFile="%s" defaultNetstreamDriverKeyFile="%s"',
        opts.tls.ca, opts.tls.server_cert, opts.tls.server_key) or ""),
    'template(name="line" type="string" string="%msg:R,ERE,0,DFLT:line [0-9]+--end%\\n")',
    'ruleset(name="r") { action(type="omfile" file="' .. dir .. '/out.log" template="line") }',
  }
  if opts.udp then
    lines[#lines + 1] = 'module(load="imudp")'
    lines[#lines + 1] = string.format('input(type="imudp" address="127.0.0.1" port="%d" rcvbufSize="4m" ruleset="r")', opts.udp)
  else
    lines[#lines + 1] = 'module(load="imtcp"' .. (opts.tls and ' StreamDriver.Name="ossl" StreamDriver.Mode="1"'
      .. ' StreamDriver.AuthMode="x509/certvalid"' or "") .. ')'
    lines[#lines + 1] = string.format('input(type="imtcp" address="127.0.0.1" port="%d" '
      .. 'listenPortFileName="%s/port" ruleset="r")', opts.port or 0, dir)
  end
  lines[#lines + 1] = 'action(type="omfile" file="' .. dir .. '/internal.log")'
  return table.concat(lines, "\n") .. "\n"
end

-- Starts rsyslogd as a receiver in dir (kept across restarts: out.log
-- grows); opts = { port = N (0: any), udp = PORT, tls = certs, limit =
-- seconds before it is killed (120) }. Returns the TCP port it listens on
-- (or the UDP one).
local function start_receiver(dir, opts)
  assert(h.sh(dir, "mkdir -p work && rm -f port work/rsyslogd.pid"))
  run.write(dir .. "/rsyslog.conf", receiver_config(dir, opts))
  h.spawn(dir, "rsyslogd", "/usr/sbin/rsyslogd -n -f rsyslog.conf -i " .. run.quote(dir .. "/work/rsyslogd.pid"), opts.limit or 120)
  if opts.udp then
    assert(h.wait_until(function() return run.read(dir .. "/work/rsyslogd.pid") end, 10), "rsyslogd did not start")
    return opts.udp
  end
  -- rsyslogd writes the port file only for port 0; a given port is
  -- listened on once ss shows it.
  assert(h.wait_until(function()
    if opts.port and opts.port > 0 then
      return h.sh(dir, string.format("ss -Hltn 'sport = :%d' | grep -q .", opts.port))
    end
    local port = tonumber(run.read(dir .. "/port") or "")
    return port and port > 0
  end, 10), "rsyslogd did not listen:\n" .. (run.read(dir .. "/rsyslogd.err") or ""))
  return opts.port and opts.port > 0 and opts.port or tonumber(run.read(dir .. "/port"))
end

local function stop_receiver(dir)
  h.sh(dir, "kill -TERM $(cat work/rsyslogd.pid) 2>/dev/null")
  return h.wait_exit(dir, "rsyslogd", 30)
end

local function kill_receiver(dir)
  assert(h.sh(dir, "kill -KILL $(cat work/rsyslogd.pid)"))
  assert(h.wait_exit(dir, "rsyslogd", 30))
end

local function received(dir)
  return #run.lines(run.read(dir .. "/out.log"))
end

-- check-records.py's verdict on out.log against in.log: { delivered, lost,
-- duplicates, torn, disorder, text }.
local function check(dir)
  local p = io.popen("cd " .. run.quote(dir) .. " && python3 " .. CHECK .. " in.log out.log 2>&1")
  local text = p:read("*a")
  p:close()
  local delivered, lost, dups, torn, disorder =
    text:match("delivered (%d+), lost (%d+), duplicates (%d+), torn (%d+), out of order (%d+)")
  assert(lost, text)
  return { delivered = tonumber(delivered), lost = tonumber(lost), duplicates = tonumber(dups),
           torn = tonumber(torn), disorder = tonumber(disorder), text = text }
end

return {
  CHECK = CHECK, free_port = free_port, start_receiver = start_receiver, stop_receiver = stop_receiver,
  kill_receiver = kill_receiver, received = received, check = check,
}
