-- The bundled filters (sandbox/filters/) and lua_modules/message.lua, run
-- in the real sandbox (sandbox_host.lua).
dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"

local T0 = 1779186617e9 -- 2026-05-19T10:30:17Z, exact in a double

local W3_MESSAGE = {
  Timestamp = T0, Type = "syslog", Hostname = "snack", Severity = 4,
  Payload = "foo bar 32",
  Fields = { pri = 44, syslogfacility = 5, syslogtag = "jls:", programname = "jls" },
}

local function payloads(messages)
  local out = {}
  for i, m in ipairs(messages) do out[i] = m.Payload end
  return out
end

describe("message.read", function()
  local f = host.filter("spec/modules/message_read_filter.lua")

  it("gives every header and field, typed fields and arrays as inject_message takes them", function()
    local out = assert(f:filter({
      Timestamp = T0, Type = "t", Logger = "l", Severity = 3, Payload = "p", EnvVersion = "1",
      Pid = 42, Hostname = "h", Uuid = "0123456789abcdef",
      Fields = {
        s = "x", d = 1.5, b = false, list = { "a", "b" },
        bytes = { value = "\0\1", value_type = 1 },
        int = { value = 7, value_type = 2, representation = "count" },
        ints = { value = { 1, 2 }, value_type = 2 },
        ms = { value = 2.5, representation = "ms" },
      },
    }))
    assert.equal(2, #out)
    assert.equal('{EnvVersion="1",Fields={b=boolean:false,bytes={value="\\0\\1",value_type=number:1},'
      .. 'd=number:1.5,int={representation="count",value=number:7,value_type=number:2},'
      .. 'ints={value={1=number:1,2=number:2},value_type=number:2},list={1="a",2="b"},'
      .. 'ms={representation="ms",value=number:2.5,value_type=number:3},s="x"},Hostname="h",'
      .. 'Logger="l",Payload="p",Pid=number:42,Severity=number:3,Timestamp=number:1.779186617e+18,'
      .. 'Type="t",Uuid="0123456789abcdef"}', out[1].Payload)
  end)

  it("makes, injected back, the message it read", function()
    local message = {
      Timestamp = T0, Type = "t", Severity = 0, Payload = "p\0q", Uuid = "0123456789abcdef",
      Fields = { list = { 1.5, 2.5 }, bytes = { value = "\255", value_type = 1 },
                 int = { value = 7, value_type = 2, representation = "count" } },
    }
    local out = assert(f:filter(message))
    assert.same({ Timestamp = T0, Type = "t", Severity = 0, Payload = "p\0q",
                  Uuid = "0123456789abcdef",
                  Fields = { list = { 1.5, 2.5 }, bytes = "\255",
                             int = { value = 7, representation = "count" } } }, out[2])
  end)

  it("gives an empty Fields table and no absent header", function()
    local out = assert(f:filter({ Timestamp = T0, Payload = "only" }))
    assert.equal('{Fields={},Payload="only",Timestamp=number:1.779186617e+18}', out[1].Payload)
  end)
end)

describe("filters/sample.lua", function()
  it("keeps the first of every keep_one_in messages", function()
    local f = host.filter("sandbox/filters/sample.lua", { keep_one_in = 3 })
    local kept = {}
    for i = 1, 7 do
      for _, m in ipairs(assert(f:filter({ Timestamp = T0, Payload = "m" .. i }))) do
        kept[#kept + 1] = m.Payload
      end
    end
    assert.same({ "m1", "m4", "m7" }, kept)
  end)

  it("keeps a message unchanged", function()
    local f = host.filter("sandbox/filters/sample.lua", { keep_one_in = 1 })
    assert.same({ W3_MESSAGE }, f:filter(W3_MESSAGE))
  end)

  it("with a key, keeps all of a key's messages or none, about one key in N", function()
    local f = host.filter("sandbox/filters/sample.lua", { keep_one_in = 4, key = "Fields[user]" })
    local fate, kept_keys = {}, 0
    for round = 1, 3 do
      for u = 1, 200 do
        local user = "user" .. u
        local n = #assert(f:filter({ Timestamp = T0, Payload = "x", Fields = { user = user } }))
        if round == 1 then
          fate[user] = n
          kept_keys = kept_keys + n
        else
          assert.equal(fate[user], n, user)
        end
      end
    end
    assert.is_true(kept_keys > 20 and kept_keys < 80, tostring(kept_keys))
  end)

  it("decides a key the same way in another instance, and keys a message without one as \"\"", function()
    local settings = { keep_one_in = 2, key = "Hostname" }
    local a, b = host.filter("sandbox/filters/sample.lua", settings),
                 host.filter("sandbox/filters/sample.lua", settings)
    for _, h in ipairs({ "alpha", "beta", "gamma", "delta", "x", "" }) do
      local m = { Timestamp = T0, Payload = "p", Hostname = h ~= "" and h or nil }
      assert.equal(#assert(a:filter(m)), #assert(b:filter(m)), h)
    end
  end)

  it("refuses a bad keep_one_in or key at load", function()
    local ok, err = pcall(host.filter, "sandbox/filters/sample.lua", { keep_one_in = 0 })
    assert.is_false(ok)
    assert.matches("setting keep_one_in: a whole number from 1 expected, got 0", err)
    ok, err = pcall(host.filter, "sandbox/filters/sample.lua", { key = "user" })
    assert.is_false(ok)
    assert.matches('setting key: "user" is not a header or Fields%[NAME%]', err)
  end)
end)

describe("filters/rate_limit.lua", function()
  local function message(host_name, seconds)
    return { Timestamp = T0 + seconds * 1e9, Hostname = host_name, Payload = host_name .. seconds }
  end

  it("lets max_per_interval of each key through per interval, by the messages' time", function()
    local f = host.filter("sandbox/filters/rate_limit.lua",
      { max_per_interval = 2, interval_ms = 1000 })
    local passed = {}
    local function send(h, s)
      for _, m in ipairs(assert(f:filter(message(h, s)))) do passed[#passed + 1] = m.Payload end
    end
    send("a", 0); send("a", 0.1); send("a", 0.2); send("b", 0.3); send("a", 0.9)
    send("a", 1.0); send("a", 1.5); send("a", 1.6); send("a", 0.5) -- back in time: this interval
    assert.same({ "a0", "a0.1", "b0.3", "a1", "a1.5" }, passed)
  end)

  it("passes a message through unchanged", function()
    local f = host.filter("sandbox/filters/rate_limit.lua", { max_per_interval = 1 })
    assert.same({ W3_MESSAGE }, f:filter(W3_MESSAGE))
  end)

  it("reports the drops per key at each timer_event, and nothing when it dropped none", function()
    local f = host.filter("sandbox/filters/rate_limit.lua",
      { max_per_interval = 1, key = "Fields[app]", ticker_interval_ms = 60000 })
    for _, app in ipairs({ "web", "web", "db", "web", "db" }) do
      f:filter({ Timestamp = T0, Payload = "x", Fields = { app = app } })
    end
    f:filter({ Timestamp = T0, Payload = "x" })
    f:filter({ Timestamp = T0, Payload = "x" })
    local summaries = assert(f:timer(T0 + 5e9, false))
    assert.same({
      { Timestamp = T0 + 5e9, Type = "rate_limit", Payload = "dropped 1 from ",
        Fields = { key = "", dropped = 1 } },
      { Timestamp = T0 + 5e9, Type = "rate_limit", Payload = "dropped 1 from db",
        Fields = { key = "db", dropped = 1 } },
      { Timestamp = T0 + 5e9, Type = "rate_limit", Payload = "dropped 2 from web",
        Fields = { key = "web", dropped = 2 } },
    }, summaries)
    assert.same({}, assert(f:timer(T0 + 6e9, true)))
  end)

  it("sums the drops of keys past 200 in one summary", function()
    local f = host.filter("sandbox/filters/rate_limit.lua",
      { max_per_interval = 1, ticker_interval_ms = 1000 })
    for i = 1, 203 do
      local h = string.format("h%03d", i)
      f:filter(message(h, 0))
      f:filter(message(h, 0))
    end
    local summaries = assert(f:timer(T0, true))
    assert.equal(201, #summaries)
    assert.equal("dropped 1 from h200", summaries[200].Payload)
    assert.equal("dropped 3 from 3 other keys", summaries[201].Payload)
  end)

  it("forgets ended intervals past max_keys, and starts over when none has ended", function()
    local f = host.filter("sandbox/filters/rate_limit.lua", { max_per_interval = 1, max_keys = 2 })
    local function passes(h, s) return #assert(f:filter(message(h, s))) end
    assert.equal(1, passes("a", 0))
    assert.equal(1, passes("b", 0))
    assert.equal(1, passes("c", 0))  -- a and b forgotten: none had ended
    assert.equal(1, passes("a", 0))  -- a new interval for a
    assert.equal(0, passes("a", 0.5))
  end)

  it("requires max_per_interval", function()
    local ok, err = pcall(host.filter, "sandbox/filters/rate_limit.lua", {})
    assert.is_false(ok)
    assert.matches("setting max_per_interval: a whole number from 1 expected, got nil", err)
  end)
end)

describe("filters/mask.lua", function()
  it("replaces each pattern's matches in the named values, captures and all", function()
    local f = host.filter("sandbox/filters/mask.lua", {
      fields = { "Payload", "Fields[query]", "Fields[tags]", "Fields[n]" },
      patterns = { "(password=)%S+", "(card )%d%d%d%d%-%d%d%d%d" }, replacement = "%1***" })
    local out = assert(f:filter({
      Timestamp = T0, Hostname = "password=h", Payload = "login password=hunter2 card 1234-5678 ok",
      Fields = { query = "a=1&password=x", tags = { "password=y", "z" }, n = 5, other = "password=k" },
    }))
    assert.same({ {
      Timestamp = T0, Hostname = "password=h", Payload = "login password=*** card *** ok",
      Fields = { query = "a=1&password=***", tags = { "password=***", "z" }, n = 5,
                 other = "password=k" },
    } }, out)
  end)

  it("without patterns, replaces each named value whole; removes what remove names", function()
    local f = host.filter("sandbox/filters/mask.lua", {
      fields = { "Fields[password]", "Fields[pin]", "Hostname" },
      remove = { "Fields[token]", "Logger" } })
    local out = assert(f:filter({
      Timestamp = T0, Logger = "l", Payload = "p",
      Fields = { password = "s3cret", pin = { value = 1234, value_type = 2 }, token = "t", keep = 1 },
    }))
    assert.same({ { Timestamp = T0, Payload = "p",
                    Fields = { password = "***", pin = "***", keep = 1 } } }, out)
  end)

  it("refuses settings that mask nothing, a header that is not text, a malformed pattern", function()
    local function load_error(settings)
      local ok, err = pcall(host.filter, "sandbox/filters/mask.lua", settings)
      assert.is_false(ok)
      return err
    end
    assert.matches("settings fields and remove name nothing", load_error({}))
    assert.matches("setting fields: Severity is not a text header",
      load_error({ fields = { "Severity" } }))
    assert.matches('setting patterns: "%[a": malformed pattern', load_error({ fields = "Payload", patterns = "[a" }))
  end)
end)

describe("filters/add_hostname.lua", function()
  it("sets Hostname when absent, keeps one that is set, and sets the static fields", function()
    local f = host.filter("sandbox/filters/add_hostname.lua",
      { hostname = "web-3", fields = { env = "prod", weight = 2, canary = false } })
    assert.same({ { Timestamp = T0, Payload = "p", Hostname = "web-3",
                    Fields = { env = "prod", weight = 2, canary = false, app = "x" } } },
      f:filter({ Timestamp = T0, Payload = "p", Fields = { app = "x", env = "dev" } }))
    assert.same({ { Timestamp = T0, Payload = "p", Hostname = "db-1",
                    Fields = { env = "prod", weight = 2, canary = false } } },
      f:filter({ Timestamp = T0, Payload = "p", Hostname = "db-1" }))
  end)

  it("treats an empty Hostname as none", function()
    local f = host.filter("sandbox/filters/add_hostname.lua", { hostname = "web-3" })
    assert.equal("web-3", f:filter({ Timestamp = T0, Payload = "p", Hostname = "" })[1].Hostname)
  end)

  it("takes this machine's name without hostname (read_config('Hostname')), and refuses an empty one", function()
    local machine = io.popen("hostname"):read("*l")
    local f = host.filter("sandbox/filters/add_hostname.lua", {})
    assert.equal(machine, f:filter({ Timestamp = T0, Payload = "p" })[1].Hostname)
    local ok, err = pcall(host.filter, "sandbox/filters/add_hostname.lua", { hostname = "" })
    assert.is_false(ok)
    assert.matches("setting hostname: a non%-empty string expected", err)
  end)
end)

describe("filters/count.lua", function()
  it("counts per key and injects one message per key at each timer_event", function()
    local f = host.filter("sandbox/filters/count.lua", { ticker_interval_ms = 1000 })
    for _, t in ipairs({ "syslog", "access", "syslog" }) do
      assert.same({}, assert(f:filter({ Timestamp = T0, Type = t, Payload = "x" })))
    end
    f:filter({ Timestamp = T0, Payload = "no type" })
    assert.same({
      { Timestamp = T0 + 1e9, Type = "count", Payload = ": 1",
        Fields = { key = "", count = 1, interval_ms = 1000 } },
      { Timestamp = T0 + 1e9, Type = "count", Payload = "access: 1",
        Fields = { key = "access", count = 1, interval_ms = 1000 } },
      { Timestamp = T0 + 1e9, Type = "count", Payload = "syslog: 2",
        Fields = { key = "syslog", count = 2, interval_ms = 1000 } },
    }, assert(f:timer(T0 + 1e9, false)))
    f:filter({ Timestamp = T0, Type = "access", Payload = "x" })
    assert.same({ "access: 1" }, payloads(assert(f:timer(T0 + 2e9, true))))
  end)

  it("injects nothing for an interval it saw nothing in", function()
    local f = host.filter("sandbox/filters/count.lua", { key = "Hostname", message_type = "n" })
    assert.same({}, assert(f:timer(T0, false)))
    f:filter({ Timestamp = T0, Hostname = "a", Payload = "x" })
    assert.same({ "a: 1" }, payloads(assert(f:timer(T0, false))))
    assert.same({}, assert(f:timer(T0, true)))
  end)
end)

describe("the host's filter calls", function()
  it("give a rejection and a failure apart", function()
    local f = host.filter("spec/modules/message_read_filter.lua")
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir " .. dir)
    local path = dir .. "/f.lua"
    local file = assert(io.open(path, "w"))
    file:write("function process_message()\n"
      .. "  if read_message('Payload') == 'no' then return -1, 'said no' end\n"
      .. "  error('boom')\nend\n")
    file:close()
    f = host.filter(path)
    assert.same({ nil, "said no", "rejected" }, { f:filter({ Payload = "no" }) })
    local messages, reason, kind = f:filter({ Payload = "x" })
    assert.is_nil(messages)
    assert.equal("failed", kind)
    assert.matches("f.lua:3: boom", reason)
    os.execute("rm -rf " .. dir)
  end)
end)
