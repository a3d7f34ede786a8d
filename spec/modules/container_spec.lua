dofile("spec/modules/spec_helper.lua")
local container = require "container"
local host = require "sandbox_host"

local T = 1704164645                       -- 2024-01-02T03:04:05Z, in seconds
local TIME = "2024-01-02T03:04:05.123456789Z"
local NS = T * 1e9 + 123456789

local function docker_line(log, stream, time)
  return string.format('{"log":"%s","stream":"%s","time":"%s"}', log, stream or "stdout", time or TIME)
end

-- Every value a parser returns, nils included.
local function pack(...) return { n = select("#", ...), ... } end
local function parsed(parse, line) return pack(parse(line)) end
local function rejected(reason) return { n = 2, nil, reason } end
local function assert_rejects(parse, cases)
  for _, case in ipairs(cases) do
    assert.same(rejected(case[2]), parsed(parse, case[1]), case[1])
  end
end

describe("container.time_ns", function()
  it("reads RFC 3339 times with 0 to 9 fraction digits", function()
    assert.equal(T * 1e9, container.time_ns("2024-01-02T03:04:05Z"))
    assert.equal(T * 1e9 + 500000000, container.time_ns("2024-01-02T03:04:05.5Z"))
    assert.equal(T * 1e9 + 123456000, container.time_ns("2024-01-02T03:04:05.123456Z"))
    assert.equal(NS, container.time_ns(TIME))
    assert.equal(1, container.time_ns("1970-01-01T00:00:00.000000001Z"))
    assert.equal(NS, container.time_ns("2024-01-02T03:04:05.123456789999Z"))  -- past ns: cut
    assert.equal(T * 1e9, container.time_ns("2024-01-02t03:04:05z"))
  end)

  it("applies any offset", function()
    assert.equal(NS, container.time_ns("2024-01-02T03:04:05.123456789+00:00"))
    assert.equal(NS, container.time_ns("2024-01-02T11:04:05.123456789+08:00"))
    assert.equal(NS, container.time_ns("2024-01-01T21:34:05.123456789-05:30"))
    assert.equal(NS, container.time_ns("2024-01-02T03:04:05.123456789-00:00"))
  end)

  it("knows month lengths and leap years", function()
    assert.equal(1709164800e9, container.time_ns("2024-02-29T00:00:00Z"))
    assert.same({ nil, "bad date or clock" }, { container.time_ns("2023-02-29T00:00:00Z") })
  end)

  it("says what is wrong with a bad time", function()
    local bad = {
      ["2024-13-02T03:04:05Z"] = "bad date or clock",
      ["2024-01-32T03:04:05Z"] = "bad date or clock",
      ["2024-01-02T24:04:05Z"] = "bad date or clock",
      ["2024-01-02 03:04:05Z"] = "bad date or clock",
      ["24-01-02T03:04:05Z"] = "bad date or clock",
      [""] = "bad date or clock",
      ["2024-01-02T03:04:05.Z"] = "bad fraction",
      ["2024-01-02T03:04:05"] = "bad offset",
      ["2024-01-02T03:04:05+0800"] = "bad offset",
      ["2024-01-02T03:04:05+24:00"] = "bad offset",
      ["2024-01-02T03:04:05,5Z"] = "bad offset",
      ["2024-01-02T03:04:05Zjunk"] = "text after the offset",
      ["2024-01-02T03:04:05+08:00:00"] = "text after the offset",
    }
    for text, problem in pairs(bad) do
      assert.same({ nil, problem }, { container.time_ns(text) }, text)
    end
  end)
end)

