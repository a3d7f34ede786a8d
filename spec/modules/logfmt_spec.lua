dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"

local T = 1704164645                       -- 2024-01-02T03:04:05Z, in seconds

local function decoder(config)
  return host.decoder("sandbox/decoders/logfmt.lua", config)
end

local function load_error(config)
  return host.load_error(decoder, config)
end

local decoded, rejection = host.one, host.rejection

describe("logfmt decoder", function()
  local plugin
  setup(function() plugin = decoder({}) end)

  it("makes headers from the usual keys and typed fields from the rest", function()
    local line = 'time=2024-01-02T03:04:05.5Z level=warn msg="slow \\"GET /\\"" ms=812.5 '
                 .. 'count=3 ok=true off=false host=web1 pid=4242 logger=http cached'
    assert.same({
      Timestamp = T * 1e9 + 0.5e9, Type = "logfmt", Hostname = "web1", Severity = 4,
      Pid = 4242, Logger = "http", Payload = 'slow "GET /"',
      Fields = { ms = 812.5, count = 3, ok = true, off = false, cached = true },
    }, decoded(plugin, line))
  end)

  it("types only what is a JSON number or a boolean, and never quoted values", function()
    local message = decoded(plugin, 'a=-1.5e3 b=0 c=0123 d=1. e=.5 f=0x10 g=1e h=True '
                                    .. 'i=null j=NaN k="42" l="true" m=-0')
    assert.same({ a = -1500, b = 0, c = "0123", d = "1.", e = ".5", f = "0x10", g = "1e",
                  h = "True", i = "null", j = "NaN", k = "42", l = "true", m = 0 },
                message.Fields)
  end)

  it("keeps every value as text with types = \"string\"", function()
    local message = decoded(decoder({ types = "string" }), "a=1 b=true c=2.5 flag pid=7")
    assert.same({ a = "1", b = "true", c = "2.5", flag = true }, message.Fields)
    assert.equal(7, message.Pid)
  end)

  it("reads empty values, '=' in values, and any separators", function()
    local message = decoded(plugin, ' \ta=  b=x=y\tc=/p?q=1&r=2 \t d="" ')
    assert.same({ a = "", b = "x=y", c = "/p?q=1&r=2", d = "" }, message.Fields)
  end)

  it("reads escapes and unicode in quoted values, and UTF-8 keys", function()
    local message = decoded(plugin, 'msg="tab\\there \\u00e9\\u4e2d \\ud83d\\ude00 \\\\ \\/" '
                                    .. 'caf\195\169="cr\195\168me" k="a b"')
    assert.equal('tab\there é中 😀 \\ /', message.Payload)
    assert.same({ ["café"] = "crème", k = "a b" }, message.Fields)
  end)

  it("keeps the last of a repeated key", function()
    assert.same({ a = 2 }, decoded(plugin, "a=1 a=2").Fields)
  end)

  it("decodes an empty line, and keeps the line as Payload without a message key", function()
    local message = plugin:unstamped(decoded(plugin, ""))
    assert.same({ Type = "logfmt", Fields = {} }, message)   -- (an empty Payload is shown as none)
    message = plugin:unstamped(decoded(plugin, "a=1 msg=2"))
    assert.same({ Type = "logfmt", Payload = "a=1 msg=2", Fields = { a = 1, msg = 2 } }, message)
  end)

  it("decodes long lines and many pairs", function()
    local parts, expected = {}, {}
    for i = 1, 2000 do
      parts[i] = "k" .. i .. "=v" .. i
      expected["k" .. i] = "v" .. i
    end
    assert.same(expected, decoded(plugin, table.concat(parts, " ")).Fields)
    local long = string.rep("x", 60000)
    assert.equal(long, decoded(plugin, 'msg="' .. long .. '"').Payload)
  end)

  it("reads times in each format and takes headers from configured keys", function()
    assert.equal(T * 1e9, decoded(plugin, "ts=" .. T).Timestamp)
    assert.equal(T * 1e9, decoded(plugin, 'timestamp="2024-01-02 03:04:05"').Timestamp)
    local custom = decoder({ timestamp_key = "at", timestamp_format = "epoch_ms",
                             message_key = "text", level_key = "sev", host_key = false })
    local message = decoded(custom, "at=" .. T .. "250 text=hi sev=ERROR host=h time=x")
    assert.same({ Timestamp = T * 1e9 + 250e6, Type = "logfmt", Payload = "hi", Severity = 3,
                  Fields = { host = "h", time = "x" } }, message)
  end)

  it("keeps no state from one record in the next", function()
    decoded(plugin, "time=2024-01-02T03:04:05Z level=info host=h pid=1 logger=l msg=m a=1")
    local message = plugin:unstamped(decoded(plugin, "c=2"))
    assert.same({ Type = "logfmt", Payload = "c=2", Fields = { c = 2 } }, message)
  end)

  it("rejects malformed lines, saying what and at which byte", function()
    local cases = {
      { 'a="unterminated', "not logfmt: unterminated quoted value from byte 3" },
      { 'a=1 b="x\\"', "not logfmt: unterminated quoted value from byte 7" },
      { "=x", 'not logfmt: expected a key before "=" at byte 1' },
      { "a=1 =x", 'not logfmt: expected a key before "=" at byte 5' },
      { '"a"=1', "not logfmt: unexpected quote at byte 1" },
      { 'a"b=1', "not logfmt: unexpected quote in a key at byte 2" },
      { 'a=x"y', "not logfmt: unexpected quote in a value at byte 4" },
      { 'a="x\\qy"', "not logfmt: bad escape at byte 5" },
      { 'a="\\u12G4"', "not logfmt: bad escape at byte 4" },
      { 'a="x"y', "not logfmt: expected a space after the quoted value at byte 6" },
      { 'a=1 b="x""', "not logfmt: expected a space after the quoted value at byte 10" },
    }
    for _, case in ipairs(cases) do
      assert.equal(case[2], rejection(plugin, case[1]), case[1])
    end
  end)

  it("rejects times that do not read", function()
    assert.equal('"time" is "soon": not a time in a known format (RFC 3339, ISO 8601, '
                 .. 'syslog, HTTP date) nor a number', rejection(plugin, "time=soon"))
    local strict = decoder({ timestamp_format = "epoch" })
    assert.equal('"ts" is "x": not epoch seconds', rejection(strict, "ts=x"))
  end)

  it("fails to load with a bad setting, naming it", function()
    assert.matches('types: expected "auto" or "string", not int',
                   load_error({ types = "int" }), 1, true)
    assert.matches('timestamp_format: unknown format "unix"',
                   load_error({ timestamp_format = "unix" }), 1, true)
    assert.matches("level_key: expected a key, a list of keys or false",
                   load_error({ level_key = { 1, 2 } }), 1, true)
  end)
end)
