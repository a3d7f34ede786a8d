-- `lumberjit -c CONFIG --try DECODER [--encode ENCODER] --expect GOLDEN
-- [--update] [SAMPLE...]`: a run's output held against a golden file (the
-- diff on stdout, exit status 1 when it differs) or written to it; and
-- spec/helpers/lumberjit_try.lua, the helper users' busted specs run their
-- plugins with, driving the same binary (LUMBERJIT_BIN).
local run = dofile("spec/e2e/run.lua")
package.path = run.root .. "/spec/helpers/?.lua;" .. package.path
local try_helper = require("lumberjit_try")

local T = "1779186617000000000"
local TIMESTAMP = "  Timestamp: 2026-05-19T10:30:17.000000000Z (1779186617000000000)\n"
-- The dump's Timestamp of a message the decoder stamped not.
local UNSET = "  Timestamp: 1970-01-01T00:00:00.000000000Z (0), unset: a run stamps the time of decoding\n"

-- One message a line, its Payload the line in brackets; "reject" is
-- rejected, "spin" runs until the CPU limit stops it.
local decoder = [[
function process_message(line)
  if line == "reject" then return -1, "not for me" end
  if line == "spin" then while true do end end
  inject_message({Timestamp = ]] .. T .. [[, Payload = "[" .. line .. "]"})
end
]]
-- The same without a Timestamp: the sandbox would stamp the clock.
local unstamped = [[
function process_message(line)
  inject_message({Payload = line})
end
]]
-- Writes the Timestamp and the Payload it is given.
local encoder = [[
function process_message()
  return string.format("%d", read_message("Timestamp")) .. " " .. read_message("Payload") .. "\n"
end
]]
local config = 'd = { type = "decoder", filename = "d.lua", cpu_limit_ms = 20 }\n' ..
  'e = { type = "encoder", filename = "e.lua" }\n'

local function echo(n, line)
  return string.format('s.txt:%d: 1 message\n%s  Payload: "[%s]"\n', n, TIMESTAMP, line)
end

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

-- A fresh directory holding the config, the plugins and files ({name =
-- text}); the caller cleans it up.
local function make_dir(files)
  local dir = run.tmpdir()
  local all = {["config.lua"] = config, ["d.lua"] = decoder, ["e.lua"] = encoder}
  for name, text in pairs(files or {}) do all[name] = text end
  for name, text in pairs(all) do run.write(dir .. "/" .. name, text) end
  return dir
end

local function try(dir, args)
  return run.in_dir(dir, args)
end

