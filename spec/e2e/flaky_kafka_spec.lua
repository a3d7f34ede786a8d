-- kafka_output through a flaky uplink (issue 28, section 2): a real KRaft
-- broker (spec/e2e/kafka_harness.lua) advertises spec/e2e/flaky_proxy.py's
-- port, so every connection a client makes after the bootstrap goes
-- through the proxy too. A generator runs at a steady rate while the proxy
-- drops connections, blackholes them, stalls them mid-batch and throttles
-- them to 20 KB/s, at random (FLAKY_SEED replays a run) for 25 s
-- (FLAKY_SECONDS=N for a long run). Then it heals, the disk buffer drains
-- and lumberjit stops: every record arrived (check-records.py), the
-- duplicates are within the README's bound, max_bytes_per_second held on
-- the wire, the metrics showed the disk buffer fill and drain, and the log
-- told it in a few lines.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local k = dofile("spec/e2e/kafka_harness.lua")
local f = dofile("spec/e2e/flaky_harness.lua")
local receiver = dofile("spec/e2e/syslog_receiver.lua")

local RATE = 1000          -- records a second, about 150 bytes each
local CAP = 300000         -- max_bytes_per_second: twice what is made
local MEMORY = 1048576     -- memory_bytes: small, so that outages reach the disk

local function config(proxy_port)
  return f.config(RATE, string.format('type = "kafka_output", brokers = "127.0.0.1:%d", topic = "flaky", '
    .. 'memory_bytes = %d, max_bytes_per_second = %d, disk_buffer = { path = "buffer", max_bytes = 67108864 }, '
    .. 'properties = { ["socket.timeout.ms"] = 5000, ["reconnect.backoff.max.ms"] = 1000 }', proxy_port, MEMORY, CAP))
end

describe("kafka_output through a flaky uplink", function()
  local b, p, dir

  setup(function()
    dir = h.tmpdir()
    local port = receiver.free_port()
    b = k.start{ advertised_port = port }
    p = f.proxy(dir, b.port, { port = port, seed = f.seed(), limit = 1800 })
    k.create_topic(b, "flaky", 1)
  end)

  teardown(function()
    if p then f.stop_proxy(p) end
    if b then k.destroy(b) end
  end)

  it("loses nothing, duplicates within the bound, holds the bandwidth cap, and says what happened in a few lines",
    function()
    local seconds = f.chaos_seconds(25)
    assert(h.sh(dir, "mkdir -p state"))
    f.numbering_encoder(dir)
    run.write(dir .. "/config.lua", config(p.port))
    f.start_lumberjit(dir, seconds + 900)
    h.sleep(2)
    f.control(p, "chaos " .. seconds)

    local drained, most = f.ride_out(dir, p, seconds, 600, RATE)
    local status, stderr = f.stop_lumberjit(dir, 60)
    assert.is_true(drained, stderr)
    assert.are.equal(0, status, stderr)

    local n = tonumber(stderr:match("input 'gen': (%d+) records"))
    f.expect(dir, n)
    assert(h.sh(dir, string.format("timeout -s KILL 300 kcat -C -q -e -o beginning -f '%%s\\n' -b %s -t flaky "
      .. "| grep -o '^line [0-9]*' > out.log", b.bootstrap)))
    local c = receiver.check(dir)
    local outages, modes, rate = f.proxy_figures(p, 5)
    io.stderr:write(string.format("flaky kafka: %d s, %d outages (%s); %d records, %s; disk buffer at "
      .. "most %d records; at most %.0f bytes/s towards the broker over 5 s (cap %d); %d log lines\n", seconds,
      outages, modes, n, c.text:match("[^\n]+"), most, rate, CAP,
      f.line_count(stderr)))

    assert.are.equal(0, c.lost, c.text .. stderr)
    assert.are.equal(0, c.torn, c.text)
    assert.are.equal(0, c.disorder, c.text)
    -- README (Shipping to Kafka, Duplicates): what librdkafka had sent when
    -- every broker went down, sent again from the disk buffer: at most
    -- what memory_bytes lets it hold, each outage.
    assert.truthy(c.duplicates <= outages * MEMORY / 150, c.text)
    -- The cap, on the wire: the records' bytes plus Kafka's framing of
    -- them (a batch's header, each record's lengths and offsets) and the
    -- metadata requests.
    assert.truthy(rate <= CAP * 1.25, rate .. " bytes/s")
    assert.truthy(most > 0, stderr)
    assert.truthy(f.line_count(stderr) <= 20 + 4 * outages, stderr)
  end)
end)
