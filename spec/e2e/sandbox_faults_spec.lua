-- Hostile plugins through the binary: each case here hung, crashed or
-- leaked on 8ee37c4 (said in a comment at each). Every run is under
-- `timeout -s KILL`, so a regression fails instead of hanging the suite.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local function config(extra)
  return [[
lumberjit = { dead_letter_path = "dead.log" }
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua", cpu_limit_ms = 50, ]] .. (extra or "") .. [[ }
out = { type = "stdout_output", message_matcher = "TRUE" }
]]
end

-- Runs the decoder source on the input; returns status, stdout lines, the
-- dead letters, stderr and the peak RSS in KiB.
local function decode(source, input, extra, args)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config(extra))
  run.write(dir .. "/d.lua", source)
  run.write(dir .. "/input", input)
  local cmd = string.format("cd %s && /usr/bin/time -f %%M -o rss timeout -s KILL 20 %s %s -c config.lua "
    .. "< input > stdout 2> stderr; echo $?", run.quote(dir), run.quote(run.bin), args or "")
  local status = tonumber(io.popen(cmd):read("*l"))
  local dead = {}
  for _, line in ipairs(run.lines(run.read(dir .. "/dead.log"))) do dead[#dead + 1] = cjson.decode(line) end
  local r = {
    status = status, out = run.lines(run.read(dir .. "/stdout")), dead = dead,
    stderr = run.read(dir .. "/stderr") or "", rss = tonumber((run.read(dir .. "/rss") or ""):match("(%d+)%s*$")),
  }
  run.cleanup(dir)
  return r
end

-- A decoder that runs `code` on the line "bad": that line is stopped by
-- the CPU limit and dead-lettered, the lines around it go through.
local function assert_stopped_on_bad(code)
  local r = decode("function process_message(line)\n if line == 'bad' then " .. code
    .. " end\n inject_message({Payload = line})\nend\n", "one\nbad\ntwo\n")
  assert.are.equal(0, r.status)
  assert.are.same({"one", "two"}, r.out)
  assert.are.equal(1, #r.dead)
  assert.matches("^cpu limit exceeded: limit 50 ms", r.dead[1].reason)
end

describe("hostile plugins", function()
  -- Before: LuaJIT runs a message handler with hooks off, so these ran
  -- for ever and ignored SIGTERM.
  it("stops a message handler that loops, and one that loops on pcall", function()
    for _, body in ipairs{
      "xpcall(function() while true do end end, function() while true do end end)",
      "xpcall(function() error('x') end, function() while true do pcall(error) end end)",
    } do
      assert_stopped_on_bad(body)
    end
  end)

  -- Before: with LUAJIT_ENABLE_CHECKHOOK a compiled pairs() loop never
  -- ended, so a plugin doing nothing wrong lost records to the CPU limit
  -- (33 of 200 here).
  it("runs a pairs() loop the JIT compiles, record after record", function()
    local input = {}
    for i = 1, 200 do input[i] = tostring(i) end
    local r = decode([[
local t = {} for i = 1, 10 do t["k" .. i] = i end
function process_message(line)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  inject_message({Payload = line .. " " .. n})
end
]], table.concat(input, "\n") .. "\n")
    assert.are.equal(0, r.status)
    assert.are.equal(0, #r.dead)
    assert.are.equal(200, #r.out)
    assert.are.equal("200 10", r.out[200])
  end)

  -- Before: `for k, v in next, t` compiled to the same never-ending loop,
  -- and every record failed on the CPU limit.
  it("runs a loop over next the JIT compiles, record after record", function()
    local input = {}
    for i = 1, 200 do input[i] = tostring(i) end
    local r = decode([[
local t = {} for i = 1, 10 do t["k" .. i] = i end
function process_message(line)
  local n = 0
  for _, v in next, t do n = n + v end
  inject_message({Payload = line .. " " .. n})
end
]], table.concat(input, "\n") .. "\n")
    assert.are.equal(0, r.status)
    assert.are.equal(0, #r.dead)
    assert.are.equal(200, #r.out)
    assert.are.equal("200 55", r.out[200])
  end)

  -- Before: a finalizer runs with hooks off; one on LPeg's shared pattern
  -- metatable could loop for ever.
  it("keeps LPeg's pattern metatable out of reach", function()
    local r = decode([[
local lpeg = require "lpeg"
function process_message(line)
  inject_message({Payload = tostring(getmetatable(lpeg.P"a"))})
end
]], "x\n")
    assert.are.same({"false"}, r.out)
  end)

  it("keeps xpcall's results and handler", function()
    local r = decode([[
function process_message(line)
  local ok, m = xpcall(function(a) error("boom " .. a, 0) end, function(e) return "handled " .. e end, line)
  local ok2, a, b = xpcall(function(x) return x, 2 end, error, line)
  local ok3, m3 = xpcall(error, function() error("again") end)
  inject_message({Payload = table.concat({tostring(ok), m, tostring(ok2), a, b, tostring(ok3), m3}, " ")})
end
]], "x\n")
    assert.are.same({"false handled boom x true x 2 false error in error handling"}, r.out)
  end)

  -- Before: heap use-after-free under ASan (the batch reallocated under
  -- the outer call).
  it("runs no metamethod of the plugin's while converting a message", function()
    local r = decode([[
function process_message(line)
  local evil = setmetatable({}, {__index = function() for i = 1, 100 do inject_message({Payload = "inner"}) end end})
  inject_message({Payload = line, Fields = {f = {value = "v", representation = evil}, g = evil}})
end
]], "a\n")
    assert.are.equal(0, r.status)
    assert.are.same({}, r.out)
    assert.matches("field 'g' is an empty array", r.dead[1].reason)
  end)

  -- Before: "field 'deep' is an empty array", for a table that is not.
  it("names a field's table of named keys as such", function()
    local r = decode([[
function process_message(line)
  inject_message({Payload = line, Fields = {deep = {a = 1, b = {c = 2}}}})
end
]], "a\n")
    assert.are.same({}, r.out)
    assert.matches("field 'deep' is a table with named keys", r.dead[1].reason)
  end)

  it("leaves no half-built message behind when a conversion fails", function()
    local r = decode([[
function process_message(line)
  pcall(inject_message, {Payload = "half", Fields = {x = {}}})
  inject_message({Payload = line})
end
]], "whole\n")
    assert.are.same({"whole"}, r.out)
  end)

  -- Before: 364 MB RSS with an 8 MiB memory limit, empty messages counting
  -- nothing towards the output limit.
  it("counts each injected message towards the output limit", function()
    local r = decode("function process_message(line) while true do inject_message({}) end end\n",
      "a\nb\n")
    assert.are.equal(0, r.status)
    assert.are.equal(2, #r.dead)
    assert.matches("^output limit exceeded: limit 65536 bytes, emitted 65600", r.dead[1].reason)
    assert.is_true(r.rss < 64 * 1024, "peak RSS " .. tostring(r.rss) .. " KiB")
  end)

  -- Before: a 1 GB setting took 17 s and 4.2 GB, and the error named
  -- process_message at line 0.
  it("loads the settings and the plugin's top level within the memory limit", function()
    local r = decode("function process_message() end\n", "",
      'memory_limit = 1e6, big = string.rep("x", 8e6)', "--check")
    assert.are.equal(1, r.status)
    assert.matches("decoder 'd': loading its settings went over memory_limit: limit 1000000 bytes", r.stderr)
    r = decode("local t = {} for i = 1, 1e8 do t[i] = i end\nfunction process_message() end\n", "",
      "memory_limit = 1e6", "--check")
    assert.are.equal(1, r.status)
    assert.matches("memory limit exceeded: limit 1000000 bytes, .* at the top level of %./d%.lua", r.stderr)
  end)

  -- Before: the encoder wrote an empty line.
  it("fails a message whose encoder returns a table", function()
    local dir = run.tmpdir()
    local r = run.lumberjit{
      config = [[
lumberjit = { dead_letter_path = "dead.log" }
stdin = { type = "stdin_input" }
e = { type = "encoder", filename = "e.lua" }
out = { type = "stdout_output", message_matcher = "TRUE", encoder = "e" }
]],
      files = {["e.lua"] = "function process_message() return {} end\n"},
      input = "a\n",
    }
    assert.are.equal(0, r.status)
    assert.are.equal("", r.stdout)
    local d = cjson.decode(run.read(r.dir .. "/dead.log"))
    assert.are.equal("encoder", d.stage)
    assert.are.equal("encoder 'e' returned a table; process_message returns a string, a status "
      .. "number or nothing", d.reason)
    run.cleanup(r.dir)
    run.cleanup(dir)
  end)

  -- Before: reading a FIFO blocked --check for ever.
  it("refuses a module that is a FIFO instead of blocking", function()
    local dir = run.tmpdir()
    os.execute("mkdir " .. dir .. "/m && mkfifo " .. dir .. "/m/fifo.lua")
    local r = decode('local m = require "fifo"\nfunction process_message() end\n', "",
      'module_path = "' .. dir .. '/m"', "--check")
    assert.are.equal(1, r.status)
    assert.matches("require: .*/m/fifo%.lua is not a regular file", r.stderr)
    run.cleanup(dir)
  end)

  -- Before: LuaJIT's matcher backtracked in C for hours, out of reach of
  -- the CPU limit and of SIGTERM.
  it("stops a backtracking pattern with the CPU limit, as a method too", function()
    for _, call in ipairs{
      'string.find(("a"):rep(40), ("a?"):rep(40) .. ("a"):rep(40))',
      '("a"):rep(40):match(("a?"):rep(40) .. ("a"):rep(40))',
      'string.gsub(("a"):rep(40), ("a?"):rep(40) .. ("a"):rep(40), "")',
    } do
      assert_stopped_on_bad(call)
    end
  end)

  it("stops an LPeg grammar that backtracks exponentially", function()
    local r = decode([[
local lpeg = require "lpeg"
local P, V = lpeg.P, lpeg.V
local g = P{"S", S = V"A" * "x" + V"A" * "y" + V"A" * "z", A = P"a" * V"S" + P"a"}
function process_message(line)
  if line == "bad" then g:match(("a"):rep(30)) end
  inject_message({Payload = line})
end
]], "one\nbad\ntwo\n")
    assert.are.equal(0, r.status)
    assert.are.same({"one", "two"}, r.out)
    assert.matches("^cpu limit exceeded: limit 50 ms", r.dead[1].reason)
  end)

  it("stops a backtracking pattern in the configuration", function()
    local r = run.lumberjit{
      config = 'local x = ("a"):rep(40):find(("a?"):rep(40) .. ("a"):rep(40))\n',
      args = "--check",
    }
    assert.are.equal(1, r.status)
    assert.matches("config.lua:1: the configuration ran more than 10000000 instructions", r.stderr)
    run.cleanup(r.dir)
  end)
end)
