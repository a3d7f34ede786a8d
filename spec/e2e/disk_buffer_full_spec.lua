-- A full disk buffer, by its when_full policy (issue 28, section 2): a
-- syslog_output with a small disk buffer behind a blackholed receiver
-- (flaky_proxy.py in front of rsyslogd: nothing accepted, nothing answered,
-- so only send_timeout_ms and connect_timeout_ms reveal it) while a
-- generator makes numbered records at 5,000 a second. With "hold" the generator is
-- held and, once the path heals, every record arrives. With
-- "drop_oldest" the generator is never held; the newest records arrive,
-- the records missing are exactly those the metrics and the summary count
-- as dropped, and they are older than those kept.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local f = dofile("spec/e2e/flaky_harness.lua")
local receiver = dofile("spec/e2e/syslog_receiver.lua")

local RATE = 5000
local CAP, SEGMENT = 262144, 32768

-- Starts a receiver, the proxy blackholing it, and lumberjit with
-- when_full = policy; returns dir and the proxy.
local function start(policy)
  local dir = h.tmpdir()
  assert(h.sh(dir, "mkdir -p state"))
  local port = receiver.start_receiver(dir, {})
  local p = f.proxy(dir, port, { limit = 300 })
  f.control(p, "mode blackhole")
  f.numbering_encoder(dir, "<13>Nov 27 00:00:00 edge app: ")
  run.write(dir .. "/config.lua", f.config(RATE, string.format('type = "syslog_output", '
    .. 'address = "tcp://127.0.0.1:%d", reconnect_min_ms = 100, reconnect_max_ms = 500, connect_timeout_ms = 1000, '
    .. 'send_timeout_ms = 1000, disk_buffer = { max_bytes = %d, segment_bytes = %d, when_full = "%s" }',
    p.port, CAP, SEGMENT, policy)))
  f.start_lumberjit(dir, 300)
  return dir, p
end

local function records_read(dir)
  return f.metric(dir, "lumberjit_input_records_total") or 0
end

-- Heals the path, waits until the disk buffer has drained and stops
-- lumberjit; its exit status, stderr, check-records.py's verdict and the
-- number of records made.
local function heal_and_stop(dir, p)
  f.control(p, "heal")
  local drained = h.wait_until(function()
    return f.metric(dir, "lumberjit_output_disk_buffer_records") == 0
      and (f.metric(dir, "lumberjit_output_queued_records") or RATE) < RATE
  end, 120)
  local status, stderr = f.stop_lumberjit(dir, 60)
  local n = tonumber(stderr:match("input 'gen': (%d+) records"))
  f.wait_arrivals(dir, n - (tonumber(stderr:match("(%d+) dropped from it when full")) or 0))
  assert.are.equal(0, receiver.stop_receiver(dir))
  f.stop_proxy(p)
  assert.is_true(drained, stderr)
  f.expect(dir, n)
  return status, stderr, receiver.check(dir), n
end

describe("a full disk buffer behind a blackholed receiver", function()
  it("holds the generator with when_full = \"hold\", and loses nothing", function()
    local dir, p = start("hold")
    -- Held: the generator stops, and stays stopped.
    local held = h.wait_until(function() return f.metric(dir, "lumberjit_inputs_paused") == 1 end, 30)
    local read_then = records_read(dir)
    h.sleep(3)
    local read_later = records_read(dir)
    local status, stderr, c = heal_and_stop(dir, p)
    assert.is_true(held, stderr)
    assert.are.equal(read_then, read_later, stderr)
    assert.are.equal(0, status, stderr)
    assert.truthy(stderr:find("the disk buffer is full; holding the inputs", 1, true), stderr)
    assert.falsy(stderr:find("dropped", 1, true), stderr)
    assert.are.equal(0, c.lost, c.text .. stderr)
    assert.are.equal(0, c.torn, c.text)
    h.cleanup(dir)
  end)

  it("drops the oldest records with when_full = \"drop_oldest\": counted, logged, and only those", function()
    local dir, p = start("drop_oldest")
    -- Never held: the generator goes on while the path is blackholed, and
    -- the full disk buffer drops its oldest: the cap's worth 8 times over.
    local dropping = h.wait_until(function()
      return (f.metric(dir, "lumberjit_output_disk_buffer_dropped_records_total") or 0) > 8 * CAP / 200
    end, 60)
    local paused = f.metric(dir, "lumberjit_inputs_paused_seconds_total")
    local status, stderr, c, n = heal_and_stop(dir, p)
    local dropped = tonumber(stderr:match("(%d+) dropped from it when full"))
    assert.is_true(dropping, stderr)
    assert.are.equal(0, paused, stderr)
    assert.are.equal(0, status, stderr)
    assert.are.equal(dropped, f.metric(dir, "lumberjit_output_disk_buffer_dropped_records_total"), stderr)
    -- The records missing are the ones dropped, no other.
    assert.are.equal(dropped, c.lost, c.text .. stderr)
    assert.are.equal(0, c.torn, c.text)
    -- The newest were kept: every record from the last one dropped on
    -- arrived, the disk buffer's last contents (half its cap's worth, at
    -- the least) and what followed once the path healed.
    local got = f.received(dir)
    local last_missing = 0
    for i = 1, n do
      if not got[i] then last_missing = i end
    end
    assert.truthy(n - last_missing >= CAP / 2 / 200, last_missing .. " of " .. n .. " dropped last")
    -- Logged, a few lines: the first drop, then at most one each 10 s.
    local lines = select(2, stderr:gsub("dropped the oldest", ""))
    assert.truthy(lines >= 1 and lines <= 3, stderr)
    h.cleanup(dir)
  end)
end)
