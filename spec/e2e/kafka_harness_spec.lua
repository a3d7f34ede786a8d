-- The Kafka harness itself (spec/e2e/kafka_harness.lua), against a real
-- broker: topics, producing and consuming with kcat (keys, and values
-- holding newlines and any bytes), counting, and data that outlives a stop
-- and a restart. One broker for the whole file, as its JVM takes seconds to
-- start.
local k = dofile("spec/e2e/kafka_harness.lua")
local run = dofile("spec/e2e/run.lua")

describe("kafka harness", function()
  local b

  setup(function()
    b = k.start()
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  -- "key|value" of each record, sorted (the partitions interleave).
  local function pairs_of(records)
    local out = {}
    for _, r in ipairs(records) do out[#out + 1] = tostring(r.key) .. "|" .. tostring(r.value) end
    table.sort(out)
    return out
  end

  -- What the records written below read back as: a line without the key
  -- delimiter has no key at all, one that starts with it an empty key.
  local produced = { "a|first", "b|two\nlines", "c|bytes \0\1\127\255 end", "nil|no key", "|empty key" }
  table.sort(produced)

  it("starts a broker on 127.0.0.1 that kcat can reach", function()
    assert.matches("^127%.0%.0%.1:%d+$", b.bootstrap)
    assert.is_number(b.pid)
    local p = io.popen("timeout -s KILL 20 kcat -L -m 5 -b " .. b.bootstrap)
    assert.matches("1 brokers", p:read("*a"))
    p:close()
  end)

  it("creates topics with their partitions", function()
    k.create_topics(b, { three = 3, one = 1 })
    local topics = k.topics(b)
    assert.equal(3, topics.three)
    assert.equal(1, topics.one)
    assert.same({}, k.consume(b, "three"))
    assert.equal(0, k.count(b, "one"))
    local records, err = k.consume(b, "missing")
    assert.is_nil(records)
    assert.matches("Unknown topic", err)
  end)

  it("produces keyed records, one with a newline and odd bytes, and reads them back", function()
    -- Records separated by ASCII's record separator (kcat -D), so that a
    -- value may hold "\n"; each key before its "=" (kcat -K).
    run.write(b.dir .. "/in", "a=first\30b=two\nlines\30c=bytes \0\1\127\255 end\30no key\30=empty key\30")
    local ok, err = k.produce(b, "three", b.dir .. "/in",
      { delimiter = "\\x1e", key_delimiter = "=", headers = { from = "spec" } })
    assert.is_true(ok, err)
    local records = k.consume(b, "three", { min = 5 })
    assert.same(produced, pairs_of(records))
    for i, r in ipairs(records) do
      local before = records[i - 1]
      if before then assert.is_true(before.partition < r.partition or before.offset < r.offset) end
      assert.equal("three", r.topic)
      assert.is_true(r.partition >= 0 and r.partition <= 2)
      assert.is_number(r.offset)
      assert.is_number(r.timestamp)
      assert.same({ from = "spec" }, r.headers)
    end
    assert.equal(5, k.count(b, "three"))
  end)

  it("keeps the records through a stop and a restart, and after a kill", function()
    assert.equal(143, k.stop(b))
    k.restart(b)
    assert.equal(5, k.count(b, "three", { min = 5 }))
    assert.equal(137, k.kill(b))
    k.restart(b)
    assert.same(produced, pairs_of(k.consume(b, "three", { min = 5 })))
  end)
end)
