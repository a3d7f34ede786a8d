dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local recent = require "recent"

local T = 1704164645                       -- 2024-01-02T03:04:05Z, in seconds

local COMBINED = [[%{IPORHOST:client} %{USER:ident} %{USER:user} \[%{HTTPDATE:time}\] ]]
  .. [["%{WORD:method} %{NOTSPACE:path} HTTP/%{NUMBER:http_version}" %{INT:status:int} ]]
  .. [[%{INT:bytes:int} "%{DATA:referrer}" "%{DATA:agent}"]]
local ACCESS = '10.1.2.3 - bob [02/Jan/2024:03:04:05 +0000] "GET /api/v1?page=2 HTTP/1.1" '
               .. '200 5123 "-" "curl/8.0 (x86_64)"'

local function decoder(config)
  return host.decoder("sandbox/decoders/pattern.lua", config)
end

local function load_error(config)
  return host.load_error(decoder, config)
end

local decoded, rejection = host.one, host.rejection

-- The text a one-field grok pattern %{NAME:v} takes of each line (nil when
-- the line does not match).
local function taken(name, lines)
  local plugin = decoder({ pattern = "%{" .. name .. ":v}" })
  local result = {}
  for i, line in ipairs(lines) do
    local rc, _, messages = plugin:decode(line)
    result[i] = rc == 0 and messages[1].Fields.v or false
  end
  return result
end

