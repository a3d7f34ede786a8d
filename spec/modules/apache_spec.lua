dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local apache = require "apache"

local function decoder(settings)
  return host.decoder("sandbox/decoders/apache.lua", settings)
end

local decode = host.one

-- Apache's documentation's example line, in the combined format.
local COMBINED_LINE = [[127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 ]]
                      .. [["http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"]]
local OCT_10_2000 = 971211336e9 -- 2000-10-10T20:55:36Z

describe("apache decoder", function()
  it("reads the combined format (the default)", function()
    assert.same({
      Timestamp = OCT_10_2000, Type = "apache", Payload = COMBINED_LINE,
      Fields = {
        remote_host = "127.0.0.1", remote_user = "frank", request = "GET /apache_pb.gif HTTP/1.0",
        request_method = "GET", request_uri = "/apache_pb.gif", server_protocol = "HTTP/1.0",
        status = 200, body_bytes_sent = 2326, http_referer = "http://www.example.com/start.html",
        http_user_agent = "Mozilla/4.08 [en] (Win98; I ;Nav)",
      },
    }, decode(decoder({}), COMBINED_LINE))
  end)

  it("reads common, %b's - as 0, and other -s as absent", function()
    local message = decode(decoder({ log_format = "common", message_type = "httpd", hostname = "web1" }),
                           [[::1 - - [10/Oct/2000:13:55:36 -0700] "HEAD / HTTP/1.1" 304 -]])
    assert.same({ remote_host = "::1", request = "HEAD / HTTP/1.1", request_method = "HEAD",
                  request_uri = "/", server_protocol = "HTTP/1.1", status = 304,
                  body_bytes_sent = 0 }, message.Fields)
    assert.equal("httpd", message.Type)
    assert.equal("web1", message.Hostname)
  end)

  it("types durations, sizes, ports and pids, and names headers as nginx does", function()
    local format = [[%a %A %{remote}p %p %P %k %D %T %{ms}T %I %O %S %B %X %v %V %U %q %H %m ]]
                   .. [[\"%{X-Forwarded-For}i\" \"%{Content-Type}o\" %{sid}C %{HOME}e %L %<s %>s %t]]
    local line = [[10.0.0.9 10.0.0.1 51234 443 4242 3 1534 1 1 812 5120 5932 4800 + www.example.com ]]
                 .. [[example.com /search ?q=x HTTP/1.1 GET "203.0.113.9, 10.0.0.2" "text/html" ]]
                 .. [=[abc /root req-1 302 200 [10/Oct/2000:13:55:36 -0700]]=]
    local message = decode(decoder({ log_format = format }), line)
    assert.same({
      remote_addr = "10.0.0.9", server_addr = "10.0.0.1", remote_port = 51234, server_port = 443,
      pid = 4242, keepalive_requests = 3, request_time_us = 1534, request_time_s = 1,
      request_time_ms = 1, bytes_received = 812, bytes_sent = 5120, bytes_transferred = 5932,
      body_bytes_sent = 4800, connection_status = "+", server_name = "www.example.com",
      host = "example.com", uri = "/search", query_string = "?q=x", server_protocol = "HTTP/1.1",
      request_method = "GET", http_x_forwarded_for = "203.0.113.9, 10.0.0.2",
      sent_http_content_type = "text/html", cookie_sid = "abc", env_HOME = "/root",
      request_log_id = "req-1", original_status = 302, status = 200,
    }, message.Fields)
    assert.equal(OCT_10_2000, message.Timestamp)
  end)

  it("reads %{format}t in the zone tz, and %{msec}t", function()
    local message = decode(decoder({ log_format = "%{%Y-%m-%d %H:%M:%S}t %>s", tz = "Asia/Shanghai" }),
                           "2026-05-19 18:30:17 200")
    assert.equal(1779186617e9, message.Timestamp)
    message = decode(decoder({ log_format = "%{msec}t %{begin:%d/%b/%Y:%T %z}t" }),
                     "1779186617123 19/May/2026:18:30:17 +0800")
    assert.equal(1779186617123e6, message.Timestamp)
    assert.equal("19/May/2026:18:30:17 +0800", message.Fields.time)
  end)

  it("undoes Apache's escapes", function()
    local message = decode(decoder({ log_format = [[\"%r\" \"%{User-Agent}i\"]] }),
                           [["GET /a\"b\\c HTTP/1.1" "x\ty\x01\xc3\xa9"]])
    assert.equal([[GET /a"b\c HTTP/1.1]], message.Fields.request)
    assert.equal([[/a"b\c]], message.Fields.request_uri)
    assert.equal("x\ty\1é", message.Fields.http_user_agent)
  end)

  it("reads status conditions, whose value is - when not logged", function()
    local plugin = decoder({ log_format = [[%>s \"%!200,304{Referer}i\"]] })
    assert.same({ status = 200 }, decode(plugin, [[200 "-"]]).Fields)
    assert.same({ status = 404, http_referer = "http://a/" }, decode(plugin, [[404 "http://a/"]]).Fields)
  end)

  it("rejects a line that does not match, at its byte", function()
    local rc, err = decoder({ log_format = "common" }):decode([[::1 - - [10/Oct/2000:13:55:36 -0700] "GET / 200 -]])
    assert.equal(-1, rc)
    assert.equal('record does not match the log format: expected %r and then "\\" " at byte 39', err)
  end)

  it("fails the load on an unknown directive, with its position", function()
    local ok, err = pcall(decoder, { log_format = "%h %{x}Z" })
    assert.is_false(ok)
    assert.matches("apache LogFormat: unsupported directive %{x}Z at position 4", err, 1, true)
  end)

  it("parses modifiers, parameters and escapes of the format", function()
    assert.same({ { letter = "s", param = "", final = true, position = 1 }, { literal = ' "' },
                  { letter = "i", param = "Referer", position = 7 }, { literal = '"%' } },
                apache.parse([[%>s \"%400,501{Referer}i\"%%]]))
  end)
end)
