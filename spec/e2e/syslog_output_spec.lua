-- syslog_output forwarding to a real rsyslogd (Debian's 8.x) receiving with
-- imtcp (octet counting and newline framing), imudp and imtcp over TLS with
-- its OpenSSL driver (each side verifying the other), through a receiver
-- that is not up at the start, one killed (kill -9) and restarted, and a
-- disk buffer that keeps records across runs and holds the inputs when
-- full. Every record the receiver wrote is checked against what lumberjit
-- read with /work/shared/check-records.py: none lost, torn or out of order.
-- The receiver is spec/e2e/syslog_receiver.lua's.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local certs = dofile("spec/e2e/certs.lua")

local receiver = dofile("spec/e2e/syslog_receiver.lua")
local free_port, start_receiver, stop_receiver = receiver.free_port, receiver.start_receiver, receiver.stop_receiver
local kill_receiver, received, check = receiver.kill_receiver, receiver.received, receiver.check

local function assert_every_record(dir, dups_allowed)
  local c = check(dir)
  assert.are.equal(0, c.lost, c.text)
  assert.are.equal(0, c.torn, c.text)
  assert.are.equal(0, c.disorder, c.text)
  if not dups_allowed then assert.are.equal(0, c.duplicates, c.text) end
end

local function write_lines(dir, from, to, mode)
  local f = assert(io.open(dir .. "/in.log", mode or "ab"))
  for i = from, to do f:write("line ", i, "\n") end
  f:close()
end

local ENCODERS = [[
rfc5424 = { type = "encoder", filename = "encoders/rfc5424.lua", hostname = "spec", output_limit = 1048576 }
rfc3164 = { type = "encoder", filename = "encoders/template.lua", template = "<13>Nov 26 23:00:00 spec app: %msg%" }
]]

-- The config of a run: a tail_input on in.log from its head, the output
-- `fwd` with the given settings (a Lua table's inside), a state_dir.
local function config(output)
  return 'lumberjit = { dead_letter_path = "dead.log", state_dir = "state", stop_timeout_ms = 2000 }\n'
    .. 'app = { type = "tail_input", paths = { "in.log" }, read_from_head = true, scan_interval_ms = 50 }\n'
    .. ENCODERS
    .. 'fwd = { type = "syslog_output", message_matcher = "TRUE", reconnect_min_ms = 50, reconnect_max_ms = 400, '
    .. output .. ' }\n'
end

-- Starts lumberjit in dir (with its in.log) on `config`.
local function start_lumberjit(dir, text)
  assert(h.sh(dir, "mkdir -p state"))
  run.write(dir .. "/config.lua", text)
  h.spawn(dir, "lumberjit", run.quote(run.bin) .. " -c config.lua", 120)
end

local function lumberjit_log(dir)
  return run.read(dir .. "/lumberjit.err") or ""
end

local function wait_log(dir, pattern, seconds)
  return h.wait_until(function() return lumberjit_log(dir):find(pattern) end, seconds or 30)
end

-- Stops lumberjit with SIGTERM; its exit status and stderr.
local function stop_lumberjit(dir)
  local status = h.terminate(dir, "lumberjit", 30)
  return status, lumberjit_log(dir)
end

-- One run to a receiver that is up: N lines forwarded, every one checked.
local function forward(n, receiver_opts, output)
  local dir = h.tmpdir()
  write_lines(dir, 1, n, "wb")
  local port = start_receiver(dir, receiver_opts)
  start_lumberjit(dir, config(output:gsub("PORT", tostring(port))))
  local arrived = h.wait_until(function() return received(dir) >= n end, 60)
  local status, stderr = stop_lumberjit(dir)
  assert.are.equal(0, stop_receiver(dir))
  assert.is_true(arrived, received(dir) .. " of " .. n .. " arrived\n" .. stderr .. (run.read(dir .. "/internal.log") or ""))
  assert.are.equal(0, status, stderr)
  assert_every_record(dir)
  return dir, stderr
end

describe("syslog_output to rsyslogd", function()
  it("over TCP with octet counting (RFC 5424)", function()
    local dir, stderr = forward(3000, {}, 'encoder = "rfc5424", address = "tcp://127.0.0.1:PORT"')
    assert.truthy(stderr:find("3000 sent, 3000 delivered", 1, true), stderr)
    h.cleanup(dir)
  end)

  -- A name, resolved at each connection attempt (its addresses tried in
  -- turn: localhost can be ::1 first, where the receiver does not listen).
  it("over TCP with newline framing (RFC 3164 by a template), to a name", function()
    local dir = forward(3000, {}, 'encoder = "rfc3164", framing = "newline", address = "tcp://localhost:PORT"')
    h.cleanup(dir)
  end)

  -- An uplink paid by the byte: 2000 records of 43 bytes with newline
  -- framing (86 KB) under a cap of 20 KB a second cannot all be sent in
  -- less than (86 - 20) / 20 = 3.3 s (the bucket starts with one second's
  -- bytes); the bound is a floor the cap sets, never a race.
  it("holds to max_bytes_per_second", function()
    local function now() return tonumber(io.popen("date +%s.%N"):read("*l")) end
    local start = now()
    local dir = forward(2000, {}, 'encoder = "rfc3164", framing = "newline", max_bytes_per_second = 20000, ' ..
      'address = "tcp://127.0.0.1:PORT"')
    assert.is_true(now() - start >= 3.2, "sent in " .. (now() - start) .. " s")
    h.cleanup(dir)
  end)

  it("over UDP, one datagram per record, too large ones dead-lettered", function()
    local dir = h.tmpdir()
    local port = free_port()
    write_lines(dir, 1, 1000, "wb")
    start_receiver(dir, { udp = port })
    -- rsyslogd logs once imudp listens; the first datagrams must not
    -- come before.
    assert(h.wait_until(function()
      return (run.read(dir .. "/internal.log") or ""):find("start") end, 10))
    local big = string.rep("x", 66000)
    h.sh(dir, "printf 'big %s\\n' " .. big .. " > big.log")
    start_lumberjit(dir, config('encoder = "rfc5424", address = "udp://127.0.0.1:' .. port .. '"')
      :gsub('paths = { "in.log" }', 'paths = { "in.log", "big.log" }, max_line = 100000'))
    local arrived = h.wait_until(function() return received(dir) >= 1000 end, 60)
    assert.truthy(h.wait_until(function() return (run.read(dir .. "/dead.log") or ""):find("UDP datagram") end, 30))
    local status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, stop_receiver(dir))
    assert.is_true(arrived, received(dir) .. " of 1000 arrived\n" .. stderr)
    -- The dead letter makes the run fail, as every failed record does.
    assert.are.equal(1, status, stderr)
    assert.truthy(stderr:find("1 refused", 1, true), stderr)
    assert_every_record(dir)
    h.cleanup(dir)
  end)

  it("over TLS with rsyslog's OpenSSL driver, each side verifying the other", function()
    local certs_dir = h.tmpdir()
    local c = certs.generate(certs_dir)
    local dir = forward(2000, { tls = c }, string.format('encoder = "rfc5424", address = "tls://PORT", '
      .. 'tls_ca = "%s", tls_cert = "%s", tls_key = "%s"', c.ca, c.client_cert, c.client_key)
      :gsub("tls://PORT", "tls://127.0.0.1:PORT"))
    h.cleanup(dir)
    h.cleanup(certs_dir)
  end)

  it("refuses a TLS server whose certificate does not carry the name", function()
    local certs_dir = h.tmpdir()
    local c = certs.generate(certs_dir)
    local dir = h.tmpdir()
    write_lines(dir, 1, 10, "wb")
    local port = start_receiver(dir, { tls = c })
    start_lumberjit(dir, config(string.format('encoder = "rfc5424", address = "tls://127.0.0.1:%d", '
      .. 'tls_ca = "%s", tls_cert = "%s", tls_key = "%s", tls_server_name = "elsewhere.example"',
      port, c.ca, c.client_cert, c.client_key)))
    assert.truthy(wait_log(dir, "certificate verify failed"), lumberjit_log(dir))
    local status = stop_lumberjit(dir)
    stop_receiver(dir)
    assert.are.equal(0, received(dir))
    -- The records were never delivered: they stay for the next run.
    assert.are.equal(0, status, lumberjit_log(dir))
    assert.truthy(lumberjit_log(dir):find("10 left unacknowledged", 1, true), lumberjit_log(dir))
    h.cleanup(dir)
    h.cleanup(certs_dir)
  end)

  it("waits for a receiver that is not up at the start", function()
    local dir = h.tmpdir()
    local port = free_port()
    write_lines(dir, 1, 2000, "wb")
    start_lumberjit(dir, config('encoder = "rfc5424", address = "tcp://127.0.0.1:' .. port .. '"'))
    assert.truthy(wait_log(dir, "reconnecting with back%-off"), lumberjit_log(dir))
    start_receiver(dir, { port = port })
    local arrived = h.wait_until(function() return received(dir) >= 2000 end, 60)
    local status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, stop_receiver(dir))
    assert.is_true(arrived, received(dir) .. " arrived\n" .. stderr)
    assert.are.equal(0, status, stderr)
    -- Said once for the outage, not per attempt.
    assert.are.equal(1, select(2, stderr:gsub("reconnecting with back%-off", "")), stderr)
    assert.truthy(stderr:find("sending again", 1, true), stderr)
    assert_every_record(dir)
    h.cleanup(dir)
  end)

  it("sends again after the receiver was killed (kill -9) and restarted", function()
    local dir = h.tmpdir()
    write_lines(dir, 1, 2000, "wb")
    local port = start_receiver(dir, {})
    start_lumberjit(dir, config('encoder = "rfc5424", address = "tcp://127.0.0.1:' .. port .. '"'))
    assert(h.wait_until(function() return received(dir) >= 2000 end, 60))
    kill_receiver(dir)
    assert.truthy(wait_log(dir, "the receiver closed the connection"), lumberjit_log(dir))
    -- Written while the receiver is away: they wait in the queue.
    write_lines(dir, 2001, 4000)
    start_receiver(dir, { port = port })
    local arrived = h.wait_until(function() return received(dir) >= 4000 end, 60)
    local status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, stop_receiver(dir))
    assert.is_true(arrived, received(dir) .. " arrived\n" .. stderr)
    assert.are.equal(0, status, stderr)
    assert_every_record(dir)
    h.cleanup(dir)
  end)

  it("keeps records in the disk buffer across runs while the receiver is away", function()
    local dir = h.tmpdir()
    local port = free_port()
    write_lines(dir, 1, 3000, "wb")
    local output = 'encoder = "rfc5424", address = "tcp://127.0.0.1:' .. port .. '", disk_buffer = { max_bytes = 33554432 }'
    start_lumberjit(dir, config(output))
    assert.truthy(wait_log(dir, "records go to the disk buffer"), lumberjit_log(dir))
    local status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, status, stderr)
    local held = tonumber(stderr:match("which holds (%d+) records"))
    assert.truthy(held and held > 0, stderr)
    -- The next run, with the receiver up: the disk buffer first, then the
    -- rest of the file.
    h.sh(dir, "mv lumberjit.err run1.err")
    start_receiver(dir, { port = port })
    start_lumberjit(dir, config(output))
    local arrived = h.wait_until(function() return received(dir) >= 3000 end, 60)
    status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, stop_receiver(dir))
    assert.is_true(arrived, received(dir) .. " arrived\n" .. stderr)
    assert.are.equal(0, status, stderr)
    assert.truthy(stderr:find("from an earlier run", 1, true), stderr)
    assert.are.equal(tostring(held), stderr:match("%((%d+) of them from the disk buffer%)"), stderr)
    assert_every_record(dir)
    h.cleanup(dir)
  end)

  it("holds the inputs when the disk buffer is full, and loses nothing", function()
    local dir = h.tmpdir()
    local port = free_port()
    local n = 40000
    write_lines(dir, 1, n, "wb")
    -- The smallest memory budget: the queue fills soon after the disk
    -- buffer did, and then the input waits.
    start_lumberjit(dir, config('encoder = "rfc5424", address = "tcp://127.0.0.1:' .. port
      .. '", disk_buffer = { max_bytes = 16384, segment_bytes = 8192 }')
      :gsub("stop_timeout_ms = 2000", "stop_timeout_ms = 2000, memory_budget = 1048576"))
    assert.truthy(wait_log(dir, "the disk buffer is full; holding the inputs"), lumberjit_log(dir))
    start_receiver(dir, { port = port })
    local arrived = h.wait_until(function() return received(dir) >= n end, 60)
    local status, stderr = stop_lumberjit(dir)
    assert.are.equal(0, stop_receiver(dir))
    assert.is_true(arrived, received(dir) .. " arrived\n" .. stderr)
    assert.are.equal(0, status, stderr)
    assert.truthy(stderr:find("the disk buffer is drained", 1, true), stderr)
    local paused = tonumber(stderr:match("inputs paused (%d+) times"))
    assert.truthy(paused and paused > 0, stderr)
    assert_every_record(dir)
    h.cleanup(dir)
  end)