describe("container.docker", function()
  it("reads log, stream and time, dropping the final newline", function()
    assert.same({ n = 4, "GET / 200", "stdout", NS, false },
                parsed(container.docker, docker_line([[GET / 200\n]])))
    assert.same({ n = 4, "panic: oops", "stderr", NS, false },
                parsed(container.docker, docker_line([[panic: oops\n]], "stderr")))
    assert.same({ n = 4, "two\n", "stdout", NS, false },
                parsed(container.docker, docker_line([[two\n\n]])))
  end)

  it("takes keys in any order and ignores others", function()
    local line = '{"time":"2024-01-02T03:04:05.123456789Z", "attrs":{"tag":"web","n":[1,{}]},'
                 .. '"stream":"stderr" , "log":"hi\\n"}'
    assert.same({ n = 4, "hi", "stderr", NS, false }, parsed(container.docker, line))
  end)

  it("unescapes quotes, backslashes and unicode escapes", function()
    local log = [[{\"level\":\"info\"} C:\\tmp\\new \u003chtml\u003e caf\u00e9 \ud83d\ude00 \/\t\n]]
    local text = container.docker(docker_line(log))
    assert.equal('{"level":"info"} C:\\tmp\\new <html> café 😀 /\t', text)
  end)

  it("passes raw UTF-8 and other bytes through", function()
    assert.equal("日志 é \255\254", container.docker(docker_line("日志 é \255\254\\n")))
  end)

  it("marks a log without its final newline as partial", function()
    assert.same({ n = 4, "first 16 KiB", "stdout", NS, true },
                parsed(container.docker, docker_line("first 16 KiB")))
    assert.same({ n = 4, "", "stdout", NS, false }, parsed(container.docker, docker_line([[\n]])))
    assert.same({ n = 4, "", "stdout", NS, true }, parsed(container.docker, docker_line("")))
  end)

  it("reads time with offsets and short fractions", function()
    assert.equal(T * 1e9 + 100000000,
                 select(3, container.docker(docker_line("x", "stdout", "2024-01-02T11:04:05.1+08:00"))))
  end)

  it("rejects bad JSON, saying where it breaks", function()
    assert_rejects(container.docker, {
      { '{"log":"hi\\n', "not JSON: Expected value but found unexpected end of string at character 13" },
      { '"log"', "not a JSON object" },
    })
    local truncated = docker_line([[hi\n]]):sub(1, 20)
    assert.matches("^not JSON: .* at character 21$", select(2, container.docker(truncated)))
    assert.matches("^not JSON: .* at character 1$", select(2, container.docker("")))
    assert.matches("^not JSON: .*invalid escape code at character 10$",
                   select(2, container.docker(docker_line([[a\qb]]))))
  end)

  it("rejects missing keys and values of the wrong kind, naming the key", function()
    assert_rejects(container.docker, {
      { '{"stream":"stdout","time":"' .. TIME .. '"}',
        '"log" is missing' },
      { '{"log":42,"stream":"stdout","time":"' .. TIME .. '"}',
        '"log" is not a string but a number' },
      { '{"log":"hi\\n","time":"' .. TIME .. '"}',
        '"stream" is missing' },
      { docker_line("hi", "stdin"),
        '"stream" is "stdin", not "stdout" or "stderr"' },
      { '{"log":"hi\\n","stream":"stdout"}',
        '"time" is missing' },
      { '{"log":"hi\\n","stream":"stdout","time":null}',
        '"time" is not a string but null' },
      { docker_line("hi", "stdout", "2024-01-02T03:04:05"),
        '"time" is not an RFC 3339 time (bad offset): "2024-01-02T03:04:05"' },
      { docker_line("hi", "stdout", "yesterday"),
        '"time" is not an RFC 3339 time (bad date or clock): "yesterday"' },
    })
  end)
end)

describe("container.cri", function()
  it("reads time, stream, tag and message", function()
    assert.same({ n = 5, "GET / 200", "stdout", NS, false, "F" },
                parsed(container.cri, "2024-01-02T03:04:05.123456789+00:00 stdout F GET / 200"))
    assert.same({ n = 5, "panic: oops", "stderr", NS, false, "F" },
                parsed(container.cri, TIME .. " stderr F panic: oops"))
  end)

  it("reads partial lines and tag lists", function()
    assert.same({ n = 5, "first 16 KiB", "stdout", NS, true, "P" },
                parsed(container.cri, TIME .. " stdout P first 16 KiB"))
    assert.same({ n = 5, "rest", "stdout", NS, true, "P:x:y" },
                parsed(container.cri, TIME .. " stdout P:x:y rest"))
    assert.same({ n = 5, "rest", "stdout", NS, false, "F:" },
                parsed(container.cri, TIME .. " stdout F: rest"))
  end)

  it("keeps the message as it is: spaces, tabs, quotes, any bytes", function()
    local message = '  {"a": "b\\n"}\t日志 \255\254\0 end '
    assert.equal(message, container.cri(TIME .. " stdout F " .. message))
  end)

  it("reads empty messages, with or without the space before them", function()
    assert.same({ n = 5, "", "stdout", NS, false, "F" }, parsed(container.cri, TIME .. " stdout F "))
    assert.same({ n = 5, "", "stdout", NS, false, "F" }, parsed(container.cri, TIME .. " stdout F"))
  end)

  it("reads times with offsets and fractions of any length", function()
    assert.equal(T * 1e9, select(3, container.cri("2024-01-02T11:04:05+08:00 stdout F x")))
    assert.equal(T * 1e9 + 120000000,
                 select(3, container.cri("2024-01-01T22:04:05.12-05:00 stdout F x")))
  end)

  it("rejects lines with a field missing, naming the field and its byte", function()
    assert_rejects(container.cri, {
      { "",
        "expected an RFC 3339 time (bad date or clock) at byte 1, found the end of the line" },
      { TIME,
        "expected a space at byte 31, found the end of the line" },
      { TIME .. " F message",
        'expected "stdout" or "stderr" at byte 32, found "F"' },
      { TIME .. " stdout",
        "expected a space at byte 38, found the end of the line" },
      { TIME .. " stdout ",
        'expected a tag ("F" or "P", then ":..." if any) at byte 39, found the end of the line' },
    })
  end)

  it("rejects bad fields, naming the field, its byte and what was there", function()
    assert_rejects(container.cri, {
      { TIME .. " stdin F message",
        'expected "stdout" or "stderr" at byte 32, found "stdin"' },
      { TIME .. " stdoutx F message",
        'expected "stdout" or "stderr" at byte 32, found "stdoutx"' },
      { TIME .. "  stdout F message",
        'expected "stdout" or "stderr" at byte 32, found " stdout"' },
      { TIME .. " stdout X message",
        'expected a tag ("F" or "P", then ":..." if any) at byte 39, found "X"' },
      { TIME .. " stdout Full message",
        'expected a tag ("F" or "P", then ":..." if any) at byte 39, found "Full"' },
    })
  end)

  it("rejects bad times, saying what is wrong", function()
    assert_rejects(container.cri, {
      { "2024-02-30T03:04:05Z stdout F x",
        'expected an RFC 3339 time (bad date or clock) at byte 1, found "2024-02-30T03:04:05Z"' },
      { "2024-01-02T03:04:05 stdout F x",
        'expected an RFC 3339 time (bad offset) at byte 1, found "2024-01-02T03:04:05"' },
      { "2024-01-02T03:04:05.Z stdout F x",
        'expected an RFC 3339 time (bad fraction) at byte 1, found "2024-01-02T03:04:05.Z"' },
      { "2024-01-02T03:04:05Z1 stdout F x",
        'expected an RFC 3339 time (text after the offset) at byte 1, found "2024-01-02T03:04:05Z1"' },
      { "Jan  2 03:04:05 stdout F x",
        'expected an RFC 3339 time (bad date or clock) at byte 1, found "Jan"' },
    })
  end)

  it("shows at most 40 bytes of a bad value", function()
    local _, reason = container.cri(TIME .. " " .. string.rep("x", 100))
    assert.equal('expected "stdout" or "stderr" at byte 32, found "' .. string.rep("x", 40) .. '..."', reason)
  end)
end)

-- Both decoders, each with its line for a text and stream (complete, or
-- partial), and a malformed line with its reason.
local decoders = {
  docker = {
    line = function(text, stream) return docker_line(text .. "\\n", stream) end,
    partial_line = function(text) return docker_line(text) end,
    malformed = { '{"log":"hi\\n","stream":"stdout"}', '"time" is missing' },
  },
  cri = {
    line = function(text, stream) return TIME .. " " .. (stream or "stdout") .. " F " .. text end,
    partial_line = function(text) return TIME .. " stdout P " .. text end,
    malformed = { TIME .. " stdin F x", 'expected "stdout" or "stderr" at byte 32, found "stdin"' },
  },
}

for _, name in ipairs({ "docker", "cri" }) do
  local case = decoders[name]
  local filename = "sandbox/decoders/" .. name .. ".lua"

  describe(name .. " decoder", function()
    it("injects Timestamp, Payload and the stream", function()
      local plugin = host.decoder(filename)
      local rc, err, messages = plugin:decode(case.line("oops \255", "stderr"))
      assert.equal(0, rc)
      assert.is_nil(err)
      assert.same({ { Type = name, Timestamp = NS, Payload = "oops \255",
                      Fields = { stream = "stderr" } } }, messages)
    end)

    it("marks only partial lines as partial", function()
      local plugin = host.decoder(filename)
      local _, _, partial = plugin:decode(case.partial_line("first 16 KiB"))
      local _, _, full = plugin:decode(case.line("rest"))
      assert.same({ stream = "stdout", partial = true }, partial[1].Fields)
      assert.equal("first 16 KiB", partial[1].Payload)
      assert.same({ stream = "stdout" }, full[1].Fields)
    end)

    it("takes Type and Hostname from the settings", function()
      local plugin = host.decoder(filename, { message_type = "k8s", hostname = "node-1" })
      local _, _, messages = plugin:decode(case.line(""))
      -- No Payload: an empty string header is one never set (src/message.h).
      assert.same({ { Type = "k8s", Hostname = "node-1", Timestamp = NS,
                      Fields = { stream = "stdout" } } }, messages)
    end)

    it("rejects a malformed line with the reason, injecting nothing", function()
      local plugin = host.decoder(filename)
      local rc, err, messages = plugin:decode(case.malformed[1])
      assert.same({ -1, case.malformed[2], {} }, { rc, err, messages })
    end)
  end)
end
