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
      assert.truthy(typed[name] == "counter" or typed[name] == "gauge" or typed[name] == "summary" or
                    typed[name] == "histogram", line)
    elseif not kind then
      local key, value = line:match("^([%w_]+%b{}) (%S+)$")
      if not key then key, value = line:match("^([%w_]+) (%S+)$") end
      assert.truthy(key, "not a sample: " .. line)
      local family = key:match("^[%w_]+")
      -- A histogram's samples: NAME_bucket, NAME_sum and NAME_count.
      local base = family:match("^(.-)_bucket$") or family:match("^(.-)_sum$") or family:match("^(.-)_count$")
      if base and typed[base] == "histogram" then family = base end
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

  it("counts each plugin's calls, failures by cause, stops, memory and CPU, summed over its instances", function()
    -- Lines of each kind fail by their cause; every failure rebuilds the
    -- state (max_failures is far), but "stop" lines reach the other
    -- decoder, which stops at its first failure for the rest of the run.
    local lines = {}
    for i = 1, 200 do lines[#lines + 1] = "fine " .. i end
    for i = 1, 5 do lines[#lines + 1] = "error " .. i end
    for i = 1, 2 do lines[#lines + 1] = "spin " .. i end
    for i = 1, 3 do lines[#lines + 1] = "hog " .. i end
    for i = 1, 4 do lines[#lines + 1] = "loud " .. i end
    lines[#lines + 1] = "long " .. string.rep("x", 600)
    local r = run.lumberjit{
      config = [[
lumberjit = { metrics_path = "metrics.prom", dead_letter_path = "dead.log", workers = 2 }
input = { type = "stdin_input", decoder = "faulty" }
other = { type = "file_input", path = "stops.log", decoder = "stopper" }
faulty = { type = "decoder", filename = "faulty.lua", cpu_limit_ms = 20,
           memory_limit = 4194304, output_limit = 1024, input_limit = 512, max_failures = 1000 }
stopper = { type = "decoder", filename = "stopper.lua", max_failures = 1, restart_after_ms = 3600000 }
upper = { type = "filter", filename = "upper.lua", message_matcher = "TRUE" }
out = { type = "file_output", path = "out.log", encoder = "plain", message_matcher = "TRUE" }
plain = { type = "encoder", filename = "plain.lua" }
]],
      files = {
        ["stops.log"] = "first\nsecond\nthird\n",
        ["faulty.lua"] = [[
function process_message(line)
  if line:find("^error") then error("boom") end
  if line:find("^spin") then while true do end end
  if line:find("^hog") then
    -- Big strings, so the memory limit comes long before cpu_limit_ms,
    -- however slow the build (ASan).
    local t = {}
    for i = 1, 100 do t[i] = string.rep(line .. i, 100000) end
  end
  if line:find("^loud") then
    inject_message({Payload = string.rep("y", 2000)})
    return 0
  end
  inject_message({Payload = line})
end
]],
        ["stopper.lua"] = 'function process_message() error("always") end\n',
        ["upper.lua"] = [[
function process_message()
  inject_message({Payload = read_message("Payload"):upper()})
end
]],
        ["plain.lua"] = 'function process_message() return read_message("Payload") end\n',
      },
      input = table.concat(lines, "\n") .. "\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    local dir = r.dir
    local m = parse(run.read(dir .. "/metrics.prom"))
    local function f(plugin, kind, cause)
      return m['lumberjit_plugin_failures_total{plugin="' .. plugin .. '",kind="' .. kind ..
        '",cause="' .. cause .. '"}']
    end
    assert.are.equal(5, f("faulty", "decoder", "error"))
    assert.are.equal(2, f("faulty", "decoder", "cpu"))
    assert.are.equal(3, f("faulty", "decoder", "memory"))
    assert.are.equal(4, f("faulty", "decoder", "output"))
    assert.are.equal(1, f("faulty", "decoder", "input"))
    assert.are.equal(0, f("faulty", "decoder", "instructions"))
    -- Every record but the long one ran Lua.
    assert.are.equal(214, m['lumberjit_plugin_calls_total{plugin="faulty",kind="decoder"}'])
    assert.are.equal(14, m['lumberjit_plugin_restarts_total{plugin="faulty",kind="decoder"}'])
    assert.are.equal(0, m['lumberjit_plugin_stops_total{plugin="faulty",kind="decoder"}'])
    assert.are.equal(1, m['lumberjit_plugin_stops_total{plugin="stopper",kind="decoder"}'])
    assert.are.equal(1, m['lumberjit_plugin_calls_total{plugin="stopper",kind="decoder"}'])
    assert.are.equal(1, f("stopper", "decoder", "error"))
    assert.are.equal(200, m['lumberjit_plugin_calls_total{plugin="upper",kind="filter"}'])
    assert.are.equal(200, m['lumberjit_plugin_calls_total{plugin="plain",kind="encoder"}'])
    -- The CPU limit's two spins alone took 40 ms of a worker's CPU.
    assert.is_true(m['lumberjit_plugin_cpu_seconds_total{plugin="faulty",kind="decoder"}'] >= 0.04)
    -- CPU per call: a histogram of every call that ran Lua, its buckets
    -- cumulative, its sum the CPU seconds.
    local h = 'lumberjit_plugin_call_cpu_seconds_%s{plugin="upper",kind="filter"%s}'
    assert.are.equal(200, m[h:format("count", "")])
    assert.are.equal(200, m[h:format("bucket", ',le="+Inf"')])
    assert.is_true(m[h:format("bucket", ',le="1e-06"')] <= m[h:format("bucket", ',le="0.001"')])
    -- (the total is printed to the microsecond)
    assert.is_true(math.abs(m['lumberjit_plugin_cpu_seconds_total{plugin="upper",kind="filter"}'] -
                            m[h:format("sum", "")]) < 1e-6)
    for _, p in ipairs({ 'plugin="faulty",kind="decoder"', 'plugin="upper",kind="filter"',
                         'plugin="plain",kind="encoder"' }) do
      local now, peak = m["lumberjit_plugin_memory_bytes{" .. p .. "}"],
                        m["lumberjit_plugin_memory_peak_bytes{" .. p .. "}"]
      assert.is_true(now > 0 and peak >= now / 2, p)
    end
    -- The hog reached the memory limit (one instance's peak).
    assert.is_true(m['lumberjit_plugin_memory_peak_bytes{plugin="faulty",kind="decoder"}'] > 3 * 2^20)
    -- The dead-letter records' bytes: every line of the file.
    assert.are.equal(#run.read(dir .. "/dead.log"), m.lumberjit_dead_letter_bytes_total)
    assert.are.equal(18, m.lumberjit_dead_letter_records_total)
    run.cleanup(dir)
  end)

  it("has the process's figures: memory, CPU, descriptors, start time, build", function()
    local r = run.lumberjit{
      config = [[
lumberjit = { metrics_path = "metrics.prom" }
input = { type = "stdin_input" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]],
      input = "a\nb\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    local m = parse(run.read(r.dir .. "/metrics.prom"))
    assert.is_true(m.lumberjit_process_resident_memory_bytes > 2^20)
    assert.is_true(m.lumberjit_process_cpu_seconds_total > 0)
    assert.is_true(m.lumberjit_process_open_fds >= 3)
    assert.is_true(m.lumberjit_process_max_fds >= m.lumberjit_process_open_fds)
    local age = os.time() - m.lumberjit_process_start_time_seconds
    assert.is_true(age >= -1 and age < 120, tostring(age))
    local version = io.popen(run.quote(run.bin) .. " --version"):read("*l"):match("^lumberjit (%S+)")
    assert.are.equal(1, m['lumberjit_build_info{version="' .. version .. '"}'])
    run.cleanup(r.dir)
  end)

  it("passes promtool check metrics, with plugins, tail's gauges and the process's families", function()
    if not os.execute("command -v promtool >/dev/null") then
      pending("promtool is not installed (Debian's prometheus package: scripts/setup)")
      return
    end
    local dir = run.tmpdir()
    run.write(dir .. "/in.log", "one\ntwo\n")
    run.write(dir .. "/dec.lua", 'function process_message(l) inject_message({Payload = l}) end\n')
    run.write(dir .. "/config.lua", [[
lumberjit = { metrics_path = "metrics.prom", dead_letter_path = "dead.log" }
input = { type = "tail_input", paths = { "in.log" }, read_from_head = true, decoder = "dec" }
dec = { type = "decoder", filename = "dec.lua" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    run.for_seconds(dir, "config.lua", 2)
    local text = run.read(dir .. "/metrics.prom")
    assert.truthy(text, run.read(dir .. "/stderr"))
    local m = parse(text)
    assert.truthy(m['lumberjit_tail_open_files{input="input"}'])
    assert.truthy(m['lumberjit_tail_unread_bytes{input="input"}'])
    assert.truthy(text:find("# TYPE lumberjit_tail_open_files gauge", 1, true))
    assert.is_true(h.sh(dir, "promtool check metrics < metrics.prom > promtool.out 2>&1"),
      run.read(dir .. "/promtool.out"))
    run.cleanup(dir)
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
