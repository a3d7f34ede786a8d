dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local nginx = require "nginx"

local function decoder(settings)
  return host.decoder("sandbox/decoders/nginx.lua", settings)
end

local decode = host.one

local COMBINED_LINE = '10.1.2.3 - alice [19/May/2026:18:30:17 +0800] "GET /api/v1/users/12?page=3 HTTP/1.1" '
                      .. '200 1234 "https://example.com/" "curl/7.88.1"'
local MAY_19 = 1779186617e9 -- 2026-05-19T10:30:17Z

-- Every variable with a type of its own, in one format.
local TYPED = table.concat({
  "$remote_addr:$remote_port $server_addr:$server_port [$time_local]",
  '"$request" $status $body_bytes_sent $bytes_sent $request_length',
  "$connection $connection_requests $pipe $request_time $connection_time $gzip_ratio $pid",
  '"$upstream_addr" "$upstream_status" "$upstream_response_time" "$upstream_connect_time"',
  '"$upstream_header_time" "$upstream_bytes_received" "$upstream_response_length"',
  '"$http_x_foo" "$cookie_session" "$arg_q" "$sent_http_content_type" "$upstream_http_x_cache"',
}, " ")
local TYPED_LINE = table.concat({
  "192.0.2.7:51234 127.0.0.1:8080 [19/May/2026:18:30:17 +0800]",
  '"POST /login HTTP/2.0" 502 157 325 911',
  "42 3 p 0.123 12.5 2.75 4242",
  '"10.0.0.1:80, 10.0.0.2:80 : unix:/run/app.sock" "502, 504 : 200" "0.001, 0.010 : 0.250" "0.000, 0.001 : 0.002"',
  '"0.100, 0.200 : 0.300" "0, 0 : 4096" "0, 0 : 120"',
  '"bar baz" "s3cr3t" "a+b" "text/html; charset=utf-8" "HIT"',
}, " ")

describe("nginx decoder, combined (the default)", function()
  it("reads every field of the combined format", function()
    local message = decode(decoder({}), COMBINED_LINE)
    assert.same({
      Timestamp = MAY_19, Type = "nginx", Payload = COMBINED_LINE,
      Fields = {
        remote_addr = "10.1.2.3", remote_user = "alice",
        request = "GET /api/v1/users/12?page=3 HTTP/1.1", request_method = "GET",
        request_uri = "/api/v1/users/12?page=3", server_protocol = "HTTP/1.1",
        status = 200, body_bytes_sent = 1234, http_referer = "https://example.com/",
        http_user_agent = "curl/7.88.1",
      },
    }, message)
  end)

  it("leaves out what nginx wrote as -", function()
    local message = decode(decoder({ log_format = "combined" }),
      '10.1.2.3 - - [19/May/2026:18:30:17 +0000] "GET / HTTP/1.1" 304 0 "-" "-"')
    assert.same({ remote_addr = "10.1.2.3", request = "GET / HTTP/1.1", request_method = "GET",
                  request_uri = "/", server_protocol = "HTTP/1.1", status = 304,
                  body_bytes_sent = 0 }, message.Fields)
    assert.equal(1779186617e9 + 8 * 3600e9, message.Timestamp)
  end)

  it("sets message_type and hostname", function()
    local message = decode(decoder({ message_type = "web", hostname = "edge1" }), COMBINED_LINE)
    assert.equal("web", message.Type)
    assert.equal("edge1", message.Hostname)
  end)

  it("makes $hostname the Hostname unless the hostname setting gives one", function()
    local message = decode(decoder({ log_format = "$hostname $status" }), "web-7 200")
    assert.equal("web-7", message.Hostname)
    assert.same({ status = 200 }, message.Fields)
    message = decode(decoder({ log_format = "$hostname $status", hostname = "edge1" }), "web-7 200")
    assert.equal("edge1", message.Hostname)
    assert.same({ hostname = "web-7", status = 200 }, message.Fields)
  end)

  it("keeps no field of one line in the next", function()
    local plugin = decoder({})
    decode(plugin, COMBINED_LINE)
    local message = decode(plugin, '10.1.2.3 - - [19/May/2026:18:30:17 +0800] "-" 400 0 "-" "-"')
    assert.same({ remote_addr = "10.1.2.3", status = 400, body_bytes_sent = 0 }, message.Fields)
  end)
end)

