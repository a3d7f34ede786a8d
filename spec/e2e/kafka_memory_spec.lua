-- The README's memory bound (Delivery: memory) through a Kafka outage,
-- with default memory settings, against a real broker
-- (spec/e2e/kafka_harness.lua): the peak RSS (VmHWM) of a run whose broker
-- hangs, and of one whose broker hangs and then dies with a disk buffer
-- (librdkafka's records move to disk), stays under
--   base + memory_budget + every sandbox's memory_limit + a read
--     + memory_bytes,
-- base 16 MiB. Before, librdkafka's records took twice memory_bytes and
-- more (it counts only payloads against its byte cap), and the move to
-- disk copied them all once more: 164.8 MiB against 145 (hung, memory_bytes
-- 64 MiB) and 105.4 against 97 (disk buffer, defaults).
-- Under AddressSanitizer the bound is the formula plus 96 MiB, as in
-- memory_bound_spec.lua, plus memory_bytes once more: librdkafka's records
-- are many small allocations, and each gets ASan's header and redzones.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")

local MiB = 1024 * 1024
local asan = io.popen(run.quote(run.bin) .. " --version"):read("*a"):find("AddressSanitizer", 1, true)
local BASE = 16 * MiB + (asan and 96 * MiB or 0)
local WORKERS = 2
-- base + the default memory_budget + a decoder and an encoder of the
-- default memory_limit on each worker + a read (an eighth of the budget, at
-- most 1 MiB) + the kafka_output's memory_bytes
local function bound(memory_bytes)
  return BASE + 32 * MiB + WORKERS * 2 * 8 * MiB + MiB + memory_bytes * (asan and 2 or 1)
end

-- A generator as fast as the pipeline takes its lines, through the syslog
-- decoder and the JSON encoder, to topic mem; memory_bytes nil: the
-- default, 16 MiB.
local function config(dir, bootstrap, memory_bytes, disk_buffer)
  return ([[
lumberjit = { dead_letter_path = "dl.log", workers = %d, stop_timeout_ms = 10000,
              metrics_path = "metrics.prom", metrics_interval_ms = 100 }
gen = { type = "generator_input", decoder = "syslog" }
syslog = { type = "decoder", filename = "decoders/syslog.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
kafka = { type = "kafka_output", encoder = "json", message_matcher = "TRUE", brokers = "%s", topic = "mem"%s%s }
]]):format(WORKERS, bootstrap, memory_bytes and (", memory_bytes = " .. memory_bytes) or "",
    disk_buffer and (', disk_buffer = { path = "' .. dir .. '/buffer" }') or "")
end

-- A gauge or counter of output 'kafka' in the metrics file; 0 before it.
local function metric(dir, name)
  local text = run.read(dir .. "/metrics.prom") or ""
  return tonumber(text:match(name .. '{output="kafka"} (%d+)')) or 0
end

-- Waits until librdkafka holds what it may: no record has gone to it for
-- a second (the queue, full behind it, holds the inputs).
local function wait_full(dir)
  local sent, since = -1, os.time()
  return h.wait_until(function()
    local now = metric(dir, "lumberjit_output_sent_records_total")
    if now ~= sent then sent, since = now, os.time() end
    return os.time() - since >= 2
  end, 60)
end

local function stderr(dir)
  return run.read(dir .. "/lumberjit.err") or ""
end

-- The run's peak RSS so far, in bytes.
local function peak(dir)
  local status = run.read("/proc/" .. run.read(dir .. "/pid"):match("%d+") .. "/status")
  return tonumber(status:match("VmHWM:%s*(%d+) kB")) * 1024
end

local function start(dir)
  h.spawn(dir, "lumberjit", "sh -c 'echo $$ > pid; exec " .. run.quote(run.bin) .. " -c config.lua'", 120)
  assert(h.wait_until(function() return run.read(dir .. "/pid") end, 10))
  -- Records flow before the outage.
  assert.is_true(h.wait_until(function() return metric(dir, "lumberjit_output_delivered_records_total") > 10000 end, 30),
    stderr(dir))
end

-- Stops the run (SIGTERM) unless it ended; its exit status.
local function stop(dir)
  if not run.read(dir .. "/lumberjit.status") and run.read(dir .. "/lumberjit.pid") then
    return h.terminate(dir, "lumberjit", 30)
  end
  return tonumber((run.read(dir .. "/lumberjit.status") or ""):match("%d+"))
end

local function check(dir, what, memory_bytes)
  local bytes, limit = peak(dir), bound(memory_bytes)
  local says = ("%s: peak RSS %.1f MiB, bound %.1f MiB"):format(what, bytes / MiB, limit / MiB)
  print("\n# " .. says)
  assert.is_true(bytes < limit, says)
end

describe("a kafka_output through an outage", function()
  local b

  setup(function()
    b = k.start()
    k.create_topic(b, "mem", 3)
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  -- memory_bytes is raised so that librdkafka's share stands out of the
  -- sandboxes' (whose heaps take less than their memory_limit).
  it("holds librdkafka to memory_bytes while the broker hangs", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", config(dir, b.bootstrap, 64 * MiB, false))
    finally(function()
      h.sh(b.dir, "kill -CONT " .. b.pid)
      stop(dir)
    end)
    start(dir)
    h.sh(b.dir, "kill -STOP " .. b.pid)
    assert.is_true(wait_full(dir), stderr(dir))
    check(dir, "broker hung, memory_bytes 64 MiB", 64 * MiB)
    h.sh(b.dir, "kill -CONT " .. b.pid)
    assert.are.equal(0, stop(dir), stderr(dir))
    run.cleanup(dir)
  end)

  it("holds the move of librdkafka's records to the disk buffer to memory_bytes when the broker dies", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", config(dir, b.bootstrap, nil, true))
    finally(function()
      h.sh(b.dir, "kill -CONT " .. b.pid .. " 2>/dev/null")
      stop(dir)
    end)
    start(dir)
    -- Hung first, so librdkafka holds records it sent, then gone: every
    -- broker is down, and what librdkafka holds moves to disk.
    h.sh(b.dir, "kill -STOP " .. b.pid)
    assert.is_true(wait_full(dir), stderr(dir))
    k.kill(b)
    assert.is_true(h.wait_until(function()
      return stderr(dir):find("records librdkafka held are in the disk buffer", 1, true) ~= nil
    end, 60), stderr(dir))
    -- New records go to disk behind them.
    local put = metric(dir, "lumberjit_output_disk_buffer_put_records_total")
    assert.is_true(h.wait_until(function()
      return metric(dir, "lumberjit_output_disk_buffer_put_records_total") > put + 100000
    end, 30), stderr(dir))
    check(dir, "broker gone, disk buffer", 16 * MiB)
    -- At the stop the disk buffer keeps what Kafka did not take.
    assert.are.equal(0, stop(dir), stderr(dir))
    run.cleanup(dir)
  end)
end)
