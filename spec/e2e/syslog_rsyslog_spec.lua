-- syslog_input receiving from a real rsyslogd (Debian's 8.x) that forwards
-- with omfwd: TCP with newline framing ("traditional") and octet counting,
-- UDP, and TLS through its OpenSSL driver with certificates made here
-- (rsyslog verifies lumberjit's certificate and name, lumberjit verifies
-- rsyslog's). rsyslogd reads 1000 lines from a file and forwards each as a
-- message; every one arrives, once, in the order sent.
local h = dofile("spec/e2e/syslog_harness.lua")
local certs = dofile("spec/e2e/certs.lua")

local N = 1000

-- Starts lumberjit with `listener_config` (an input named "syslog"), lets
-- rsyslogd forward N lines to it, stops both; returns lumberjit's run.
local function forward(listener_config, forwarding)
  local lj = h.start(listener_config .. h.common_config)
  forwarding.port = lj.port.syslog
  local rsyslog = h.start_rsyslog(lj, "client", h.numbered("msg", N), forwarding)
  local arrived = h.wait_records(lj, N, 60)
  assert.are.equal(0, h.stop_rsyslog(rsyslog), h.rsyslog_log(rsyslog))
  local r = h.stop(lj)
  assert.is_true(arrived, #r.records .. " records arrived; rsyslog said:\n" .. h.rsyslog_log(rsyslog))
  assert.are.equal(0, r.status, r.stderr)
  assert.are.same({}, r.dead)
  r.lj = lj
  return r
end

local function assert_all_once_in_order(records)
  assert.are.same(h.numbered("msg", N), h.values(records, "message"))
  for _, record in ipairs(records) do
    assert.are.equal("syslog", record.inputname)
    assert.are.equal("127.0.0.1", record["fromhost-ip"])
  end
end

-- The rfc3164 decoder parses omfwd's default RSYSLOG_TraditionalForwardFormat.
local function assert_rfc3164(record)
  assert.are.equal("app", record.programname)
  assert.are.equal("app:", record.syslogtag)
  -- imfile's defaults: local0.notice
  assert.are.equal(5, record.severity)
  assert.are.equal(16, record.syslogfacility)
end

local function tcp_listener(extra)
  return 'syslog = { type = "syslog_input", address = "tcp://127.0.0.1:0", decoder = "rfc3164"'
    .. (extra or "") .. ' }\n'
end

describe("syslog_input fed by rsyslogd's omfwd", function()
  it("over TCP with newline framing", function()
    local r = forward(tcp_listener(), { protocol = "tcp", framing = "traditional" })
    assert_all_once_in_order(r.records)
    assert_rfc3164(r.records[1])
    assert.are.equal(0, h.summary(r.stderr, "syslog").malformed)
    h.cleanup(r.lj.dir)
  end)

  it("over TCP with octet counting", function()
    local r = forward(tcp_listener(', framing = "octet_counted"'), { protocol = "tcp", framing = "octet-counted" })
    assert_all_once_in_order(r.records)
    assert_rfc3164(r.records[N])
    assert.are.equal(0, h.summary(r.stderr, "syslog").malformed)
    h.cleanup(r.lj.dir)
  end)

  it("over TCP with octet counting in RFC 5424", function()
    local r = forward('syslog = { type = "syslog_input", address = "tcp://127.0.0.1:0", decoder = "rfc5424" }\n',
      { protocol = "tcp", framing = "octet-counted", template = "RSYSLOG_SyslogProtocol23Format" })
    assert_all_once_in_order(r.records)
    assert.are.equal("app", r.records[1]["app-name"])
    h.cleanup(r.lj.dir)
  end)

  it("over UDP", function()
    local r = forward('syslog = { type = "syslog_input", address = "udp://127.0.0.1:0", decoder = "rfc3164" }\n',
      { protocol = "udp" })
    -- Loopback neither loses nor reorders datagrams that fit the buffer.
    assert_all_once_in_order(r.records)
    assert_rfc3164(r.records[1])
    assert.are.equal(0, h.summary(r.stderr, "syslog").dropped)
    h.cleanup(r.lj.dir)
  end)

  it("over TLS with the OpenSSL driver, each side verifying the other", function()
    local certs_dir = h.tmpdir()
    local c = certs.generate(certs_dir)
    local r = forward(string.format('syslog = { type = "syslog_input", address = "tls://127.0.0.1:0", '
      .. 'decoder = "rfc3164", tls = { cert = "%s", key = "%s", ca = "%s", verify_client = true } }\n',
      c.server_cert, c.server_key, c.ca), { protocol = "tcp", framing = "octet-counted", tls = c })
    assert_all_once_in_order(r.records)
    assert_rfc3164(r.records[1])
    assert.are.equal(0, h.summary(r.stderr, "syslog").malformed)
    h.cleanup(r.lj.dir)
    h.cleanup(certs_dir)
  end)
end)
