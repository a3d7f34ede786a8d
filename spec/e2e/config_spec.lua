-- The command line and configuration errors, through the binary: each error
-- names the file, the line and the key.
local run = dofile("spec/e2e/run.lua")

local good_decoder = "function process_message(line) inject_message({Payload = line}) end\n"

-- Runs lumberjit with args in dir, killed after 20 s (status 137) so that a
-- configuration that hangs fails its spec rather than the whole suite.
local function run_in(dir, args)
  return run.in_dir(dir, args, nil, 20)
end

-- A fresh directory with config.lua, the files given and what the shell
-- script `setup` makes there.
local function make_dir(config, files, setup)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config)
  for name, text in pairs(files or {["d.lua"] = good_decoder}) do
    run.write(dir .. "/" .. name, text)
  end
  if setup then
    local ok = os.execute("cd " .. run.quote(dir) .. " && " .. setup)
    assert(ok == true or ok == 0, "setup failed: " .. setup)
  end
  return dir
end

local function check(config, files, setup)
  local dir = make_dir(config, files, setup)
  local r = run_in(dir, "--check -c config.lua")
  run.cleanup(dir)
  return r
end

describe("lumberjit command line", function()
  it("prints its version and help", function()
    local v = io.popen(run.quote(run.bin) .. " --version"):read("*a")
    -- Its own version and build type, then its libraries', as nginx -V.
    assert.matches("^lumberjit %d+%.%d+%.%d+ %(%a+ build[^)]*%)\n", v)
    assert.matches("\nLuaJIT 2%.1[^\n]*%(LUAJIT_ENABLE_CHECKHOOK%), libuv 1%.%d+%.%d+, zlib %d[^,]*, OpenSSL %d[^,]*, librdkafka %d+%.%d+%.%d+", v)
    local h = io.popen(run.quote(run.bin) .. " --help"):read("*a")
    assert.matches("usage: lumberjit %-c FILE", h)
    assert.matches("%-%-check", h)
  end)

  it("refuses to run without a config", function()
    local status = tonumber(io.popen(run.quote(run.bin) .. " 2>/dev/null; echo $?"):read("*l"))
    assert.are.equal(2, status)
  end)
end)

