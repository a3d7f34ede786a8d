-- syslog_input through the binary with real clients: logger (util-linux)
-- over TCP, UDP and Unix sockets in both RFCs and both framings, openssl
-- s_client and a Python client over TLS with certificates made here,
-- malformed frames, max_connections and a stop while clients are sending.
-- rsyslogd as a client: syslog_rsyslog_spec.lua.
local h = dofile("spec/e2e/syslog_harness.lua")
local certs = dofile("spec/e2e/certs.lua")

local function listener(name, address, extra)
  return string.format('%s = { type = "syslog_input", address = "%s"%s }\n', name, address,
    extra and ", " .. extra or "")
end

-- logger reads one message per line from its stdin.
local function logger(lj, args, lines)
  h.write(lj.dir .. "/logger.in", table.concat(lines, "\n") .. "\n")
  assert.is_true(h.sh(lj.dir, "timeout -s KILL 30 logger --socket-errors=on " .. args .. " < logger.in 2>> logger.err"),
    h.read(lj.dir .. "/logger.err"))
end

local function tcp_logger(lj, name, args, lines)
  logger(lj, string.format("-T -n 127.0.0.1 -P %d %s", lj.port[name], args), lines)
end

-- The records of input `name`, by message text.
local function by_message(records, name)
  local out = {}
  for _, r in ipairs(records) do
    if r.inputname == name then
      assert.is_nil(out[r.message], "twice: " .. tostring(r.message))
      out[r.message] = r
    end
  end
  return out
end

