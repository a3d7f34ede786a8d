-- Runs a real single-node Apache Kafka broker (KRaft: broker and controller
-- in one JVM) on 127.0.0.1 for the end-to-end specs, and reads and writes its
-- topics with kcat. The broker's jars come from scripts/kafka-jars (which
-- scripts/setup runs); each broker gets its own temporary directory with its
-- server.properties, its data (data/) and its log (broker.log, WARN and up).
--
--   local k = dofile("spec/e2e/kafka_harness.lua")
--   local b = k.start()                    -- b.bootstrap = "127.0.0.1:PORT", b.dir, b.port
--   k.create_topic(b, "logs", 3)           -- or k.create_topics(b, { logs = 3, audit = 1 })
--   k.produce(b, "logs", path)             -- one record a line
--   local records = k.consume(b, "logs", { min = 10 })   -- { key, value, partition, offset, ... }
--   k.count(b, "logs", { min = 1000000 })  -- cheap, for big topics
--   local total, distinct, ordered = k.dump(b, dir, "logs") -- of "line N" values
--   k.stop(b) or k.kill(b); k.restart(b)   -- same ports, same data
--   k.destroy(b)
--
-- Start one broker per spec file (the JVM takes seconds to start) and
-- destroy it in a teardown. The broker runs under `timeout -s KILL`, so one
-- left behind by a crashed spec still ends; it is stopped by the PID it
-- wrote, never by name. Every wait has a limit.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local cjson = require("cjson")

local k = {}

local quote = run.quote

-- JVM options. The broker is kept small (the machines have 2 cores and run
-- other things beside it); the tools run for a second or two, so they skip
-- the optimizing compiler, which would only cost start-up time.
local BROKER_JVM = "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:-UsePerfData -Djava.awt.headless=true"
local TOOL_JVM = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"

-- Any valid cluster ID does (16 bytes, base64url): each broker has its own
-- data directory, and no client checks it.
local CLUSTER_ID = "bHVtYmVyaml0IGthZmthIQ"

-- The directory of the jars (and of log4j2.properties), from
-- scripts/kafka-jars: at once when they are there already.
local function jars_dir()
  if not k.jars then
    local p = io.popen("timeout -s KILL 600 " .. quote(run.root .. "/scripts/kafka-jars"))
    local dir = p:read("*l")
    p:close()
    assert(dir and dir ~= "", "scripts/kafka-jars failed: run scripts/setup")
    k.jars = dir
  end
  return k.jars
end

-- A java command line for main class `main` with the Kafka jars; log4j2
-- writes WARN and up to `log` (the property is read by the
-- log4j2.properties that scripts/kafka-jars writes).
local function java(jvm_options, log, main, args)
  local jars = jars_dir()
  return string.format("java %s -Dlumberjit.kafka.log=%s -Dlog4j2.configurationFile=%s -cp %s %s %s",
    jvm_options, quote(log), quote(jars .. "/log4j2.properties"), quote(jars .. "/*"), main, args)
end

-- Polls `ready` (every 0.2 s) until it returns true or `seconds` have
-- passed. The limit is counted on the clock, not in polls, because a poll
-- that runs kcat may itself take a second or two.
local function wait_until(ready, seconds)
  local deadline = os.time() + seconds
  repeat
    if ready() then return true end
    h.sleep(0.2)
  until os.time() > deadline
  return ready()
end

