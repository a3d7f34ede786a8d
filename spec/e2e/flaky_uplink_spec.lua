-- syslog_output through a flaky uplink (issue 28, section 2): a generator runs
-- at a steady rate while spec/e2e/flaky_proxy.py, between lumberjit and a
-- real rsyslogd, drops connections, blackholes them, stalls them mid-batch
-- and throttles them to 20 KB/s, at random (FLAKY_SEED replays a run) for
-- 25 s (FLAKY_SECONDS=N for a long run). Then the proxy heals, the disk
-- buffer drains and lumberjit stops: every record the generator made
-- arrived (check-records.py), the duplicates are within the README's bound,
-- the metrics showed the disk buffer fill and drain, and the log told it
-- in a few lines.
--
-- syslog_output has no bandwidth cap (kafka_output's max_bytes_per_second
-- is checked by flaky_kafka_spec.lua).
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local f = dofile("spec/e2e/flaky_harness.lua")
local receiver = dofile("spec/e2e/syslog_receiver.lua")

local RATE = 1000 -- records a second, each about 150 bytes on the wire

local function config(proxy_port)
  return f.config(RATE, string.format('type = "syslog_output", address = "tcp://127.0.0.1:%d", '
    .. 'reconnect_min_ms = 100, reconnect_max_ms = 1000, connect_timeout_ms = 2000, send_timeout_ms = 2000, '
    .. 'disk_buffer = { max_bytes = 67108864 }', proxy_port))
end

describe("syslog_output through a flaky uplink", function()
  it("loses nothing, duplicates within the bound, and says what happened in a few lines", function()
    local seconds = f.chaos_seconds(25)
    local dir = h.tmpdir()
    assert(h.sh(dir, "mkdir -p state"))
    local port = receiver.start_receiver(dir, { limit = seconds + 600 })
    local p = f.proxy(dir, port, { seed = f.seed(), chaos = seconds, limit = seconds + 600 })
    f.numbering_encoder(dir, "<13>Nov 27 00:00:00 edge app: ")
    run.write(dir .. "/config.lua", config(p.port))
    f.start_lumberjit(dir, seconds + 600)

    -- Healed, the backlog drains while the generator goes on.
    local drained, most = f.ride_out(dir, p, seconds, 300, RATE)
    local status, stderr = f.stop_lumberjit(dir, 60)
    local n = tonumber(stderr:match("input 'gen': (%d+) records"))
    f.wait_arrivals(dir, n)
    assert.are.equal(0, receiver.stop_receiver(dir))
    f.stop_proxy(p)
    assert.is_true(drained, stderr)
    assert.are.equal(0, status, stderr)

    f.expect(dir, n)
    local c = receiver.check(dir)
    local connects = tonumber(stderr:match("(%d+) connections"))
    local outages, modes = f.proxy_figures(p, 5)
    io.stderr:write(string.format("flaky syslog: %d s, %d outages (%s); %d records, %s; %d connections; "
      .. "disk buffer at most %d records; %d log lines\n", seconds, outages, modes, n, c.text:match("[^\n]+"),
      connects, most, f.line_count(stderr)))

    assert.are.equal(0, c.lost, c.text .. stderr)
    assert.are.equal(0, c.torn, c.text)
    -- README (Forwarding to a syslog receiver): a connection that breaks
    -- sends again only the records whose bytes the kernel had not all
    -- taken: one record at most a broken connection is cut inside.
    assert.truthy(c.duplicates <= connects, c.text)
    -- The disk buffer filled while the receiver was away, and drained.
    assert.truthy(most > 0, stderr)
    assert.are.equal(0, f.metric(dir, "lumberjit_output_disk_buffer_records"))
    -- A few lines an outage, not one a retry: the summary (about 15
    -- lines) and at most 4 an outage of the proxy's.
    assert.truthy(f.line_count(stderr) <= 20 + 4 * outages, stderr)
    h.cleanup(dir)
  end)
end)
