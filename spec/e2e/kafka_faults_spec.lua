-- The kafka_output when things fail, against a real broker
-- (spec/e2e/kafka_harness.lua): the broker stopped in the middle of a
-- 1,000,000-line stream, lumberjit killed with SIGKILL and started again,
-- checkpoints that wait for delivery reports, and the disk buffer filling
-- to its cap, holding the inputs, draining in order and outliving a
-- restart; a second lumberjit on the same disk buffer. Every line must
-- arrive; duplicates are counted, and held to what librdkafka held (an
-- outage) or to what the broker had past the checkpoint a crash left.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")

-- Lines "line 0000001 xxx...", 61 bytes with the newline.
local function write_lines(path, from, to, append)
  assert(h.sh("/", string.format("python3 -c 'import sys\nf = open(sys.argv[1], %q)\n"
    .. "for i in range(%d, %d): f.write(\"line %%07d %%s\\n\" %% (i, \"x\" * 47))' %s",
    append and "a" or "w", from, to + 1, run.quote(path))))
end

-- A directory with state/, in.log of `lines` lines, and a config that
-- tails in.log into the kafka_output with the keys in `output`.
local function prepare(b, lines, output, globals)
  local dir = run.tmpdir()
  os.execute("mkdir " .. dir .. "/state")
  write_lines(dir .. "/in.log", 1, lines)
  run.write(dir .. "/config.lua", ([[
lumberjit = { state_dir = "%s/state", checkpoint_interval_ms = 100, dead_letter_path = "%s/dead.log",
              stop_timeout_ms = 2000, %s }
input = { type = "tail_input", paths = { "%s/in.log" }, read_from_head = true }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", %s }
]]):format(dir, dir, globals or "", dir, b.bootstrap, (output:gsub("%$DIR", dir))))
  return dir
end

-- Starts lumberjit in dir in the background, its standard input the file
-- `stdin` in dir if given; lumberjit.pid holds the PID of lumberjit itself
-- (not of a wrapper), for kill -9.
local function start(dir, stdin)
  h.spawn(dir, "wrapper", "sh -c 'echo $$ > lumberjit.pid; exec " .. run.quote(run.bin) .. " -c config.lua"
    .. (stdin and " < " .. stdin or "") .. "'", 600)
  assert(h.wait_until(function() return run.read(dir .. "/lumberjit.pid") end, 10))
end

local function pid_alive(dir)
  return h.sh(dir, "kill -0 $(cat lumberjit.pid) 2>/dev/null")
end

local function kill9(dir)
  h.sh(dir, "kill -KILL $(cat lumberjit.pid)")
  h.wait_exit(dir, "wrapper", 10)
  os.remove(dir .. "/lumberjit.pid")
end

-- A spec that fails midway must not leave lumberjit running, nor the
-- broker stopped for the next.
local function stop_on_exit(dir, b)
  finally(function()
    if run.read(dir .. "/lumberjit.pid") then kill9(dir) end
    pcall(k.restart, b)
  end)
end

-- SIGTERM; the exit status and stderr.
local function stop(dir)
  h.sh(dir, "kill -TERM $(cat lumberjit.pid)")
  local status = h.wait_exit(dir, "wrapper", 60)
  os.remove(dir .. "/lumberjit.pid")
  return status, run.read(dir .. "/wrapper.err") or ""
end

-- How many lines the disk buffer in dir/buffer holds.
local function on_disk(dir)
  local p = io.popen("cat " .. run.quote(dir) .. "/buffer/*.seg 2>/dev/null | grep -ao 'line [0-9]\\{7\\}' | wc -l")
  local n = tonumber(p:read("*a"):match("%d+"))
  p:close()
  return n
end