-- KRaft in one process. 4.x names the controllers to contact with
-- controller.quorum.bootstrap.servers (a dynamic quorum, formatted with
-- --standalone) instead of the static controller.quorum.voters. The
-- internal topics must fit on one broker (their default replication factor
-- is 3). A broker that restarts after a kill can register again only once
-- the controller has given up its old session, which would take the
-- default 9 s; shorter heartbeats and session make that 3 s.
local function server_properties(b, opts)
  local lines = {
    "process.roles=broker,controller",
    "node.id=1",
    string.format("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.controller_port),
    string.format("advertised.listeners=PLAINTEXT://127.0.0.1:%d", opts.advertised_port or b.port),
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "controller.listener.names=CONTROLLER",
    "inter.broker.listener.name=PLAINTEXT",
    string.format("controller.quorum.bootstrap.servers=127.0.0.1:%d", b.controller_port),
    "log.dirs=" .. b.dir .. "/data",
    "num.partitions=" .. (opts.partitions or 1),
    "auto.create.topics.enable=" .. tostring(opts.auto_create == true),
    "offsets.topic.replication.factor=1",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.initial.rebalance.delay.ms=0",
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
  }
  for key, value in pairs(opts.properties or {}) do lines[#lines + 1] = key .. "=" .. tostring(value) end
  return table.concat(lines, "\n") .. "\n"
end

-- Runs `cmd` in the broker's directory; its stdout, whether it exited 0,
-- and its stderr. The status goes through a file: Lua 5.1's close of a
-- popen does not return it.
local function capture(b, cmd, seconds)
  local p = io.popen(string.format("cd %s && timeout -s KILL %d %s 2> capture.err; echo $? > capture.status",
    quote(b.dir), seconds, cmd))
  local out = p:read("*a")
  p:close()
  local status = run.read(b.dir .. "/capture.status")
  return out, status == "0\n", run.read(b.dir .. "/capture.err") or ""
end

local function running(b)
  return run.read(b.dir .. "/broker.pid") ~= nil and run.read(b.dir .. "/broker.status") == nil
end

-- True when the broker answers a metadata request.
local function answers(b)
  local _, ok = capture(b, "kcat -L -m 1 -b " .. b.bootstrap, 10)
  return ok
end

-- The broker's stderr and log, for assertion messages.
function k.log(b)
  return (run.read(b.dir .. "/broker.err") or "") .. (run.read(b.dir .. "/broker.log") or "")
end

-- Sends `signal` to the JVM if it still runs.
local function signal(b, name)
  if running(b) then h.sh(b.dir, "kill -" .. name .. " $(cat java.pid) 2>/dev/null") end
end

-- Stops the broker with SIGTERM (a clean shutdown), after `seconds`
-- (default 30) with SIGKILL; keeps its data. Returns the JVM's exit status
-- (143 after SIGTERM), or nil if it had to be killed.
function k.stop(b, seconds)
  signal(b, "TERM")
  local status = h.wait_exit(b.dir, "broker", seconds or 30)
  if not status then
    signal(b, "KILL")
    h.wait_exit(b.dir, "broker", 10)
  end
  return status
end

-- Kills the broker with SIGKILL, as a crash would; its exit status (137).
function k.kill(b)
  signal(b, "KILL")
  return h.wait_exit(b.dir, "broker", 10)
end

-- Starts the JVM in the background (see h.spawn: broker.pid, broker.status)
-- and waits until it answers; one that does not is killed. java.sh records
-- the JVM's own PID in java.pid: the signals go to the JVM itself, as a
-- SIGKILL to the `timeout` that wraps it would leave it running.
local function launch(b)
  run.write(b.dir .. "/java.sh", "echo $$ > java.pid\nexec "
    .. java(BROKER_JVM, b.dir .. "/broker.log", "kafka.Kafka", "server.properties") .. "\n")
  os.remove(b.dir .. "/java.pid")
  h.spawn(b.dir, "broker", "sh java.sh", b.limit)
  if not wait_until(function() return not running(b) or answers(b) end, b.start_seconds) or not running(b) then
    k.kill(b)
    error("the Kafka broker in " .. b.dir .. " did not start:\n" .. k.log(b))
  end
  b.pid = tonumber(run.read(b.dir .. "/java.pid"))
end

-- k.start{ auto_create = false, partitions = 1 (num.partitions),
--          properties = { ["key"] = value } (more server.properties),
--          limit = 900 (seconds before `timeout` kills the broker),
--          start_seconds = 90 (how long it may take to answer),
--          advertised_port = (default: its own) the port clients are told to
--          connect to: a proxy's in front of it (flaky_kafka_spec.lua) }
-- Returns { dir, port, controller_port, bootstrap = "127.0.0.1:PORT", pid }
-- once the broker answers metadata requests.
function k.start(opts)
  opts = opts or {}
  local b = { dir = run.tmpdir(), limit = opts.limit or 900, start_seconds = opts.start_seconds or 90 }
  b.port, b.controller_port = run.free_ports(2)
  b.bootstrap = "127.0.0.1:" .. b.port
  run.write(b.dir .. "/server.properties", server_properties(b, opts))
  local _, ok, err = capture(b, java(TOOL_JVM, b.dir .. "/tools.log", "kafka.tools.StorageTool",
    "format --standalone -t " .. CLUSTER_ID .. " -c server.properties"), 120)
  assert(ok, "formatting the Kafka storage in " .. b.dir .. " failed:\n" .. err)
  launch(b)
  return b
end

-- Starts a stopped (or killed) broker again on the same ports and data;
-- returns once it answers.
function k.restart(b)
  assert(not running(b), "k.restart: the broker is still running")
  launch(b)
  return b
end

-- Stops the broker and removes its directory.
function k.destroy(b)
  k.stop(b, 10)
  run.cleanup(b.dir)
end

-- { NAME = partition count } of the topics the broker knows (its internal
-- ones too, once they exist).
function k.topics(b)
  local out, ok = capture(b, "kcat -L -J -m 5 -b " .. b.bootstrap, 20)
  local counts = {}
  if not ok then return counts end
  for _, t in ipairs(cjson.decode(out).topics or {}) do
    if not t.err then counts[t.topic] = #(t.partitions or {}) end
  end
  return counts
end

-- k.create_topics(b, { NAME = PARTITIONS, ... }, config)
-- Creates the topics with replication factor 1 and the topic configs in
-- `config` (e.g. { ["max.message.bytes"] = 1000 }) and waits until the
-- broker's metadata lists each with its partitions (so a topic that exists
-- already with as many partitions does too). TopicCommand creates
-- one topic a JVM, and a JVM takes about 2 CPU-seconds to do it: they run
-- two at a time, one a core.
function k.create_topics(b, topics, config)
  local extra = ""
  for key, value in pairs(config or {}) do extra = extra .. " --config " .. quote(key .. "=" .. tostring(value)) end
  local script, n = {}, 0
  for name, partitions in pairs(topics) do
    n = n + 1
    script[#script + 1] = string.format("timeout -s KILL 120 %s &", java(TOOL_JVM, b.dir .. "/tools.log",
      "org.apache.kafka.tools.TopicCommand", string.format("--bootstrap-server %s --create --topic %s "
        .. "--partitions %d --replication-factor 1%s", b.bootstrap, quote(name), partitions, extra)))
    if n % 2 == 0 then script[#script + 1] = "wait" end
  end
  script[#script + 1] = "wait"
  -- `wait` returns 0 even when a TopicCommand failed; the metadata check
  -- below tells, and their stderr says why.
  local _, _, err = capture(b, "sh -c " .. quote(table.concat(script, "\n")), 30 + 120 * math.ceil(n / 2))
  local listed = wait_until(function()
    local counts = k.topics(b)
    for name, partitions in pairs(topics) do
      if counts[name] ~= partitions then return false end
    end
    return true
  end, 30)
  assert(listed, "creating topics failed:\n" .. err)
end

-- k.create_topic(b, name, partitions, config): one topic, as create_topics.
function k.create_topic(b, name, partitions, config)
  k.create_topics(b, { [name] = partitions or 1 }, config)
end

-- Writes the lines of `file` to `topic` as records, one a line, with kcat -P.
-- opts = { key_delimiter = ":" (each line is KEY:VALUE; a line without it
-- has no key), delimiter = "\\x1e" (kcat -D: what separates records instead
-- of "\n", in kcat's notation; it cannot be NUL), partition = N,
-- headers = { name = value } (on every record), seconds = 120 }. Returns
-- true once kcat delivered them all, and its stderr.
function k.produce(b, topic, file, opts)
  opts = opts or {}
  local args = ""
  if opts.key_delimiter then args = args .. " -K " .. quote(opts.key_delimiter) end
  if opts.delimiter then args = args .. " -D " .. quote(opts.delimiter) end
  if opts.partition then args = args .. " -p " .. opts.partition end
  for name, value in pairs(opts.headers or {}) do args = args .. " -H " .. quote(name .. "=" .. value) end
  local _, ok, err = capture(b, string.format("kcat -P -q -b %s -t %s%s -l %s",
    b.bootstrap, quote(topic), args, quote(file)), opts.seconds or 120)
  return ok, err
end

local function null_to_nil(v)
  if v == cjson.null then return nil end
  return v
end

-- kcat -J: one JSON object a record, payload and key as JSON strings (any
-- bytes survive: control characters are escaped, the rest passes as is),
-- headers as a flat list [name, value, name, value, ...].
local function decode_record(line)
  local j = cjson.decode(line)
  local r = {
    topic = j.topic, partition = j.partition, offset = j.offset, timestamp = j.ts,
    key = null_to_nil(j.key), value = null_to_nil(j.payload),
  }
  if j.headers then
    r.headers = {}
    for i = 1, #j.headers, 2 do r.headers[j.headers[i]] = null_to_nil(j.headers[i + 1]) end
  end
  return r
end

-- Every record of `topic` from the beginning, or nil and kcat's stderr
-- (when the topic does not exist, say).
local function read_all(b, topic)
  local out, ok, err = capture(b, string.format("kcat -C -q -J -e -o beginning -b %s -t %s",
    b.bootstrap, quote(topic)), 120)
  if not ok then return nil, err end
  local records = {}
  for line in out:gmatch("[^\n]+") do records[#records + 1] = decode_record(line) end
  -- kcat prints the partitions' records as its fetches return them, mixed.
  table.sort(records, function(x, y)
    if x.partition ~= y.partition then return x.partition < y.partition end
    return x.offset < y.offset
  end)
  return records
end

-- read(b, topic) once, or with opts.min = N polled until it returns at
-- least N records (a list, or a count) for at most opts.seconds (default
-- 30). Returns what it read last, or nil and the last error.
local function read_until(read, b, topic, opts)
  opts = opts or {}
  if not opts.min then return read(b, topic) end
  local result, err
  wait_until(function()
    result, err = read(b, topic)
    local n = type(result) == "table" and #result or result
    return n ~= nil and n >= opts.min
  end, opts.seconds or 30)
  return result, err
end

-- The records of `topic`, from the beginning: a list of { key, value,
-- partition, offset, timestamp (ms), topic, headers = { name = value } (the
-- last value of a name) }, sorted by partition, then offset; a missing key
-- or value is nil. With opts.min = N, waits (at most opts.seconds, default
-- 30) until there are N. Returns nil and kcat's error when the topic cannot
-- be read.
function k.consume(b, topic, opts)
  return read_until(read_all, b, topic, opts)
end

-- How many records `topic` holds: kcat reads them all and prints one byte a
-- record (a million records take about 1.6 s here). Counting records, not
-- offsets, stays right when a transaction's markers take offsets too.
local function count_all(b, topic)
  local out, ok, err = capture(b, string.format("kcat -C -q -e -o beginning -f x -b %s -t %s",
    b.bootstrap, quote(topic)), 300)
  if not ok then return nil, err end
  return #out
end

-- The number of records of `topic`; with opts.min = N, waits (at most
-- opts.seconds, default 30) until there are N. nil and kcat's error when the
-- topic cannot be read.
function k.count(b, topic, opts)
  return read_until(count_all, b, topic, opts)
end

-- What `topic` holds, one value a line ("line N ..."), into dir/got.txt; then how many lines it
-- has, how many distinct, and whether the first occurrences come in order.
function k.dump(b, dir, topic)
  local file = dir .. "/got.txt"
  assert(h.sh(dir, string.format("timeout -s KILL 300 kcat -C -q -e -o beginning -f '%%s\\n' -b %s -t %s > %s",
    b.bootstrap, topic, run.quote(file))))
  local p = io.popen(string.format([[python3 -c '
import sys
seen = set(); total = 0; ordered = True; last = -1
for line in open(sys.argv[1]):
    total += 1
    n = int(line.split()[1])
    if n in seen: continue
    seen.add(n)
    if n < last: ordered = False
    last = n
print(total, len(seen), int(ordered))' %s]], run.quote(file)))
  local total, distinct, ordered = p:read("*a"):match("(%d+) (%d+) (%d)")
  p:close()
  return tonumber(total), tonumber(distinct), ordered == "1"
end

return k
