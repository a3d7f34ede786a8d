-- generator_input through the binary: varied lines of each format, as many
-- as asked or until stopped, at a rate when asked, held by backpressure
-- without losing one, and parsed whole by the bundled syslog decoder.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local function sh(script)
  return tonumber(io.popen("bash -c " .. run.quote(script) .. "; echo $?"):read("*l"))
end

-- A config: one generator_input with the settings given (Lua table
-- fields), its lines as they are to out.log.
local function generator_config(settings)
  return 'gen = { type = "generator_input", ' .. settings .. ' }\n' ..
    'out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }\n'
end

local function generate(settings)
  local r = run.lumberjit{config = generator_config(settings)}
  r.lines = run.lines(run.read(r.dir .. "/out.log"))
  run.cleanup(r.dir)
  return r
end

local function distinct(lines)
  local seen, n = {}, 0
  for _, line in ipairs(lines) do
    if not seen[line] then seen[line], n = true, n + 1 end
  end
  return n
end

-- What each format's lines look like, the time aside.
local SHAPES = {
  syslog = "^<%d+>%u%l%l [ %d]%d %d%d:%d%d:%d%d [%w.-]+ [%w-]+%[%d+%]: %l+",
  w1 = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%+00:00 INFO Non%-zero metrics in the last 30s: " ..
       "libbeat%.publisher%.published_events=%d+ .* registrar%.writes=%d+$",
  nginx = '^10%.%d+%.%d+%.%d+ %- %- %[%d%d/%u%l%l/%d%d%d%d:%d%d:%d%d:%d%d %+0000%] ' ..
          '"%u+ /api/v1/%l+/%d+%?page=%d+ HTTP/1%.1" %d%d%d %d+ "[^"]*" "[^"]+"$',
}

