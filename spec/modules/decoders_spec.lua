dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local recent = require "recent"

local W3 = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n"
local W3_LINE = "<44>May 19 18:30:17 snack jls: foo bar 32"
-- May 19 18:30:17 in Shanghai (UTC+8), in the year the decoder gives it on
-- the day the spec runs (spec/modules/recent.lua).
local W3_NS = recent.ns(5, 19, 18, 30, 17, 8 * 3600)

local function decoder(config)
  return host.decoder("sandbox/decoders/rsyslog.lua", config)
end

describe("rsyslog decoder", function()
  it("decodes W3's line with W3's template and zone", function()
    local plugin = decoder({ template = W3, tz = "Asia/Shanghai" })
    local rc, err, messages = plugin:decode(W3_LINE)
    assert.equal(0, rc)
    assert.is_nil(err)
    assert.same({ {
      Timestamp = W3_NS, Type = "syslog", Hostname = "snack", Severity = 4,
      Payload = "foo bar 32",
      Fields = { pri = 44, syslogfacility = 5, syslogtag = "jls:", programname = "jls" },
    } }, messages)
  end)

  it("makes a numeric procid the Pid and keeps others as fields", function()
    local plugin = decoder({ template = "RSYSLOG_SyslogProtocol23Format", message_type = "rfc5424" })
    local _, _, messages = plugin:decode("<13>1 2026-05-19T10:30:17Z snack alice 4242 - - hello")
    assert.equal(4242, messages[1].Pid)
    assert.is_nil(messages[1].Fields.procid)
    assert.equal("rfc5424", messages[1].Type)
    _, _, messages = plugin:decode("<13>1 2026-05-19T10:30:17Z snack alice worker-7 ID9 - hi")
    assert.is_nil(messages[1].Pid)
    assert.equal("worker-7", messages[1].Fields.procid)
    assert.equal("ID9", messages[1].Fields.msgid)
    assert.equal("alice", messages[1].Fields["app-name"])
  end)

  it("keeps no state from one record in the next", function()
    local plugin = decoder({ template = W3, tz = "Asia/Shanghai" })
    local _, _, first = plugin:decode("<38>May 19 18:30:17 snack sshd[1234]: Accepted")
    local _, _, second = plugin:decode(W3_LINE)
    assert.equal(1234, first[1].Pid)
    assert.is_nil(second[1].Pid)
    assert.is_nil(second[1].Fields.procid)
  end)

  it("uses RSYSLOG_TraditionalFileFormat and UTC by default", function()
    local plugin = decoder({})
    local _, _, messages = plugin:decode("May 19 10:30:17 snack kernel: [    0.000000] Linux version 6.1.0")
    assert.equal(recent.ns(5, 19, 10, 30, 17), messages[1].Timestamp)
    assert.is_nil(messages[1].Severity)
    assert.equal("[    0.000000] Linux version 6.1.0", messages[1].Payload)
  end)

  it("takes Timestamp from timegenerated when the template has no timereported", function()
    local plugin = decoder({ template = "%timegenerated:::date-rfc3339% %msg%" })
    local _, _, messages = plugin:decode("2026-05-19T10:30:17Z hi")
    assert.equal(1779186617e9, messages[1].Timestamp)
    assert.is_nil(messages[1].Fields.timegenerated)
  end)

  it("reads zones through read_zoneinfo", function()
    -- The system's zone file, as the sandbox's read_zoneinfo serves it:
    -- May 19 is in CEST (UTC+2), 6 hours after Shanghai's time.
    local plugin = decoder({ template = W3, tz = "Europe/Berlin" })
    local _, _, messages = plugin:decode(W3_LINE)
    assert.equal(W3_NS + 6 * 3600e9, messages[1].Timestamp)
  end)

  it("rejects lines that do not match, saying where", function()
    local plugin = decoder({ template = W3, tz = "Asia/Shanghai" })
    local rc, err, messages = plugin:decode("hello world")
    assert.equal(-1, rc)
    assert.equal('record does not match the template: expected "<" (template position 1) at byte 1', err)
    assert.same({}, messages)
    rc, err = plugin:decode("<44>May 19 18:30:17")
    assert.equal(-1, rc)
    assert.matches("at byte 20", err)
  end)

  it("fails to load with a bad template or zone", function()
    local ok, err = pcall(decoder, { template = "%nope%" })
    assert.is_false(ok)
    assert.matches("rsyslog template: unknown property 'nope' (%nope% at position 1)", err, 1, true)
    ok, err = pcall(decoder, { template = W3, tz = "Nowhere/City" })
    assert.is_false(ok)
    assert.matches("Nowhere/City", err, 1, true)
  end)
end)

describe("line decoder", function()
  it("makes one message per line with the line as Payload", function()
    local plugin = host.decoder("sandbox/decoders/line.lua", { hostname = "snack" })
    local rc, _, messages = plugin:decode("2017-03-16T19:21:14+08:00 INFO Non-zero metrics")
    assert.equal(0, rc)
    assert.equal(1, #messages)
    assert.same({ Type = "line", Hostname = "snack", Fields = {},
                  Payload = "2017-03-16T19:21:14+08:00 INFO Non-zero metrics" },
                plugin:unstamped(messages[1]))
  end)

  it("takes Type from the settings and has no Hostname by default", function()
    local plugin = host.decoder("sandbox/decoders/line.lua", { message_type = "nginx" })
    local _, _, messages = plugin:decode("")
    assert.equal("nginx", messages[1].Type)
    -- An empty string header is one never set (src/message.h).
    assert.is_nil(messages[1].Payload)
    assert.is_nil(messages[1].Hostname)
  end)
end)
