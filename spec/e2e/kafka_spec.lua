-- The kafka_output against a real Apache Kafka broker (spec/e2e/kafka_harness.lua),
-- read back with kcat: delivery, topics and keys from templates, refused
-- records, compression, rate caps and the --check errors. Outages,
-- restarts and the disk buffer: kafka_faults_spec.lua.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")
local cjson = require("cjson")

-- RFC 3164 lines from `hosts` in turn, numbered from 1.
local function syslog_lines(n, hosts)
  local out = {}
  for i = 1, n do
    local host = hosts[(i - 1) % #hosts + 1]
    out[i] = string.format("<13>Nov 23 10:%02d:%02d %s app[%d]: message %d", math.floor(i / 60) % 60, i % 60, host, 1000 + i, i)
  end
  return table.concat(out, "\n") .. "\n"
end

local function config(b, output)
  return [[
lumberjit = { dead_letter_path = "dead.json" }
input = { type = "stdin_input", decoder = "rfc3164" }
rfc3164 = { type = "decoder", filename = "decoders/rsyslog.lua", template = "RSYSLOG_TraditionalForwardFormat" }
json = { type = "encoder", filename = "encoders/json.lua" }
payload = { type = "encoder", filename = "encoders/payload.lua" }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "]] .. b.bootstrap .. [[", ]]
    .. output .. " }\n"
end

local function summary(stderr)
  local produced, delivered, from_disk, refused = (stderr or ""):match(
    "output 'kafka': Kafka: (%d+) produced, (%d+) delivered %((%d+) of them from the disk buffer%), (%d+) refused")
  return { produced = tonumber(produced), delivered = tonumber(delivered), from_disk = tonumber(from_disk),
           refused = tonumber(refused) }
end

local function dead_letters(dir)
  local out = {}
  for _, line in ipairs(run.lines(run.read(dir .. "/dead.json") or "")) do out[#out + 1] = cjson.decode(line) end
  return out
end

describe("kafka_output", function()
  local b

  setup(function()
    b = k.start()
    k.create_topics(b, { logs = 3, keyed = 3, ["by-web"] = 1, ["by-db"] = 1, ["codec-gzip"] = 1,
                         ["codec-snappy"] = 1, ["codec-lz4"] = 1, ["codec-zstd"] = 1, capped = 1, ["app-logs"] = 3,
                         sized = 1, raw = 1 })
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  it("delivers every record once, counting it only on its delivery report", function()
    local started_ms = os.time() * 1000
    local r = run.lumberjit{ config = config(b, [[encoder = "json", topic = "logs"]]),
                             input = syslog_lines(3000, { "alpha", "beta" }) }
    assert.are.equal(0, r.status, r.stderr)
    local s = summary(r.stderr)
    assert.are.equal(3000, s.produced)
    assert.are.equal(3000, s.delivered)
    assert.truthy(r.stderr:find("output 'kafka': 3000 delivered, 0 failed", 1, true))
    local records = k.consume(b, "logs", { min = 3000 })
    assert.are.equal(3000, #records)
    local seen = {}
    for _, rec in ipairs(records) do
      local msg = cjson.decode(rec.value)
      local n = tonumber(msg.message:match("message (%d+)"))
      assert.is_nil(seen[n])
      seen[n] = true
      assert.is_nil(rec.key)
      -- The producer's wall clock (CreateTime), in ms, set by lumberjit.
      assert.is_true(rec.timestamp >= started_ms and rec.timestamp <= os.time() * 1000 + 1000,
                     "timestamp " .. rec.timestamp)
    end
    run.cleanup(r.dir)
  end)

  it("sends lines as read, with neither decoder nor encoder, straight from the loop (the passthrough)", function()
    local lines = syslog_lines(2000, { "alpha", "beta" })
    local r = run.lumberjit{ config = ([[
lumberjit = { dead_letter_path = "dead.json", log_level = "debug" }
input = { type = "stdin_input" }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", topic = "raw", key = "static-key" }
]]):format(b.bootstrap), input = lines }
    assert.are.equal(0, r.status, r.stderr)
    assert.truthy(r.stderr:find("input 'input': its records go straight to the outputs", 1, true))
    assert.truthy(r.stderr:find("output 'kafka': 2000 delivered, 0 failed", 1, true))
    local records = k.consume(b, "raw", { min = 2000 })
    local want = run.lines(lines)
    assert.are.equal(#want, #records)
    for i, rec in ipairs(records) do
      assert.are.equal(want[i], rec.value) -- one partition: in order
      assert.are.equal("static-key", rec.key)
    end
    run.cleanup(r.dir)
  end)

  it("keys records from a template, so each key keeps its order in one partition", function()
    local hosts = { "web1", "web2", "db1", "db2", "cache" }
    local r = run.lumberjit{ config = config(b, [[encoder = "json", topic = "keyed", key = "%{Hostname}",
                                                  partitioner = "murmur2"]]),
                             input = syslog_lines(2000, hosts) }
    assert.are.equal(0, r.status, r.stderr)
    local records = k.consume(b, "keyed", { min = 2000 })
    assert.are.equal(2000, #records)
    local partition_of, last = {}, {}
    for _, rec in ipairs(records) do
      local msg = cjson.decode(rec.value)
      assert.are.equal(msg.host, rec.key)
      partition_of[rec.key] = partition_of[rec.key] or rec.partition
      assert.are.equal(partition_of[rec.key], rec.partition)
      local n = tonumber(msg.message:match("message (%d+)"))
      assert.is_true(n > (last[rec.key] or 0), "out of order within key " .. rec.key)
      last[rec.key] = n
    end
    run.cleanup(r.dir)
  end)

  it("routes records to topics from a template and dead-letters those it cannot place", function()
    local input = table.concat({
      "<13>Nov 23 10:00:01 web app[1]: to by-web",
      "<13>Nov 23 10:00:02 db app[2]: to by-db",
      "<13>Nov 23 10:00:03 bad!host app[3]: no valid topic name",
      "<13>Nov 23 10:00:04 nowhere app[4]: a topic the broker does not have",
      "<13>Nov 23 10:00:05 web app[5]: to by-web again",
    }, "\n") .. "\n"
    local r = run.lumberjit{ config = config(b, [[encoder = "payload", topic = "by-%{Hostname}",
      properties = { ["topic.metadata.propagation.max.ms"] = 1000 }]]), input = input }
    assert.are.equal(1, r.status, r.stderr)
    local web = k.consume(b, "by-web", { min = 2 })
    assert.are.same({ "to by-web", "to by-web again" }, { web[1].value, web[2].value })
    assert.are.equal("to by-db", k.consume(b, "by-db", { min = 1 })[1].value)
    local dead = dead_letters(r.dir)
    assert.are.equal(2, #dead)
    table.sort(dead, function(x, y) return x.offset < y.offset end)
    assert.truthy(dead[1].reason:find("topic template", 1, true), dead[1].reason)
    assert.truthy(dead[1].payload:find("bad!host", 1, true))
    assert.truthy(dead[2].reason:find("Kafka did not take the record (topic by-nowhere)", 1, true), dead[2].reason)
    assert.are.equal("a topic the broker does not have", dead[2].payload)
    assert.are.equal(1, summary(r.stderr).refused)
    run.cleanup(r.dir)
  end)

  it("refuses a record librdkafka rejects in the middle of a batch, and sends the rest in order", function()
    -- Records go to librdkafka in batches; two in the first batch are over
    -- message.max.bytes, so librdkafka rejects them as it takes the others.
    local lines = {}
    for i = 1, 400 do
      local text = (i == 50 or i == 51) and ("big %d "):format(i) .. ("x"):rep(1500) or ("message %d"):format(i)
      lines[i] = ("<13>Nov 23 10:00:01 h app[1]: %s"):format(text)
    end
    local r = run.lumberjit{ config = config(b, [[encoder = "payload", topic = "sized",
      properties = { ["message.max.bytes"] = 1000 }]]), input = table.concat(lines, "\n") .. "\n" }
    assert.are.equal(1, r.status, r.stderr)
    local records = k.consume(b, "sized", { min = 398 })
    assert.are.equal(398, #records)
    for i, rec in ipairs(records) do
      local n = i < 50 and i or i + 2
      assert.are.equal(("message %d"):format(n), rec.value)
    end
    local dead = dead_letters(r.dir)
    assert.are.equal(2, #dead)
    for i, d in ipairs(dead) do
      assert.truthy(d.reason:find("size too large", 1, true), d.reason)
      assert.are.equal(("big %d "):format(49 + i) .. ("x"):rep(1500), d.payload)
    end
    assert.are.same({ produced = 398, delivered = 398, from_disk = 0, refused = 2 }, summary(r.stderr))
    run.cleanup(r.dir)
  end)

  it("compresses with gzip, snappy, lz4 and zstd", function()
    for _, codec in ipairs({ "gzip", "snappy", "lz4", "zstd" }) do
      local r = run.lumberjit{ config = config(b, ([[encoder = "payload", topic = "codec-%s",
        compression = "%s"]]):format(codec, codec)), input = syslog_lines(500, { "h" }) }
      assert.are.equal(0, r.status, r.stderr)
      local records = k.consume(b, "codec-" .. codec, { min = 500 })
      assert.are.equal(500, #records)
      assert.are.equal("message 1", records[1].value)
      assert.are.equal("message 500", records[500].value)
      run.cleanup(r.dir)
    end
  end)

  it("keeps to max_messages_per_second and max_bytes_per_second", function()
    -- A cap of 400 records a second lets 400 go at once (one second's worth)
    -- and the rest at the cap: 2000 records span at least 4 s of the
    -- records' own timestamps, set when each was produced.
    local r = run.lumberjit{ config = config(b, [[encoder = "payload", topic = "capped",
      max_messages_per_second = 400]]), input = syslog_lines(2000, { "h" }) }
    assert.are.equal(0, r.status, r.stderr)
    local records = k.consume(b, "capped", { min = 2000 })
    assert.are.equal(2000, #records)
    assert.is_true(records[2000].timestamp - records[1].timestamp >= 3900,
      "2000 records at 400/s took only " .. (records[2000].timestamp - records[1].timestamp) .. " ms")
    -- 1000 records of 12 bytes at 4000 bytes a second: at least 2 s more.
    r = run.lumberjit{ config = config(b, [[encoder = "payload", topic = "capped",
      max_bytes_per_second = 4000]]), input = syslog_lines(1000, { "h" }):gsub("message (%d+)", function(n)
        return ("m%011d"):format(n) end) }
    assert.are.equal(0, r.status, r.stderr)
    records = k.consume(b, "capped", { min = 3000 })
    assert.is_true(records[3000].timestamp - records[2001].timestamp >= 1900)
    run.cleanup(r.dir)
  end)

  it("refuses a bad producer setting with --check, naming the key", function()
    local cases = {
      { [[topic = "logs", properties = { ["linger.mss"] = 5 }]], "linger.mss" },
      { [[topic = "logs", compression = "brotli"]], "key 'compression' 'compression.codec' = 'brotli'" },
      { [[topic = "logs", acks = "many"]], "key 'acks' 'acks' = 'many'" },
      { [[topic = "a b"]], "key 'topic' 'a b' is no valid Kafka topic name" },
      { [[topic = "logs-%{Type"]], "has no closing }" },
      { [[topic = "logs", properties = { ["delivery.report.only.error"] = true }]], "lumberjit's own" },
      { [[topic = "logs", disk_buffer = { max_bytes = 100000000 }]], "key 'disk_buffer' needs a path" },
    }
    for _, case in ipairs(cases) do
      local r = run.lumberjit{ config = config(b, "encoder = \"json\", " .. case[1]),
                               args = "--check" }
      assert.are_not.equal(0, r.status)
      assert.truthy(r.stderr:find(case[2], 1, true), case[2] .. " not in: " .. r.stderr)
      run.cleanup(r.dir)
    end
    -- Left out, or empty: librdkafka would take an empty list and wait for
    -- a broker for ever (message.timeout.ms = 0).
    for _, brokers in ipairs({ "", 'brokers = " , ", ' }) do
      local r = run.lumberjit{ config = (config(b, [[topic = "logs"]]):gsub('brokers = "[^"]*", ', brokers)),
                               args = "--check" }
      assert.are_not.equal(0, r.status)
      assert.truthy(r.stderr:find("key 'brokers' is required", 1, true), r.stderr)
      run.cleanup(r.dir)
    end
  end)

  it("runs examples/tail-to-kafka.lua as README.md says", function()
    local dir = run.tmpdir()
    -- As written, but with this broker's address.
    run.write(dir .. "/config.lua", (run.read(run.root .. "/examples/tail-to-kafka.lua")
      :gsub('brokers = "[^"]*"', 'brokers = "' .. b.bootstrap .. '"')))
    local function run_for(seconds)
      return run.for_seconds(dir, "config.lua", seconds)
    end
    os.execute("cd " .. run.quote(dir) .. " && mkdir -p logs state && printf 'one\\ntwo\\n' > logs/a.log"
      .. " && printf 'three\\n' > logs/b.log")
    run_for(3)
    os.execute("cd " .. run.quote(dir) .. " && printf 'four\\n' >> logs/a.log")
    run_for(3)
    local records = k.consume(b, "app-logs", { min = 4 })
    local got = {}
    for _, rec in ipairs(records) do
      local doc = cjson.decode(rec.value)
      assert.are.equal(doc.path, rec.key)
      got[#got + 1] = doc.path .. " " .. doc.message
    end
    table.sort(got)
    assert.are.same({ "logs/a.log four", "logs/a.log one", "logs/a.log two", "logs/b.log three" }, got)
    assert.matches("resuming logs/a.log at offset 8", run.read(dir .. "/stderr"))
    -- The second run's metrics, written at its exit: one line read, and
    -- nothing waiting anywhere.
    local metrics = run.read(dir .. "/state/metrics.prom")
    assert.matches('\nlumberjit_input_records_total{input="app"} 1\n', metrics)
    assert.matches('\nlumberjit_output_delivered_records_total{output="kafka"} 1\n', metrics)
    assert.matches('\nlumberjit_output_in_flight_records{output="kafka"} 0\n', metrics)
    assert.matches('\nlumberjit_output_disk_buffer_records{output="kafka"} 0\n', metrics)
    run.cleanup(dir)
  end)

  it("will not take dead letters: they go to a file or standard output", function()
    local r = run.lumberjit{ config = (config(b, [[topic = "logs"]]):gsub('dead_letter_path = "dead.json"',
      'dead_letter_output = "kafka"')), args = "--check" }
    assert.are_not.equal(0, r.status)
    assert.truthy(r.stderr:find("dead letters go to a file or standard output", 1, true), r.stderr)
    run.cleanup(r.dir)
  end)
end)
