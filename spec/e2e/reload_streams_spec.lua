-- Stream connections through reloads (src/inputs/syslog/syslog_carry.c):
-- senders that stay connected over TCP, a Unix stream socket and TLS, in
-- both framings, lose nothing and keep their order; a message begun before
-- a reload is ended after it; a pipeline that cannot be built gives the
-- connections back to the one built instead; a listener removed ends its
-- connections as a stop does; a stop during a reload's drain ends them in
-- the next pipeline, as a stop does.
local run = dofile("spec/e2e/run.lua")
local rh = dofile("spec/e2e/reload_harness.lua")
local certs = dofile("spec/e2e/certs.lua")
local cjson = require("cjson")

local streams = run.root .. "/spec/e2e/reload_streams.py"

describe("reload with stream connections open", function()
  local c, certs_dir
  setup(function()
    certs_dir = run.tmpdir()
    c = certs.generate(certs_dir)
  end)
  teardown(function() run.cleanup(certs_dir) end)

  -- A run listening on TCP, a Unix stream socket, TLS and UDP, its decoder
  -- tagging each message with `tag`; `more` is added to the config.
  local function setup_run()
    local dir = run.tmpdir()
    local r = {dir = dir, unix = dir .. "/s.sock"}
    r.tcp, r.tls, r.udp = run.free_ports(3)
    function r.config(tag, more)
      run.write(dir .. "/config.lua", string.format([[
lumberjit = { state_dir = "state" }
tcp = { type = "syslog_input", address = "tcp://127.0.0.1:%d", decoder = "dec" }
unix = { type = "syslog_input", address = "unix-stream:%s", decoder = "dec" }
tls = { type = "syslog_input", address = "tls://127.0.0.1:%d", decoder = "dec",
        tls = { cert = "%s", key = "%s" } }
udp = { type = "syslog_input", address = "udp://127.0.0.1:%d", decoder = "dec" }
dec = { type = "decoder", filename = "dec.lua", tag = "%s" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], r.tcp, r.unix, r.tls, c.server_cert, c.server_key, r.udp, tag) .. (more or ""))
    end
    rh.write_tagger(dir)
    r.config("a")
    r.proc = rh.start(dir, finally)
    assert.truthy(rh.wait_for(dir, "stderr", "listening on", 4), run.read(dir .. "/stderr"))
    -- The senders' endpoints: one connection to each listener.
    r.endpoints = string.format("p=tcp:127.0.0.1:%d:lf q=unix:%s:octets r=tls:127.0.0.1:%d:octets",
      r.tcp, r.unix, r.tls)
    return r
  end

  local function sender(r, args)
    return io.popen(string.format("cd %s && CA=%s timeout -s KILL 60 python3 %s %s %s", run.quote(r.dir),
      run.quote(c.ca), run.quote(streams), args, r.endpoints))
  end

  -- The split senders sent the first halves.
  local function ready(r)
    for _ = 1, 400 do
      if run.read(r.dir .. "/ready") then return true end
      os.execute("sleep 0.05")
    end
    return false
  end

  -- The ids each label's messages carried in out.log, in its order.
  local function ids(r)
    local got = {p = {}, q = {}, r = {}}
    for line in (run.read(r.dir .. "/out.log") or ""):gmatch("[^\n]+") do
      local label, id = line:match("^%a (%a) (%d+)$")
      assert.truthy(label, line)
      got[label][#got[label] + 1] = tonumber(id)
    end
    return got
  end

  local function range(n)
    local t = {}
    for i = 1, n do t[i] = i end
    return t
  end

  -- Every message the senders sent, once and in its connection's order.
  local function check_flow(r, sent)
    assert.are.same({}, sent.errors)
    for _ = 1, 200 do
      local got = ids(r)
      if #got.p >= sent.p and #got.q >= sent.q and #got.r >= sent.r then break end
      os.execute("sleep 0.05")
    end
    assert.are.equal(0, rh.stop(r.proc), run.read(r.dir .. "/stderr"))
    local got = ids(r)
    for _, label in ipairs{"p", "q", "r"} do
      assert.truthy(sent[label] > 100, label)
      assert.are.same(range(sent[label]), got[label], label)
    end
  end

  it("carries every connection through reloads: senders that never stop lose nothing, in order", function()
    local r = setup_run()
    local flow = sender(r, "flow 3 300")
    for i, tag in ipairs{"b", "c", "d", "e", "f"} do
      os.execute("sleep 0.4")
      r.config(tag)
      rh.signal(r.proc, "HUP")
      assert.truthy(rh.wait_for(r.dir, "stderr", "running the new configuration", i), run.read(r.dir .. "/stderr"))
    end
    local sent = cjson.decode(flow:read("*a"))
    flow:close()
    check_flow(r, sent)
    local stderr = run.read(r.dir .. "/stderr")
    -- Each of the three listeners carried its connection each time.
    assert.are.equal(15, rh.count(stderr, "(its socket kept through the reload, with 1 connection)"), stderr)
    assert.is_nil(stderr:find("warn", 1, true), stderr)
    run.cleanup(r.dir)
  end)

  it("goes through a storm of reloads, one asked every 5 ms, losing nothing", function()
    local r = setup_run()
    local flow = sender(r, "flow 2 300")
    -- Signals that come while a pipeline is being built or started wait
    -- for it to run; none may stop an input that has not started.
    os.execute(string.format("cd %s && for i in $(seq 1 200); do echo \"-- $i\" >> config.lua; " ..
      "kill -HUP %d; sleep 0.005; done", run.quote(r.dir), r.proc.pid))
    local sent = cjson.decode(flow:read("*a"))
    flow:close()
    check_flow(r, sent)
    local stderr = run.read(r.dir .. "/stderr")
    assert.truthy(rh.count(stderr, "running the new configuration") >= 1, stderr)
    assert.is_nil(stderr:find("warn", 1, true), stderr)
    run.cleanup(r.dir)
  end)

  it("ends a message begun before a reload after it, with the new decoder", function()
    local r = setup_run()
    local split = sender(r, "split " .. run.quote(r.dir))
    assert.truthy(ready(r))
    r.config("b")
    rh.signal(r.proc, "HUP")
    assert.truthy(rh.wait_for(r.dir, "stderr", "running the new configuration"), run.read(r.dir .. "/stderr"))
    run.write(r.dir .. "/go", "")
    local sent = cjson.decode(split:read("*a"))
    split:close()
    assert.are.same({p = 1, q = 1, r = 1, errors = {}}, sent)
    assert.truthy(rh.wait_for(r.dir, "out.log", "one two", 3), run.read(r.dir .. "/stderr"))
    assert.are.equal(0, rh.stop(r.proc), run.read(r.dir .. "/stderr"))
    local lines = run.lines(run.read(r.dir .. "/out.log"))
    table.sort(lines)
    assert.are.same({"b p one two", "b q one two", "b r one two"}, lines)
    assert.truthy(run.read(r.dir .. "/stderr"):find("0 dead-letter records", 1, true))
    run.cleanup(r.dir)
  end)

  it("gives the connections back to the config before when the new pipeline cannot be built", function()
    local r = setup_run()
    -- A port held by a listener of our own: the new pipeline's bind fails.
    local holder = io.popen("python3 -c \"import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); " ..
      "s.listen(); print(s.getsockname()[1]); sys.stdout.flush(); time.sleep(30)\" & echo $!")
    local holder_pid = tonumber(holder:read("*l"))
    r.proc.also(function() os.execute("kill " .. holder_pid .. " 2>/dev/null") end)
    local taken = tonumber(holder:read("*l"))
    local flow = sender(r, "flow 2 300")
    os.execute("sleep 0.5")
    r.config("b", string.format('taken = { type = "syslog_input", address = "tcp://127.0.0.1:%d" }\n', taken))
    rh.signal(r.proc, "HUP")
    assert.truthy(rh.wait_for(r.dir, "stderr", "going back to the configuration before"), run.read(r.dir .. "/stderr"))
    local sent = cjson.decode(flow:read("*a"))
    flow:close()
    check_flow(r, sent)
    local stderr = run.read(r.dir .. "/stderr")
    assert.are.equal(3, rh.count(stderr, "(its socket kept through the reload, with 1 connection)"), stderr)
    -- The datagram socket too, given back by the pipeline not built.
    assert.truthy(stderr:find("udp://127.0.0.1:" .. r.udp .. " (its socket kept through the reload)\n", 1, true), stderr)
    holder:close()
    run.cleanup(r.dir)
  end)

  it("ends the connections of a listener the new config removes as a stop does", function()
    local r = setup_run()
    r.endpoints = string.format("p=tcp:127.0.0.1:%d:lf", r.tcp)
    local split = sender(r, "split " .. run.quote(r.dir))
    assert.truthy(ready(r))
    -- Without tcp: its connection ends, its begun message a dead letter
    -- (its rest was coming: no record of half a message).
    r.config("b")
    local config = run.read(r.dir .. "/config.lua"):gsub("tcp = {[^\n]*\n", "")
    run.write(r.dir .. "/config.lua", config)
    rh.signal(r.proc, "HUP")
    assert.truthy(rh.wait_for(r.dir, "stderr", "running the new configuration"), run.read(r.dir .. "/stderr"))
    run.write(r.dir .. "/go", "")
    split:read("*a")
    split:close()
    assert.are.equal(0, rh.stop(r.proc), run.read(r.dir .. "/stderr"))
    assert.are.equal("", run.read(r.dir .. "/out.log") or "")
    local dead = cjson.decode(run.read(r.dir .. "/dead-letter.log"))
    assert.are.equal("<13>p one", dead.payload)
    assert.are.equal("the run stopped inside this message: the rest of it was not read", dead.reason)
    run.cleanup(r.dir)
  end)

  it("stops after a reload a stop signal came during: the connections carried end as at a stop", function()
    local dir = run.tmpdir()
    -- The reload's drain lasts until the output's reader goes on.
    local held = rh.held_output_run(dir, finally)
    -- A connection with a message begun, which the sender never ends.
    local r = {dir = dir, endpoints = string.format("p=tcp:127.0.0.1:%d:lf", held.port)}
    local split = sender(r, "split " .. run.quote(dir))
    assert.truthy(ready(r))
    held.config("b")
    rh.signal(held.proc, "HUP")
    assert.truthy(rh.wait_for(dir, "stderr", "the new configuration is loaded and checked"),
      run.read(dir .. "/stderr"))
    rh.signal(held.proc, "TERM")
    assert.truthy(rh.wait_for(dir, "stderr", "SIGTERM: stopping once the reload is done"), run.read(dir .. "/stderr"))
    held.go_on()
    for _ = 1, 400 do
      if run.read(dir .. "/status") then break end
      os.execute("sleep 0.05")
    end
    local stderr = run.read(dir .. "/stderr")
    assert.are.equal("0\n", run.read(dir .. "/status"), stderr)
    run.write(dir .. "/go", "")
    split:read("*a")
    split:close()
    assert.truthy(stderr:find("(its socket kept through the reload, with 1 connection)", 1, true), stderr)
    local lines = run.lines(run.read(dir .. "/out.log"))
    assert.are.equal(2000, #lines, stderr)
    assert.truthy(rh.held_lines_arrived(lines))
    -- Begun before the reload, cut by the next pipeline's stop.
    local dead = cjson.decode(run.read(dir .. "/dead-letter.log"))
    assert.are.equal("<13>p one", dead.payload)
    assert.matches("the run stopped inside this message", dead.reason)
    run.cleanup(dir)
  end)
end)