describe("pattern decoder, grok syntax", function()
  it("reads the combined log format into typed fields and the time", function()
    local plugin = decoder({ pattern = COMBINED, timestamp_field = "time",
                             timestamp_format = "httpdate" })
    assert.same({
      Timestamp = T * 1e9, Type = "pattern", Payload = ACCESS,
      Fields = { client = "10.1.2.3", ident = "-", user = "bob", method = "GET",
                 path = "/api/v1?page=2", http_version = "1.1", status = 200, bytes = 5123,
                 referrer = "-", agent = "curl/8.0 (x86_64)" },
    }, decoded(plugin, ACCESS))
  end)

  it("takes headers from fields, and casts fields by the types setting", function()
    local plugin = decoder({
      pattern = "%{TIMESTAMP_ISO8601:ts} %{LOGLEVEL:level} \\[%{HOSTNAME:host}/%{INT:pid}\\] "
                .. "%{WORD:logger}: %{GREEDYDATA:msg}",
      timestamp_field = "ts", level_field = "level", host_field = "host", pid_field = "pid",
      logger_field = "logger", message_field = "msg", message_type = "app",
    })
    assert.same({ Timestamp = T * 1e9 + 0.25e9, Type = "app", Severity = 3, Hostname = "web1",
                  Pid = 77, Logger = "db", Payload = "connection lost: [retry] 3", Fields = {} },
                decoded(plugin, "2024-01-02 03:04:05,250 ERROR [web1/77] db: connection lost: "
                                .. "[retry] 3"))
  end)

  it("casts to int, double and bool, rejecting what is not one", function()
    local plugin = decoder({ pattern = "%{NOTSPACE:a} %{NOTSPACE:b} %{NOTSPACE:c} %{NOTSPACE:d}",
                             types = { a = "int", b = "double", c = "bool", d = "string" } })
    assert.same({ a = 42, b = 2.5, c = true, d = "7" }, decoded(plugin, "42 2.5 true 7").Fields)
    assert.same({ a = -1, b = 1e3, c = false, d = "x" }, decoded(plugin, "-1 1e3 false x").Fields)
    assert.equal('"a" is not int: "4.5"', rejection(plugin, "4.5 1 true x"))
    assert.equal('"b" is not double: "one"', rejection(plugin, "4 one true x"))
    assert.equal('"c" is not bool: "yes"', rejection(plugin, "4 1 yes x"))
  end)

  it("gives DATA the fewest characters and GREEDYDATA the most", function()
    local plugin = decoder({ pattern = "%{DATA:a} %{GREEDYDATA:b} %{WORD:c}" })
    assert.same({ a = "a", b = "b c d", c = "e" }, decoded(plugin, "a b c d e").Fields)
    plugin = decoder({ pattern = "%{DATA:a}=%{DATA:b};%{GREEDYDATA:rest}" })
    assert.same({ a = "k", b = "v=w", rest = "x;y" }, decoded(plugin, "k=v=w;x;y").Fields)
    plugin = decoder({ pattern = "<%{GREEDYDATA:a}>%{DATA:b}" })
    assert.same({ a = "1><2", b = "" }, decoded(plugin, "<1><2>").Fields)
  end)

  it("matches text with escapes as itself, and sub-patterns without a field", function()
    local plugin = decoder({ pattern = "\\%{x} %{INT} \\\\ [%{WORD:w}]" })
    assert.same({ w = "ok" }, decoded(plugin, "%{x} 12 \\ [ok]").Fields)
  end)

  it("reads the library's sub-patterns as grok does", function()
    assert.same({ "1.2.3.4", "255.255.255.0", false, false, false },
                taken("IPV4", { "1.2.3.4", "255.255.255.0", "256.1.1.1", "1.2.3", "1.2.3.4a" }))
    assert.same({ "::1", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1",
                  false, false, false },
                taken("IPV6", { "::1", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8",
                                "::ffff:10.0.0.1", "1::2::3", "1:2:3", "12345::1" }))
    assert.same({ "10.0.0.1", "fe80::1", "example.com", false },
                taken("IPORHOST", { "10.0.0.1", "fe80::1", "example.com", "-x" }))
    assert.same({ "-12", "+3", false }, taken("INT", { "-12", "+3", "1.5" }))
    assert.same({ "1.5", "-2e10", ".5", "7", false }, taken("NUMBER", { "1.5", "-2e10", ".5", "7", "x" }))
    assert.same({ "snake_case9", false }, taken("WORD", { "snake_case9", "a-b" }))
    assert.same({ "a-b/c", false }, taken("NOTSPACE", { "a-b/c", "a b" }))
    assert.same({ '"a \\" b"', "'x'", false },
                taken("QUOTEDSTRING", { '"a \\" b"', "'x'", '"open' }))
    assert.same({ "123e4567-e89b-12d3-a456-426614174000", false },
                taken("UUID", { "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b" }))
    assert.same({ "2024-01-02T03:04:05Z", "2024-01-02 03:04:05,123", "2024-01-02T03:04:05.5+08:00", false },
                taken("TIMESTAMP_ISO8601", { "2024-01-02T03:04:05Z", "2024-01-02 03:04:05,123",
                                             "2024-01-02T03:04:05.5+08:00", "2024-01-02" }))
    assert.same({ "02/Jan/2024:03:04:05 +0000", false },
                taken("HTTPDATE", { "02/Jan/2024:03:04:05 +0000", "02/Jan/2024:03:04:05" }))
    assert.same({ "May 19 18:30:17", "May  9 08:01:02", false },
                taken("SYSLOGTIMESTAMP", { "May 19 18:30:17", "May  9 08:01:02", "May 19" }))
    assert.same({ "WARNING", "err", "Info", false },
                taken("LOGLEVEL", { "WARNING", "err", "Info", "loud" }))
    assert.same({ "/a/b.txt", false }, taken("PATH", { "/a/b.txt", "a/b" }))
    assert.same({ "/p/q?x=1&y", false }, taken("URIPATHPARAM", { "/p/q?x=1&y", "p" }))
    assert.same({ "https://user@example.com:8443/a/b?c=d", "http://[::1]/", false },
                taken("URI", { "https://user@example.com:8443/a/b?c=d", "http://[::1]/",
                               "example.com/a" }))
    assert.same({ "00:1A:2b:3c:4d:5e", false }, taken("MAC", { "00:1A:2b:3c:4d:5e", "00:1A" }))
  end)

  it("reads a syslog time in the zone tz, and unicode text as bytes", function()
    local plugin = decoder({ pattern = "%{SYSLOGTIMESTAMP:ts} %{GREEDYDATA:msg}",
                             timestamp_field = "ts", timestamp_format = "syslog",
                             tz = "Asia/Shanghai", message_field = "msg" })
    local message = decoded(plugin, "May 19 18:30:17 caf\195\169 \228\184\173")
    assert.equal(recent.ns(5, 19, 18, 30, 17, 8 * 3600), message.Timestamp)
    assert.equal("caf\195\169 \228\184\173", message.Payload)
  end)

  it("rejects a line it does not match, naming the part and the byte", function()
    local plugin = decoder({ pattern = COMBINED })
    assert.equal("no match: expected %{INT:status:int} at byte 75",
                 rejection(plugin, ACCESS:gsub("200", "OK")))
    assert.equal("no match: expected %{IPORHOST:client} at byte 1", rejection(plugin, "-x"))
    assert.equal('no match: expected " " at byte 4', rejection(plugin, "bad"))
    assert.equal("no match: expected %{IPORHOST:client} at byte 1", rejection(plugin, ""))
    assert.equal("no match: text after the pattern's end at byte " .. #ACCESS + 1,
                 rejection(plugin, ACCESS .. " extra"))
    plugin = decoder({ pattern = "%{DATA:a} [%{INT:n}]" })
    assert.equal('no match: expected " [" after byte 1', rejection(plugin, "abc"))
  end)

  it("rejects a time that does not read", function()
    local plugin = decoder({ pattern = "%{NOTSPACE:ts} %{GREEDYDATA}", timestamp_field = "ts",
                             timestamp_format = "rfc3339" })
    assert.equal('"ts" is "2024-01-02": not an RFC 3339 time (bad date or clock)',
                 rejection(plugin, "2024-01-02 x"))
  end)

  it("decodes long lines", function()
    local plugin = decoder({ pattern = "%{WORD:a} %{GREEDYDATA:b} %{WORD:c}" })
    local middle = string.rep("x y ", 7000)
    assert.same({ a = "a", b = middle .. "z", c = "end" },
                decoded(plugin, "a " .. middle .. "z end").Fields)
  end)

  it("fails to load a bad pattern or setting, naming it", function()
    assert.matches("pattern: %{FOO:x} at character 3 names no sub-pattern",
                   load_error({ pattern = "a %{FOO:x}" }), 1, true)
    assert.matches("pattern: %{ at character 1 is not closed",
                   load_error({ pattern = "%{INT:x" }), 1, true)
    assert.matches("pattern: %{INT::int} at character 1 is not %{NAME}",
                   load_error({ pattern = "%{INT::int}" }), 1, true)
    assert.matches("pattern: expected the pattern, a string", load_error({}), 1, true)
    assert.matches('types: x has type "integer32"',
                   load_error({ pattern = "%{INT:x}", types = { x = "integer32" } }), 1, true)
    assert.matches("types: x has type \"uint\"",
                   load_error({ pattern = "%{INT:x:uint}" }), 1, true)
    assert.matches('syntax: expected "auto", "grok" or "re", not "pcre"',
                   load_error({ pattern = "x", syntax = "pcre" }), 1, true)
  end)
end)

