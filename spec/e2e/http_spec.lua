-- The HTTP endpoint (src/http/http_endpoint.h) of a running lumberjit, on
-- loopback: /metrics, /health and /api/v1/stats, and the server's bounds
-- (http_server.h). Plain GETs go through curl; requests curl will not
-- send, and connections held open, through http_client.py.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local cjson = require("cjson")

local client = run.root .. "/spec/e2e/http_client.py"
local LINES = 500

-- Starts lumberjit in a fresh directory with config (files beside it) and
-- waits until its endpoint says where it listens; { dir, port }.
local function start(config, files)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config)
  for name, text in pairs(files or {}) do run.write(dir .. "/" .. name, text) end
  h.spawn(dir, "lumberjit", run.quote(run.bin) .. " -c config.lua", 120)
  local port
  h.wait_until(function()
    port = (run.read(dir .. "/lumberjit.err") or ""):match("on 127%.0%.0%.1:(%d+)\n")
    return port or run.read(dir .. "/lumberjit.status")
  end, 20)
  assert(port, "no endpoint:\n" .. (run.read(dir .. "/lumberjit.err") or ""))
  return { dir = dir, port = tonumber(port) }
end

local function stop(lj)
  local status = h.terminate(lj.dir, "lumberjit", 30)
  return status, run.read(lj.dir .. "/lumberjit.err")
end

-- curl's answer: { status, headers (lower-case names), body }. args: more
-- of curl's options ("-I", "-X POST").
local function get(lj, path, args)
  local cmd = string.format("cd %s && curl -s -o body -D headers %s http://127.0.0.1:%d%s",
    run.quote(lj.dir), args or "", lj.port, path)
  assert(os.execute(cmd))
  local head = run.read(lj.dir .. "/headers")
  local res = { status = tonumber(head:match("^HTTP/1%.1 (%d+)")), headers = {},
                body = run.read(lj.dir .. "/body") or "" }
  for name, value in head:gmatch("\n([%w-]+): ([^\r]*)") do res.headers[name:lower()] = value end
  return res
end

-- What the server answers to request (bytes sent as they are), until it
-- closes.
local function raw(lj, request)
  run.write(lj.dir .. "/request", request)
  return io.popen(string.format("python3 %s %d raw < %s", run.quote(client), lj.port,
    run.quote(lj.dir .. "/request"))):read("*a")
end

local function health(lj)
  local res = get(lj, "/health")
  return res.status, cjson.decode(res.body)
end

