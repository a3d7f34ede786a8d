-- Connection slots anyone can take (syslog_accept.c): silent connections
-- never keep a sender out. 1,000 connections that send nothing fill the
-- table of a tcp:// and a tls:// listener, then real clients (logger,
-- openssl s_client) send, and every message arrives; an address over its
-- share; the TLS handshake and first message deadlines. Silent connections
-- come from spec/e2e/syslog_client.py, from 127.0.0.2 and up.
local h = dofile("spec/e2e/syslog_harness.lua")
local certs = dofile("spec/e2e/certs.lua")

local function rfc5424(app, message)
  return "<134>1 2026-01-02T03:04:05.000Z spechost " .. app .. " - - - " .. message
end

local function messages(records, name)
  local out = {}
  for _, r in ipairs(records) do
    if r.inputname == name then out[#out + 1] = r.message end
  end
  return out
end

-- Opens n silent connections to address from `hosts` addresses in the
-- background as `name`; returns once they are open.
local function silent(lj, name, address, n, hosts)
  h.spawn(lj.dir, name, string.format("python3 %s crowd %s %d --hosts %d --go %s.go", h.quote(h.client), address,
    n, hosts, name), 120)
  assert.is_true(h.wait_until(function() return (h.read(lj.dir .. "/" .. name .. ".out") or ""):find("open") end, 60),
    h.read(lj.dir .. "/" .. name .. ".err"))
end

-- Lets the silent connections of `name` go; how many the server closed.
local function release(lj, name)
  h.write(lj.dir .. "/" .. name .. ".go", "")
  assert.are.equal(0, h.wait_exit(lj.dir, name, 60), h.read(lj.dir .. "/" .. name .. ".err"))
  return tonumber(h.read(lj.dir .. "/" .. name .. ".out"):match("closed by server: (%d+)"))
end

describe("syslog_input's connection slots", function()
  local c, certs_dir
  setup(function()
    certs_dir = h.tmpdir()
    c = certs.generate(certs_dir)
  end)
  teardown(function() h.cleanup(certs_dir) end)

  local function tls_keys()
    return string.format('tls = { cert = "%s", key = "%s" }', c.server_cert, c.server_key)
  end

  it("lets real clients in past 1,000 silent connections on tcp:// and tls://, every message arriving", function()
    -- lumberjit holds 2,000 connections (it raises its soft limit to the
    -- hard one) beside its reserve.
    local hard = tonumber(io.popen("sh -c 'ulimit -Hn'"):read("*l"))
    if hard and hard < 4096 then
      pending("RLIMIT_NOFILE's hard limit is " .. hard .. ": 2,000 connections do not fit")
      return
    end
    -- Deadlines far off, so that only making room is at work however
    -- slow the machine.
    local far = "tls_handshake_timeout_ms = 600000, first_message_timeout_ms = 600000"
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", decoder = "rfc3164", '
      .. far .. ' }\n'
      .. 'tls = { type = "syslog_input", address = "tls://127.0.0.1:0", decoder = "rfc5424", ' .. far .. ', '
      .. tls_keys() .. ' }\n' .. h.common_config)
    -- 100 from each of 10 addresses: the defaults, max_connections 1000
    -- and max_connections_per_address 100, are full.
    silent(lj, "silent_tcp", lj.address.tcp, 1000, 10)
    silent(lj, "silent_tls", lj.address.tls, 1000, 10)
    local lines = h.numbered("logger", 50)
    h.write(lj.dir .. "/logger.in", table.concat(lines, "\n") .. "\n")
    assert.is_true(h.sh(lj.dir, string.format("timeout -s KILL 30 logger --socket-errors=on -T -n 127.0.0.1 -P %d "
      .. "--rfc3164 -t slots < logger.in 2>> logger.err", lj.port.tcp)), h.read(lj.dir .. "/logger.err"))
    local tls_lines = {}
    for i = 1, 50 do tls_lines[i] = rfc5424("sclient", "s_client " .. i) end
    h.write(lj.dir .. "/s_client.in", table.concat(tls_lines, "\n") .. "\n")
    assert.is_true(h.sh(lj.dir, string.format("timeout -s KILL 30 openssl s_client -connect 127.0.0.1:%d -CAfile %s "
      .. "-verify_return_error -quiet -no_ign_eof < s_client.in >> s_client.out 2>&1", lj.port.tls, h.quote(c.ca))),
      h.read(lj.dir .. "/s_client.out"))
    assert.is_true(h.wait_records(lj, 100))
    local closed_tcp, closed_tls = release(lj, "silent_tcp"), release(lj, "silent_tls")
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local got = {}
    for i, message in ipairs(messages(r.records, "tcp")) do got[i] = message:match("(logger %d+)$") end
    assert.are.same(lines, got)
    assert.are.same(h.numbered("s_client", 50), messages(r.records, "tls"))
    for name, closed in pairs({ tcp = closed_tcp, tls = closed_tls }) do
      local s, slots = h.summary(r.stderr, name), h.slots(r.stderr, name)
      assert.are.equal(1001, s.connections)
      assert.are.equal(0, s.refused)
      -- The sender's connection closed the oldest silent one.
      assert.are.equal(1, slots.evicted)
      assert.are.equal(1, closed)
    end
    assert.matches("input 'tcp': closed a silent connection from 127%.0%.0%.%d+:%d+ %(no message for %d+ ms%) to make "
      .. "room: max_connections %(1000%) reached %(1 so far", r.stderr)
    h.cleanup(lj.dir)
  end)

  it("closes an address's oldest silent connection past max_connections_per_address, and refuses it with none", function()
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", max_connections_per_address = 5 }\n'
      .. h.common_config)
    silent(lj, "silent", lj.address.tcp, 7, 1)
    -- Five senders from 127.0.0.3 fill its share; a sixth is refused.
    h.spawn(lj.dir, "client", string.format("python3 %s hold %s 5 --speak --go go --source 127.0.0.3", h.quote(h.client),
      lj.address.tcp))
    assert.is_true(h.wait_records(lj, 5))
    h.write(lj.dir .. "/go", "")
    assert.are.equal(0, h.wait_exit(lj.dir, "client", 30), h.read(lj.dir .. "/client.err"))
    assert.are.equal("extra: closed by server\n", h.read(lj.dir .. "/client.out"))
    assert.are.equal(2, release(lj, "silent"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ ["<13>held 1"] = 1, ["<13>held 2"] = 1, ["<13>held 3"] = 1, ["<13>held 4"] = 1,
      ["<13>held 5"] = 1 }, h.count(r.records, "message"))
    local slots = h.slots(r.stderr, "tcp")
    assert.are.equal(2, slots.evicted)
    assert.are.equal(1, slots.refused_address)
    assert.matches("to make room: max_connections_per_address %(5%) reached by 127%.0%.0%.2", r.stderr)
    assert.matches("refused a connection from 127%.0%.0%.3:%d+: max_connections_per_address %(5%) reached by "
      .. "127%.0%.0%.3, none of them silent", r.stderr)
    h.cleanup(lj.dir)
  end)

  it("gives back the slots of connections whose peers closed before refusing one over an address's share", function()
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", max_connections_per_address = 20 }\n'
      .. h.common_config)
    -- 60 short connections (connect, send, close) wait in the kernel's
    -- queue while lumberjit is stopped (SIGSTOP to its PID, the child of
    -- the `timeout` the harness started), then are taken at once.
    local pid = io.popen("pgrep -P $(cat " .. h.quote(lj.dir .. "/lumberjit.pid") .. ")"):read("*l")
    assert.is_truthy(pid)
    assert.is_true(h.sh(lj.dir, "kill -STOP " .. pid))
    local ok = h.sh(lj.dir, string.format("python3 -c \"import socket\nfor i in range(1, 61):\n"
      .. "    s = socket.create_connection(('127.0.0.1', %d), timeout=10)\n"
      .. "    s.sendall(b'<13>short %%d\\n' %% i)\n    s.close()\" 2>> client.err", lj.port.tcp))
    assert.is_true(h.sh(lj.dir, "kill -CONT " .. pid))
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.is_true(h.wait_records(lj, 60), #h.lines(lj) .. " records\n" .. h.read(lj.dir .. "/lumberjit.err"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(60, #h.values(r.records, "message", "^<13>short %d+$"))
    assert.are.equal(0, h.slots(r.stderr, "tcp").refused_address)
    h.cleanup(lj.dir)
  end)

  it("closes a TLS handshake and a first message that come too late, and keeps a sender", function()
    local lj = h.start('tls = { type = "syslog_input", address = "tls://127.0.0.1:0", tls_handshake_timeout_ms = 200, '
      .. 'first_message_timeout_ms = 600, ' .. tls_keys() .. ' }\n'
      .. 'tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", first_message_timeout_ms = 600 }\n'
      .. h.common_config)
    h.write(lj.dir .. "/empty", "")
    h.write(lj.dir .. "/one", "<13>one\n")
    -- No handshake; a handshake and no message; no message; a message.
    local function closed(args)
      local out, ok = h.raw_client(lj.dir, "send " .. args .. " --wait-close 10 --stay-open")
      assert.is_true(ok, h.read(lj.dir .. "/client.err"))
      return out:find("closed by server") ~= nil
    end
    silent(lj, "raw", lj.address.tls, 1, 1)
    assert.is_true(closed(lj.address.tls .. " empty --ca " .. h.quote(c.ca)))
    assert.is_true(closed(lj.address.tcp .. " empty"))
    local out, ok = h.raw_client(lj.dir, "send " .. lj.address.tcp .. " one --wait-close 1.5 --stay-open")
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.is_nil(out:find("closed by server"))
    assert.are.equal(1, release(lj, "raw"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "<13>one" }, h.values(r.records, "message"))
    assert.are.same({ refused_address = 0, refused_fd = 0, evicted = 0, handshake_late = 1, message_late = 1 },
      h.slots(r.stderr, "tls"))
    assert.are.same({ refused_address = 0, refused_fd = 0, evicted = 0, handshake_late = 0, message_late = 1 },
      h.slots(r.stderr, "tcp"))
    assert.matches("closed a connection from 127%.0%.0%.2:%d+: no TLS handshake within tls_handshake_timeout_ms %(200%)",
      r.stderr)
    assert.matches("closed a connection from 127%.0%.0%.1:%d+: no whole message within first_message_timeout_ms "
      .. "%(600%)", r.stderr)
    h.cleanup(lj.dir)
  end)
end)