local function messages_of(records, name)
  local out = {}
  for _, r in ipairs(records) do
    if r.inputname == name then out[#out + 1] = r.message end
  end
  return out
end

-- The file `name` in lj.dir, holding `data`; its name, for the raw client.
local function payload(lj, name, data)
  h.write(lj.dir .. "/" .. name, data)
  return name
end

describe("syslog_input with logger", function()
  it("parses RFC 5424 and RFC 3164 over TCP, newline and octet-counted, every message once", function()
    local lj = h.start(listener("tcp5424", "tcp://127.0.0.1:0", 'decoder = "rfc5424"')
      .. listener("tcp3164", "tcp://127.0.0.1:0", 'decoder = "rfc3164"') .. h.common_config)
    tcp_logger(lj, "tcp5424", "--rfc5424 -t spec5424 -p local3.warning", h.numbered("5424 newline", 50))
    tcp_logger(lj, "tcp5424", "--rfc5424 --octet-count -t spec5424 -p local3.warning",
      h.numbered("5424 octets", 50))
    tcp_logger(lj, "tcp3164", "--rfc3164 -t spec3164 -p mail.err", h.numbered("3164 newline", 50))
    tcp_logger(lj, "tcp3164", "--rfc3164 --octet-count -t spec3164 -p mail.err", h.numbered("3164 octets", 50))
    assert.is_true(h.wait_records(lj, 200))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(200, #r.records)
    assert.are.same({}, r.dead)
    -- In order per connection: logger sends its lines over one.
    local rfc5424, rfc3164 = messages_of(r.records, "tcp5424"), messages_of(r.records, "tcp3164")
    for _, prefix in ipairs({ "5424 newline", "5424 octets" }) do
      assert.are.same(h.numbered(prefix, 50), h.values(r.records, "message", "^" .. prefix))
    end
    for _, prefix in ipairs({ "3164 newline", "3164 octets" }) do
      assert.are.same(h.numbered(prefix, 50), h.values(r.records, "message", "^" .. prefix))
    end
    assert.are.equal(100, #rfc5424)
    assert.are.equal(100, #rfc3164)
    local a = by_message(r.records, "tcp5424")["5424 octets 7"]
    assert.are.equal("spec5424", a["app-name"])
    assert.are.equal(4, a.severity)
    assert.are.equal(19, a.syslogfacility)
    assert.are.equal("127.0.0.1", a["fromhost-ip"])
    assert.matches('^%[timeQuality ', a["structured-data"])
    local b = by_message(r.records, "tcp3164")["3164 newline 9"]
    assert.are.equal("spec3164", b.programname)
    assert.are.equal(3, b.severity)
    assert.are.equal(2, b.syslogfacility)
    assert.are.equal("127.0.0.1", b["fromhost-ip"])
    for _, name in ipairs({ "tcp5424", "tcp3164" }) do
      local s = h.summary(r.stderr, name)
      assert.is_truthy(s, "summary of " .. name)
      assert.are.equal(2, s.connections)
      assert.are.equal(0, s.malformed)
    end
    h.cleanup(lj.dir)
  end)

  it("receives logger's datagrams over UDP and a Unix datagram socket, and its stream over unix-stream", function()
    local lj = h.start(listener("udp", "udp://127.0.0.1:0", 'decoder = "rfc5424"')
      .. listener("devlog", "unix:$DIR/log.sock", 'decoder = "rfc3164"')
      .. listener("ustream", "unix-stream:$DIR/stream.sock", 'decoder = "rfc3164"') .. h.common_config)
    assert.are.equal(lj.dir .. "/log.sock", lj.path.devlog)
    logger(lj, string.format("-d -n 127.0.0.1 -P %d --rfc5424 -t udpspec", lj.port.udp), h.numbered("udp", 100))
    logger(lj, "-u " .. h.quote(lj.path.devlog) .. " --rfc3164 -t devlogspec", h.numbered("dgram", 100))
    logger(lj, "-T -u " .. h.quote(lj.path.ustream) .. " --rfc3164 -t streamspec", h.numbered("stream", 100))
    assert.is_true(h.wait_records(lj, 300))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(300, #r.records)
    assert.are.same(h.numbered("udp", 100), messages_of(r.records, "udp"))
    assert.are.same(h.numbered("dgram", 100), messages_of(r.records, "devlog"))
    assert.are.same(h.numbered("stream", 100), messages_of(r.records, "ustream"))
    local udp = by_message(r.records, "udp")["udp 1"]
    assert.are.equal("udpspec", udp["app-name"])
    assert.are.equal("127.0.0.1", udp["fromhost-ip"])
    local devlog = by_message(r.records, "devlog")["dgram 1"]
    assert.are.equal("devlogspec", devlog.programname)
    assert.are.equal(5, devlog.severity) -- logger's default: user.notice
    assert.is_nil(devlog["fromhost-ip"])  -- a Unix socket has no sender address
    local stream = by_message(r.records, "ustream")["stream 1"]
    assert.are.equal("streamspec", stream.programname)
    assert.is_nil(stream["fromhost-ip"])
    assert.are.equal(0, h.summary(r.stderr, "udp").dropped)
    assert.are.equal(0, h.summary(r.stderr, "devlog").dropped)
    -- Before: "input 'udp': 0 connections (...)" for a datagram listener.
    assert.is_nil(r.stderr:find("input 'udp': %d+ connections"))
    assert.is_nil(r.stderr:find("input 'udp': connection slots"))
    h.cleanup(lj.dir)
  end)
end)

-- An RFC 5424 line as a client would send it.
local function rfc5424(app, message)
  return "<134>1 2026-01-02T03:04:05.000Z spechost " .. app .. " - - - " .. message
end

-- Octet-counted framing (RFC 6587): "LENGTH MESSAGE".
local function octets(message)
  return #message .. " " .. message
end

describe("syslog_input over TLS", function()
  local c, certs_dir
  setup(function()
    certs_dir = h.tmpdir()
    c = certs.generate(certs_dir)
  end)
  teardown(function() h.cleanup(certs_dir) end)

  local function tls_listener(name, extra)
    return listener(name, "tls://127.0.0.1:0", string.format(
      'decoder = "rfc5424", tls = { cert = "%s", key = "%s"%s }', c.server_cert, c.server_key, extra or ""))
  end

  local function s_client(lj, name, file, args)
    return h.sh(lj.dir, string.format("timeout -s KILL 30 openssl s_client -connect 127.0.0.1:%d -CAfile %s "
      .. "-verify_return_error -quiet -no_ign_eof %s < %s >> s_client.out 2>&1", lj.port[name], h.quote(c.ca),
      args or "", file))
  end

  it("receives from openssl s_client and a Python client, both verifying its certificate", function()
    local lj = h.start(tls_listener("tls") .. h.common_config)
    local lines = {}
    for i = 1, 20 do lines[i] = rfc5424("sclient", "s_client " .. i) end
    h.write(lj.dir .. "/s_client.in", table.concat(lines, "\n") .. "\n")
    assert.is_true(s_client(lj, "tls", "s_client.in"), h.read(lj.dir .. "/s_client.out"))
    local frames = {}
    for i = 1, 20 do frames[i] = octets(rfc5424("pyclient", "python " .. i)) end
    payload(lj, "python.in", table.concat(frames))
    local _, ok = h.raw_client(lj.dir, "send " .. lj.address.tls .. " python.in --ca " .. h.quote(c.ca))
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.is_true(h.wait_records(lj, 40))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same(h.numbered("s_client", 20), h.values(r.records, "message", "^s_client"))
    assert.are.same(h.numbered("python", 20), h.values(r.records, "message", "^python"))
    local one = by_message(r.records, "tls")["python 3"]
    assert.are.equal("pyclient", one["app-name"])
    assert.are.equal("127.0.0.1", one["fromhost-ip"])
    assert.are.equal(2, h.summary(r.stderr, "tls").connections)
    h.cleanup(lj.dir)
  end)

  it("with verify_client, takes clients with a certificate of its CA and turns the others away", function()
    local lj = h.start(tls_listener("tls", string.format(', ca = "%s", verify_client = true', c.ca))
      .. h.common_config)
    local function python(message, cert, key)
      payload(lj, "python.in", octets(rfc5424("pyclient", message)))
      return h.raw_client(lj.dir, string.format("send %s python.in --ca %s%s", lj.address.tls, h.quote(c.ca),
        cert and string.format(" --cert %s --key %s", h.quote(cert), h.quote(key)) or ""))
    end
    python("with our certificate", c.client_cert, c.client_key)
    h.write(lj.dir .. "/nocert.in", rfc5424("sclient", "without a certificate") .. "\n")
    s_client(lj, "tls", "nocert.in")
    python("without a certificate either")
    python("with a stranger's certificate", c.other_cert, c.other_key)
    python("with our certificate again", c.client_cert, c.client_key)
    assert.is_true(h.wait_records(lj, 2))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "with our certificate", "with our certificate again" }, h.values(r.records, "message"))
    -- Before: the three turned away were in the log only.
    assert.matches("input 'tls': 5 connections, .*, 3 failed TLS sessions, 0 malformed frames", r.stderr)
    h.cleanup(lj.dir)
  end)
end)

describe("syslog_input with malformed frames", function()
  it("dead-letters bad octet counts and frames cut short, counts them, and goes on", function()
    local lj = h.start(listener("octets", "tcp://127.0.0.1:0", 'framing = "octet_counted"') .. h.common_config)
    local function send(name, data, flags)
      local out, ok = h.raw_client(lj.dir, "send " .. lj.address.octets .. " " .. payload(lj, name, data)
        .. " " .. (flags or ""))
      assert.is_true(ok, h.read(lj.dir .. "/client.err"))
      return out
    end
    -- A count that is no number: resynced at the next newline, the
    -- connection goes on.
    send("bad-count", "12x <13>bad count\n" .. octets("<13>same connection, after the bad count"))
    -- A connection that ends in the middle of a frame, by FIN and by RST.
    send("cut-fin", octets("<13>before the cut") .. "100 <13>cut short")
    send("cut-rst", octets("<13>before the reset") .. "100 <13>reset in the middle", "--reset")
    send("good", octets("<13>on a new connection"))
    assert.is_true(h.wait_records(lj, 4))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local got = h.count(r.records, "message")
    assert.are.same({ ["<13>same connection, after the bad count"] = 1, ["<13>before the cut"] = 1,
                      ["<13>before the reset"] = 1, ["<13>on a new connection"] = 1 }, got)
    for _, record in ipairs(r.records) do
      assert.are.equal("octets", record.inputname)
      -- A peer that reset before its connection was accepted has no
      -- address left to ask for (getpeername: ENOTCONN).
      if record.message ~= "<13>before the reset" or record["fromhost-ip"] then
        assert.are.equal("127.0.0.1", record["fromhost-ip"])
      end
    end
    local s = h.summary(r.stderr, "octets")
    assert.are.equal(3, s.malformed)
    assert.are.equal(4, s.connections)
    assert.are.equal(3, #r.dead)
    for _, dead in ipairs(r.dead) do
      assert.are.equal("octets", dead.input)
      assert.is_truthy(dead.reason and #dead.reason > 0, "a reason")
    end
    assert.matches("12x", r.dead[1].payload)
    assert.matches("cut short", r.dead[2].payload)
    h.cleanup(lj.dir)
  end)

  it("passes binary bytes through, dead-letters 10 MB messages in max_line pieces in both framings, and goes on",
     function()
    local lj = h.start(listener("auto", "tcp://127.0.0.1:0") .. h.common_config)
    local big = ("x"):rep(10 * 1024 * 1024)
    local function send(name, data, flags)
      local _, ok = h.raw_client(lj.dir, "send " .. lj.address.auto .. " " .. payload(lj, name, data)
        .. " " .. (flags or ""))
      assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    end
    send("binary", "<13>binary \0\1\2\255\254 end\n<13>after the binary bytes\n")
    local garbage = {}
    for i = 0, 4095 do garbage[#garbage + 1] = string.char((i * 37) % 256) end
    send("garbage", table.concat(garbage))
    send("big-newline", "<13>big " .. big .. "\n<13>after the big line\n")
    send("big-octets", octets("<13>big " .. big) .. octets("<13>after the big frame"))
    send("good", "<13>all is well\n")
    assert.is_true(h.wait_records(lj, 4))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local got = h.count(r.records, "message")
    for _, message in ipairs({ "<13>after the binary bytes", "<13>after the big line", "<13>after the big frame",
                               "<13>all is well" }) do
      assert.are.equal(1, got[message], message)
    end
    -- The invalid UTF-8 is escaped by the JSON encoder; the bytes are there.
    local binary = h.values(r.records, "message", "^<13>binary ")
    assert.are.equal(1, #binary)
    assert.is_truthy(binary[1]:find("\0\1\2", 1, true))
    -- Each big message went to the dead-letter file in 64 KiB pieces.
    local pieces, bytes = 0, 0
    for _, dead in ipairs(r.dead) do
      if dead.payload and dead.payload:find("^x*$") or dead.payload and dead.payload:find("^<13>big x") then
        pieces, bytes = pieces + 1, bytes + #dead.payload
        assert.are.equal("auto", dead.input)
        assert.is_truthy(dead.reason)
      end
    end
    assert.is_true(pieces >= 2 * 160, pieces .. " pieces")
    assert.are.equal(2 * (#big + 8), bytes)
    assert.matches("input 'auto': %d+ records %(2 longer than max_line", r.stderr)
    h.cleanup(lj.dir)
  end)
end)

describe("syslog_input's max_connections", function()
  it("refuses a connection over the limit when every connection has sent something, counts it, and serves the others", function()
    local lj = h.start(listener("limited", "tcp://127.0.0.1:0", "max_connections = 3") .. h.common_config)
    h.spawn(lj.dir, "client", "python3 " .. h.quote(h.client) .. " hold " .. lj.address.limited .. " 3 --speak --go go")
    assert.is_true(h.wait_records(lj, 3))
    h.write(lj.dir .. "/go", "")
    assert.are.equal(0, h.wait_exit(lj.dir, "client", 30), h.read(lj.dir .. "/client.err"))
    assert.are.equal("extra: closed by server\n", h.read(lj.dir .. "/client.out"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ ["<13>held 1"] = 1, ["<13>held 2"] = 1, ["<13>held 3"] = 1 }, h.count(r.records, "message"))
    assert.are.equal(1, h.summary(r.stderr, "limited").refused)
    assert.matches("refused a connection from 127.0.0.1:%d+: max_connections %(3%) reached, none of them silent", r.stderr)
    h.cleanup(lj.dir)
  end)
end)

describe("syslog_input stopped by SIGTERM", function()
  it("writes everything a connected client had sent before the stop", function()
    local lj = h.start(listener("tcp", "tcp://127.0.0.1:0") .. h.common_config)
    local lines = {}
    for i = 1, 100000 do lines[i] = "<13>line " .. i end
    payload(lj, "lines", table.concat(lines, "\n") .. "\n")
    -- The client keeps its connection open after sending.
    h.spawn(lj.dir, "client", "python3 " .. h.quote(h.client) .. " send " .. lj.address.tcp .. " lines --linger 60")
    assert.is_true(h.wait_until(function() return (h.read(lj.dir .. "/client.out") or ""):find("sent") end, 30))
    local r = h.stop(lj)
    h.terminate(lj.dir, "client", 5)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same(lines, h.values(r.records, "message"))
    h.cleanup(lj.dir)
  end)

  it("writes everything logger sent over TCP, UDP and a Unix socket before the stop", function()
    local lj = h.start(listener("tcp", "tcp://127.0.0.1:0") .. listener("udp", "udp://127.0.0.1:0")
      .. listener("devlog", "unix:$DIR/log.sock") .. h.common_config)
    logger(lj, string.format("-T -n 127.0.0.1 -P %d --rfc3164 -t tcp", lj.port.tcp), h.numbered("tcp", 20000))
    logger(lj, string.format("-d -n 127.0.0.1 -P %d --rfc3164 -t udp", lj.port.udp), h.numbered("udp", 2000))
    logger(lj, "-u " .. h.quote(lj.path.devlog) .. " --rfc3164 -t devlog", h.numbered("devlog", 2000))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    for _, name in ipairs({ "tcp", "udp", "devlog" }) do
      local got = {}
      for _, message in ipairs(messages_of(r.records, name)) do got[#got + 1] = message:match(": (.*)$") end
      assert.are.same(h.numbered(name, name == "tcp" and 20000 or 2000), got)
    end
    assert.are.equal(0, h.summary(r.stderr, "udp").dropped)
    h.cleanup(lj.dir)
  end)
end)