describe("pattern decoder, re syntax", function()
  it("makes named group captures the fields, with the library as %NAME", function()
    local plugin = decoder({
      pattern = "{:ts: %TIMESTAMP_ISO8601 :} ' ' {:level: %LOGLEVEL :} ' ' "
                .. "{:who: [a-z]+ :} '=' {:n: %INT :} ' ' {:msg: .* :}",
      timestamp_field = "ts", level_field = "level", message_field = "msg",
      types = { n = "int" },
    })
    assert.same({ Timestamp = T * 1e9, Type = "pattern", Severity = 4, Payload = "all ok",
                  Fields = { who = "bob", n = 12 } },
                decoded(plugin, "2024-01-02T03:04:05Z warn bob=12 all ok"))
  end)

  it("ignores anonymous captures and reads grammars", function()
    local plugin = decoder({ pattern = [[
      line <- {:key: name :} '=' {value} (';' {:more: name :})?
      name <- [a-z]+
      value <- [0-9]+
    ]] })
    assert.same({ key = "k", more = "z" }, decoded(plugin, "k=42;z").Fields)
    assert.same({ key = "k" }, decoded(plugin, "k=42").Fields)
  end)

  it("rejects a line it does not match or leaves text after", function()
    local plugin = decoder({ pattern = "{:a: %INT :} ' ' {:b: %WORD :}" })
    assert.equal("no match: does not match the pattern from byte 1", rejection(plugin, "x y"))
    assert.equal("no match: text after the pattern's match at byte 5",
                 rejection(plugin, "1 ab!"))
  end)

  it("fails to load a bad pattern, naming it", function()
    assert.matches("pattern: pattern error near '[a- :}'",
                   load_error({ pattern = "{:a: [a- :}" }), 1, true)
    assert.matches("pattern: name 'NOPE' undefined",
                   load_error({ pattern = "{:a: %NOPE :}" }), 1, true)
    assert.matches("pattern: rule 'undefined_rule' used outside a grammar",
                   load_error({ pattern = "undefined_rule" }), 1, true)
  end)
end)