describe("configuration files (checked with --check)", function()
  it("accepts a valid file", function()
    local r = check([[
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua", anything = { "goes", 1 } }
out = { type = "stdout_output", message_matcher = "Type == 'x' || TRUE" }
]])
    assert.are.equal(0, r.status)
    assert.matches("configuration OK %(3 plugins%)", r.stdout)
  end)

  it("names the line of an unknown key", function()
    local r = check([[
stdin = { type = "stdin_input" }
out = {
  type = "stdout_output",
  message_matcher = "TRUE",
  colour = "blue",
}
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:5: output 'out' %(stdout_output%): key 'colour' is unknown", r.stderr)
  end)

  it("takes a near miss of a limit for a typo", function()
    local r = check([[
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua",
      memroy_limit = 1e6 }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: decoder 'd' %(decoder%): key 'memroy_limit' is unknown %(did you mean 'memory_limit'%?%)", r.stderr)
  end)

  it("names a key of the wrong type", function()
    local r = check([[
stdin = { type = "stdin_input", max_line = "long" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:1: input 'stdin' %(stdin_input%): key 'max_line' must be a number, not a string", r.stderr)
  end)

  it("names what is wrong in a tail_input", function()
    local function tail_error(keys)
      return check("app = { type = \"tail_input\", " .. keys .. " }\n"
        .. "out = { type = \"stdout_output\", message_matcher = \"TRUE\" }\n").stderr
    end
    assert.matches("config.lua:1: input 'app' %(tail_input%): key 'paths' is required", tail_error(""))
    assert.matches("key 'paths' item 2 must be a string, not a number", tail_error("paths = { 'a', 2 }"))
    assert.matches("key 'paths' must name at least one pattern", tail_error("paths = {}"))
    assert.matches("key 'scan_interval_ms' must be at least 10", tail_error("paths = 'x', scan_interval_ms = 1"))
    assert.matches("key 'rotate_wiat_ms' is unknown %(did you mean 'rotate_wait_ms'%?%)",
                   tail_error("paths = 'x', rotate_wiat_ms = 1"))
    assert.matches("key 'start' is not a Lua pattern lumberjit can use: .*malformed pattern",
                   tail_error("paths = 'x', multiline = { start = '[a' }"))
    assert.matches("key 'multiline' needs one of start, continue, cri = true or docker = true",
                   tail_error("paths = 'x', multiline = { cri = true, docker = true }"))
    -- Patterns that match nothing yet are fine: files may come later.
    local r = check("app = { type = \"tail_input\", paths = { \"nowhere/*.log\" } }\n"
      .. "out = { type = \"stdout_output\", message_matcher = \"TRUE\" }\n")
    assert.are.equal(0, r.status)
  end)

  it("keeps a tail_input from reading what lumberjit writes", function()
    local dir = make_dir([[
lumberjit = { dead_letter_path = "dead.log" }
app = { type = "tail_input", paths = { "*.log" }, read_from_head = true, scan_interval_ms = 50 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], {["in.log"] = "one line\n", ["out.log"] = ""})
    os.execute("cd " .. run.quote(dir) .. " && timeout -s TERM 1 " .. run.quote(run.bin) .. " -c config.lua 2> stderr")
    assert.are.equal("one line\n", run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)

  it("names a missing plugin file", function()
    local r = check([[
stdin = { type = "stdin_input", decoder = "d" }
d = {
  type = "decoder",
  filename = "nowhere.lua",
}
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:4: decoder 'd' %(decoder%): key 'filename' names 'nowhere.lua', which is not a readable file", r.stderr)
  end)

  it("names a bad matcher with its column", function()
    local r = check([[
stdin = { type = "stdin_input" }

out = { type = "stdout_output", message_matcher = "Type == " }
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: output 'out' %(stdout_output%): key 'message_matcher' is not a valid matcher: column %d+", r.stderr)
  end)

  it("names an unknown plugin type and a missing reference", function()
    local r = check([[
stdin = { type = "stdin_input" }
out = { type = "elasticsearch_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:2: plugin 'out': key 'type' is unknown", r.stderr)
    r = check([[
stdin = { type = "stdin_input", decoder = "nope" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:1: input 'stdin': key 'decoder' names 'nope', which is no decoder", r.stderr)
  end)

  it("reports Lua syntax and runtime errors with their line", function()
    local r = check("stdin = { type = 'stdin_input' }\nout = {\n")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3:", r.stderr)
    r = check("x = nil .. 'a'\n")
    assert.matches("config.lua:1: attempt to concatenate", r.stderr)
  end)

  it("has no io, os or require, and stops a config that loops", function()
    for _, code in ipairs({"io.open('x')", "os.exit(3)", "require('lpeg')", "dofile('/etc/passwd')"}) do
      local r = check(code .. "\n")
      assert.are.equal(1, r.status)
      assert.matches("config.lua:1: attempt to", r.stderr)
    end
    local r = check("while true do end\n")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:1: the configuration ran more than 10000000 instructions", r.stderr)
    -- Reading the tables after the run uses no metamethods.
    r = check([[
stdin = setmetatable({ type = "stdin_input" }, { __index = function() error("boom") end })
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal(0, r.status)
  end)

  it("reports a plugin that does not load", function()
    local r = check([[
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]], {["d.lua"] = "function process_message(\n"})
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: decoder 'd': .*d.lua:2:", r.stderr)
  end)

  it("hands a plugin its settings, nested tables and odd strings intact", function()
    local r = run.lumberjit{
      config = [==[
stdin = { type = "stdin_input", decoder = "d" }
d = {
  type = "decoder",
  filename = "d.lua",
  text = "quote \" backslash \\ newline \n tab \t nul \0 end",
  list = { "a", "b", { deep = true } },
  number = 0.1,
  big = 2^53,
}
out = { type = "stdout_output", message_matcher = "TRUE" }
]==],
      files = {["d.lua"] = [[
local t = read_config("text")
local list = read_config("list")
function process_message()
  inject_message({Payload = string.format("%s|%s|%s|%s|%s|%.17g|%s|%s", t, list[1], list[2],
    tostring(list[3].deep), read_config("type"), read_config("number"),
    string.format("%.0f", read_config("big")), tostring(read_config("missing")))})
end
]]},
      input = "x\n",
    }
    assert.are.equal(0, r.status)
    assert.are.equal('quote " backslash \\ newline \n tab \t nul \0 end' ..
      "|a|b|true|decoder|0.10000000000000001|9007199254740992|nil\n", r.stdout)
    run.cleanup(r.dir)
  end)
end)

describe("configuration limits", function()
  it("keeps a config stopped once its instruction budget is spent", function()
    -- pcall, xpcall's handler and coroutines catch the budget error; each
    -- is stopped again at its next instruction.
    for _, code in ipairs({
      "while true do pcall(function() while true do end end) end",
      "while true do xpcall(function() while true do end end, function() while true do end end) end",
      "while true do pcall(coroutine.wrap(function() while true do end end)) end",
    }) do
      local r = check("local x = 1\n" .. code .. "\n")
      assert.are.equal(1, r.status)
      assert.matches("^lumberjit: config.lua:2: the configuration ran more than 10000000 instructions\n$", r.stderr)
    end
  end)

  it("stops a config at its memory limit, caught or not", function()
    for _, code in ipairs({
      'local t = {} for i=1,1e9 do t[i]=("x"):rep(1000)..i end',
      'local t = {} while true do pcall(function() for i=1,1e9 do t[#t+1]=("x"):rep(1000)..i end end) end',
    }) do
      local r = check("local x = 1\n" .. code .. "\n")
      assert.are.equal(1, r.status)
      assert.matches("^lumberjit: config.lua:2: the configuration went over its memory limit of 64 MiB\n$", r.stderr)
    end
    -- One refused request leaves Lua no instruction to name the line by.
    local r = check('local s = ("x"):rep(2^30)\n')
    assert.are.equal(1, r.status)
    assert.matches("^lumberjit: config.lua: the configuration went over its memory limit of 64 MiB\n$", r.stderr)
    r = check('while true do pcall(string.rep, "x", 2^30) end\n')
    assert.matches("^lumberjit: config.lua:1: the configuration went over its memory limit", r.stderr)
    -- Nor does a tail call that goes over the limit as the file ends.
    r = check([[
stdin = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
local t = {}
while gcinfo() < 64 * 1024 - 400 do t[#t + 1] = ("x"):rep(2^16 - 64) .. #t end
return ("y"):rep(2^18)
]])
    assert.are.equal(1, r.status)
    assert.matches("^lumberjit: config.lua: the configuration went over its memory limit of 64 MiB\n$", r.stderr)
  end)

  it("runs an xpcall handler with the error, after the call", function()
    local r = check([[
local ok, e = xpcall(function(a, b) return a + b end, function(m) return "handled: " .. m end, 1, nil)
assert(not ok and e:match("^handled: config.lua:1: attempt to perform arithmetic"), e)
local results = {xpcall(function(...) return ... end, error, 1, nil, 3)}
assert(results[1] == true and results[2] == 1 and results[3] == nil and results[4] == 3)
stdin = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal("", r.stderr)
    assert.are.equal(0, r.status)
  end)
end)

describe("configuration errors", function()
  it("describes an error value that is no string", function()
    local cases = {
      {"error({})", "config.lua: error object is a table value"},
      {"error(setmetatable({}, {__tostring = function() while true do end end}))",
       "config.lua: error object is a table value"},
      {"error()", "config.lua: error object is a nil value"},
      {"error(42)", "config.lua:1: 42"},
      {"error('no position', 0)", "config.lua: no position"},
    }
    for _, case in ipairs(cases) do
      local r = check(case[1] .. "\n")
      assert.are.equal(1, r.status)
      assert.are.equal("lumberjit: " .. case[2] .. "\n", r.stderr)
    end
  end)

  it("refuses a configuration directory without *.lua files, and a FIFO, without blocking", function()
    local dir = make_dir("", {}, "mkdir conf.d && mkfifo fifo.lua")
    local r = run_in(dir, "--check -c conf.d")
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: conf.d: the configuration directory has no *.lua file\n", r.stderr)
    r = run_in(dir, "--check -c fifo.lua")
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: fifo.lua: the configuration file is a FIFO, not a regular file\n", r.stderr)
    r = run_in(dir, "--check -c missing.lua")
    assert.are.equal("lumberjit: missing.lua: cannot open the configuration file: No such file or directory\n", r.stderr)
    run.cleanup(dir)
  end)

  it("refuses a plugin file that is a directory or a FIFO", function()
    local config = [[
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder",
  filename = "%s" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]]
    local r = check(config:format("plugins"), nil, "mkdir plugins")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: decoder 'd' %(decoder%): key 'filename' names 'plugins', which is a directory, not a regular file", r.stderr)
    r = check(config:format("fifo.lua"), nil, "mkfifo fifo.lua")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: decoder 'd' %(decoder%): key 'filename' names 'fifo.lua', which is a FIFO, not a regular file", r.stderr)
  end)

  it("names the global settings as such", function()
    local r = check([[
stdin = { type = "stdin_input" }
lumberjit = {
  colour = "blue",
}
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: config.lua:3: global settings 'lumberjit': key 'colour' is unknown " ..
      "(known: dead_letter_path, dead_letter_max_bytes, dead_letter_keep, dead_letter_output, watchdog_interval_ms, stop_timeout_ms, state_dir, checkpoint_interval_ms, memory_budget, workers, "
      .. "metrics_path, metrics_interval_ms, stats_interval_ms, log_level, http_address, health_paused_ms, pid_file, watch_config, watch_interval_ms)\n", r.stderr)
    r = check([[
lumberjit = { watchdog_interval_ms = 0 }
stdin = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:1: global settings 'lumberjit': key 'watchdog_interval_ms' must be at least 1", r.stderr)
    r = check([[
lumberjit = { dead_letter_output = "nowhere" }
stdin = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:1: global settings 'lumberjit': key 'dead_letter_output' names 'nowhere'", r.stderr)
  end)
end)

describe("files the configuration names", function()
  local out = 'out = { type = "stdout_output", message_matcher = "TRUE" }\n'

  it("requires a file input's file to exist and not be a directory", function()
    local r = check('local x = 1\ntail = { type = "file_input", path = "missing.log" }\n' .. out)
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: input 'tail': cannot open missing.log: No such file or directory %(key 'path'%)", r.stderr)
    r = check('tail = { type = "file_input",\n  path = "logs" }\n' .. out, {}, "mkdir logs")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: input 'tail': cannot read logs: it is a directory %(key 'path'%)", r.stderr)
  end)

  it("takes FIFOs and devices as file inputs, without opening them", function()
    for _, path in ipairs({"fifo", "/dev/null", "/dev/zero"}) do
      local r = check(string.format([[
lumberjit = { dead_letter_path = "/dev/null" }
tail = { type = "file_input", path = "%s" }
null = { type = "file_output", path = "/dev/null", message_matcher = "TRUE" }
]], path), {}, "mkfifo fifo")
      assert.are.equal("", r.stderr)
      assert.are.equal(0, r.status)
    end
  end)

  it("requires the directory an output or the dead letters are written to", function()
    local r = check([[
stdin = { type = "stdin_input" }
out = { type = "file_output", message_matcher = "TRUE",
  path = "no/such/dir/out.log" }
]])
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: output 'out': cannot open no/such/dir/out.log for appending: " ..
      "its directory no/such/dir does not exist %(key 'path'%)", r.stderr)
    r = check('stdin = { type = "stdin_input" }\nout = { type = "file_output", message_matcher = "TRUE", path = "logs" }\n',
      {}, "mkdir logs")
    assert.matches("config.lua:2: output 'out': cannot open logs for appending: it is a directory", r.stderr)
    r = check('lumberjit = {\n  dead_letter_path = "gone/dead.log",\n}\nstdin = { type = "stdin_input" }\n' .. out)
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: global settings 'lumberjit': cannot open gone/dead.log for appending: " ..
      "its directory gone does not exist %(key 'dead_letter_path'%)", r.stderr)
    -- A dead-letter path is not used, so not checked, when an output takes
    -- the dead letters.
    r = check('lumberjit = { dead_letter_path = "gone/dead.log", dead_letter_output = "out" }\n' ..
      'stdin = { type = "stdin_input" }\n' .. out)
    assert.are.equal(0, r.status)
  end)

  it("refuses an input that reads what lumberjit writes, however the path is spelled", function()
    local cases = {
      {"./out.log", "out.log"},
      {"out.log", "./sub/../out.log"},
      {"link.log", "out.log"},
      {"hard.log", "out.log"},
    }
    for _, case in ipairs(cases) do
      local r = check(string.format([[
stdin = { type = "stdin_input" }
tail = { type = "file_input", path = "%s" }
out = { type = "file_output", path = "%s", message_matcher = "TRUE" }
]], case[1], case[2]), {["out.log"] = "old\n"}, "mkdir sub && ln -s out.log link.log && ln out.log hard.log")
      assert.are.equal(1, r.status)
      assert.matches(string.format("config.lua:2: input 'tail' reads the file output 'out' writes %%('%s' and '%s' are one file%%)",
        case[1]:gsub("%p", "%%%0"), case[2]:gsub("%p", "%%%0")), r.stderr)
    end
    local r = check([[
lumberjit = { dead_letter_path = "dead.log" }
tail = { type = "file_input", path = "./dead.log" }
]] .. out, {["dead.log"] = ""})
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: input 'tail' reads the dead%-letter file %('./dead.log' and 'dead.log' are one file%)", r.stderr)
  end)

  it("checks the files on a run too, before reading anything", function()
    local dir = make_dir([[
tail = { type = "file_input", path = "out.log" }
out = { type = "file_output", path = "./out.log", message_matcher = "TRUE" }
]], {["out.log"] = "one line\n"})
    local r = run_in(dir, "-c config.lua")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:1: input 'tail' reads the file output 'out' writes", r.stderr)
    assert.are.equal("one line\n", run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)
end)
