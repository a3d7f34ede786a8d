-- The command line and configuration errors, through the binary: each error
-- names the file, the line and the key.
local run = dofile("spec/e2e/run.lua")

local good_decoder = "function process_message(line) inject_message({Payload = line}) end\n"

local function check(config, files)
  files = files or {["d.lua"] = good_decoder}
  local r = run.lumberjit{config = config, files = files, args = "--check"}
  run.cleanup(r.dir)
  return r
end

describe("lumberjit command line", function()
  it("prints its version and help", function()
    local v = io.popen(run.quote(run.bin) .. " --version"):read("*a")
    assert.matches("^lumberjit %d+%.%d+%.%d+\n$", v)
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
out = { type = "kafka_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:2: plugin 'out': key 'type' is unknown", r.stderr)
    r = check([[
stdin = { type = "stdin_input", decoder = "nope" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    assert.matches("config.lua:1: input 'stdin': key 'decoder' names 'nope', which is not a decoder", r.stderr)
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
    assert.matches("runs too long", r.stderr)
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