-- A tail_input keeps the run going after its file is read: then nothing
-- moves, and /metrics and the metrics file say the same.
local function idle_run()
  local lines = {}
  for i = 1, LINES do lines[i] = "line " .. i end
  local lj = start([[
lumberjit = { http_address = "127.0.0.1:0", metrics_path = "metrics.prom",
              metrics_interval_ms = 100, dead_letter_path = "dead.log" }
app = { type = "tail_input", paths = { "app.log" }, read_from_head = true, decoder = "pass" }
pass = { type = "decoder", filename = "pass.lua" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], { ["app.log"] = table.concat(lines, "\n") .. "\n",
      ["pass.lua"] = "function process_message(l) inject_message({Payload = l}) end\n" })
  assert(h.wait_until(function()
    local m = run.read(lj.dir .. "/metrics.prom") or ""
    return m:find('lumberjit_output_delivered_records_total{output="out"} ' .. LINES .. "\n", 1, true)
  end, 30), "the file was not delivered")
  return lj
end

describe("the HTTP endpoint", function()
  local lj
  setup(function() lj = idle_run() end)
  teardown(function()
    assert.are.equal(0, (stop(lj)))
    run.cleanup(lj.dir)
  end)

  it("serves /metrics: the metrics file's text, in Prometheus's format", function()
    h.sleep(0.3) -- a rewrite of the file after the last record
    local res = get(lj, "/metrics")
    assert.are.equal(200, res.status)
    assert.are.equal("text/plain; version=0.0.4; charset=utf-8", res.headers["content-type"])
    assert.are.equal(#res.body, tonumber(res.headers["content-length"]))
    -- The same but the process's figures, read at each formatting (the
    -- request's own connection is an open descriptor more).
    local function steady(text) return (text:gsub("[^\n]*lumberjit_process_[^\n]*\n", "")) end
    assert.are.equal(steady(run.read(lj.dir .. "/metrics.prom")), steady(res.body))
    assert.truthy(res.body:find("\nlumberjit_process_open_fds %d+\n"))
    assert.truthy(res.body:find('lumberjit_input_records_total{input="app"} ' .. LINES .. "\n", 1, true))
  end)

  it("serves /metrics that promtool check metrics passes", function()
    if not os.execute("command -v promtool >/dev/null") then
      pending("promtool is not installed (Debian's prometheus package: scripts/setup)")
      return
    end
    get(lj, "/metrics")
    assert.is_true(h.sh(lj.dir, "promtool check metrics < body > promtool.out 2>&1"),
      run.read(lj.dir .. "/promtool.out"))
  end)

  it("serves the counters as JSON at /api/v1/stats", function()
    local res = get(lj, "/api/v1/stats")
    assert.are.equal(200, res.status)
    assert.are.equal("application/json", res.headers["content-type"])
    local st = cjson.decode(res.body)
    assert.are.equal(LINES, st.inputs.app.records)
    assert.are.equal(LINES, st.inputs.app.messages)
    assert.are.equal(0, st.inputs.app.tail_waiting_files_total)
    assert.are.equal(LINES, st.outputs.out.matched)
    assert.are.equal(LINES, st.outputs.out.delivered)
    assert.are.equal(0, st.outputs.out.queued_records)
    assert.truthy(st.outputs.out.latency_ms.p50)
    assert.are.same({ records = 0, written = 0, lost = 0, refused = 0, bytes = 0 }, st.dead_letters)
    local pass = st.plugins.pass
    assert.are.equal("decoder", pass.kind)
    assert.are.equal(LINES, pass.calls)
    assert.are.same({ error = 0, instructions = 0, cpu = 0, memory = 0, output = 0, input = 0 },
      pass.failures)
    assert.is_true(pass.memory_bytes > 0 and pass.memory_peak_bytes > 0)
    assert.is_true(pass.cpu_seconds > 0)
    assert.are.equal(0, st.inputs.app.tail_unread_bytes)
    assert.are.equal(1, st.inputs.app.tail_open_files)
    assert.is_false(st.paused)
  end)

  it("says a well run is well at /health", function()
    local status, body = health(lj)
    assert.are.equal(200, status)
    assert.are.same({ status = "ok" }, body)
  end)

  it("answers HEAD with GET's headers alone, other methods with 405, other paths with 404", function()
    local head = raw(lj, "HEAD /api/v1/stats HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert.matches("^HTTP/1%.1 200 OK\r\n", head)
    assert.truthy(tonumber(head:match("Content%-Length: (%d+)\r\n")) > 0)
    assert.are.equal(#head, head:find("\r\n\r\n", 1, true) + 3) -- no body
    local res = get(lj, "/metrics", "-X POST")
    assert.are.equal(405, res.status)
    assert.are.equal("GET, HEAD", res.headers["allow"])
    assert.are.equal(404, get(lj, "/", "").status)
    assert.are.equal(404, get(lj, "/metrics/x", "").status)
    assert.are.equal(200, get(lj, "/health?verbose=1", "").status)
  end)

  it("keeps a connection alive for the next request, and closes one that asks to be", function()
    local answers = raw(lj, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" ..
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" ..
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    local statuses = {}
    for status in answers:gmatch("HTTP/1%.1 (%d+)") do statuses[#statuses + 1] = status end
    assert.are.same({ "200", "200" }, statuses)
    assert.truthy(answers:find("Connection: keep-alive\r\n", 1, true))
    assert.truthy(answers:find("Connection: close\r\n", 1, true))
    assert.truthy(raw(lj, "GET /health HTTP/1.0\r\n\r\n"):find("^HTTP/1%.1 200 OK\r\n.*Connection: close\r\n"))
  end)

  it("refuses a head past 8 KiB (431), a body past 8 KiB (413) and bytes that are no HTTP (400), and closes", function()
    local big = raw(lj, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " .. ("a"):rep(9000) .. "\r\n\r\n")
    assert.matches("^HTTP/1%.1 431 Request Header Fields Too Large\r\n", big)
    assert.truthy(big:find("Connection: close\r\n", 1, true))
    local body = raw(lj, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n" .. ("b"):rep(9000))
    assert.matches("^HTTP/1%.1 413 ", body)
    assert.matches("^HTTP/1%.1 400 Bad Request\r\n", raw(lj, "garbage\r\n\r\n"))
    assert.matches("^HTTP/1%.1 400 ", raw(lj, "GET /health HTTP/1.1\r\nHost x\r\n\r\n"))
    assert.are.equal(200, health(lj))
  end)

  it("takes 16 connections at once, closes one past them, and takes more once they close", function()
    local out = io.popen(string.format("python3 %s %d hold 16", run.quote(client), lj.port)):read("*a")
    assert.are.equal("closed\nHTTP/1.1 200 OK\n", out)
  end)

  it("refuses an address in use, and one that is no HOST:PORT", function()
    local r = run.lumberjit{config = string.format([[
lumberjit = { http_address = "127.0.0.1:%d" }
gen = { type = "generator_input", count = 1 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], lj.port)}
    assert.are.equal(1, r.status)
    assert.matches("^lumberjit: http_address '127%.0%.0%.1:%d+': cannot listen: address already in use\n$", r.stderr)
    run.cleanup(r.dir)
    r = run.lumberjit{args = "--check", config = [[
lumberjit = { http_address = "localhost:2020" }
gen = { type = "generator_input", count = 1 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]}
    assert.are.equal(1, r.status)
    assert.matches("config%.lua:1: global settings 'lumberjit': key 'http_address' 'localhost:2020': " ..
      "the host must be an IPv4 address, %[IPv6%] or %*\n$", r.stderr)
    run.cleanup(r.dir)
  end)
end)

describe("/health", function()
  it("turns 503 while an output cannot write (a full disk), naming it, and 200 once it writes again", function()
    local dir = run.tmpdir()
    if not h.sh(dir, "mkdir disk && mount -t tmpfs -o size=256k tmpfs disk 2>/dev/null") then
      run.cleanup(dir)
      pending("cannot mount a small tmpfs here (not root, or no CAP_SYS_ADMIN) to fill")
      return
    end
    local lj = start(string.format([[
lumberjit = { http_address = "127.0.0.1:0", dead_letter_path = "dead.log", stop_timeout_ms = 500 }
gen = { type = "generator_input", rate = 200 }
out = { type = "file_output", path = "%s/disk/out.log", message_matcher = "TRUE" }
]], dir))
    local ok, err = pcall(function()
      assert.are.equal(200, health(lj))
      -- Fill what is left of the disk: the output's next write fails.
      h.sh(dir, "dd if=/dev/zero of=disk/filler bs=4k 2>/dev/null; true")
      local status, body
      assert.is_true(h.wait_until(function()
        status, body = health(lj)
        return status == 503
      end, 30), "/health stayed " .. tostring(status))
      assert.are.equal("failing", body.status)
      assert.matches("^output 'out': write to .*/disk/out%.log failed: No space left on device$", body.reasons[1])
      h.sh(dir, "rm disk/filler")
      assert.is_true(h.wait_until(function() return health(lj) == 200 end, 30))
    end)
    stop(lj)
    h.sh(dir, "umount disk")
    run.cleanup(lj.dir)
    run.cleanup(dir)
    assert(ok, err)
  end)

  it("turns 503 while a decoder is stopped after max_failures, naming it", function()
    local lj = start([[
lumberjit = { http_address = "127.0.0.1:0", dead_letter_path = "dead.log" }
gen = { type = "generator_input", rate = 100, decoder = "broken" }
broken = { type = "decoder", filename = "broken.lua", max_failures = 3, restart_after_ms = 3600000 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]], { ["broken.lua"] = 'function process_message() error("broken") end\n' })
    local status, body
    assert.is_true(h.wait_until(function()
      status, body = health(lj)
      return status == 503
    end, 30), "/health stayed " .. tostring(status))
    assert.are.same({ status = "failing",
      reasons = { "decoder 'broken' is stopped after max_failures failed calls in a row" } }, body)
    stop(lj)
    run.cleanup(lj.dir)
  end)

  it("is not served without http_address", function()
    local r = run.lumberjit{config = [[
gen = { type = "generator_input", count = 10 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]}
    assert.are.equal(0, r.status, r.stderr)
    assert.is_nil(r.stderr:find("http:", 1, true))
    run.cleanup(r.dir)
  end)
end)