end)

describe("syslog_output's settings", function()
  local function check_config(output, extra)
    local r = run.lumberjit{ args = "--check", config = (extra or "") .. 'inp = { type = "stdin_input" }\n'
      .. 'fwd = { type = "syslog_output", message_matcher = "TRUE", ' .. output .. ' }\n' }
    h.cleanup(r.dir)
    return r
  end

  it("names what is wrong", function()
    local cases = {
      { 'address = "tcp:/127.0.0.1:514"', "must start with tcp://, tls:// or udp://" },
      { 'address = "tcp://127.0.0.1"', "HOST:PORT must follow the scheme" },
      { 'address = "tcp://127.0.0.1:70000"', "the port must be a number from 1 to 65535" },
      { 'address = "udp://127.0.0.1:514", framing = "octet_counting"', "over UDP each record is one datagram" },
      { 'address = "tcp://127.0.0.1:514", framing = "lines"', "must be octet_counting or newline" },
      { 'address = "tcp://127.0.0.1:514", framing = "newline", newline = false', "the newline ends each record" },
      { 'address = "tcp://127.0.0.1:514", tls_ca = "ca.pem"', "is for tls:// addresses only" },
      { 'address = "tls://127.0.0.1:6514", tls_cert = "c.pem"', "needs tls_key too" },
      { 'address = "tls://127.0.0.1:6514", tls_ca = "/nonexistent/ca.pem"', "tls_ca /nonexistent/ca.pem" },
      { 'address = "tcp://127.0.0.1:514", reconnect_min_ms = 500, reconnect_max_ms = 100',
        "must be at least reconnect_min_ms" },
      { 'address = "tcp://127.0.0.1:514", disk_buffer = { max_bytes = 1073741824 }',
        "needs a path, or lumberjit.state_dir" },
      { 'address = "tcp://127.0.0.1:514", disk_buffer = { path = "b", when_full = "drop" }',
        'key \'when_full\' must be "hold" or "drop_oldest"' },
      { 'address = "tcp://127.0.0.1:514", disk_buffer = { path = "b", max_bytes = 65536, segment_bytes = 65536, '
        .. 'when_full = "drop_oldest" }', "needs max_bytes at least twice segment_bytes" },
      { 'adress = "tcp://127.0.0.1:514"', "adress" },
    }
    for _, case in ipairs(cases) do
      local r = check_config(case[1])
      assert.are_not.equal(0, r.status, case[1])
      assert.truthy(r.stderr:find(case[2], 1, true), case[1] .. ": " .. r.stderr)
      assert.truthy(r.stderr:find("config.lua:", 1, true), r.stderr)
    end
  end)

  it("accepts a good one", function()
    local r = check_config('address = "tcp://logs.example.com:514", framing = "newline", send_timeout_ms = 0, '
      .. 'disk_buffer = { path = "buffer", max_bytes = 1048576, segment_bytes = 65536, when_full = "drop_oldest" }')
    assert.are.equal(0, r.status, r.stderr)
  end)
end)