describe("nginx decoder, typed variables", function()
  local plugin = decoder({ log_format = TYPED })

  it("types numbers, lists and strings, and names fields after the variables", function()
    local message = decode(plugin, TYPED_LINE)
    assert.same({
      remote_addr = "192.0.2.7", remote_port = 51234, server_addr = "127.0.0.1", server_port = 8080,
      request = "POST /login HTTP/2.0", request_method = "POST", request_uri = "/login",
      server_protocol = "HTTP/2.0", status = 502, body_bytes_sent = 157, bytes_sent = 325,
      request_length = 911, connection = 42, connection_requests = 3, pipe = "p",
      request_time = 0.123, connection_time = 12.5, gzip_ratio = 2.75, pid = 4242,
      upstream_addr = { "10.0.0.1:80", "10.0.0.2:80", "unix:/run/app.sock" },
      upstream_status = { 502, 504, 200 },
      upstream_response_time = { 0.001, 0.01, 0.25 },
      upstream_connect_time = { 0, 0.001, 0.002 },
      upstream_header_time = { 0.1, 0.2, 0.3 },
      upstream_bytes_received = { 0, 0, 4096 },
      upstream_response_length = { 0, 0, 120 },
      http_x_foo = "bar baz", cookie_session = "s3cr3t", arg_q = "a+b",
      sent_http_content_type = "text/html; charset=utf-8", upstream_http_x_cache = "HIT",
    }, message.Fields)
    assert.equal(MAY_19, message.Timestamp)
  end)

  it("reads doubles as tonumber does", function()
    local line = TYPED_LINE:gsub(" 0%.123 12%.5 ", " 1779186617.123 0.1 ")
    local fields = decode(plugin, line).Fields
    assert.equal(tonumber("1779186617.123"), fields.request_time)
    assert.equal(0.1, fields.connection_time)
  end)

  it("keeps a list with a - as strings, and a single value as a value", function()
    local line = TYPED_LINE:gsub('"502, 504 : 200"', '"-, 200"'):gsub('"0%.100, 0%.200 : 0%.300"', '"0.5"')
    local fields = decode(plugin, line).Fields
    assert.same({ "-", "200" }, fields.upstream_status)
    assert.equal(0.5, fields.upstream_header_time)
  end)

  it("keeps a number nginx wrote oddly as its text", function()
    local line = TYPED_LINE:gsub(" 502 157 ", " 50x 157 ")
    assert.equal("50x", decode(plugin, line).Fields.status)
  end)

  it("gives the same values with integers = true", function()
    local typed = decode(decoder({ log_format = TYPED, integers = true }), TYPED_LINE)
    assert.same(decode(plugin, TYPED_LINE), typed)
  end)

  it("reads numbers and times that follow each other with no text between", function()
    local plugin = decoder({ log_format = "$time_iso8601$status$body_bytes_sent $request_time$http_x" })
    local message = decode(plugin, "2026-05-19T18:30:17+08:00200- 0.5abc")
    assert.same({ status = 200, request_time = 0.5, http_x = "abc" }, message.Fields)
    assert.equal(MAY_19, message.Timestamp)
  end)
end)

describe("nginx decoder, times", function()
  it("takes $time_iso8601 with its offset", function()
    local message = decode(decoder({ log_format = "$time_iso8601 $status" }),
                           "2026-05-19T18:30:17+08:00 200")
    assert.equal(MAY_19, message.Timestamp)
    assert.is_nil(message.Fields.time_iso8601)
  end)

  it("prefers $msec, and keeps the other times as fields", function()
    local message = decode(decoder({ log_format = "[$time_local] $msec $time_iso8601" }),
                           "[19/May/2026:18:30:17 +0800] 1779186617.123 2026-05-19T18:30:17+08:00")
    assert.equal(1779186617.123e9, message.Timestamp)
    assert.same({ time_local = "19/May/2026:18:30:17 +0800",
                  time_iso8601 = "2026-05-19T18:30:17+08:00" }, message.Fields)
  end)

  it("reads negative offsets and a leap day", function()
    local message = decode(decoder({ log_format = "[$time_local]" }), "[29/Feb/2028:23:59:60 -0530]")
    local seconds = 1835395200 + 23 * 3600 + 59 * 60 + 60 + 5 * 3600 + 1800 -- 2028-02-29
    assert.equal(seconds * 1e9, message.Timestamp)
  end)

  it("rejects a time that is no date, at its byte", function()
    local plugin = decoder({ log_format = "$remote_addr [$time_local] $status" })
    local rc, err = plugin:decode("::1 [30/Feb/2026:10:00:00 +0000] 200")
    assert.equal(-1, rc)
    assert.equal("record does not match the log format: expected $time_local and then \"] \" at byte 6", err)
    rc, err = plugin:decode("::1 [19/Mai/2026:10:00:00 +0000] 200")
    assert.equal(-1, rc)
    assert.equal("record does not match the log format: expected $time_local and then \"] \" at byte 9", err)
  end)
end)

