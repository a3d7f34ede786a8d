-- A broker that crashes while the kafka_output is behind it, with a disk
-- buffer, against a real broker (spec/e2e/kafka_harness.lua): the records
-- librdkafka held go to the disk buffer in their order, so the file's
-- checkpoint reaches the end of the file while the broker is away; kill -9
-- then duplicates little, and once the disk buffer drained the partition
-- holds every line, first occurrences in order.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")

local LINES = 300000

local function start(dir)
  h.spawn(dir, "wrapper", "sh -c 'echo $$ > lumberjit.pid; exec " .. run.quote(run.bin) .. " -c config.lua'", 600)
  assert(h.wait_until(function() return run.read(dir .. "/lumberjit.pid") end, 10))
end

-- Appends LINES lines of 61 bytes to dir/in.log, 5,000 every 0.1 s, in
-- the background.
local function write_stream(dir)
  assert(h.sh(dir, [[python3 -c '
import time
with open("in.log", "a") as f:
    for start in range(1, ]] .. LINES .. [[ + 1, 5000):
        f.write("".join("line %07d %s\n" % (i, "x" * 47) for i in range(start, start + 5000)))
        f.flush()
        time.sleep(0.1)' > writer.out 2>&1 &]]))
end

local function stderr(dir)
  return run.read(dir .. "/wrapper.err") or ""
end

local function checkpoint(dir)
  return tonumber((run.read(dir .. "/state/checkpoints") or ""):match("offset (%d+)")) or 0
end

describe("kafka_output with a disk buffer through a broker crash", function()
  local b

  setup(function()
    b = k.start()
    k.create_topic(b, "drain", 1)
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  it("moves librdkafka's records to disk in order: the checkpoint reaches the end, kill -9 duplicates little,"
    .. " and the drain keeps the order", function()
    local dir = run.tmpdir()
    os.execute("mkdir " .. dir .. "/state")
    run.write(dir .. "/in.log", "")
    run.write(dir .. "/config.lua", ([[
lumberjit = { state_dir = "%s/state", checkpoint_interval_ms = 100, dead_letter_path = "%s/dead.log",
              stop_timeout_ms = 2000, memory_budget = 1048576 }
input = { type = "tail_input", paths = { "%s/in.log" }, read_from_head = true }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", topic = "drain",
          memory_bytes = 1048576, disk_buffer = { path = "%s/buffer", max_bytes = 67108864 } }
]]):format(dir, dir, dir, b.bootstrap, dir))
    finally(function()
      if run.read(dir .. "/lumberjit.pid") then h.sh(dir, "kill -KILL $(cat lumberjit.pid)") end
      pcall(k.restart, b)
    end)
    start(dir)
    -- Once the producer knows the topic's partition, a stream of 50,000
    -- lines a second for 6 s, which the broker keeps up with. It stops
    -- answering (SIGSTOP) in the middle: librdkafka fills up with records
    -- it has sent and not had answered. Then it crashes.
    h.sleep(2)
    write_stream(dir)
    assert.is_true(h.wait_until(function() return checkpoint(dir) >= 50000 * 61 end, 60), stderr(dir))
    h.sh(b.dir, "kill -STOP " .. b.pid)
    h.sleep(3)
    k.kill(b)
    -- Every line is in the broker or safe in the disk buffer: none is held
    -- by librdkafka alone, so the checkpoint passes them all.
    local reached = h.wait_until(function() return checkpoint(dir) == LINES * 61 end, 60)
    local at_kill = checkpoint(dir) / 61
    h.sh(dir, "kill -KILL $(cat lumberjit.pid)")
    h.wait_exit(dir, "wrapper", 10)
    os.remove(dir .. "/lumberjit.pid")
    k.restart(b)
    os.rename(dir .. "/wrapper.err", dir .. "/first.err")
    start(dir)
    assert.truthy(k.count(b, "drain", { min = LINES, seconds = 180 }))
    h.sh(dir, "kill -TERM $(cat lumberjit.pid)")
    local status = h.wait_exit(dir, "wrapper", 60)
    os.remove(dir .. "/lumberjit.pid")
    local total, distinct, ordered = k.dump(b, dir, "drain")
    print(("\n# broker crash, then kill -9 with %d of %d lines checkpointed: %d duplicates"):format(
      at_kill, LINES, total - distinct))
    assert.is_true(reached, at_kill .. " lines checkpointed\n" .. (run.read(dir .. "/first.err") or ""))
    assert.are.equal(0, status, stderr(dir))
    assert.are.equal(LINES, distinct)
    assert.is_true(ordered, "lines out of order")
    -- What a kill -9 sends again: the disk buffer's records sent since its
    -- cursor was last saved, and what librdkafka had sent unanswered.
    assert.is_true(total - distinct <= 20000, (total - distinct) .. " duplicates")
    run.cleanup(dir)
  end)
end)
