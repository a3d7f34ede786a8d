dofile("spec/modules/spec_helper.lua")
local cjson = require "cjson"
local host = require "sandbox_host"
local recent = require "recent"

local W3_MESSAGE = {
  Timestamp = 1779186617e9, Type = "syslog", Hostname = "snack", Severity = 4,
  Payload = "foo bar 32",
  Fields = { pri = 44, syslogfacility = 5, syslogtag = "jls:", programname = "jls" },
}

describe("json encoder", function()
  local encoder = host.encoder("sandbox/encoders/json.lua")
  local function encode(message)
    local text = encoder:encode(message)
    assert.is_nil(text:find("\n"))
    return text, cjson.decode(text)
  end

  it("writes W3's message in the Logstash schema", function()
    local text, object = encode(W3_MESSAGE)
    assert.same({ ["@timestamp"] = "2026-05-19T10:30:17.000Z", ["@version"] = "1",
                  message = "foo bar 32", host = "snack", type = "syslog", severity = 4,
                  pri = 44, syslogfacility = 5, syslogtag = "jls:", programname = "jls" }, object)
    assert.equal('{"@timestamp":"2026-05-19T10:30:17.000Z","@version":"1","message":"foo bar 32",'
      .. '"host":"snack","type":"syslog","severity":4,"pri":44,"programname":"jls",'
      .. '"syslogfacility":5,"syslogtag":"jls:"}', text)
  end)

  -- A message always has a Timestamp: inject_message stamps one that was
  -- left out with the time of injection, so @timestamp is always written.
  local function without_timestamp(object)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$", object["@timestamp"])
    object["@timestamp"] = nil
    return object
  end

  it("writes logger and pid, leaves out absent headers, and always writes message", function()
    local _, object = encode({ Logger = "input.tcp", Pid = 1234, Payload = "x" })
    assert.same({ ["@version"] = "1", logger = "input.tcp", pid = 1234, message = "x" },
                without_timestamp(object))
    assert.same({ ["@version"] = "1", message = "" }, without_timestamp(select(2, encode({}))))
  end)

  it("prefixes fields named like a header key instead of clobbering it", function()
    local _, object = encode({ Payload = "real", Fields = { message = "field", host = "h2",
                                                             ["@timestamp"] = "t" } })
    assert.equal("real", object.message)
    assert.equal("field", object["fields.message"])
    assert.equal("h2", object["fields.host"])
    assert.equal("t", object["fields.@timestamp"])
  end)

  it("writes field types: arrays, booleans, integers, doubles, bytes", function()
    local _, object = encode({ Fields = {
      tags = { "a", "b\"" }, ports = { 80, 443 }, ok = true,
      n = { value = 42, value_type = 2, representation = "count" }, ratio = 0.25,
      raw = { value = "\0\1", value_type = 1 }, nan = 0 / 0,
    } })
    assert.same({ "a", 'b"' }, object.tags)
    assert.same({ 80, 443 }, object.ports)
    assert.is_true(object.ok)
    assert.equal(42, object.n)
    assert.equal(0.25, object.ratio)
    assert.equal("\0\1", object.raw)
    assert.equal(cjson.null, object.nan)
  end)

  it("always writes valid JSON, whatever the bytes", function()
    local payload = 'quote " backslash \\ newline \n tab \t nul \0 utf8 日志 bad \255'
    local text, object = encode({ Payload = payload, Fields = { ["we\"ird"] = "\1" } })
    assert.equal(payload:gsub("\255", "\239\191\189"), object.message) -- U+FFFD
    assert.equal("\1", object['we"ird'])
    assert.matches('"we\\"ird":"\\u0001"', text, 1, true)
  end)

  it("writes milliseconds of the timestamp", function()
    local _, object = encode({ Timestamp = 1779186617123456789 })
    assert.equal("2026-05-19T10:30:17.123Z", object["@timestamp"])
  end)

  it("encodes what the rsyslog decoder injects", function()
    local decoder = host.decoder("sandbox/decoders/rsyslog.lua",
      { template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n",
        tz = "Asia/Shanghai" })
    local _, _, messages = decoder:decode("<38>May 19 18:30:17 snack sshd[1234]: Accepted publickey")
    local _, object = encode(messages[1])
    -- The year is the one the decoder infers today (spec/modules/recent.lua).
    local year = recent.year(5, 19, 18, 30, 17, 8 * 3600)
    assert.same({ ["@timestamp"] = year .. "-05-19T10:30:17.000Z", ["@version"] = "1",
                  message = "Accepted publickey", host = "snack", type = "syslog", severity = 6,
                  pid = 1234, pri = 38, syslogfacility = 4, syslogtag = "sshd[1234]:",
                  programname = "sshd" }, object)
  end)
end)

describe("payload encoder", function()
  local encoder = host.encoder("sandbox/encoders/payload.lua")

  it("returns the Payload as is", function()
    assert.equal("foo bar 32", encoder:encode(W3_MESSAGE))
    assert.equal("bytes \0\255 kept", encoder:encode({ Payload = "bytes \0\255 kept" }))
  end)

  it("returns an empty string without a Payload", function()
    assert.equal("", encoder:encode({ Type = "x" }))
  end)
end)