describe("nginx decoder, escapes", function()
  it("undoes escape=default's \\xHH in strings and in the request's parts", function()
    local line = [[10.1.2.3 - - [19/May/2026:18:30:17 +0800] "GET /a\x22b\x5Cc\xC3\xA9 HTTP/1.1" 200 5 "-" "x\x22y\x09z"]]
    local fields = decode(decoder({}), line).Fields
    assert.equal('GET /a"b\\cé HTTP/1.1', fields.request)
    assert.equal('/a"b\\cé', fields.request_uri)
    assert.equal("GET", fields.request_method)
    assert.equal("HTTP/1.1", fields.server_protocol)
    assert.equal('x"y\tz', fields.http_user_agent)
  end)

  it("finds the closing quote past escapes and stray first bytes of the delimiter", function()
    local plugin = decoder({ log_format = '"$http_a" -- "$http_b"' })
    local fields = decode(plugin, [["a" -x" - b" -- "c"]]).Fields
    assert.same({ http_a = 'a" -x" - b', http_b = "c" }, fields)
  end)

  it("undoes escape=json's escapes, and reads an empty value as absent", function()
    local plugin = decoder({ log_format = '{"ua":"$http_user_agent","ref":"$http_referer","s":$status}',
                             escape = "json" })
    local message = decode(plugin, [[{"ua":"a\"b\\c\u0001\n\u00e9","ref":"","s":200}]])
    assert.same({ http_user_agent = 'a"b\\c\1\n\195\169', status = 200 }, message.Fields)
  end)

  it("keeps values as written with escape=none, - included", function()
    local plugin = decoder({ log_format = '$remote_user|$http_x', escape = "none" })
    assert.same({ remote_user = "-", http_x = [[a\x22]] }, decode(plugin, [[-|a\x22]]).Fields)
    assert.same({ remote_user = "u" }, decode(plugin, "u|").Fields)
  end)
end)

describe("nginx decoder, requests", function()
  local plugin = decoder({ log_format = '"$request"' })
  local function parts(request)
    local f = decode(plugin, '"' .. request .. '"').Fields
    return { f.request_method, f.request_uri, f.server_protocol }
  end

  it("splits at the first and the last space", function()
    assert.same({ "GET", "/a b", "HTTP/1.0" }, parts("GET /a b HTTP/1.0"))
    assert.same({ "PRI", "*", "HTTP/2" }, parts("PRI * HTTP/2"))
    assert.same({ "GET", "/" }, parts("GET /"))
    assert.same({ "GET", "/a b" }, parts("GET /a b"))
    assert.same({}, parts([[\x16\x03\x01]]))
    assert.same({ "GET", "/\"x\" y", "HTTP/1.1" }, parts([[GET /\x22x\x22 y HTTP/1.1]]))
  end)
end)

describe("nginx decoder, rejects", function()
  local plugin = decoder({})

  it("names the part that did not match and its byte", function()
    local rc, err, messages = plugin:decode('10.1.2.3 - - [19/May/2026:18:30:17 +0800] "GET / HTTP/1.1"')
    assert.equal(-1, rc)
    assert.equal('record does not match the log format: expected $request and then "\\" " at byte 44', err)
    assert.same({}, messages)
    rc, err = plugin:decode("10.1.2.3 -- [x]")
    assert.equal(-1, rc)
    assert.equal('record does not match the log format: expected $remote_addr and then " - " at byte 1', err)
    rc, err = plugin:decode("")
    assert.equal(-1, rc)
  end)

  it("rejects text after the last variable's delimiter", function()
    local rc, err = decoder({ log_format = "[$status]" }):decode("[200] more")
    assert.equal(-1, rc)
    assert.equal("record does not match the log format: expected the end of the record at byte 6", err)
  end)
end)

describe("nginx.parse and load errors", function()
  it("reads $name and ${name}", function()
    assert.same({ { variable = "a", position = 1 }, { literal = "-x" }, { variable = "b_1", position = 5 },
                  { literal = "y." } }, nginx.parse("$a-x${b_1}y."))
  end)

  -- The sandbox's error when the decoder does not load.
  local function load_error(settings)
    return host.load_error(decoder, settings)
  end

  it("fails the load on a bad log_format, with its position", function()
    assert.matches('nginx log_format: invalid variable name at position 9 in "$status $"',
                   load_error({ log_format = "$status $" }), 1, true)
    assert.matches("cannot tell where $host ends: the next value follows it with no text between",
                   load_error({ log_format = "$host$request_uri" }), 1, true)
    assert.matches('nginx: escape must be "default", "json" or "none", not "xml"',
                   load_error({ escape = "xml" }), 1, true)
  end)
end)