describe("generator_input", function()
  for format, shape in pairs(SHAPES) do
    it("makes count varied " .. format .. " lines, then ends", function()
      local r = generate('format = "' .. format .. '", count = 2000')
      assert.are.equal(0, r.status, r.stderr)
      assert.are.equal(2000, #r.lines)
      for i, line in ipairs(r.lines) do assert.matches(shape, line, 1, "line " .. i) end
      -- Lines differ as real logs do: not one line repeated.
      assert.is_true(distinct(r.lines) > 1900, distinct(r.lines) .. " distinct lines")
      assert.matches("input 'gen': 2000 records", r.stderr)
    end)
  end

  it("makes syslog lines by default, the same for the same seed but for their times", function()
    local function untimed(lines)
      local out = {}
      for i, line in ipairs(lines) do
        out[i] = line:gsub("^(<%d+>)%u%l%l [ %d]%d %d%d:%d%d:%d%d", "%1")
      end
      return out
    end
    local a, b = generate("count = 300"), generate("count = 300, seed = 1")
    local c = generate("count = 300, seed = 2")
    assert.matches(SHAPES.syslog, a.lines[1])
    assert.are.same(untimed(a.lines), untimed(b.lines))
    assert.are_not.same(untimed(a.lines), untimed(c.lines))
  end)

  it("keeps to its rate", function()
    -- 500 lines at 1000 a second cannot be done in less than half a
    -- second (the first line goes at once); only that bound is asserted.
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", generator_config("count = 500, rate = 1000"))
    local status = sh(string.format(
      "cd %s && s=$(date +%%s%%N) && %s -c config.lua 2> stderr && echo $(( ($(date +%%s%%N) - s) / 1000000 )) > ms",
      run.quote(dir), run.quote(run.bin)))
    assert.are.equal(0, status, run.read(dir .. "/stderr"))
    assert.are.equal(500, #run.lines(run.read(dir .. "/out.log")))
    assert.is_true(tonumber(run.read(dir .. "/ms")) >= 490, run.read(dir .. "/ms") .. " ms")
    run.cleanup(dir)
  end)

  it("runs until stopped without a count, and every line made is written", function()
    -- The rate keeps the file small; the stop is the same without one.
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", generator_config('format = "w1", rate = 5000'))
    run.for_seconds(dir, "config.lua", 1)
    local stderr = run.read(dir .. "/stderr")
    assert.matches("SIGTERM: stopping", stderr)
    local made = tonumber(stderr:match("input 'gen': (%d+) records"))
    assert.is_true(made > 0, stderr)
    assert.are.equal(made, #run.lines(run.read(dir .. "/out.log")))
    assert.matches("output 'out': " .. made .. " delivered, 0 failed", stderr)
    run.cleanup(dir)
  end)

  it("is held while its output is full and loses nothing", function()
    -- stdout is a pipe that is not read for a second: its queue fills,
    -- the generator is held, then everything drains.
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
lumberjit = { memory_budget = 1048576 }
gen = { type = "generator_input", format = "nginx", count = 200000 }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    local status = sh(string.format("cd %s && %s -c config.lua 2> stderr | (sleep 1; cat > out.log)",
      run.quote(dir), run.quote(run.bin)))
    assert.are.equal(0, status)
    local stderr = run.read(dir .. "/stderr")
    assert.is_true(tonumber(stderr:match("inputs paused (%d+) times")) >= 1, stderr)
    local lines = run.lines(run.read(dir .. "/out.log"))
    assert.are.equal(200000, #lines)
    assert.matches(SHAPES.nginx, lines[200000])
    run.cleanup(dir)
  end)

  it("makes syslog lines the bundled rsyslog decoder parses, every one", function()
    local r = run.lumberjit{config = [[
lumberjit = { dead_letter_path = "dead.log" }
gen = { type = "generator_input", count = 20000, decoder = "rsyslog" }
rsyslog = { type = "decoder", filename = "decoders/rsyslog.lua",
            template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg%\n" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.json", encoder = "json", message_matcher = "TRUE" }
]]}
    assert.are.equal(0, r.status, r.stderr)
    assert.matches("input 'gen': 20000 records %(0 longer than max_line, 0 pieces truncated%), 0 dead", r.stderr)
    local lines = run.lines(run.read(r.dir .. "/out.json"))
    assert.are.equal(20000, #lines)
    local first = cjson.decode(lines[1])
    assert.are.equal("syslog", first.type)
    assert.is_string(first.programname)
    assert.is_number(first.pid)
    run.cleanup(r.dir)
  end)

  it("shows in the run's figures in the log, every stats_interval_ms and at exit", function()
    -- 6,000 lines at 10,000 a second last at least 0.6 s: the 200 ms timer
    -- fires at least twice.
    local r = run.lumberjit{config = [[
lumberjit = { stats_interval_ms = 200 }
gen = { type = "generator_input", count = 6000, rate = 10000 }
out = { type = "file_output", path = "/dev/null", message_matcher = "TRUE" }
]]}
    assert.are.equal(0, r.status, r.stderr)
    local _, lines = r.stderr:gsub("stats: [%d.]+ s: %d+ records read/s, %d+ delivered/s; CPU [%d.]+ cores; " ..
      "%d+ records queued; inputs paused %d+ ms; peak RSS [%d.]+ MiB\n", "")
    assert.is_true(lines >= 2, r.stderr)
    assert.matches("run: [%d.]+ s; 6000 records read %(%d+/s%), 6000 delivered %(%d+/s%)", r.stderr)
    run.cleanup(r.dir)
  end)

  it("fills a template's placeholders anew each line, and names one it does not know", function()
    local r = generate('format = "template", template = "n=%{seq} %{host} %{word} %{int} %{ip} 100%", count = 500')
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(500, #r.lines)
    for i, line in ipairs(r.lines) do
      assert.matches("^n=" .. i .. " [%w.-]+ %l+ %d+ 10%.%d+%.%d+%.%d+ 100%%$", line)
    end
    local bad = run.lumberjit{config = generator_config('format = "template", template = "%{nope} x"'),
                              args = "--check"}
    assert.are.equal(1, bad.status)
    assert.matches("key 'template' the template's '%{nope}' is no placeholder", bad.stderr, 1, true)
    run.cleanup(bad.dir)
  end)

  it("names a format it does not know", function()
    local r = run.lumberjit{config = generator_config('format = "apache"'), args = "--check"}
    assert.are.equal(1, r.status)
    assert.matches("config.lua:1: input 'gen' (generator_input): key 'format' must be \"w1\", \"syslog\", \"nginx\" or \"template\", not \"apache\"",
      r.stderr, 1, true)
    run.cleanup(r.dir)
  end)
end)
