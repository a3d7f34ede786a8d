-- `lumberjit bench`: its counts are exact (nothing lost), a rate step is
-- never faster than its schedule, the JSON, CSV and SVG it writes have
-- their shape, a sweep stops at the first step over --max-p99, and
-- --write-files writes what the tail_input reads. No figure is held to a
-- speed: CI runs this under ASan too, on a busy machine.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- A generator of syslog lines through the rsyslog decoder and the JSON
-- encoder into out.log, as examples/benchmark.lua.
local W3 = [[
gen = { type = "generator_input", format = "syslog", decoder = "rsyslog" }
rsyslog = { type = "decoder", filename = "decoders/rsyslog.lua", tz = "UTC",
  template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.log", encoder = "json", message_matcher = "TRUE" }
]]

-- Runs `lumberjit bench config.lua ARGS` in a fresh directory holding
-- config.lua (the text given); returns the result, with the JSON read
-- when ARGS asked for bench.json.
local function bench(config, args)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config)
  local r = run.in_dir(dir, "bench config.lua " .. args)
  r.dir = dir
  local json = run.read(dir .. "/bench.json")
  if json then r.json = cjson.decode(json) end
  return r
end

local function count_lines(path)
  return #run.lines(run.read(path) or "")
end

local STEP_KEYS = {"offered", "achieved", "seconds", "generated", "delivered", "dead_lettered",
                   "failed", "lost", "latency_from", "latency_ms", "cpu_seconds",
                   "cpu_seconds_per_million", "peak_rss_mib", "status", "passed"}