describe("lumberjit --try --expect", function()
  local dir
  before_each(function() dir = make_dir({["s.txt"] = "a\nb\nreject\n"}) end)
  after_each(function() run.cleanup(dir) end)

  it("prints nothing and exits 0 when the output is the golden file's, rejections included", function()
    run.write(dir .. "/g.txt", echo(1, "a") .. echo(2, "b") ..
      "s.txt:3: rejected: rejected by d: not for me\n")
    local r = try(dir, "-c config.lua --try d --expect g.txt s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("", r.stdout)
    assert.matches("lumberjit: %-%-expect g%.txt: the same, 3 sample lines\n", r.stderr)
    -- Without --expect the rejection makes the status 1.
    assert.are.equal(1, try(dir, "-c config.lua --try d s.txt").status)
  end)

  it("prints a diff headed GOLDEN:LINE: SAMPLE:LINE: and exits 1 when it differs", function()
    -- Line 2's Payload differs, line 3 is not in the golden file, which has
    -- a line 9 the samples do not make.
    run.write(dir .. "/g.txt", echo(1, "a") .. echo(2, "B") .. echo(9, "z"))
    local r = try(dir, "-c config.lua --try d --expect g.txt s.txt")
    assert.are.equal(1, r.status, r.stderr)
    assert.are.equal(
      "g.txt:6: s.txt:2: differs:\n" ..
      " s.txt:2: 1 message\n" ..
      " " .. TIMESTAMP ..
      '-  Payload: "[B]"\n' ..
      '+  Payload: "[b]"\n' ..
      "g.txt:7: s.txt:3: is not in the golden file:\n" ..
      "+s.txt:3: rejected: rejected by d: not for me\n" ..
      "g.txt:7: s.txt:9: was not made by this run:\n" ..
      "-s.txt:9: 1 message\n" ..
      "-" .. TIMESTAMP ..
      '-  Payload: "[z]"\n', r.stdout)
    assert.matches("lumberjit: %-%-expect g%.txt: 3 sample lines differ\n", r.stderr)
  end)

  it("shows distant differences of one sample line as hunks, each with its golden line", function()
    local d = 'function process_message(line)\n  inject_message({Timestamp = ' .. T ..
      ', Fields = {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8}})\nend\n'
    run.write(dir .. "/d.lua", d)
    run.write(dir .. "/s.txt", "x\n")
    local golden = "s.txt:1: 1 message\n" .. TIMESTAMP .. "  Fields:\n" ..
      "    a: 1.0\n    b: 2.0\n    c: 3.0\n    d: 4.0\n    e: 5.0\n    f: 6.0\n    g: 7.0\n    h: 9.0\n"
    run.write(dir .. "/g.txt", (golden:gsub("a: 1.0", "a: 0.0")))
    local r = try(dir, "-c config.lua --try d --expect g.txt s.txt")
    assert.are.equal(1, r.status, r.stderr)
    assert.are.equal(
      "g.txt:4: s.txt:1: differs:\n" ..
      " " .. TIMESTAMP .. "   Fields:\n-    a: 0.0\n+    a: 1.0\n     b: 2.0\n     c: 3.0\n" ..
      "g.txt:11: s.txt:1: differs:\n" ..
      "     f: 6.0\n     g: 7.0\n-    h: 9.0\n+    h: 8.0\n", r.stdout)
  end)

  it("writes the golden file with --update, as --try prints, and says so", function()
    local plain = try(dir, "-c config.lua --try d s.txt")
    local r = try(dir, "-c config.lua --try d --expect g.txt --update s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("", r.stdout)
    assert.matches("lumberjit: %-%-update: wrote g%.txt, the output of 3 sample lines\n", r.stderr)
    assert.are.equal(plain.stdout, run.read(dir .. "/g.txt"))
    -- Written beside it and renamed: nothing else is left in the directory.
    assert.are.equal("config.lua d.lua e.lua g.txt s.txt stderr stdout",
      io.popen("cd " .. run.quote(dir) .. " && echo *"):read("*l"))
    -- Over an old one too; then the run is the same as it.
    run.write(dir .. "/g.txt", "old\n")
    assert.are.equal(0, try(dir, "-c config.lua --try d --expect g.txt --update s.txt").status)
    assert.are.equal(plain.stdout, run.read(dir .. "/g.txt"))
    assert.are.equal(0, try(dir, "-c config.lua --try d --expect g.txt s.txt").status)
  end)

  it("says a missing golden file is made by --update, and one that cannot be read", function()
    local r = try(dir, "-c config.lua --try d --expect g.txt s.txt")
    assert.are.equal(1, r.status)
    assert.are.equal("", r.stdout)
    assert.matches("there is no golden file g%.txt; %-%-update writes it", r.stderr)
    sh("mkdir " .. run.quote(dir .. "/g.txt"))
    r = try(dir, "-c config.lua --try d --expect g.txt s.txt")
    assert.are.equal(1, r.status)
    assert.matches("cannot read g%.txt: Is a directory", r.stderr)
  end)

  it("is a usage error with --update but no --expect, or --expect but no --try", function()
    run.write(dir .. "/g.txt", "")
    local cases = {
      ["-c config.lua --try d --update s.txt"] = "%-%-update goes with %-%-expect GOLDEN",
      ["-c config.lua --expect g.txt s.txt"] = "%-%-expect goes with %-%-try DECODER",
      ["-c config.lua --expect g.txt --update"] = "%-%-expect goes with %-%-try DECODER",
      ["-c config.lua --try d --expect"] = "usage: ",
    }
    for args, said in pairs(cases) do
      local r = try(dir, args)
      assert.are.equal(2, r.status, args)
      assert.are.equal("", r.stdout, args)
      assert.truthy(r.stderr:find(said), args .. ": " .. r.stderr)
    end
  end)

  it("compares what the encoder made with --encode", function()
    local r = try(dir, "-c config.lua --try d --encode e --expect g.txt --update s.txt")
    assert.are.equal(0, r.status, r.stderr)
    local first = echo(1, "a") .. "  encoded: " .. T .. " [a]\n"
    assert.are.equal(first, run.read(dir .. "/g.txt"):sub(1, #first))
    run.write(dir .. "/e.lua", encoder:gsub('" "', '" | "'))
    r = try(dir, "-c config.lua --try d --encode e --expect g.txt s.txt")
    assert.are.equal(1, r.status)
    assert.truthy(r.stdout:find("g.txt:4: s.txt:1: differs:\n " .. TIMESTAMP ..
      '   Payload: "[a]"\n-  encoded: ' .. T .. " [a]\n+  encoded: " .. T .. " | [a]\n", 1, true), r.stdout)
  end)

  it("is stable for a decoder that sets no Timestamp: 0, said unset, for the encoder too", function()
    run.write(dir .. "/d.lua", unstamped)
    local r = try(dir, "-c config.lua --try d --encode e --expect g.txt --update s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("s.txt:1: 1 message\n" .. UNSET .. '  Payload: "a"\n  encoded: 0 a\n',
      run.read(dir .. "/g.txt"):match("^.-\n.-\n.-\n.-\n"))
    sh("sleep 0.05")
    r = try(dir, "-c config.lua --try d --encode e --expect g.txt s.txt")
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
  end)

  it("compares a broken limit's failure up to the limit, not what was used or where", function()
    run.write(dir .. "/s.txt", "spin\n")
    assert.are.equal(0, try(dir, "-c config.lua --try d --expect g.txt --update s.txt").status)
    local golden = run.read(dir .. "/g.txt")
    assert.matches("^s%.txt:1: failed: cpu limit exceeded: limit 20 ms, used [%d.]+ ms, at ", golden)
    run.write(dir .. "/g.txt", "s.txt:1: failed: cpu limit exceeded: limit 20 ms, used 1234.5 ms, at elsewhere.lua:9\n")
    assert.are.equal(0, try(dir, "-c config.lua --try d --expect g.txt s.txt").status)
    run.write(dir .. "/g.txt", "s.txt:1: failed: cpu limit exceeded: limit 30 ms, used 1234.5 ms, at elsewhere.lua:9\n")
    assert.are.equal(1, try(dir, "-c config.lua --try d --expect g.txt s.txt").status)
  end)
end)

describe("lumberjit --try --expect --watch", function()
  -- As try_spec.lua's: lumberjit in the background, its PID; the shell
  -- that started it writes its exit status to dir/status.
  local function spawn(dir, args)
    local script = string.format("cd %s && (set -m; %s %s < /dev/null > stdout 2> stderr & " ..
      "echo $! > pid; wait $!; echo $? > status) > /dev/null 2>&1 &", run.quote(dir), run.quote(run.bin), args)
    assert.is_true(sh("bash -c " .. run.quote("set -m; " .. script)))
    for _ = 1, 100 do
      local pid = tonumber(run.read(dir .. "/pid") or "")
      if pid then return pid end
      sh("sleep 0.1")
    end
    error("no pid for lumberjit")
  end

  -- Polls until check() is true, up to about 20 s (a guard against a hang).
  local function wait_for(dir, what, check)
    for _ = 1, 200 do
      if check() then return end
      sh("sleep 0.1")
    end
    error("never " .. what .. "\nstdout:\n" .. (run.read(dir .. "/stdout") or "") ..
      "\nstderr:\n" .. (run.read(dir .. "/stderr") or ""))
  end

  local function replace(path, text)
    run.write(path .. ".new", text)
    assert(os.rename(path .. ".new", path))
  end

  local function said(dir, text)
    return function() return (run.read(dir .. "/stderr") or ""):find(text, 1, true) ~= nil end
  end

  it("compares again when the decoder or the golden file changes", function()
    local dir = make_dir({["s.txt"] = "a\n", ["g.txt"] = echo(1, "a")})
    local pid
    finally(function()
      if pid and not run.read(dir .. "/status") then sh("kill -KILL " .. pid .. " 2>/dev/null") end
      run.cleanup(dir)
    end)
    pid = spawn(dir, "-c config.lua --try d --expect g.txt --watch s.txt")
    wait_for(dir, "compared once", said(dir, "--expect g.txt: the same, 1 sample line\n"))
    assert.matches("waiting for a change of config%.lua, the plugins' files, the golden file or the samples",
      run.read(dir .. "/stderr"))

    replace(dir .. "/d.lua", decoder:gsub('"%["', '"<"'))
    wait_for(dir, "compared the new decoder", said(dir, "--expect g.txt: 1 sample line differs\n"))
    assert.matches("== run 2: [^\n]*d%.lua changed ==\ng%.txt:3: s%.txt:1: differs:\n", run.read(dir .. "/stdout"))

    replace(dir .. "/g.txt", (echo(1, "a"):gsub("%[a%]", "<a]")))
    wait_for(dir, "compared with the new golden file", function()
      local stderr = run.read(dir .. "/stderr") or ""
      return select(2, stderr:gsub("the same, 1 sample line\n", "")) == 2
    end)
    assert.matches("== run 3: [^\n]*g%.txt changed ==\n$", run.read(dir .. "/stdout"))
    assert.is_true(sh("kill -TERM " .. pid))
    wait_for(dir, "exited", function() return run.read(dir .. "/status") ~= nil end)
    assert.are.equal("0\n", run.read(dir .. "/status"))
  end)
end)

describe("lumberjit_try, the helper for users' busted specs", function()
  local dir
  before_each(function() dir = run.tmpdir() end)
  after_each(function() run.cleanup(dir) end)

  -- A decoder in dir; its messages per line as the spec below reads them.
  local function plugin(name, text)
    run.write(dir .. "/" .. name, text)
    return dir .. "/" .. name
  end

  it("runs lumberjit from LUMBERJIT_BIN", function()
    assert.are.equal(os.getenv("LUMBERJIT_BIN") or "lumberjit", try_helper.bin)
  end)

  it("returns the messages of a line, with the plugin's settings, as tables", function()
    local file = plugin("d.lua", [[
local prefix = read_config("prefix")
function process_message(line)
  print("saw", line)
  inject_message({Timestamp = 1779186617000000512, Type = prefix, Logger = "l", Hostname = "h",
    Severity = 7, Pid = 4211, Payload = line, EnvVersion = "1.0",
    Uuid = "01234567-89ab-cdef-fedc-ba9876543210",
    Fields = {
      s = "say \"hi\"\n\tC:\\ \1 é",
      b = {value = "\0\255", value_type = 1},
      i = {value = -44, value_type = 2},
      d = 3.5, n = 3, inf = math.huge, t = true, f = false,
      strings = {"a", "b, c"}, ints = {value = {1, 2}, value_type = 2},
      took = {value = 3, representation = "ms"},
    }})
  inject_message({Payload = "second"})
end
]])
    local msgs = try_helper.decode({filename = file, settings = {prefix = "pre"}}, "hello")
    assert.are.same({"saw\thello"}, msgs.prints)
    assert.are.equal(2, #msgs)
    local m = msgs[1]
    assert.are.equal(1779186617000000512, m.Timestamp)
    assert.are.same({"pre", "l", "h", 7, 4211, "hello", "1.0", "01234567-89ab-cdef-fedc-ba9876543210"},
      {m.Type, m.Logger, m.Hostname, m.Severity, m.Pid, m.Payload, m.EnvVersion, m.Uuid})
    assert.are.same({
      s = "say \"hi\"\n\tC:\\ \1 é", b = "\0\255", i = -44, d = 3.5, n = 3, inf = math.huge,
      t = true, f = false, strings = {"a", "b, c"}, ints = {1, 2},
      took = {value = 3, representation = "ms"},
    }, m.Fields)
    assert.are.same({s = "string", b = "bytes", i = "integer", d = "double", n = "double",
      inf = "double", t = "bool", f = "bool", strings = "string", ints = "integer", took = "double"},
      m.field_types)
    -- No Timestamp given: none read back.
    assert.is_nil(msgs[2].Timestamp)
    assert.are.equal("second", msgs[2].Payload)
  end)

  it("returns nil, the outcome and the reason of a rejected or failed line", function()
    local file = plugin("d.lua", [[
function process_message(line)
  if line == "boom" then error("exploded") end
  return -1, "no match"
end
]])
    assert.are.same({nil, "rejected", "rejected by d: no match"}, {try_helper.decode({filename = file}, "x")})
    local _, status, reason = try_helper.decode(file, "boom")
    assert.are.equal("failed", status)
    assert.matches("exploded", reason)
  end)

  it("runs many lines and an encoder, whose output may span lines", function()
    local results = try_helper.run(run.root .. "/sandbox/decoders/line.lua", {"one", "two"},
      {encoder = {filename = plugin("e.lua", [[
local sep = read_config("sep")
function process_message()
  return read_message("Payload") .. sep .. "\nend"
end
]]), settings = {sep = "|"}}})
    assert.are.equal(2, #results)
    assert.are.same({1, "ok", "one"}, {results[1].line, results[1].status, results[1].messages[1].Payload})
    assert.are.equal("one|\nend", results[1].messages[1].encoded)
    assert.are.equal("two|\nend", results[2].messages[1].encoded)
  end)

  it("takes a relative filename from the current directory", function()
    local msgs = assert(try_helper.decode("sandbox/decoders/line.lua", "as is"))
    assert.are.equal("as is", msgs[1].Payload)
  end)

  it("is installed with the Lua lumberjit reads, and then runs that installation's binary", function()
    local q = run.quote
    local prefix = dir .. "/prefix"
    assert.is_true(sh(string.format("cmake --install %s --prefix %s > /dev/null",
      q(run.bin:match("^(.*)/[^/]+$")), q(prefix))))
    run.write(dir .. "/t.lua", [[
local try = require "lumberjit_try"
io.write(try.bin, "\n", try.decode("decoders/line.lua", "installed")[1].Payload, "\n")
]])
    local p = io.popen(string.format("cd %s && env -u LUMBERJIT_BIN LUA_PATH=%s lua t.lua 2>&1", q(dir),
      q(prefix .. "/share/lumberjit/?.lua;;")))
    local out = p:read("*a")
    p:close()
    assert.are.equal(prefix .. "/bin/lumberjit\ninstalled\n", out)
  end)

  it("raises the error of a plugin that does not load", function()
    local file = plugin("d.lua", "function process_message(\n")
    local ok, err = pcall(try_helper.decode, file, "x")
    assert.is_false(ok)
    assert.matches("did not run the plugin.*d%.lua", err)
  end)
end)
