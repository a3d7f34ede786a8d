-- lumberjit under systemd: the sd_notify messages (src/core/
-- systemd_notify.h) received on a test socket, the log's levels and the
-- journal's priority prefixes (src/core/log.h), and the unit files
-- (examples/lumberjit.service, lumberjit.socket) as systemd-analyze verify
-- sees them. Socket activation itself: socket_activation_spec.lua.
local run = dofile("spec/e2e/run.lua")

local listener = run.root .. "/spec/e2e/notify_listener.py"

local ENDLESS = [[
lumberjit = { dead_letter_path = "dead.log" }
gen = { type = "generator_input", rate = 100 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]

-- What lumberjit sent on NOTIFY_SOCKET ("abstract" or "path"), in order,
-- with WATCHDOG_PID (nil: unset); the last entry is "exit N".
local function notifications(mode, watchdog_pid)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", ENDLESS)
  local cmd = string.format("timeout -s KILL 60 python3 %s %s %s %s %s -c config.lua", run.quote(listener),
    mode, watchdog_pid or "-", run.quote(dir), run.quote(run.bin))
  local out = io.popen(cmd):read("*a")
  run.cleanup(dir)
  return run.lines(out)
end

local function count(list, value)
  local n = 0
  for _, v in ipairs(list) do if v == value then n = n + 1 end end
  return n
end

describe("sd_notify", function()
  for _, mode in ipairs{"abstract", "path"} do
    it("says READY=1 once the inputs started, WATCHDOG=1 from the loop, STOPPING=1 at SIGTERM (" .. mode .. " socket)", function()
      local got = notifications(mode)
      assert.are.equal("READY=1|STATUS=running: 1 inputs", got[1])
      assert.truthy(count(got, "WATCHDOG=1") >= 2, table.concat(got, "\n"))
      local stopping
      for i, m in ipairs(got) do if m:find("^STOPPING=1") then stopping = stopping or i end end
      assert.are.equal("STOPPING=1|STATUS=stopping: SIGTERM", got[stopping])
      assert.are.equal("exit 0", got[#got])
    end)
  end

  it("sends no WATCHDOG=1 when WATCHDOG_PID names another process", function()
    local got = notifications("abstract", "1")
    assert.are.equal("READY=1|STATUS=running: 1 inputs", got[1])
    assert.are.equal(0, count(got, "WATCHDOG=1"))
    assert.are.equal("exit 0", got[#got])
  end)
end)

-- Runs lumberjit on config in a fresh directory, its stderr in the file
-- err; JOURNAL_STREAM names the file `journal` (nil: unset), as systemd
-- names the journal's socket (so "err" says stderr is the journal).
-- { status, stderr }.
local function logged(config, journal)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config)
  run.write(dir .. "/broken.lua", 'function process_message() error("broken") end\n')
  local env = journal and string.format("JOURNAL_STREAM=$(stat -L -c %%d:%%i %s) ", journal) or ""
  local status = os.execute(string.format("cd %s && sh -c 'exec 2>err; %sexec timeout -s KILL 60 %s -c config.lua' </dev/null",
    run.quote(dir), env, run.quote(run.bin)))
  local r = { status = (status == true or status == 0) and 0 or 1, stderr = run.read(dir .. "/err") }
  run.cleanup(dir)
  return r
end

local BROKEN = [[
lumberjit = { dead_letter_path = "dead.log"%s }
gen = { type = "generator_input", count = 3, decoder = "broken" }
broken = { type = "decoder", filename = "broken.lua" }
out = { type = "file_output", path = "%s", message_matcher = "TRUE" }
]]

describe("the log", function()
  it("gives every line its level after the timestamp", function()
    local r = logged(BROKEN:format("", "out.log"))
    assert.are.equal(0, r.status)
    for _, line in ipairs(run.lines(r.stderr)) do
      assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ %a+ lumberjit: ", line)
    end
    assert.matches("Z warning lumberjit: sandbox \"broken\" ", r.stderr)
    assert.matches("Z info lumberjit: input 'gen': 3 records ", r.stderr)
  end)

  it("writes sd-daemon's priority prefixes instead of the timestamp when stderr is the journal", function()
    local r = logged(BROKEN:format("", "out.log"), "err")
    assert.are.equal(0, r.status)
    for _, line in ipairs(run.lines(r.stderr)) do assert.matches("^<[3467]>", line) end
    assert.matches("\n<4>sandbox \"broken\" ", "\n" .. r.stderr)
    assert.matches("\n<6>input 'gen': 3 records ", "\n" .. r.stderr)
    r = logged([[
lumberjit = { dead_letter_path = "dead.log" }
gen = { type = "generator_input", count = 3 }
out = { type = "file_output", path = "/dev/full", message_matcher = "TRUE" }
]], "err")
    assert.are.equal(1, r.status)
    assert.matches("\n<3>output 'out' failed: write to /dev/full failed: No space left on device", "\n" .. r.stderr)
  end)

  it("keeps the timestamp when JOURNAL_STREAM names another file", function()
    local r = logged(BROKEN:format("", "out.log"), "config.lua")
    assert.matches("^%d%d%d%d%-", r.stderr)
    assert.is_nil(r.stderr:find("<6>", 1, true))
  end)

  it("leaves out the lines under log_level", function()
    local r = logged(BROKEN:format(', log_level = "warning"', "out.log"))
    assert.are.equal(0, r.status)
    assert.are.equal(3, #run.lines(r.stderr), r.stderr)
    assert.is_nil(r.stderr:find(" info ", 1, true))
    r = logged(BROKEN:format(', log_level = "error"', "out.log"))
    assert.are.equal("", r.stderr)
  end)

  it("refuses a log_level it does not know", function()
    local r = logged(BROKEN:format(', log_level = "verbose"', "out.log"))
    assert.are.equal(1, r.status)
    assert.matches("key 'log_level' must be \"error\", \"warning\", \"info\" or \"debug\", not \"verbose\"", r.stderr)
  end)
end)

describe("examples/lumberjit.service and lumberjit.socket", function()
  it("are units systemd-analyze verify accepts, the socket's service the service", function()
    if not os.execute("command -v systemd-analyze >/dev/null") then
      pending("systemd-analyze is not installed")
      return
    end
    local dir = run.tmpdir()
    -- Its commands name the binary where it is installed: here, the build's.
    local unit = run.read(run.root .. "/examples/lumberjit.service"):gsub("/usr/bin/lumberjit", run.bin)
    run.write(dir .. "/lumberjit.service", unit)
    run.write(dir .. "/lumberjit.socket", run.read(run.root .. "/examples/lumberjit.socket"))
    local ok = os.execute(string.format("cd %s && systemd-analyze verify --man=no lumberjit.socket lumberjit.service "
      .. "> verify.out 2>&1", run.quote(dir)))
    local said = run.read(dir .. "/verify.out")
    run.cleanup(dir)
    assert.is_true(ok == true or ok == 0, said)
    assert.are.equal("", said)
  end)
end)
