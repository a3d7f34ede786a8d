-- Filters through the binary: inline and tap, the counts, order, state,
-- limits, restarts, timer_event, routing of what they inject, --check.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- The summary's counts for filter `name`.
local function filter_counts(stderr, name)
  local m, i, d, f, t, tf = stderr:match("filter '" .. name .. "': (%d+) messages matched, "
    .. "(%d+) injected, (%d+) dropped, (%d+) failed; (%d+) timer events %((%d+) failed%)")
  assert(m, "no summary line for filter " .. name .. " in:\n" .. stderr)
  return { matched = tonumber(m), injected = tonumber(i), dropped = tonumber(d),
           failed = tonumber(f), ticks = tonumber(t), ticks_failed = tonumber(tf) }
end

local function delivered(stderr, output)
  return tonumber((assert(stderr:match("output '" .. output .. "': (%d+) delivered"), stderr)))
end

local function dead_letters(dir, path)
  local out = {}
  for _, line in ipairs(run.lines(run.read(dir .. "/" .. (path or "dead-letter.log")))) do
    out[#out + 1] = cjson.decode(line)
  end
  return out
end

-- Drops "noise", splits on commas, rejects "bad", uppercases the rest.
local SPLIT = [[
function process_message()
  local p = read_message("Payload")
  if p == "noise" then return 0 end
  if p == "bad" then return -1, "bad payload" end
  if p:find(",") then
    for part in p:gmatch("[^,]+") do inject_message({Payload = part}) end
  else
    inject_message({Payload = p:upper()})
  end
  return 0
end
]]

describe("an inline filter", function()
  it("replaces each message it takes where it stood: modified, dropped, split or dead-lettered", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        split = { type = "filter", filename = "split.lua", message_matcher = "Payload != 'skip me'" }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = { ["split.lua"] = SPLIT },
      input = "a\nnoise\nb,c,d\nskip me\nbad\ne\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "A", "b", "c", "d", "skip me", "E" }, run.lines(r.stdout))
    local c = filter_counts(r.stderr, "split")
    assert.are.same({ matched = 5, injected = 5, dropped = 1, failed = 1, ticks = 0, ticks_failed = 0 }, c)
    -- The identity: each message taken is replaced by something, or dropped,
    -- or failed; the output gets what it injected and what it did not take.
    assert.are.equal(c.matched, 3 + c.dropped + c.failed)
    assert.are.equal(c.injected + 1, delivered(r.stderr, "out"))
    local dead = dead_letters(r.dir)
    assert.are.equal(1, #dead)
    assert.are.same({ "filter", "split", "rejected by split: bad payload", "bad", "stdin" },
      { dead[1].stage, dead[1].plugin, dead[1].reason, dead[1].payload, dead[1].input })
    run.cleanup(r.dir)
  end)

  it("keeps each source's order through drops and splits, on two workers", function()
    local dir = run.tmpdir()
    local expected = {}
    for _, source in ipairs({ "a", "b" }) do
      local lines = {}
      for i = 1, 20000 do
        local line = source .. " " .. i
        lines[#lines + 1] = line
        if i % 3 ~= 0 then
          if i % 5 == 0 then
            expected[#expected + 1] = line .. " x"
            expected[#expected + 1] = line .. " y"
          else
            expected[#expected + 1] = line
          end
        end
      end
      run.write(dir .. "/" .. source .. ".log", table.concat(lines, "\n") .. "\n")
    end
    run.write(dir .. "/expected", table.concat(expected, "\n") .. "\n")
    run.write(dir .. "/thin.lua", [[
      function process_message()
        local p = read_message("Payload")
        local i = tonumber(p:match("%d+"))
        if i % 3 == 0 then return 0 end
        if i % 5 == 0 then
          inject_message({Payload = p .. " x"})
          inject_message({Payload = p .. " y"})
        else
          inject_message({Payload = p})
        end
        return 0
      end
    ]])
    -- One worker each: each has its own instance of the filter.
    run.write(dir .. "/config.lua", [[
      lumberjit = { workers = 2 }
      a = { type = "file_input", path = "a.log" }
      b = { type = "file_input", path = "b.log" }
      thin = { type = "filter", filename = "thin.lua", message_matcher = "TRUE" }
      out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
    ]])
    local r = run.in_dir(dir, "-c config.lua")
    assert.are.equal(0, r.status, r.stderr)
    local check = io.popen("python3 /work/shared/check-records.py --stream-re '^([ab]) ' "
      .. run.quote(dir .. "/expected") .. " " .. run.quote(dir .. "/out.log")):read("*a")
    assert.matches("expected " .. #expected .. ", delivered " .. #expected
      .. ", lost 0, duplicates 0, torn 0, out of order 0", check, 1, true)
    local c = filter_counts(r.stderr, "thin")
    assert.are.same({ 40000, 2 * 6666, 0 }, { c.matched, c.dropped, c.failed })
    assert.are.equal(#expected, c.injected)
    assert.are.equal(#expected, delivered(r.stderr, "out"))
    run.cleanup(dir)
  end)

  it("keeps its state from one message to the next", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        number = { type = "filter", filename = "number.lua", message_matcher = "TRUE" }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = { ["number.lua"] = [[
        local n = 0
        function process_message()
          n = n + 1
          inject_message({Payload = n .. " " .. read_message("Payload")})
          return 0
        end
      ]] },
      input = "a\nb\nc\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "1 a", "2 b", "3 c" }, run.lines(r.stdout))
    run.cleanup(r.dir)
  end)

  it("that runs away is stopped by cpu_limit_ms; its message is dead-lettered and the rest go on", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        loop = { type = "filter", filename = "loop.lua", message_matcher = "TRUE", cpu_limit_ms = 50 }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = { ["loop.lua"] = [[
        function process_message()
          if read_message("Payload") == "LOOP" then while true do end end
          inject_message({Payload = read_message("Payload")})
          return 0
        end
      ]] },
      input = "a\nLOOP\nb\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "a", "b" }, run.lines(r.stdout))
    local dead = dead_letters(r.dir)
    assert.are.equal(1, #dead)
    assert.are.same({ "filter", "loop", "LOOP" }, { dead[1].stage, dead[1].plugin, dead[1].payload })
    assert.matches("^cpu limit exceeded: limit 50 ms, used [%d.]+ ms, at .*/loop%.lua:2$", dead[1].reason)
    assert.are.equal(1, filter_counts(r.stderr, "loop").failed)
    run.cleanup(r.dir)
  end)

  it("is stopped after max_failures in a row, dead-letters meanwhile and restarts", function()
    local dir = run.tmpdir()
    run.write(dir .. "/fail.lua", [[
      function process_message()
        local p = read_message("Payload")
        if p == "fail" then error("failing on purpose") end
        inject_message({Payload = p})
        return 0
      end
    ]])
    run.write(dir .. "/config.lua", [[
      lumberjit = { workers = 1 }
      stdin = { type = "stdin_input" }
      fail = { type = "filter", filename = "fail.lua", message_matcher = "TRUE",
               max_failures = 2, restart_after_ms = 300 }
      out = { type = "stdout_output", message_matcher = "TRUE" }
    ]])
    -- The pause outlasts restart_after_ms: the filter restarts at its next call.
    local cmd = string.format("cd %s && (printf 'fail\\nfail\\nwhile stopped\\n'; sleep 1.5; "
      .. "printf 'after\\n') | timeout -s KILL 60 %s -c config.lua > stdout 2> stderr; echo $?",
      run.quote(dir), run.quote(run.bin))
    assert.are.equal(0, tonumber(io.popen(cmd):read("*l")), run.read(dir .. "/stderr"))
    local stderr = run.read(dir .. "/stderr")
    assert.are.same({ "after" }, run.lines(run.read(dir .. "/stdout")))
    local dead = dead_letters(dir)
    assert.are.same({ "fail", "fail", "while stopped" },
      { dead[1].payload, dead[2].payload, dead[3].payload })
    assert.matches("failing on purpose", dead[1].reason)
    assert.matches('^plugin "fail" is stopped after failing', dead[3].reason)
    assert.matches("plugin stopped after 2 failed calls in a row", stderr)
    assert.matches('sandbox "fail" %(.-fail%.lua%): restarted', stderr)
    local c = filter_counts(stderr, "fail")
    assert.are.same({ 4, 1, 3 }, { c.matched, c.injected, c.failed })
    run.cleanup(dir)
  end)
end)

describe("a tap filter", function()
  it("lets messages go on unchanged; what it injects is routed by the outputs' matchers "
    .. "and seen by the filters after it, never by itself", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        echo = { type = "filter", filename = "echo.lua", message_matcher = "TRUE", mode = "tap" }
        shout = { type = "filter", filename = "shout.lua", message_matcher = "Type == 'echo'" }
        lines = { type = "stdout_output", message_matcher = "Type != 'echo'" }
        echoes = { type = "file_output", path = "echoes.txt", message_matcher = "Type == 'echo'" }
      ]],
      files = {
        ["echo.lua"] = [[
          function process_message()
            inject_message({Type = "echo", Payload = "echo " .. read_message("Payload")})
            return 0
          end
        ]],
        ["shout.lua"] = [[
          function process_message()
            inject_message({Type = "echo", Payload = read_message("Payload"):upper()})
            return 0
          end
        ]],
      },
      input = "a\nb\nc\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "a", "b", "c" }, run.lines(r.stdout))
    assert.are.same({ "ECHO A", "ECHO B", "ECHO C" }, run.lines(run.read(r.dir .. "/echoes.txt")))
    local echo = filter_counts(r.stderr, "echo")
    assert.are.same({ 3, 3, 0, 0 }, { echo.matched, echo.injected, echo.dropped, echo.failed })
    assert.are.equal(3, filter_counts(r.stderr, "shout").matched)
    assert.are.equal(3, delivered(r.stderr, "lines"))
    assert.are.equal(3, delivered(r.stderr, "echoes"))
    run.cleanup(r.dir)
  end)

  it("whose call fails lets the message go on and dead-letters nothing", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        broken = { type = "filter", filename = "broken.lua", message_matcher = "TRUE", mode = "tap" }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = { ["broken.lua"] = "function process_message() error('no') end\n" },
      input = "a\nb\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "a", "b" }, run.lines(r.stdout))
    assert.are.equal(2, filter_counts(r.stderr, "broken").failed)
    assert.are.equal("", run.read(r.dir .. "/dead-letter.log") or "")
    run.cleanup(r.dir)
  end)
end)

describe("timer_event", function()
  it("runs on each worker's instance, a last time at shutdown; an idle instance injects nothing", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 2 }
        stdin = { type = "stdin_input" }
        logs = { type = "file_input", path = "logs.txt" }
        counts = { type = "filter", filename = "filters/count.lua", mode = "tap",
                   message_matcher = "TRUE", ticker_interval_ms = 3600000 }
        lines = { type = "file_output", path = "lines.txt", message_matcher = "Type != 'count'" }
        out = { type = "stdout_output", message_matcher = "Type == 'count'", encoder = "json" }
        json = { type = "encoder", filename = "encoders/json.lua" }
      ]],
      files = { ["logs.txt"] = string.rep("x\n", 1000) },
      input = "",
    }
    assert.are.equal(0, r.status, r.stderr)
    -- An input a worker: stdin's worker saw nothing. The run is short: the
    -- shutdown call is the only one on each worker.
    local c = filter_counts(r.stderr, "counts")
    assert.are.same({ 1000, 1, 2, 0 }, { c.matched, c.injected, c.ticks, c.ticks_failed })
    local lines = run.lines(r.stdout)
    assert.are.equal(1, #lines)
    local doc = cjson.decode(lines[1])
    assert.are.same({ "count", "", 1000, 3600000 }, { doc.type, doc.key, doc.count, doc.interval_ms })
    assert.are.equal(1000, #run.lines(run.read(r.dir .. "/lines.txt")))
    run.cleanup(r.dir)
  end)

  it("goes through the filters after it, and its failure is counted", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        tick = { type = "filter", filename = "tick.lua", message_matcher = "FALSE",
                 ticker_interval_ms = 20 }
        fails = { type = "filter", filename = "fails.lua", message_matcher = "FALSE",
                  ticker_interval_ms = 20 }
        upper = { type = "filter", filename = "upper.lua", message_matcher = "TRUE" }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = {
        ["tick.lua"] = [[
          function process_message() return 0 end
          function timer_event(ns, shutdown)
            if shutdown then inject_message({Payload = "last tick"}) end
          end
        ]],
        ["fails.lua"] = [[
          function process_message() return 0 end
          function timer_event() error("tick failed") end
        ]],
        ["upper.lua"] = [[
          function process_message()
            inject_message({Payload = read_message("Payload"):upper()})
            return 0
          end
        ]],
      },
      input = "a\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "A", "LAST TICK" }, run.lines(r.stdout))
    local fails = filter_counts(r.stderr, "fails")
    assert.is_true(fails.ticks >= 1)
    assert.are.equal(fails.ticks, fails.ticks_failed)
    assert.matches("tick failed", r.stderr)
    run.cleanup(r.dir)
  end)
end)

describe("a filter without timer_event", function()
  it("counts no timer events though it has a ticker_interval_ms", function()
    local r = run.lumberjit{
      config = [[
        lumberjit = { workers = 1 }
        stdin = { type = "stdin_input" }
        f = { type = "filter", filename = "f.lua", message_matcher = "TRUE", mode = "tap",
              ticker_interval_ms = 3600000 }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      files = { ["f.lua"] = "function process_message() return 0 end\n" },
      input = "a\n",
    }
    assert.are.equal(0, r.status, r.stderr)
    local c = filter_counts(r.stderr, "f")
    assert.are.same({ 0, 0 }, { c.ticks, c.ticks_failed })
    run.cleanup(r.dir)
  end)
end)

describe("lumberjit --check", function()
  local function check(filter)
    return run.lumberjit{
      config = [[
        stdin = { type = "stdin_input" }
        f = { type = "filter", ]] .. filter .. [[ }
        out = { type = "stdout_output", message_matcher = "TRUE" }
      ]],
      args = "--check",
    }
  end

  it("refuses a filter without message_matcher, with a bad mode, or whose settings do not load", function()
    local r = check('filename = "filters/count.lua"')
    assert.are.equal(1, r.status)
    assert.matches("config.lua:%d+: filter 'f' %(filter%): key 'message_matcher' is required", r.stderr)
    run.cleanup(r.dir)
    r = check('filename = "filters/count.lua", message_matcher = "TRUE", mode = "sideways"')
    assert.are.equal(1, r.status)
    assert.matches("key 'mode' must be \"inline\" or \"tap\", not \"sideways\"", r.stderr, 1, true)
    run.cleanup(r.dir)
    r = check('filename = "filters/add_hostname.lua", message_matcher = "TRUE", fields = 5')
    assert.are.equal(1, r.status)
    assert.matches("setting fields: a table of name = value expected", r.stderr, 1, true)
    run.cleanup(r.dir)
    r = check('filename = "filters/add_hostname.lua", message_matcher = "TRUE", hostname = "h"')
    assert.are.equal(0, r.status, r.stderr)
    run.cleanup(r.dir)
  end)
end)
