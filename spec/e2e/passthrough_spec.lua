-- The passthrough (src/pipeline/internal/passthrough.h): records no plugin
-- touches skip the workers. Each case runs the same input twice, once with
-- matchers that need no message ("TRUE", "FALSE": the passthrough) and once
-- with matchers that give the same answers but must look at each message
-- (the workers' path), and asserts that both write the same bytes, the same
-- dead letters and the same counters.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- Matchers with the same answer for every message these specs make: a
-- plain record's Type is empty.
local ALWAYS = {passthrough = "TRUE", workers = "Type == ''"}
local NEVER = {passthrough = "FALSE", workers = "Type == 'never'"}

local function sh(script)
  return tonumber(io.popen("bash -c " .. run.quote(script) .. "; echo $?"):read("*l"))
end

-- Varied lines, with CRLF endings, an empty line, long lines and a last
-- line without its newline.
local function input_text()
  local parts = {}
  for i = 1, 3000 do
    local line = string.format("%05d host%d app[%d]: %s", i, i % 7, 1000 + i % 97,
      string.rep(string.char(97 + i % 26), i % 50))
    if i % 500 == 0 then line = line .. string.rep("x", 300) end -- past max_line
    if i % 400 == 0 then line = line .. "\r" end
    if i % 333 == 0 then line = "" end
    parts[#parts + 1] = line
  end
  return table.concat(parts, "\n") .. "\nlast line without a newline"
end

-- Runs the config (its matchers from `path`'s) in a fresh dir; returns the
-- dir, the exit status and stderr.
local function run_path(path, config, input)
  local dir = run.tmpdir()
  run.write(dir .. "/in.log", input)
  local text = config:gsub("@(%u+)@", function(name)
    return ({ALWAYS = ALWAYS, NEVER = NEVER})[name][path]
  end)
  run.write(dir .. "/config.lua", text)
  local status = sh(string.format("cd %s && timeout -s KILL 60 %s -c config.lua > stdout 2> stderr",
    run.quote(dir), run.quote(run.bin)))
  return dir, status, run.read(dir .. "/stderr")
end

-- The summary's counters, without the timings and latencies.
local function counters(stderr)
  local lines = {}
  for line in stderr:gmatch("[^\n]+") do
    local text = line:match("lumberjit: (.*)$")
    if text and (text:match("^input '") or text:match("^output '%w+': %d+ delivered")
        or text:match("dead%-letter records %(")) then
      lines[#lines + 1] = text
    end
  end
  return lines
end

-- The dead letters, without their times.
local function dead_letters(dir)
  local out = {}
  for line in (run.read(dir .. "/dead.log") or ""):gmatch("[^\n]+") do
    local d = cjson.decode(line)
    d.time = nil
    out[#out + 1] = cjson.encode(d)
  end
  return out
end

local function both(config, input, files)
  local result = {}
  for _, path in ipairs({"passthrough", "workers"}) do
    local dir, status, stderr = run_path(path, config, input)
    local r = {status = status, stderr = stderr, counters = counters(stderr),
               dead = dead_letters(dir), files = {}}
    for _, name in ipairs(files) do r.files[name] = run.read(dir .. "/" .. name) end
    result[path] = r
    run.cleanup(dir)
  end
  return result.passthrough, result.workers
end

describe("the passthrough", function()
  it("is taken only where no plugin touches the records", function()
    local p, w = both([[
lumberjit = { dead_letter_path = "dead.log", log_level = "debug" }
file = { type = "file_input", path = "in.log" }
out = { type = "file_output", path = "out.log", message_matcher = "@ALWAYS@" }
]], "a\nb\n", {"out.log"})
    assert.are.equal(0, p.status, p.stderr)
    assert.truthy(p.stderr:find("input 'file': its records go straight to the outputs", 1, true))
    assert.is_nil(w.stderr:find("straight to the outputs", 1, true))
    assert.are.equal("a\nb\n", p.files["out.log"])
  end)

  -- Each long-line rule, with outputs that take runs of lines (all of
  -- them lines with no size cap: queued as one record each, or, with
  -- flush_bytes = 0, written straight from the read buffer) and with one
  -- that does not (newline = false: record by record).
  it("writes, dead-letters and counts as the workers do", function()
    local outputs = {
      records = [[raw = { type = "file_output", path = "raw.log", message_matcher = "@ALWAYS@", newline = false }]],
      runs = "",
      straight = [[straight = { type = "file_output", path = "straight.log", message_matcher = "@ALWAYS@", flush_bytes = 0 }]],
    }
    for _, rule in ipairs({"split", "truncate", "dead_letter"}) do
      for how, extra in pairs(outputs) do
        local config = string.format([[
lumberjit = { dead_letter_path = "dead.log", state_dir = "." }
file = { type = "file_input", path = "in.log", max_line = 200, long_lines = %q }
both = { type = "file_output", path = "both.log", message_matcher = "@ALWAYS@" }
none = { type = "file_output", path = "none.log", message_matcher = "@NEVER@" }
%s
]], rule, extra)
        local names = {"both.log", "none.log", "raw.log", "straight.log"}
        local p, w = both(config, input_text(), names)
        assert.are.equal(0, p.status, p.stderr)
        assert.are.equal(0, w.status, w.stderr)
        assert.are.same(w.files, p.files)
        assert.are.same(w.dead, p.dead)
        assert.are.same(w.counters, p.counters)
        assert.truthy(#p.files["both.log"] > 100000)
        -- the input, the outputs, the dead letters
        assert.are.equal(how == "runs" and 4 or 5, #p.counters, how)
        assert.are.equal(rule == "dead_letter" and 12 or 0, #p.dead)
      end
    end
  end)

  -- A run of lines that an output cannot write goes to the dead letters
  -- line by line, each with its own offset, as records do. (The last line
  -- is ended: the failure stops the run, and the passthrough, failing as
  -- it reads, comes to a stop before an unended line where the workers'
  -- path had handed it on.)
  it("dead-letters each line of a run an output fails", function()
    local p, w = both([[
lumberjit = { dead_letter_path = "dead.log" }
file = { type = "file_input", path = "in.log" }
full = { type = "file_output", path = "/dev/full", message_matcher = "@ALWAYS@", flush_bytes = 0 }
]], input_text() .. "\n", {})
    assert.are.equal(1, p.status, p.stderr)
    assert.are.same(w.dead, p.dead)
    assert.are.same(w.counters, p.counters)
    assert.are.equal(3001, #p.dead)
  end)

  it("counts records no output takes as matching none", function()
    local p, w = both([[
lumberjit = { dead_letter_path = "dead.log" }
file = { type = "file_input", path = "in.log" }
none = { type = "file_output", path = "none.log", message_matcher = "@NEVER@" }
]], input_text(), {"none.log"})
    assert.are.equal(0, p.status, p.stderr)
    assert.are.same(w.counters, p.counters)
    assert.truthy(p.stderr:find("3001 messages matched no output", 1, true))
  end)

  it("resumes from its checkpoint: a second run writes only what was added", function()
    local dir = run.tmpdir()
    run.write(dir .. "/in.log", "one\ntwo\n")
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dead.log", state_dir = "." }
file = { type = "file_input", path = "in.log" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    local cmd = string.format("cd %s && timeout -s KILL 60 %s -c config.lua 2>> stderr",
      run.quote(dir), run.quote(run.bin))
    assert.are.equal(0, sh(cmd))
    local f = assert(io.open(dir .. "/in.log", "ab"))
    f:write("three\n")
    f:close()
    assert.are.equal(0, sh(cmd))
    assert.are.equal("one\ntwo\nthree\n", run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)
end)
