-- Reloads (src/cli/service.h): under load, with the decoder, a matcher and
-- the inputs changed and a broken config in between, nothing is lost or
-- doubled and an unchanged decoder keeps its Lua state; watch_config; the
-- reloads a config is refused, and one whose pipeline cannot be built.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local driver = run.root .. "/spec/e2e/reload_driver.py"

local rh = dofile("spec/e2e/reload_harness.lua")
local signal, wait_for, stop = rh.signal, rh.wait_for, rh.stop
local function start(dir) return rh.start(dir, finally) end

describe("reload", function()
  it("under load: a changed decoder, matcher and inputs, a broken config, --reload: every line once, in order", function()
    local dir = run.tmpdir()
    local r = cjson.decode(io.popen(string.format("timeout -s KILL 120 python3 %s %s %s",
      run.quote(driver), run.quote(run.bin), run.quote(dir))):read("*a"))
    local stderr = run.read(dir .. "/stderr")
    assert.are.same({}, r.problems, stderr)
    assert.are.equal(0, r.status, stderr)
    assert.truthy(r.written.a > 0 and r.written.b > 0)
    assert.truthy(r.v1_lines > 0 and r.v2_lines > 0)
    -- Six reloads asked; the broken one failed and said where.
    assert.are.same({success = 5, failure = 1}, r.reloads)
    assert.are.same({"1"}, r.last_reload_successful)
    assert.truthy(stderr:find("reload failed; the running configuration stays: conf.lua:8:", 1, true), stderr)
    assert.are.equal(0, r.reload_command.status, r.reload_command.stderr)
    -- systemd: READY=1 at the start and after each RELOADING=1.
    local notes = table.concat(r.notices, "\n")
    assert.are.equal(6, run.count(notes, "RELOADING=1"), notes)
    assert.are.equal(7, run.count(notes, "READY=1"), notes)
    assert.truthy(notes:find("READY=1|STATUS=running; the last reload failed: conf.lua:8:", 1, true), notes)
    assert.truthy(stderr:find("plugin instances kept as they were", 1, true))
    run.cleanup(dir)
  end)

  it("keeps its syslog sockets through reloads: every datagram and connection sent meanwhile arrives", function()
    local dir = run.tmpdir()
    local udp, tcp = rh.port(), rh.port()
    local function config(tag)
      run.write(dir .. "/config.lua", string.format([[
lumberjit = { state_dir = "state" }
udp = { type = "syslog_input", address = "udp://127.0.0.1:%d", decoder = "dec" }
tcp = { type = "syslog_input", address = "tcp://127.0.0.1:%d", decoder = "dec" }
dec = { type = "decoder", filename = "dec.lua", tag = "%s" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], udp, tcp, tag))
    end
    rh.write_tagger(dir)
    config("a")
    local proc = start(dir)
    assert.truthy(wait_for(dir, "stderr", "listening on tcp://127.0.0.1"), run.read(dir .. "/stderr"))
    local sender = io.popen(string.format("python3 %s %d %d 3 2000", run.quote(run.root ..
      "/spec/e2e/reload_sockets.py"), udp, tcp))
    for i, tag in ipairs{"b", "c", "d"} do
      os.execute("sleep 0.6")
      config(tag)
      signal(proc, "HUP")
      assert.truthy(wait_for(dir, "stderr", "its socket kept through the reload"))
    end
    local sent = cjson.decode(sender:read("*a"))
    sender:close()
    local got = {u = {}, t = {}}
    local function all_in()
      got = {u = {}, t = {}}
      for line in (run.read(dir .. "/out.log") or ""):gmatch("[^\n]+") do
        local kind, id = line:match("^%a (%a) (%d+)$")
        if kind then got[kind][#got[kind] + 1] = tonumber(id) end
      end
      return #got.u >= sent.u and #got.t >= sent.t
    end
    for _ = 1, 200 do
      if all_in() then break end
      os.execute("sleep 0.05")
    end
    assert.are.equal(0, stop(proc), run.read(dir .. "/stderr"))
    all_in()
    table.sort(got.u)
    table.sort(got.t)
    local function range(n) local t = {} for i = 1, n do t[i] = i end return t end
    assert.truthy(sent.u > 1000 and sent.t > 50)
    assert.are.same(range(sent.u), got.u)
    assert.are.same(range(sent.t), got.t)
    local stderr = run.read(dir .. "/stderr")
    assert.are.equal(3, run.count(stderr, "running the new configuration"), stderr)
    assert.is_nil(stderr:find("has no listener any more", 1, true), stderr)
    run.cleanup(dir)
  end)

  it("counts each datagram the kernel drops once, across reloads that keep the socket", function()
    local dir = run.tmpdir()
    local port = rh.port()
    -- Each record costs the decoder some 10 us: bursts overflow the
    -- 64 KiB receive buffer, and the kernel drops what does not fit.
    run.write(dir .. "/slow.lua", "function process_message(r) local x = 0 " ..
      "for i = 1, 1000 do x = (x + i * 7) % 1000003 end inject_message({Payload = r}) return 0 end\n")
    local base = string.format([[
lumberjit = { state_dir = "state" }
udp = { type = "syslog_input", address = "udp://127.0.0.1:%d", decoder = "slow", receive_buffer = 65536 }
slow = { type = "decoder", filename = "slow.lua" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], port)
    run.write(dir .. "/config.lua", base)
    local proc = start(dir)
    assert.truthy(wait_for(dir, "stderr", "listening on udp://127.0.0.1"))
    local function burst(first)
      os.execute(string.format("python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n" ..
        "for i in range(%d, %d): s.sendto(b'<13>u %%d' %% i, ('127.0.0.1', %d))\"", first, first + 10000, port))
      -- Once nothing more arrives, what was not read was dropped.
      local seen = -1
      for _ = 1, 200 do
        local n = #run.lines(run.read(dir .. "/out.log"))
        if n == seen then break end
        seen = n
        os.execute("sleep 0.2")
      end
    end
    burst(1)
    for i = 1, 2 do
      run.write(dir .. "/config.lua", base .. "-- reload " .. i .. "\n")
      signal(proc, "HUP")
      assert.truthy(wait_for(dir, "stderr", "running the new configuration", i), run.read(dir .. "/stderr"))
      burst(1 + i * 10000)
    end
    assert.are.equal(0, stop(proc), run.read(dir .. "/stderr"))
    local stderr = run.read(dir .. "/stderr")
    local records, dropped = 0, 0
    for n in stderr:gmatch("input 'udp': (%d+) records") do records = records + tonumber(n) end
    for n in stderr:gmatch("(%d+) datagrams dropped by the kernel") do dropped = dropped + tonumber(n) end
    assert.are.equal(#run.lines(run.read(dir .. "/out.log")), records)
    assert.truthy(dropped > 0, stderr)
    -- Three runs' summaries: each counts the drops of its own time.
    assert.are.equal(30000, records + dropped, stderr)
    run.cleanup(dir)
  end)

  it("runs a reload asked while one is under way once it is done: the last config runs", function()
    local dir = run.tmpdir()
    -- The first reload's pipeline cannot end before the reader goes on.
    local r = rh.held_output_run(dir, finally)
    r.config("b")
    signal(r.proc, "HUP")
    -- Rewritten only once the first reload has read it.
    assert.truthy(wait_for(dir, "stderr", "the new configuration is loaded and checked"),
      run.read(dir .. "/stderr"))
    r.config("c")
    signal(r.proc, "HUP")
    assert.truthy(wait_for(dir, "stderr", "SIGHUP: a reload is under way; reloading again once it is done"),
      run.read(dir .. "/stderr"))
    r.go_on()
    assert.truthy(wait_for(dir, "stderr", "running the new configuration", 2), run.read(dir .. "/stderr"))
    rh.send(r.port, "['last']")
    assert.truthy(wait_for(dir, "out.log", "c last"), run.read(dir .. "/stderr"))
    assert.are.equal(0, stop(r.proc), run.read(dir .. "/stderr"))
    local lines = run.lines(run.read(dir .. "/out.log"))
    assert.are.equal(2001, #lines)
    assert.truthy(rh.held_lines_arrived(lines))
    assert.are.equal("c last", lines[2001])
    assert.are.equal(2, rh.count(run.read(dir .. "/stderr"), "reloading config.lua"))
    run.cleanup(dir)
  end)

  it("follows watch_config: a changed plugin file is reloaded without a signal", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
lumberjit = { state_dir = "state", watch_config = true, watch_interval_ms = 100 }
app = { type = "tail_input", paths = { "in.log" }, decoder = "dec", read_from_head = true }
dec = { type = "decoder", filename = "dec.lua" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    local function decoder(tag)
      run.write(dir .. "/dec.lua", "function process_message(r) inject_message({Payload = '" .. tag ..
        " ' .. r}) return 0 end\n")
    end
    decoder("old")
    run.write(dir .. "/in.log", "one\n")
    local proc = start(dir)
    assert.truthy(wait_for(dir, "out.log", "old one"))
    decoder("new")
    assert.truthy(wait_for(dir, "stderr", "a configuration file changed: reloading"), run.read(dir .. "/stderr"))
    assert.truthy(wait_for(dir, "stderr", "running the new configuration"))
    local f = io.open(dir .. "/in.log", "a")
    f:write("two\n")
    f:close()
    assert.truthy(wait_for(dir, "out.log", "new two"), run.read(dir .. "/stderr"))
    assert.are.equal(0, stop(proc), run.read(dir .. "/stderr"))
    assert.are.equal("old one\nnew two\n", run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)

  it("refuses a config with a stdin_input, or files without state_dir, and goes on", function()
    local dir = run.tmpdir()
    local base = [[
lumberjit = { state_dir = "state", metrics_path = "metrics.prom", metrics_interval_ms = 100 }
app = { type = "tail_input", paths = { "in.log" }, read_from_head = true }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]
    run.write(dir .. "/config.lua", base)
    run.write(dir .. "/in.log", "one\n")
    local proc = start(dir)
    assert.truthy(wait_for(dir, "out.log", "one"))
    run.write(dir .. "/config.lua", base .. 'std = { type = "stdin_input" }\n')
    signal(proc, "HUP")
    assert.truthy(wait_for(dir, "stderr", "input 'std' reads standard input"))
    run.write(dir .. "/config.lua", (base:gsub('state_dir = "state", ', "")))
    signal(proc, "HUP")
    assert.truthy(wait_for(dir, "stderr", "input 'app' reads files and there is no state_dir"))
    assert.truthy(wait_for(dir, "metrics.prom", 'lumberjit_config_reloads_total{result="failure"} 2'))
    assert.truthy(wait_for(dir, "metrics.prom", "lumberjit_config_last_reload_successful 0"))
    local f = io.open(dir .. "/in.log", "a")
    f:write("two\n")
    f:close()
    assert.truthy(wait_for(dir, "out.log", "two"))
    assert.are.equal(0, stop(proc), run.read(dir .. "/stderr"))
    assert.are.equal("one\ntwo\n", run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)

  it("goes back to the config before when the new pipeline cannot be built (a port taken)", function()
    local dir = run.tmpdir()
    local base = [[
lumberjit = { state_dir = "state" }
app = { type = "tail_input", paths = { "in.log" }, read_from_head = true }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]
    -- A port held by a listener of our own.
    local holder = io.popen("python3 -c \"import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); " ..
      "s.listen(); print(s.getsockname()[1]); sys.stdout.flush(); time.sleep(30)\" & echo $!")
    local holder_pid = tonumber(holder:read("*l"))
    local port = tonumber(holder:read("*l"))
    run.write(dir .. "/config.lua", base)
    run.write(dir .. "/in.log", "one\n")
    local proc = start(dir)
    assert.truthy(wait_for(dir, "out.log", "one"))
    run.write(dir .. "/config.lua", base .. string.format(
      'tcp = { type = "syslog_input", address = "tcp://127.0.0.1:%d" }\n', port))
    signal(proc, "HUP")
    assert.truthy(wait_for(dir, "stderr", "going back to the configuration before"), run.read(dir .. "/stderr"))
    local f = io.open(dir .. "/in.log", "a")
    f:write("two\n")
    f:close()
    assert.truthy(wait_for(dir, "out.log", "two"), run.read(dir .. "/stderr"))
    assert.are.equal(0, stop(proc), run.read(dir .. "/stderr"))
    assert.are.equal("one\ntwo\n", run.read(dir .. "/out.log"))
    os.execute("kill " .. holder_pid)
    holder:close()
    run.cleanup(dir)
  end)

  it("--reload says why it cannot: no pid_file, a broken config", function()
    local r = run.lumberjit{config = 'lumberjit = {}\nout = { type = "stdout_output", message_matcher = "TRUE" }\n' ..
      'std = { type = "stdin_input" }\n', args = "--reload"}
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("input 'std' reads standard input", 1, true), r.stderr)
    run.cleanup(r.dir)
    r = run.lumberjit{config = 'lumberjit = { state_dir = "s" }\nout = { type = "stdout_output", message_matcher = "TRUE" }\n' ..
      'g = { type = "generator_input", count = 1 }\n', args = "--reload"}
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("sets no pid_file", 1, true), r.stderr)
    run.cleanup(r.dir)
    r = run.lumberjit{config = 'broken = {\n', args = "--reload"}
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("not reloading: the running configuration stays", 1, true), r.stderr)
    run.cleanup(r.dir)
  end)
end)
