-- What the kafka_output tells the operator, and what a stop during an
-- outage leaves for the next run, against a real broker
-- (spec/e2e/kafka_harness.lua): a missing topic is named at the start and
-- at its first refusal, not after 30 s of silence; --check builds the
-- producer; an outage is logged once when every broker goes down and once
-- when its backlog drained; SIGTERM with the broker away and no disk
-- buffer leaves a file's records unacknowledged (not dead-lettered), so the
-- next run sends them.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")

-- A directory with state/ and in.log of `lines` numbered lines, and a
-- config that reads in.log (a file_input with a state_dir checkpoint) into
-- a kafka_output with the keys in `output`.
local function prepare(b, lines, output)
  local dir = run.tmpdir()
  os.execute("mkdir " .. dir .. "/state")
  assert(h.sh(dir, "seq -f 'line %07g' 1 " .. lines .. " > in.log"))
  run.write(dir .. "/config.lua", ([[
lumberjit = { state_dir = "%s/state", checkpoint_interval_ms = 100, dead_letter_path = "%s/dead.log",
              stop_timeout_ms = 2000 }
input = { type = "file_input", path = "%s/in.log" }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", %s }
]]):format(dir, dir, dir, b.bootstrap, output))
  return dir
end

local function start(dir)
  h.spawn(dir, "wrapper", "sh -c 'echo $$ > lumberjit.pid; exec " .. run.quote(run.bin) .. " -c config.lua'", 300)
  assert(h.wait_until(function() return run.read(dir .. "/lumberjit.pid") end, 10))
end

local function stderr(dir)
  return run.read(dir .. "/wrapper.err") or ""
end

local function logged(dir, text, seconds)
  return h.wait_until(function() return stderr(dir):find(text, 1, true) end, seconds)
end


-- SIGTERM; the exit status and stderr.
local function stop(dir)
  h.sh(dir, "kill -TERM $(cat lumberjit.pid)")
  local status = h.wait_exit(dir, "wrapper", 60)
  os.remove(dir .. "/lumberjit.pid")
  return status, stderr(dir)
end

local function stop_on_exit(dir, b)
  finally(function()
    if run.read(dir .. "/lumberjit.pid") then h.sh(dir, "kill -KILL $(cat lumberjit.pid)") end
    pcall(k.restart, b)
  end)
end

local function checkpoint(dir)
  return tonumber((run.read(dir .. "/state/checkpoints") or ""):match("offset (%d+)")) or 0
end

describe("kafka_output reports", function()
  local b

  setup(function()
    b = k.start()
    k.create_topic(b, "outage", 1)
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  it("fails --check for a producer a start could not make", function()
    local r = run.lumberjit{ args = "--check", config = ([[
input = { type = "stdin_input" }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s", topic = "outage",
          properties = { ["security.protocol"] = "sasl_plaintext", ["sasl.mechanism"] = "BOGUS" } }
]]):format(b.bootstrap) }
    assert.are_not.equal(0, r.status)
    assert.truthy(r.stderr:find("kafka_output 'kafka': cannot make the producer: Unsupported SASL mechanism", 1, true),
      r.stderr)
    run.cleanup(r.dir)
  end)

  it("names a missing topic at the start and at its first refusal", function()
    -- librdkafka waits topic.metadata.propagation.max.ms (30 s) before it
    -- gives up on the topic; 2 s here.
    local dir = prepare(b, 100, [[topic = "absent", properties = { ["topic.metadata.propagation.max.ms"] = 2000 }]])
    stop_on_exit(dir, b)
    start(dir)
    assert.is_true(logged(dir, "topic 'absent' does not exist and the brokers did not create it", 10), stderr(dir))
    assert.is_true(logged(dir, "Kafka refuses records: Kafka did not take the record (topic absent): "
      .. "Broker: Unknown topic or partition", 30), stderr(dir))
    assert.is_true(h.wait_until(function() return #run.lines(run.read(dir .. "/dead.log") or "") == 100 end, 10))
    local _, err = stop(dir)
    assert.are.equal(1, run.count(err, "Kafka refuses records"), err)
    run.cleanup(dir)
  end)

  it("leaves a file's records unacknowledged at a stop during an outage; the next run says when every broker"
    .. " is down and back, and sends them", function()
    local dir = prepare(b, 10000, [[topic = "outage"]])
    stop_on_exit(dir, b)
    k.stop(b)
    start(dir)
    assert.is_true(h.wait_until(function() return stderr(dir):find("every broker is down; %d+ records waiting") end, 20), stderr(dir))
    local status, err = stop(dir)
    assert.are.equal(0, status, err)
    assert.truthy(err:find("stopped; 10000 records Kafka did not take stay unacknowledged", 1, true), err)
    assert.are.equal("", run.read(dir .. "/dead.log") or "")
    assert.are.equal(0, checkpoint(dir))
    -- The next run reads them again, waits out the outage and sends them.
    os.remove(dir .. "/wrapper.err")
    start(dir)
    assert.is_true(h.wait_until(function() return stderr(dir):find("every broker is down; %d+ records waiting") end, 20), stderr(dir))
    k.restart(b)
    assert.is_true(logged(dir, "brokers back after", 60), stderr(dir))
    assert.are.equal(10000, k.count(b, "outage", { min = 10000, seconds = 60 }))
    status, err = stop(dir)
    assert.are.equal(0, status, err)
    assert.are.equal(1, run.count(err, "every broker is down"), err)
    assert.truthy(err:find("brokers back after %d+%.%d s; backlog of 10000 drained in %d+%.%d s"), err)
    assert.are.equal(10000, k.count(b, "outage"))
    assert.are.equal(10000 * 13, checkpoint(dir))
    run.cleanup(dir)
  end)
end)
