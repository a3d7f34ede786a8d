-- Every bundled example, run through the binary exactly as README.md says.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local function run_example(name, input_file)
  return run.lumberjit{
    config_path = run.root .. "/examples/" .. name,
    input_path = run.root .. "/examples/data/" .. input_file,
  }
end

describe("examples/stdin-syslog-json.lua", function()
  it("turns syslog lines into Logstash JSON and dead-letters the stranger", function()
    local r = run_example("stdin-syslog-json.lua", "syslog.txt")
    assert.are.equal(0, r.status)
    local docs = {}
    for _, line in ipairs(run.lines(r.stdout)) do docs[#docs + 1] = cjson.decode(line) end
    assert.are.equal(6, #docs)
    -- Fields come in name order, the same on every run.
    assert.matches('"pri":44,"programname":"jls","syslogfacility":5,"syslogtag":"jls:"}$',
                   run.lines(r.stdout)[1])
    -- W3's line; the senders' clocks are in Asia/Shanghai (UTC+8).
    local w3 = docs[1]
    assert.matches("^%d%d%d%d%-05%-19T10:30:17%.000Z$", w3["@timestamp"])
    assert.are.equal("1", w3["@version"])
    assert.are.equal("foo bar 32", w3.message)
    assert.are.equal("snack", w3.host)
    assert.are.equal("syslog", w3.type)
    assert.are.equal(4, w3.severity)
    assert.are.equal(5, w3.syslogfacility)
    assert.are.equal(44, w3.pri)
    assert.are.equal("jls", w3.programname)
    assert.are.equal("jls:", w3.syslogtag)
    assert.is_nil(w3.pid)
    local sshd = docs[2]
    assert.are.equal("sshd", sshd.programname)
    assert.are.equal(4211, sshd.pid)
    assert.are.equal(6, sshd.severity)
    assert.are.equal(10, sshd.syslogfacility)
    assert.matches("T15:59:01%.000Z$", sshd["@timestamp"])
    assert.are.equal("[123456.789012] eth0: link down", docs[5].message)
    assert.are.equal("kernel", docs[5].programname)

    local dead = cjson.decode(run.read(r.dir .. "/syslog.dead-letter.log"))
    assert.are.equal("this line was not written by rsyslog", dead.payload)
    assert.are.equal("rsyslog", dead.plugin)
    assert.matches("does not match the template", dead.reason)
    assert.are.equal(359, dead.offset)
    run.cleanup(r.dir)
  end)
end)

describe("examples/sandbox-limits.lua", function()
  it("passes good lines through and dead-letters each bad one with its reason", function()
    local r = run_example("sandbox-limits.lua", "limits.txt")
    assert.are.equal(0, r.status)
    assert.are.same({"first line", "second line", "third line", "fourth line"},
      run.lines(r.stdout))
    local dead = {}
    for _, line in ipairs(run.lines(run.read(r.dir .. "/sandbox-limits.dead-letter.log"))) do
      dead[#dead + 1] = cjson.decode(line)
    end
    assert.are.equal(3, #dead)
    assert.are.equal("LOOP forever", dead[1].payload)
    assert.matches("^cpu limit exceeded: limit 100 ms, used [%d.]+ ms", dead[1].reason)
    assert.matches("misbehaving.lua:10$", dead[1].reason)
    assert.are.equal("HOG all memory", dead[2].payload)
    assert.matches("^memory limit exceeded: limit 33554432 bytes", dead[2].reason)
    assert.are.equal("BIG output", dead[3].payload)
    assert.matches("^output limit exceeded: limit 1048576 bytes, emitted 10485824", dead[3].reason)
    for _, d in ipairs(dead) do
      assert.are.equal("misbehaving", d.plugin)
      assert.are.equal("decoder", d.stage)
      assert.are.equal("stdin", d.input)
    end
    assert.matches("3 dead%-letter records", r.stderr)
    run.cleanup(r.dir)
  end)
end)

describe("examples/tail-to-file.lua", function()
  it("tails the logs as JSON lines and resumes where it stopped", function()
    local dir = run.tmpdir()
    -- As README.md says: run where logs/ and state/ are; stopped by SIGTERM.
    local function run_for(seconds)
      return run.for_seconds(dir, run.root .. "/examples/tail-to-file.lua", seconds)
    end
    os.execute("cd " .. run.quote(dir) .. " && mkdir -p logs state && printf 'one\\ntwo\\n' > logs/a.log"
      .. " && printf 'three\\n' > logs/b.log && printf 'zipped\\n' > logs/c.log.gz")
    run_for(1)
    os.execute("cd " .. run.quote(dir) .. " && printf 'four\\n' >> logs/a.log")
    run_for(1)
    local got = {}
    for _, line in ipairs(run.lines(run.read(dir .. "/tailed.json"))) do
      local doc = cjson.decode(line)
      assert.are.equal("app", doc.type)
      got[#got + 1] = doc.path .. " " .. doc.message
    end
    table.sort(got)
    assert.are.same({ "logs/a.log four", "logs/a.log one", "logs/a.log two", "logs/b.log three" }, got)
    assert.matches("resuming logs/a.log at offset 8", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)
end)

describe("examples/rsyslog-replacement.lua", function()
  it("receives syslog over TCP, UDP and a Unix socket and writes it parsed as JSON lines", function()
    local h = dofile("spec/e2e/syslog_harness.lua")
    -- As written, but on free ports and a private socket instead of port
    -- 514 and /dev/log.
    local config = run.read(run.root .. "/examples/rsyslog-replacement.lua")
      :gsub('"tcp://[^"]*"', '"tcp://127.0.0.1:0"')
      :gsub('"udp://[^"]*"', '"udp://127.0.0.1:0"')
      :gsub('"unix:/dev/log"', '"unix:$DIR/log.sock"')
    local lj = h.start(config)
    local function logger(args, message)
      assert.is_true(h.sh(lj.dir, "timeout -s KILL 30 logger --socket-errors=on -t example " .. args
        .. " " .. run.quote(message) .. " 2>> logger.err"), run.read(lj.dir .. "/logger.err"))
    end
    logger(string.format("-T -n 127.0.0.1 -P %d --rfc5424 --octet-count -p local3.err", lj.port.tcp), "over tcp")
    logger(string.format("-d -n 127.0.0.1 -P %d --rfc3164 -p mail.info", lj.port.udp), "over udp")
    logger("-u " .. run.quote(lj.path.devlog), "over /dev/log") -- syslog(3)'s format: no hostname
    assert.is_true(h.wait_records(lj, 3, 30, "messages.json"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local by_input = {}
    for _, doc in ipairs(h.records(lj, "messages.json")) do by_input[doc.inputname] = doc end
    assert.are.equal("over tcp", by_input.tcp.message)
    assert.are.equal("example", by_input.tcp.programname)
    assert.are.equal(3, by_input.tcp.severity)
    assert.are.equal("127.0.0.1", by_input.tcp["fromhost-ip"])
    assert.are.equal("over udp", by_input.udp.message)
    assert.are.equal(6, by_input.udp.severity)
    assert.are.equal(2, by_input.udp.syslogfacility)
    assert.are.equal("127.0.0.1", by_input.udp["fromhost-ip"])
    assert.are.equal("over /dev/log", by_input.devlog.message)
    assert.are.equal("example", by_input.devlog.programname)
    assert.is_nil(by_input.devlog["fromhost-ip"])
    run.cleanup(lj.dir)
  end)
end)

describe("examples/benchmark.lua", function()
  it("generates a million syslog lines, parses every one and prints the run's figures", function()
    local r = run.lumberjit{config_path = run.root .. "/examples/benchmark.lua"}
    assert.are.equal(0, r.status, r.stderr)
    assert.matches("input 'generator': 1000000 records %(0 longer than max_line, 0 pieces truncated%), " ..
      "0 dead%-letter records", r.stderr)
    assert.matches("output 'discard': 1000000 delivered, 0 failed, 0 skipped", r.stderr)
    assert.matches("output 'discard': latency from read to acknowledged p50 [%d.]+ ms", r.stderr)
    assert.matches("run: [%d.]+ s; 1000000 records read %(%d+/s%), 1000000 delivered %(%d+/s%); " ..
      "CPU [%d.]+ s %([%d.]+ s per million records read%); peak RSS [%d.]+ MiB", r.stderr)
    assert.matches('lumberjit_output_delivered_records_total{output="discard"} 1000000\n',
      run.read(r.dir .. "/benchmark.prom"), 1, true)
    run.cleanup(r.dir)
  end)
end)

describe("examples/nginx-to-json.lua", function()
  it("tails an nginx access log into typed JSON, the stranger dead-lettered", function()
    local dir = run.tmpdir()
    os.execute("cd " .. run.quote(dir) .. " && mkdir -p logs state && cp "
      .. run.quote(run.root .. "/examples/data/access.log") .. " logs/access.log")
    run.for_seconds(dir, run.root .. "/examples/nginx-to-json.lua", 1)
    local docs = {}
    for _, line in ipairs(run.lines(run.read(dir .. "/access.json"))) do
      docs[#docs + 1] = cjson.decode(line)
    end
    assert.are.equal(4, #docs)
    local first = docs[1]
    assert.are.equal("2026-11-26T19:41:08.000Z", first["@timestamp"])
    assert.are.equal("GET", first.request_method)
    assert.are.equal("/api/v1/users/42?page=2", first.request_uri)
    assert.are.equal(200, first.status)
    assert.are.equal(5120, first.body_bytes_sent)
    assert.are.equal(0.012, first.request_time)
    assert.is_nil(first.remote_user)             -- "-": absent
    assert.are.equal("alice", docs[2].remote_user)
    assert.are.equal('/missing"quote', docs[3].request_uri) -- \x22 undone
    assert.are.same({ 30, 0.002 }, docs[4].upstream_response_time)
    local dead = cjson.decode(run.read(dir .. "/nginx.dead-letter.log"))
    assert.are.equal("this line is not nginx's", dead.payload)
    assert.matches("does not match the log format", dead.reason)
    run.cleanup(dir)
  end)
end)

describe("examples/syslog-filters.lua", function()
  it("enriches, masks and samples syslog lines and counts them per host on a second output", function()
    local r = run_example("syslog-filters.lua", "syslog-filters.txt")
    assert.are.equal(0, r.status, r.stderr)
    local got = {}
    for _, line in ipairs(run.lines(r.stdout)) do
      local doc = cjson.decode(line)
      assert.are.equal("prod", doc.env)
      got[#got + 1] = doc.host .. " " .. doc.message
    end
    -- Of the five debug lines, the 1st and 5th are kept (sample); the line
    -- without a host name gets the collector's; passwords are masked.
    assert.are.same({
      "web01 Accepted password for deploy from 10.1.2.3 port 52144 ssh2",
      "web01 login user=alice password=*** ok",
      "web01 debug 1 cache warm",
      "collector-1 nightly job done, password=*** rotated",
      "db02 Started Daily apt download activities.",
      "db02 debug 5 cache warm",
    }, got)
    assert.matches("filter 'sample': 5 messages matched, 2 injected, 3 dropped, 0 failed", r.stderr)
    local counts = {}
    for _, line in ipairs(run.lines(run.read(r.dir .. "/counts.json"))) do
      local doc = cjson.decode(line)
      assert.are.equal("count", doc.type)
      counts[doc.key] = doc.count
    end
    assert.are.same({ web01 = 3, db02 = 2, ["collector-1"] = 1 }, counts)
    run.cleanup(r.dir)
  end)
end)

describe("examples/app-json-lines.lua", function()
  it("types JSON lines, samples debug by request and enriches every message", function()
    local dir = run.tmpdir()
    os.execute("cd " .. run.quote(dir) .. " && mkdir -p logs state && cp "
      .. run.quote(run.root .. "/examples/data/app.jsonl") .. " logs/app.log")
    run.for_seconds(dir, run.root .. "/examples/app-json-lines.lua", 1)
    local docs, debug = {}, {}
    for _, line in ipairs(run.lines(run.read(dir .. "/app.json"))) do
      local doc = cjson.decode(line)
      docs[#docs + 1] = doc
      assert.are.equal("prod", doc.env)
      if doc.severity == 7 then debug[#debug + 1] = doc["req.id"] end
    end
    -- 20 debug lines, one request each: the keys whose hash is 0 mod 10.
    assert.are.same({ "r1", "r16" }, debug)
    assert.are.equal(5, #docs)
    assert.are.equal("2026-11-26T19:41:08.123Z", docs[1]["@timestamp"])
    assert.are.equal("listening", docs[1].message)
    assert.are.equal("app-host-1", docs[1].host)
    assert.are.equal(8080, docs[1].port)
    assert.are.equal(812, docs[4].ms)
    assert.are.equal("alice", docs[4]["req.user"])
    assert.are.equal("db02", docs[5].host)     -- its own host is kept
    assert.are.equal(3, docs[5].severity)
    local dead = cjson.decode(run.read(dir .. "/app.dead-letter.log"))
    assert.are.equal("{not json", dead.payload)
    assert.matches("not JSON", dead.reason)
    run.cleanup(dir)
  end)
end)

describe("examples/edge.lua", function()
  it("keeps the records on disk while the uplink is away and sends them all, capped, when it comes", function()
    local h = dofile("spec/e2e/syslog_harness.lua")
    local receiver = dofile("spec/e2e/syslog_receiver.lua")
    local dir = h.tmpdir()
    local port = receiver.free_port()
    -- As written, but in a private directory, and to a receiver on
    -- 127.0.0.1 over TCP rather than a collector over TLS.
    local config = run.read(run.root .. "/examples/edge.lua")
      :gsub("/var/lib/lumberjit", dir)
      :gsub("/var/log/apps/%*%.log", dir .. "/apps/*.log")
      :gsub("/run/lumberjit/log.sock", dir .. "/log.sock")
      :gsub("tls://collector.example.net:6514", "tcp://127.0.0.1:" .. port)
    run.write(dir .. "/edge.lua", config)
    assert(h.sh(dir, "mkdir apps"))
    h.spawn(dir, "lumberjit", run.quote(run.bin) .. " -c edge.lua", 120)
    assert.truthy(h.wait_until(function()
      return (run.read(dir .. "/lumberjit.err") or ""):find("listening on") end, 30))
    -- A file that appears once it runs is read from its head.
    local f = assert(io.open(dir .. "/apps/app.log", "wb"))
    for i = 1, 500 do f:write("<13>Nov 26 23:00:00 edgebox app[7]: line ", i, "\n") end
    f:close()
    for i = 501, 510 do
      assert(h.sh(dir, "logger -u log.sock -t app 'line " .. i .. "'"))
    end
    -- The uplink is away: the records wait in the disk buffer.
    assert.truthy(h.wait_until(function()
      return (run.read(dir .. "/lumberjit.err") or ""):find("disk buffer") end, 30),
      run.read(dir .. "/lumberjit.err"))
    receiver.start_receiver(dir, {port = port})
    assert.truthy(h.wait_until(function() return receiver.received(dir) >= 510 end, 60),
      receiver.received(dir) .. " arrived\n" .. (run.read(dir .. "/lumberjit.err") or ""))
    local status = h.terminate(dir, "lumberjit", 30)
    assert.are.equal(0, receiver.stop_receiver(dir))
    assert.are.equal(0, status, run.read(dir .. "/lumberjit.err"))
    local seen = {}
    for n in (run.read(dir .. "/out.log") or ""):gmatch("line (%d+)") do
      seen[#seen + 1] = tonumber(n)
    end
    table.sort(seen)
    for i = 1, 510 do assert.are.equal(i, seen[i]) end
    assert.are.equal(510, #seen)
    h.cleanup(dir)
  end)
end)

describe("examples/", function()
  it("are each run by a spec", function()
    local specs = {}
    for path in io.popen("ls " .. run.root .. "/spec/e2e/*_spec.lua"):lines() do
      specs[#specs + 1] = run.read(path)
    end
    for path in io.popen("ls " .. run.root .. "/examples/*.lua"):lines() do
      local name = path:match("[^/]+$")
      local found = false
      for _, text in ipairs(specs) do
        found = found or text:find('"/examples/' .. name .. '"', 1, true) ~= nil
          or text:find('run_example("' .. name .. '"', 1, true) ~= nil
      end
      assert.is_true(found, "no spec runs examples/" .. name)
    end
  end)
end)
