-- The sandbox limits through the real binary: each runaway record goes to
-- the dead-letter file with its reason, the pipeline goes on, the run ends.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local decoder = [[
local x = 0
local function sum(n) for i = 1, n do x = x + i end return x end
function process_message(line)
  if line == "warm" then sum(1e4) end
  if line == "compiled-loop" then sum(1e13) end
  if line == "pcall-loop" then while true do pcall(sum, 1e13) end end
  if line == "hog" then local t = {} while true do t[#t + 1] = {} end end
  if line == "big" then inject_message({Payload = string.rep("b", 200000)}) return end
  if line == "error" then error("bad record") end
  if line == "reject" then return -1, "I do not like it" end
  inject_message({Payload = line})
end
]]

local function config(limits, globals)
  return [[
lumberjit = { dead_letter_path = "dead.log", ]] .. (globals or "") .. [[ }
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua", max_failures = 100, ]] .. limits .. [[ }
out = { type = "stdout_output", message_matcher = "TRUE" }
]]
end

local function dead_letters(dir)
  local out = {}
  for _, line in ipairs(run.lines(run.read(dir .. "/dead.log"))) do
    out[#out + 1] = cjson.decode(line)
  end
  return out
end

local function warm(n)
  return string.rep("warm\n", n)
end

describe("sandbox limits through the binary", function()
  -- workers = 0: the decoder runs on the loop thread, its CPU limit on
  -- that thread's clock.
  for _, workers in ipairs({"", "workers = 0"}) do
  it("stops a compiled loop with the CPU limit and goes on" .. (workers ~= "" and " (" .. workers .. ")" or ""), function()
    local r = run.lumberjit{
      config = config("cpu_limit_ms = 30, instruction_limit = 0", workers),
      files = {["d.lua"] = decoder},
      input = warm(50) .. "compiled-loop\nafter\npcall-loop\nlast\n",
    }
    assert.are.equal(0, r.status)
    local out = run.lines(r.stdout)
    assert.are.equal("after", out[51])
    assert.are.equal("last", out[52])
    local dl = dead_letters(r.dir)
    assert.are.equal(2, #dl)
    assert.are.equal("compiled-loop", dl[1].payload)
    assert.matches("^cpu limit exceeded: limit 30 ms, used [%d.]+ ms, at .*d.lua:2$", dl[1].reason)
    assert.are.equal("d", dl[1].plugin)
    assert.are.equal("decoder", dl[1].stage)
    assert.are.equal("stdin", dl[1].input)
    assert.are.equal(250, dl[1].offset)
    assert.are.equal("pcall-loop", dl[2].payload)
    assert.matches("cpu limit exceeded", dl[2].reason)
    assert.matches('sandbox "d" %(.*d.lua%) process_message: cpu limit exceeded: limit 30 ms, used [%d.]+ ms, at .*d.lua:2; input "stdin" offset 250; state rebuilt', r.stderr)
    run.cleanup(r.dir)
  end)
  end

  it("stops a compiled loop with the instruction limit", function()
    local r = run.lumberjit{
      config = config("cpu_limit_ms = 0, instruction_limit = 5e6"),
      files = {["d.lua"] = decoder},
      input = warm(50) .. "compiled-loop\nafter\n",
    }
    assert.are.equal(0, r.status)
    assert.are.equal("after", run.lines(r.stdout)[51])
    local dl = dead_letters(r.dir)
    assert.are.equal(1, #dl)
    assert.matches("^instruction limit exceeded: limit 5000000, counted %d+", dl[1].reason)
    run.cleanup(r.dir)
  end)

  it("stops a memory hog, an oversized output and a script error", function()
    local r = run.lumberjit{
      config = config("memory_limit = 2e6, output_limit = 100000"),
      files = {["d.lua"] = decoder},
      input = "hog\none\nbig\ntwo\nerror\nthree\nreject\nfour\n",
    }
    assert.are.equal(0, r.status)
    assert.are.same({"one", "two", "three", "four"}, run.lines(r.stdout))
    local dl = dead_letters(r.dir)
    assert.are.equal(4, #dl)
    assert.matches("^memory limit exceeded: limit 2000000 bytes, in use %d+", dl[1].reason)
    assert.matches("^output limit exceeded: limit 100000 bytes, emitted 200064, at .*d.lua:8$", dl[2].reason)
    assert.matches("^error: .*d.lua:9: bad record$", dl[3].reason)
    assert.are.equal("rejected by d: I do not like it", dl[4].reason)
    assert.are.equal("reject", dl[4].payload)
    run.cleanup(r.dir)
  end)

  it("stops a plugin that keeps failing and dead-letters the rest", function()
    local r = run.lumberjit{
      config = config("max_failures = 2"):gsub("max_failures = 100, ", ""),
      files = {["d.lua"] = decoder},
      input = "error\nerror\nfine\n",
    }
    assert.are.equal(0, r.status)
    assert.are.equal("", r.stdout)
    local dl = dead_letters(r.dir)
    assert.are.equal(3, #dl)
    assert.matches('^plugin "d" is stopped after failing; restarting in [%d.]+ s$', dl[3].reason)
    assert.matches("plugin stopped after 2 failed calls in a row; restarting in 1.0 s", r.stderr)
    run.cleanup(r.dir)
  end)

  it("restarts a stopped plugin after a growing back-off, dead-lettering meanwhile", function()
    -- Before: after max_failures the plugin stayed stopped for the rest of
    -- the run, so a burst of bad lines dead-lettered everything after it.
    local script = [[
printf 'error\nerror\nfine\n'; sleep 0.8
printf 'one\nerror\nerror\nfine\n'; sleep 0.2
printf 'two\nerror\nthree\n'; sleep 1.5
printf 'four\n'
]]
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", config("max_failures = 2, restart_after_ms = 400"):gsub("max_failures = 100, ", ""))
    run.write(dir .. "/d.lua", decoder)
    local status = tonumber(io.popen(string.format(
      "cd %s && (%s) | timeout -s KILL 20 %s -c config.lua > stdout 2> stderr; echo $?",
      run.quote(dir), script, run.quote(run.bin))):read("*l"))
    assert.are.equal(0, status)
    -- Stopped at the 2nd error; back after 400 ms for "one"; stopped again,
    -- now for 800 ms, so "fine" to "three" are dead-lettered; back for "four".
    assert.are.same({"one", "four"}, run.lines(run.read(dir .. "/stdout")))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("restarting in 0.4 s", stderr)
    assert.matches("restarting in 0.8 s", stderr)
    local _, restarts = stderr:gsub('sandbox "d" %(.-%): restarted', "")
    assert.are.equal(2, restarts)
    local dl = dead_letters(dir)
    assert.are.equal(9, #dl)
    assert.matches("is stopped after failing", dl[3].reason)
    assert.are.equal("fine", dl[3].payload)
    run.cleanup(dir)
  end)

  it("sends overlong lines to the dead-letter path in pieces", function()
    local r = run.lumberjit{
      config = config(""):gsub('decoder = "d"', 'decoder = "d", max_line = 16'),
      files = {["d.lua"] = decoder},
      input = "short\n" .. string.rep("x", 40) .. "\nend\n",
    }
    assert.are.same({"short", "end"}, run.lines(r.stdout))
    local dl = dead_letters(r.dir)
    assert.are.equal(3, #dl)
    assert.are.equal(string.rep("x", 16), dl[1].payload)
    assert.are.equal("line longer than max_line (16 bytes): piece 1", dl[1].reason)
    assert.are.equal("line longer than max_line (16 bytes): piece 3", dl[3].reason)
    assert.are.equal(string.rep("x", 8), dl[3].payload)
    assert.are.equal(6, dl[1].offset)
    assert.are.equal(38, dl[3].offset)
    run.cleanup(r.dir)
  end)

  it("splits or truncates overlong lines when told to, and counts them", function()
    local function with(rule)
      return run.lumberjit{
        config = config(""):gsub('decoder = "d"', 'decoder = "d", max_line = 16, long_lines = "' .. rule .. '"'),
        files = {["d.lua"] = decoder},
        input = "short\n" .. string.rep("x", 40) .. "\nend\n",
      }
    end
    local r = with("split")
    assert.are.same({"short", string.rep("x", 16), string.rep("x", 16), string.rep("x", 8), "end"},
                    run.lines(r.stdout))
    assert.matches("input 'stdin': 3 records %(1 longer than max_line, 0 pieces truncated%), 0 dead", r.stderr)
    run.cleanup(r.dir)
    r = with("truncate")
    assert.are.same({"short", string.rep("x", 16), "end"}, run.lines(r.stdout))
    assert.matches("input 'stdin': 3 records %(1 longer than max_line, 2 pieces truncated%), 0 dead", r.stderr)
    run.cleanup(r.dir)
    r = with("cut")
    assert.are.equal(1, r.status)
    assert.matches([[key 'long_lines' must be "dead_letter", "split" or "truncate", not "cut"]], r.stderr)
    run.cleanup(r.dir)
  end)
end)