-- A sample of dir/metrics.prom ('name{labels}'), or nil.
local function metric(dir, key)
  local text = "\n" .. (run.read(dir .. "/metrics.prom") or "")
  local at = text:find("\n" .. key .. " ", 1, true)
  return at and tonumber(text:match("^%S+", at + #key + 2))
end

-- The checkpointed offset of in.log, or 0.
local function checkpoint(dir)
  return tonumber((run.read(dir .. "/state/checkpoints") or ""):match("offset (%d+)")) or 0
end

describe("kafka_output faults", function()
  local b

  setup(function()
    b = k.start()
    k.create_topics(b, { ckpt = 1, stream = 3, crash = 3, spill = 1, kept = 1, locked = 1, outage = 1 })
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  it("moves checkpoints only on delivery reports: a crash while the broker is down loses nothing", function()
    local dir = prepare(b, 2000, [[topic = "ckpt"]])
    stop_on_exit(dir, b)
    k.stop(b)
    start(dir)
    h.sleep(2)
    assert.is_true(pid_alive(dir))
    kill9(dir)
    assert.are.equal(0, checkpoint(dir), "the checkpoint moved past records Kafka does not have")
    k.restart(b)
    start(dir)
    assert.are.equal(2000, k.count(b, "ckpt", { min = 2000, seconds = 60 }))
    assert.is_true(h.wait_until(function() return checkpoint(dir) == 2000 * 61 end, 10))
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    local total, distinct, ordered = k.dump(b, dir, "ckpt")
    assert.are.same({ 2000, 2000, true }, { total, distinct, ordered })
    run.cleanup(dir)
  end)

  it("loses nothing when the broker stops in the middle of a 1,000,000-line stream", function()
    -- memory_bytes bounds what librdkafka holds, and so what a broker that
    -- went away mid-request can make it send twice.
    local dir = prepare(b, 200000, [[topic = "stream", memory_bytes = 4194304]])
    stop_on_exit(dir, b)
    start(dir)
    assert.truthy(k.count(b, "stream", { min = 100000, seconds = 120 }))
    k.stop(b)
    -- The stream goes on while the broker is away.
    write_lines(dir .. "/in.log", 200001, 600000, true)
    h.sleep(2)
    k.restart(b)
    write_lines(dir .. "/in.log", 600001, 1000000, true)
    assert.truthy(k.count(b, "stream", { min = 1000000, seconds = 240 }))
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    local total, distinct = k.dump(b, dir, "stream")
    assert.are.equal(1000000, distinct)
    print(("\n# broker outage: %d duplicates of 1,000,000 lines"):format(total - distinct))
    assert.is_true(total - distinct <= 4194304 / 61, (total - distinct) .. " duplicates")
    run.cleanup(dir)
  end)

  it("loses nothing when lumberjit is killed with SIGKILL mid-stream and started again", function()
    -- The cap stretches the stream over 6 s, so the kill comes in its
    -- middle. Idempotence removes the other source of duplicates, a batch
    -- the broker wrote but acknowledged too late (a loaded machine), which
    -- librdkafka would send again: only the crash's are counted.
    local dir = prepare(b, 300000, [[topic = "crash", memory_bytes = 1048576, idempotent = true,
      max_messages_per_second = 50000]], "memory_budget = 2000000")
    stop_on_exit(dir, b)
    start(dir)
    -- Reading the checkpoint file is quick, where counting the topic takes
    -- long enough for the stream to end.
    assert.is_true(h.wait_until(function() return checkpoint(dir) >= 50000 * 61 end, 120))
    kill9(dir)
    local covered, had = checkpoint(dir) / 61, k.count(b, "crash")
    start(dir)
    assert.truthy(k.count(b, "crash", { min = 300000, seconds = 120 }))
    h.wait_until(function() return checkpoint(dir) == 300000 * 61 end, 20)
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    local total, distinct = k.dump(b, dir, "crash")
    assert.are.equal(300000, distinct)
    print(("\n# kill -9 with %d lines in the broker, %d of them checkpointed: %d duplicates of 300,000 lines")
      :format(had, covered, total - distinct))
    -- The restart went on from the checkpoint the crash left: it sent again
    -- no more than what the broker had beyond it. (How far the checkpoint
    -- trails, checkpoint.h bounds: memory_budget, memory_bytes and a
    -- checkpoint interval's records; that depends on the machine's speed,
    -- so it is printed, not asserted.)
    assert.is_true(covered > 0 and covered < 300000, covered .. " lines checkpointed at the kill")
    assert.is_true(total - distinct <= had - covered, (total - distinct) .. " duplicates")
    run.cleanup(dir)
  end)

  it("fills the disk buffer to its cap, holds the inputs, then drains it in order", function()
    local dir = prepare(b, 100000, [[topic = "spill", memory_bytes = 1048576,
      disk_buffer = { path = "$DIR/buffer", max_bytes = 2097152, segment_bytes = 262144 }]],
      "memory_budget = 1048576")
    stop_on_exit(dir, b)
    k.stop(b)
    start(dir)
    assert.is_true(h.wait_until(function()
      return (run.read(dir .. "/wrapper.err") or ""):find("the disk buffer is full; holding the inputs", 1, true)
    end, 60), run.read(dir .. "/wrapper.err"))
    h.sleep(1)
    local p = io.popen("cat " .. run.quote(dir) .. "/buffer/*.seg | wc -c")
    local used = tonumber(p:read("*a"):match("%d+"))
    p:close()
    assert.is_true(used > 2097152 - 100000 and used <= 2097152, used .. " bytes in the disk buffer")
    -- Nothing reached Kafka, so the checkpoint covers only lines that are
    -- safe on disk (all of them, once librdkafka's went there when every
    -- broker was down; none, if librdkafka kept them).
    assert.is_true(checkpoint(dir) <= on_disk(dir) * 61, checkpoint(dir) .. " > " .. on_disk(dir) .. " lines")
    k.restart(b)
    assert.truthy(k.count(b, "spill", { min = 100000, seconds = 120 }))
    assert.is_true(h.wait_until(function() return checkpoint(dir) == run.size(dir .. "/in.log") end, 10),
      "checkpoint " .. checkpoint(dir) .. " of " .. run.size(dir .. "/in.log"))
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    local total, distinct, ordered = k.dump(b, dir, "spill")
    assert.are.same({ 100000, 100000, true }, { total, distinct, ordered })
    assert.truthy(stderr:find("the disk buffer is drained", 1, true))
    local from_disk = tonumber(stderr:match("%((%d+) of them from the disk buffer%)"))
    assert.is_true(from_disk > 0)
    run.cleanup(dir)
  end)

  it("moves what librdkafka holds to the disk buffer once every broker is down: a crash then loses none of it,"
    .. " and the metrics show where the records wait", function()
    -- Standard input cannot be read again: records that were only in
    -- librdkafka's memory would go with the process.
    local dir = run.tmpdir()
    write_lines(dir .. "/in.log", 1, 20000)
    run.write(dir .. "/config.lua", ([[
lumberjit = { dead_letter_path = "%s/dead.log", stop_timeout_ms = 2000,
              metrics_path = "%s/metrics.prom", metrics_interval_ms = 100 }
input = { type = "stdin_input" }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", topic = "outage",
          disk_buffer = { path = "%s/buffer" } }
]]):format(dir, dir, b.bootstrap, dir))
    stop_on_exit(dir, b)
    k.stop(b)
    start(dir, "in.log")
    assert.is_true(h.wait_until(function() return on_disk(dir) == 20000 end, 60),
      on_disk(dir) .. " lines in the disk buffer; " .. (run.read(dir .. "/wrapper.err") or ""))
    assert.truthy((run.read(dir .. "/wrapper.err") or ""):find(
      "every broker is down; the %d+ records librdkafka held are in the disk buffer"), run.read(dir .. "/wrapper.err"))
    assert.is_true(h.wait_until(function()
      return metric(dir, 'lumberjit_output_disk_buffer_records{output="kafka"}') == 20000
    end, 10), run.read(dir .. "/metrics.prom"))
    assert.are.equal(20000, metric(dir, 'lumberjit_input_records_total{input="input"}'))
    -- librdkafka may hold them again, read from the disk buffer, which
    -- keeps them until the broker has them.
    assert.is_true(metric(dir, 'lumberjit_output_in_flight_records{output="kafka"}') <= 20000)
    assert.are.equal(0, metric(dir, 'lumberjit_output_delivered_records_total{output="kafka"}'))
    assert.are.equal(0, metric(dir, 'lumberjit_output_queued_records{output="kafka"}'))
    assert.is_true(metric(dir, 'lumberjit_output_disk_buffer_bytes{output="kafka"}') >= 20000 * 60)
    kill9(dir)
    k.restart(b)
    -- Nothing more on standard input: the disk buffer has them all, and the
    -- run ends once it is drained.
    run.write(dir .. "/in.log", "")
    start(dir, "in.log")
    local status = h.wait_exit(dir, "wrapper", 120)
    os.remove(dir .. "/lumberjit.pid")
    assert.are.equal(0, status, run.read(dir .. "/wrapper.err"))
    local total, distinct, ordered = k.dump(b, dir, "outage")
    assert.are.same({ 20000, 20000, true }, { total, distinct, ordered })
    run.cleanup(dir)
  end)

  it("keeps what Kafka did not take in the disk buffer across a restart of lumberjit", function()
    local dir = prepare(b, 5000, [[topic = "kept", disk_buffer = { max_bytes = 10000000,
      segment_bytes = 1000000 }]])
    stop_on_exit(dir, b)
    k.stop(b)
    start(dir)
    h.sleep(2)
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    assert.truthy(stderr:find("the disk buffer keeps what Kafka did not take", 1, true), stderr)
    assert.are.equal(5000 * 61, checkpoint(dir))
    assert.are.equal("", run.read(dir .. "/dead.log") or "")
    k.restart(b)
    start(dir)
    assert.truthy(stderr and k.count(b, "kept", { min = 5000, seconds = 60 }))
    status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    assert.truthy(stderr:find("holds 5000 records", 1, true), stderr)
    local total, distinct, ordered = k.dump(b, dir, "kept")
    assert.are.same({ 5000, 5000, true }, { total, distinct, ordered })
    run.cleanup(dir)
  end)

  it("lets one lumberjit at a time use a disk buffer: a second stops at the start, taking nothing", function()
    local output = [[topic = "locked", disk_buffer = { path = "%s/buffer", max_bytes = 100000000 }]]
    local dir = prepare(b, 1000, output:format("$DIR"))
    stop_on_exit(dir, b)
    start(dir)
    assert.truthy(k.count(b, "locked", { min = 1000, seconds = 60 }))
    -- Its own state_dir and input, the first one's disk buffer.
    local other = prepare(b, 10, output:format(dir))
    stop_on_exit(other, b)
    local r = run.lumberjit{ config_path = other .. "/config.lua" }
    assert.are_not.equal(0, r.status)
    assert.truthy(r.stderr:find("disk queue " .. dir .. "/buffer: another process uses it", 1, true), r.stderr)
    assert.is_nil(run.read(other .. "/state/checkpoints"))
    assert.is_true(pid_alive(dir))
    run.cleanup(r.dir)
    local status, stderr = stop(dir)
    assert.are.equal(0, status, stderr)
    -- Free again once the first stopped.
    start(other)
    assert.truthy(k.count(b, "locked", { min = 1010, seconds = 60 }))
    status, stderr = stop(other)
    assert.are.equal(0, status, stderr)
    assert.are.equal(1010, k.count(b, "locked"))
    run.cleanup(dir)
    run.cleanup(other)
  end)
end)
