dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"

local T = 1704164645                       -- 2024-01-02T03:04:05Z, in seconds

local function decoder(config)
  return host.decoder("sandbox/decoders/json_lines.lua", config)
end

local function load_error(config)
  return host.load_error(decoder, config)
end

local decoded, rejection = host.one, host.rejection

describe("json_lines decoder", function()
  local plugin
  setup(function() plugin = decoder({}) end)

  it("makes headers from the usual keys and fields from the rest, typed", function()
    local line = '{"time":"2024-01-02T03:04:05.123Z","level":"warn","msg":"slow","ms":812.5,'
                 .. '"ok":true,"off":false,"host":"web1","pid":4242,"logger":"http","n":-3e2}'
    assert.same({
      Timestamp = T * 1e9 + 123e6, Type = "json", Hostname = "web1", Severity = 4, Pid = 4242,
      Logger = "http", Payload = "slow",
      Fields = { ms = 812.5, ok = true, off = false, n = -300 },
    }, decoded(plugin, line))
  end)

  it("keeps the whole line as Payload when no message key has a string", function()
    local line = '{"a":"x","message":42}'
    local message = plugin:unstamped(decoded(plugin, line))
    assert.same({ Type = "json", Payload = line, Fields = { a = "x", message = 42 } }, message)
  end)

  it("flattens nested objects with the separator", function()
    local message = decoded(plugin, '{"req":{"id":"a1","h":{"x":1,"y":{"z":true}}},"k":"v"}')
    assert.same({ ["req.id"] = "a1", ["req.h.x"] = 1, ["req.h.y.z"] = true, k = "v" },
                message.Fields)
    message = decoded(decoder({ flatten = "_" }), '{"req":{"id":"a1","h":{"x":1}}}')
    assert.same({ req_id = "a1", req_h_x = 1 }, message.Fields)
  end)

  it("keeps nested objects as JSON text, keys in order, with flatten = false", function()
    local message = decoded(decoder({ flatten = false }),
                            '{"req":{"z":1.5,"id":"a\\"1","h":{"b":[1,2],"a":null}},"k":"v"}')
    assert.same({ req = '{"h":{"a":null,"b":[1,2]},"id":"a\\"1","z":1.5}', k = "v" },
                message.Fields)
  end)

  it("makes arrays of one scalar type array fields, others JSON text", function()
    local message = decoded(plugin, '{"tags":["a","b"],"ns":[1,2.5],"bs":[true,false],'
                            .. '"mix":[1,"a"],"objs":[{"a":1}],"nulls":[null,1],'
                            .. '"big":[12345678901234567]}')
    assert.same({ tags = { "a", "b" }, ns = { 1, 2.5 }, bs = { true, false },
                  mix = '[1,"a"]', objs = '[{"a":1}]', nulls = "[null,1]",
                  big = 12345678901234567 }, message.Fields)
  end)

  it("makes no field of null, [] or {}", function()
    local message = decoded(plugin, '{"a":null,"b":[],"c":{},"d":{"e":{}},"f":1}')
    assert.same({ f = 1 }, message.Fields)
  end)

  it("reads escapes and unicode", function()
    local message = decoded(plugin, '{"msg":"tab\\there \\u00e9\\u4e2d \\ud83d\\ude00 \\"q\\" \\\\",'
                                    .. '"k\\u00e9y":"caf\195\169"}')
    assert.equal('tab\there é中 😀 "q" \\', message.Payload)
    assert.same({ ["kéy"] = "café" }, message.Fields)
  end)

  it("keeps the last of a repeated key, as cjson does", function()
    assert.same({ a = 2 }, decoded(plugin, '{"a":1,"a":2}').Fields)
  end)

  it("decodes an empty object and surrounding whitespace", function()
    local message = plugin:unstamped(decoded(plugin, '  {}  '))
    assert.same({ Type = "json", Payload = "  {}  ", Fields = {} }, message)
  end)

  it("reads times in each format", function()
    local cases = {
      { {}, '"2024-01-02T03:04:05+01:00"', (T - 3600) * 1e9 },
      { {}, '"2024-01-02 03:04:05"', T * 1e9 },
      { {}, '"2024-01-02 03:04:05,250"', T * 1e9 + 0.25e9 },
      { {}, '"02/Jan/2024:03:04:05 -0100"', (T + 3600) * 1e9 },
      { {}, tostring(T), T * 1e9 },
      { {}, tostring(T) .. "500", T * 1e9 + 500e6 },
      { {}, tostring(T) .. "500000", T * 1e9 + 500e6 },
      { {}, tostring(T) .. "000000001", T * 1e9 + 1 },
      { { timestamp_format = "epoch_ms" }, '"' .. T .. '000"', T * 1e9 },
      { { timestamp_format = "epoch" }, "1.5", 1.5e9 },
      { { timestamp_format = "iso8601", tz = "Asia/Shanghai" }, '"2024-01-02 11:04:05"', T * 1e9 },
    }
    for _, case in ipairs(cases) do
      local message = decoded(decoder(case[1]), '{"ts":' .. case[2] .. '}')
      assert.equal(case[3], message.Timestamp, case[2])
      assert.same({}, message.Fields)
    end
  end)

  it("takes headers from configured keys, in the order given", function()
    local custom = decoder({ timestamp_key = "@t", message_key = { "text", "m" },
                             host_key = "node", level_key = "sev", pid_key = "process",
                             logger_key = false })
    local message = decoded(custom, '{"@t":"2024-01-02T03:04:05Z","m":"two","text":"one",'
                                    .. '"node":"n1","sev":50,"process":"77","logger":"kept",'
                                    .. '"time":"not a key now"}')
    assert.same({ Timestamp = T * 1e9, Type = "json", Payload = "one", Hostname = "n1",
                  Severity = 3, Pid = 77,
                  Fields = { m = "two", logger = "kept", time = "not a key now" } }, message)
  end)

  it("maps level names and numbers to severities, leaving others as fields", function()
    local cases = { emerg = 0, ALERT = 1, Critical = 2, fatal = 2, ERROR = 3, err = 3,
                    WaRnInG = 4, notice = 5, info = 6, Information = 6, debug = 7, trace = 7 }
    for name, severity in pairs(cases) do
      assert.equal(severity, decoded(plugin, '{"level":"' .. name .. '"}').Severity, name)
    end
    assert.equal(6, decoded(plugin, '{"level":30}').Severity)
    assert.equal(5, decoded(plugin, '{"level":5}').Severity)
    local message = decoded(plugin, '{"level":"chatty"}')
    assert.is_nil(message.Severity)
    assert.same({ level = "chatty" }, message.Fields)
  end)

  it("leaves values that are not a header's type as fields", function()
    local message = decoded(plugin, '{"host":7,"pid":"12a","logger":true,"msg":["a","b"]}')
    assert.is_nil(message.Hostname)
    assert.is_nil(message.Pid)
    assert.is_nil(message.Logger)
    assert.same({ host = 7, pid = "12a", logger = true, msg = { "a", "b" } }, message.Fields)
  end)

  it("sets the configured Type and a default Hostname", function()
    local custom = decoder({ message_type = "app", hostname = "box" })
    local message = decoded(custom, '{"a":1}')
    assert.equal("app", message.Type)
    assert.equal("box", message.Hostname)
    assert.equal("web", decoded(custom, '{"host":"web"}').Hostname)
  end)

  it("keeps no state from one record in the next", function()
    decoded(plugin, '{"time":"2024-01-02T03:04:05Z","level":"info","host":"h","pid":1,'
                    .. '"logger":"l","msg":"m","a":{"b":1}}')
    local message = plugin:unstamped(decoded(plugin, '{"c":2}'))
    assert.same({ Type = "json", Payload = '{"c":2}', Fields = { c = 2 } }, message)
  end)

  it("rejects what is not JSON, with cjson's reason", function()
    assert.equal("not JSON: Expected value but found invalid token at character 1",
                 rejection(plugin, "hello"))
    assert.equal("not JSON: Expected value but found T_END at character 1",
                 rejection(plugin, ""))
    assert.matches("^not JSON: Expected comma or object end but found T_END at character 9$",
                   rejection(plugin, '{"a":"b"'))
    assert.matches("^not JSON: .*at character 5$", rejection(plugin, '{"a"}'))
    assert.matches("^not JSON: ", rejection(plugin, '{"a":1} x'))
  end)

  it("rejects JSON that is not an object", function()
    assert.equal("not a JSON object but an array", rejection(plugin, "[1,2]"))
    assert.equal("not a JSON object but an array", rejection(plugin, " []"))
    assert.equal("not a JSON object but a string", rejection(plugin, '"x"'))
    assert.equal("not a JSON object but a number", rejection(plugin, "42"))
    assert.equal("not a JSON object but a boolean", rejection(plugin, "true"))
    assert.equal("not a JSON object but null", rejection(plugin, "null"))
  end)

  it("rejects times that do not read", function()
    assert.equal('"time" is "yesterday": not a time in a known format (RFC 3339, ISO 8601, '
                 .. 'syslog, HTTP date) nor a number', rejection(plugin, '{"time":"yesterday"}'))
    assert.equal('"ts" is true: not a time or a number', rejection(plugin, '{"ts":true}'))
    local strict = decoder({ timestamp_format = "rfc3339" })
    assert.equal('"time" is "2024-01-02 03:04:05": not an RFC 3339 time (bad date or clock)',
                 rejection(strict, '{"time":"2024-01-02 03:04:05"}'))
    assert.equal('"time" is "2024-13-02T03:04:05Z": not an RFC 3339 time (bad date or clock)',
                 rejection(strict, '{"time":"2024-13-02T03:04:05Z"}'))
    assert.equal('"time" is 5: not an RFC 3339 time', rejection(strict, '{"time":5}'))
  end)

  it("rejects records over max_bytes, and decodes big ones under it", function()
    -- (the sandbox host takes records up to 64 KiB)
    local big = '{"msg":"' .. string.rep("x", 60000) .. '"}'
    assert.equal(60000, #decoded(plugin, big).Payload)
    local capped = decoder({ max_bytes = 64 })
    assert.equal("the record is 60010 bytes, over max_bytes (64)", rejection(capped, big))
    assert.equal("x", decoded(capped, '{"msg":"x"}').Payload)
  end)

  it("decodes many keys and deep nesting", function()
    local parts, expected = {}, {}
    for i = 1, 500 do
      parts[i] = string.format('"k%d":%d', i, i)
      expected["k" .. i] = i
    end
    assert.same(expected, decoded(plugin, "{" .. table.concat(parts, ",") .. "}").Fields)
    local deep = string.rep('{"a":', 100) .. "1" .. string.rep("}", 100)
    local name = "a" .. string.rep(".a", 99)
    assert.same({ [name] = 1 }, decoded(plugin, deep).Fields)
  end)

  it("fails to load with a bad setting, naming it", function()
    assert.matches("flatten: expected a separator or false", load_error({ flatten = 3 }), 1, true)
    assert.matches("max_bytes: expected a positive number", load_error({ max_bytes = "x" }), 1, true)
    assert.matches('timestamp_format: unknown format "rfc9999"',
                   load_error({ timestamp_format = "rfc9999" }), 1, true)
    assert.matches("tz: ", load_error({ tz = "Nowhere/City" }), 1, true)
    assert.matches("host_key: expected a key, a list of keys or false",
                   load_error({ host_key = 5 }), 1, true)
  end)
end)
