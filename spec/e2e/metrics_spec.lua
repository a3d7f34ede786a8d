-- The metrics file (src/pipeline/metrics.h): Prometheus's text format, rewritten
-- while lumberjit runs and once more at exit, with what each input read
-- and what each output delivered and holds. (A Kafka output's backlog in
-- it: kafka_faults_spec.)
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")

-- The samples of a metrics file, { ['name{labels}'] = value }, after
-- checking its format: each name's samples together, after its HELP and
-- TYPE lines.
local function parse(text)
  local samples, typed, done, current = {}, {}, {}, nil
  for line in text:gmatch("([^\n]*)\n") do
    local kind, name = line:match("^# (%u+) (%S+)")
    if kind == "TYPE" then
      assert.is_nil(typed[name], "two TYPE lines for " .. name)
      typed[name] = line:match("^# TYPE %S+ (%a+)$")
      assert.truthy(typed[name] == "counter" or typed[name] == "gauge" or typed[name] == "summary", line)
    elseif not kind then
      local key, value = line:match("^([%w_]+%b{}) (%S+)$")
      if not key then key, value = line:match("^([%w_]+) (%S+)$") end
      assert.truthy(key, "not a sample: " .. line)
      local family = key:match("^[%w_]+")
      assert.truthy(typed[family], family .. " has no TYPE line before it")
      if family ~= current then
        assert.is_nil(done[family], family .. "'s samples are not together")
        if current then done[current] = true end
        current = family
      end
      samples[key] = assert(tonumber(value), line)
    end
  end
  return samples
end

describe("the metrics file", function()
  it("has the counters of the run at exit, and says nothing of Kafka without a Kafka output", function()
    local lines = {}
    for i = 1, 500 do lines[i] = "line " .. i end
    local r = run.lumberjit{
      config = [[
lumberjit = { metrics_path = "metrics.prom", dead_letter_path = "dead.log" }
input = { type = "stdin_input", decoder = "picky" }
picky = { type = "decoder", filename = "picky.lua" }
all = { type = "file_output", path = "all.log", message_matcher = "TRUE" }
none = { type = "file_output", path = "none.log", message_matcher = "Type == 'never'" }
]],
      files = { ["picky.lua"] = [[
function process_message(line)
  if line:find("7$") then return -1, "ends in 7" end
  inject_message({Payload = line})
end
]] },
      input = table.concat(lines, "\n") .. "\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    local m = parse(run.read(r.dir .. "/metrics.prom"))
    assert.are.equal(500, m['lumberjit_input_records_total{input="input"}'])
    assert.are.equal(50, m['lumberjit_input_dead_letter_records_total{input="input"}'])
    assert.are.equal(450, m['lumberjit_output_delivered_records_total{output="all"}'])
    assert.are.equal(0, m['lumberjit_output_delivered_records_total{output="none"}'])
    assert.are.equal(0, m['lumberjit_output_queued_records{output="all"}'])
    assert.are.equal(50, m.lumberjit_dead_letter_records_total)
    assert.are.equal(50, m.lumberjit_dead_letter_written_records_total)
    assert.are.equal(0, m.lumberjit_lost_records_total)
    assert.are.equal(0, m.lumberjit_inputs_paused)
    -- The latency from read to acknowledged: every quantile of the output that
    -- wrote, in order; none for the one that wrote nothing.
    local last = 0
    for _, q in ipairs({"0.5", "0.95", "0.99", "0.999", "1"}) do
      local v = m['lumberjit_output_latency_seconds{output="all",quantile="' .. q .. '"}']
      assert.is_true(v >= last, q)
      last = v
    end
    assert.is_nil(m['lumberjit_output_latency_seconds{output="none",quantile="1"}'])
    assert.matches("output 'all': latency from read to acknowledged p50 [%d.]+ ms, p95 [%d.]+ ms, " ..
      "p99 [%d.]+ ms, p99%.9 [%d.]+ ms, max [%d.]+ ms\n", r.stderr)
    for key in pairs(m) do
      assert.is_nil(key:find("in_flight") or key:find("disk_buffer") or key:find("syslog"), key)
    end
    assert.is_nil(io.open(r.dir .. "/metrics.prom.tmp"), "the temporary file stayed")
    run.cleanup(r.dir)
  end)

  it("is rewritten every metrics_interval_ms while lumberjit runs", function()
    local dir = run.tmpdir()
    run.write(dir .. "/in.log", "one\ntwo\n")
    run.write(dir .. "/config.lua", [[
lumberjit = { metrics_path = "metrics.prom", metrics_interval_ms = 100 }
input = { type = "tail_input", paths = { "in.log" }, read_from_head = true }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    h.spawn(dir, "lj", run.quote(run.bin) .. " -c config.lua", 60)
    local stopped = false
    finally(function() if not stopped then h.terminate(dir, "lj", 10) end end)
    local function delivered()
      local text = run.read(dir .. "/metrics.prom")
      return text and parse(text)['lumberjit_output_delivered_records_total{output="out"}']
    end
    assert.is_true(h.wait_until(function() return delivered() == 2 end, 10), run.read(dir .. "/lj.err"))
    h.sh(dir, "printf 'three\\nfour\\nfive\\n' >> in.log")
    assert.is_true(h.wait_until(function() return delivered() == 5 end, 10), run.read(dir .. "/lj.err"))
    stopped = true
    assert.are.equal(0, h.terminate(dir, "lj", 10))
    run.cleanup(dir)
  end)

  it("failing to be written is logged once and stops nothing", function()
    local r = run.lumberjit{
      config = [[
lumberjit = { metrics_path = "no/such/dir/metrics.prom" }
input = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
      input = "a\nb\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("a\nb\n", r.stdout)
    local _, logged = r.stderr:gsub("metrics: cannot write no/such/dir/metrics.prom.tmp: No such file or directory", "")
    assert.are.equal(1, logged, r.stderr)
    run.cleanup(r.dir)
  end)

  it("refuses an interval under 100 ms", function()
    local r = run.lumberjit{
      config = [[
lumberjit = { metrics_path = "m.prom", metrics_interval_ms = 10 }
input = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
    }
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("metrics_interval_ms", 1, true), r.stderr)
    assert.truthy(r.stderr:find("must be at least 100", 1, true), r.stderr)
    run.cleanup(r.dir)
  end)
end)