describe("lumberjit bench", function()
  it("runs the generator's count through the pipeline, every record delivered, and says so", function()
    local r = bench(W3, "--count 20000 --json bench.json")
    assert.are.equal(0, r.status, r.stderr)
    local step = r.json.steps[1]
    assert.are.equal(1, #r.json.steps)
    assert.are.equal(20000, step.generated)
    assert.are.equal(20000, step.delivered)
    assert.are.equal(0, step.lost)
    assert.are.equal(0, step.dead_lettered)
    assert.are.equal(20000, count_lines(r.dir .. "/out.log"))
    -- As fast as taken: no schedule, so latency counts from the read.
    assert.are.equal(0, step.offered)
    assert.are.equal("read", step.latency_from)
    assert.is_true(step.achieved > 0)
    assert.is_true(step.peak_rss_mib > 1)
    assert.is_true(step.cpu_seconds.loop > 0 or step.cpu_seconds.workers > 0)
    -- The table: its header, one row, and the note of what latency is from.
    assert.matches("offered/s%s+achieved/s%s+generated%s+delivered%s+dead%s+lost%s+p50 ms", r.stdout)
    assert.matches("\n%s+max%s+%d+%s+20000%s+20000%s+0%s+0%s", r.stdout)
    assert.matches("from each line's read", r.stdout, 1, true)
    run.cleanup(r.dir)
  end)

  it("offers a rate for a duration: the count is exact, and the step is never faster than its schedule", function()
    local r = bench(W3, "--rate 4000 --duration 1 --json bench.json --csv bench.csv --plot bench.svg")
    assert.are.equal(0, r.status, r.stderr)
    local step = r.json.steps[1]
    assert.are.equal(4000, step.offered)
    assert.are.equal(4000, step.generated)
    assert.are.equal(4000, step.delivered)
    assert.are.equal(0, step.lost)
    assert.are.equal("due", step.latency_from)
    -- Line n is due at (n - 1) / rate: the last at 0.99975 s.
    assert.is_true(step.seconds >= 0.999, step.seconds)
    assert.is_true(step.achieved <= 4000 * 1.001, step.achieved)
    local q = step.latency_ms
    assert.is_true(q.p50 <= q.p95 and q.p95 <= q.p99 and q.p99 <= q["p99.9"] and q["p99.9"] <= q.max,
      cjson.encode(q))
    assert.is_true(q.max > 0)
    run.cleanup(r.dir)
  end)

  it("writes the steps as JSON and CSV of one shape, and plots them as an SVG that parses", function()
    local r = bench(W3, "--sweep 2000,3000 --count 1000 --json bench.json --csv bench.csv --plot bench.svg")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("config.lua", r.json.config)
    assert.are.equal(cjson.null, r.json.max_p99_ms)
    assert.is_true(#r.json.steps >= 1 and #r.json.steps <= 2)
    for _, step in ipairs(r.json.steps) do
      for _, key in ipairs(STEP_KEYS) do assert.is_not_nil(step[key], key) end
      for _, q in ipairs({"p50", "p95", "p99", "p99.9", "max"}) do
        assert.are.equal("number", type(step.latency_ms[q]), q)
      end
      for _, t in ipairs({"loop", "workers", "kafka", "other"}) do
        assert.are.equal("number", type(step.cpu_seconds[t]), t)
        assert.are.equal("number", type(step.cpu_seconds_per_million[t]), t)
      end
      assert.are.equal(1000, step.generated)
      assert.are.equal(0, step.lost)
    end
    local csv = run.lines(run.read(r.dir .. "/bench.csv"))
    assert.are.equal(#r.json.steps + 1, #csv)
    assert.are.equal("offered,achieved,seconds,generated,delivered,dead_lettered,failed,lost," ..
      "latency_from,p50_ms,p95_ms,p99_ms,p99_9_ms,max_ms,cpu_loop_s_per_million," ..
      "cpu_workers_s_per_million,cpu_kafka_s_per_million,cpu_other_s_per_million," ..
      "peak_rss_mib,status,passed", csv[1])
    assert.matches("^2000,[%d.]+,[%d.]+,1000,1000,0,0,0,due,", csv[2])
    -- The plot: well-formed XML, an svg with both series and labelled axes.
    local check = io.popen("python3 -c " .. run.quote(
      "import sys, xml.etree.ElementTree as E\n" ..
      "root = E.parse(sys.argv[1]).getroot()\n" ..
      "ns = '{http://www.w3.org/2000/svg}'\n" ..
      "assert root.tag == ns + 'svg', root.tag\n" ..
      "assert len(root.findall(ns + 'polyline')) == 2\n" ..
      "texts = ' '.join(t.text or '' for t in root.iter(ns + 'text'))\n" ..
      "assert 'offered rate' in texts and 'p99 latency' in texts, texts\n" ..
      "print('ok')") .. " " .. run.quote(r.dir .. "/bench.svg") .. " 2>&1")
    assert.are.equal("ok", check:read("*a"):gsub("%s+$", ""))
    check:close()
    run.cleanup(r.dir)
  end)

  it("stops a sweep at the first step whose p99 is over --max-p99, and finds no sustainable rate", function()
    -- A microsecond: no step delivers that fast, so the first one fails.
    local r = bench(W3, "--sweep 1000,2000,4000 --count 500 --max-p99 0.001 --json bench.json")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(1, #r.json.steps)
    assert.is_false(r.json.steps[1].passed)
    assert.are.equal(500, r.json.steps[1].delivered)
    assert.are.equal(cjson.null, r.json.sustainable_rate)
    assert.are.equal(0.001, r.json.max_p99_ms)
    assert.matches("%s1000%s.*over\n", r.stdout)
    assert.matches("sustainable rate: none of the steps", r.stdout, 1, true)
    run.cleanup(r.dir)
  end)

  it("puts one generator of --format in place of the config's inputs, with the first one's decoder", function()
    local config = W3:gsub('gen = { type = "generator_input", format = "syslog",',
                           'gen = { type = "syslog_input", address = "tcp://127.0.0.1:0",')
    local r = bench(config, "--format syslog --count 3000 --json bench.json")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(3000, r.json.steps[1].delivered)
    local first = cjson.decode(run.lines(run.read(r.dir .. "/out.log"))[1])
    assert.is_string(first.host)
    run.cleanup(r.dir)
    -- A template: its placeholders filled each line.
    r = bench('gen = { type = "generator_input" }\n' ..
              'out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }\n',
              "--format 'line %{seq} from %{host}' --count 50")
    assert.are.equal(0, r.status, r.stderr)
    local lines = run.lines(run.read(r.dir .. "/out.log"))
    assert.are.equal(50, #lines)
    assert.matches("^line 50 from [%w.-]+$", lines[50])
    run.cleanup(r.dir)
  end)

  it("with --write-files N appends the lines to N files the tail_input reads, and counts every one", function()
    local config = 'app = { type = "tail_input", paths = { "logs/*.log" } }\n' ..
                   'out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }\n'
    local dir = run.tmpdir()
    os.execute("mkdir " .. run.quote(dir .. "/logs"))
    run.write(dir .. "/config.lua", config)
    local r = run.in_dir(dir, "bench config.lua --write-files 3 --count 3000 --json bench.json")
    assert.are.equal(0, r.status, r.stderr)
    local step = cjson.decode(run.read(dir .. "/bench.json")).steps[1]
    assert.are.equal(3000, step.generated)
    assert.are.equal(3000, step.delivered)
    assert.are.equal(0, step.lost)
    assert.are.equal("written", step.latency_from)
    assert.are.equal("number", type(step.cpu_seconds.writers))
    for k = 1, 3 do assert.are.equal(1000, count_lines(dir .. "/logs/bench" .. k .. ".log")) end
    assert.are.equal(3000, count_lines(dir .. "/out.log"))
    -- W1's way: the writers share one file, at a rate.
    run.write(dir .. "/config.lua", config:gsub("logs/%*%.log", "logs/one.log"))
    os.remove(dir .. "/out.log")
    r = run.in_dir(dir, "bench config.lua --write-files 2 --rate 2000 --duration 1 --json bench.json")
    assert.are.equal(0, r.status, r.stderr)
    step = cjson.decode(run.read(dir .. "/bench.json")).steps[1]
    assert.are.equal(2000, step.generated)
    assert.are.equal(2000, step.delivered)
    assert.are.equal(0, step.lost)
    assert.are.equal("due", step.latency_from)
    assert.are.equal(2000, count_lines(dir .. "/logs/one.log"))
    assert.are.equal(2000, count_lines(dir .. "/out.log"))
    run.cleanup(dir)
  end)

  it("says what is missing: a generator, a tail_input, or a right option", function()
    local r = bench('app = { type = "tail_input", paths = { "x.log" } }\n' ..
                    'out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }\n', "")
    assert.are.equal(1, r.status)
    assert.matches("config.lua has no generator_input: --format puts one in place of its inputs",
                   r.stderr, 1, true)
    run.cleanup(r.dir)
    r = bench(W3, "--write-files 2 --count 10")
    assert.are.equal(1, r.status)
    assert.matches("--write-files: config.lua has no tail_input", r.stderr, 1, true)
    run.cleanup(r.dir)
    r = bench(W3, "--rate fast")
    assert.are.equal(2, r.status)
    assert.matches("a rate is a number of lines a second", r.stderr, 1, true)
    run.cleanup(r.dir)
    r = bench(W3, "--format '%{nope}'")
    assert.are.equal(1, r.status)
    assert.matches("'%{nope}' is no placeholder", r.stderr, 1, true)
    run.cleanup(r.dir)
  end)
end)
