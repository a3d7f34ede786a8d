-- The running listener under fire (issue 29): one lumberjit with
-- syslog_input listeners on every transport (TCP with each framing, TLS,
-- UDP, Unix stream and datagram sockets, with and without a decoder) and
-- spec/e2e/listener_fuzz.py opening many connections at once for a bounded
-- time, sending a seeded mix of well-formed frames, garbage and abrupt
-- closes (its header says what and why the oracle is exact). Then: no
-- crash, no sanitizer report, every guaranteed message in the output once
-- or dead-lettered with a reason, no message twice, lumberjit still
-- answers, and its descriptors are back where they started.
--
-- LISTENER_FUZZ_SECONDS (default 15) sets the time, LISTENER_FUZZ_SEED the
-- seed (default: the clock; every failure names it), LISTENER_FUZZ_WORKERS
-- the connections at once (default 24).
local h = dofile("spec/e2e/syslog_harness.lua")
local certs = dofile("spec/e2e/certs.lua")
local cjson = require("cjson")

local driver = h.quote(h.client:gsub("syslog_client%.py$", "listener_fuzz.py"))
local seconds = tonumber(os.getenv("LISTENER_FUZZ_SECONDS") or "15")
local seed = tonumber(os.getenv("LISTENER_FUZZ_SEED") or os.time())
local workers = tonumber(os.getenv("LISTENER_FUZZ_WORKERS") or "24")

-- The harness gives lumberjit 120 s before `timeout` kills it; a long run
-- needs its time and the stop's.
local spawn = h.spawn
function h.spawn(dir, name, cmd, limit_seconds)
  return spawn(dir, name, cmd, name == "lumberjit" and math.max(limit_seconds, seconds + 300) or limit_seconds)
end

-- Each listener and the bodies it is sent (a decoder's format, or any);
-- `tight` ones have short deadlines and few slots, and the driver pauses
-- into them.
local listeners = {
  tcp = { address = "tcp://127.0.0.1:0", max_line = 2048, decoder = "rfc5424", body = "5424" },
  tcp_octets = { address = "tcp://127.0.0.1:0", framing = "octet_counted", max_line = 256 },
  tcp_lines = { address = "tcp://127.0.0.1:0", framing = "newline", max_line = 300 },
  tcp_tight = { address = "tcp://127.0.0.1:0", max_line = 512, tight = true,
                keys = "max_connections = 6, max_connections_per_address = 3, first_message_timeout_ms = 250, "
                  .. "idle_timeout_ms = 400" },
  tls = { address = "tls://127.0.0.1:0", max_line = 4096, tls = "" },
  tls_verify = { address = "tls://127.0.0.1:0", max_line = 1024, verify = true,
                 tls = ', ca = "%s", verify_client = true' },
  tls_tight = { address = "tls://127.0.0.1:0", max_line = 1024, tight = true, tls = "",
                keys = "max_connections = 6, tls_handshake_timeout_ms = 300, first_message_timeout_ms = 500" },
  unix_stream = { address = "unix-stream:$DIR/stream.sock", max_line = 1024 },
  udp = { address = "udp://127.0.0.1:0", max_line = 1024, decoder = "rfc3164", body = "3164" },
  unix = { address = "unix:$DIR/dgram.sock", max_line = 512 },
}

local function config(c)
  -- No cap on the dead letters: a long run's garbage would fill the
  -- rotated files, and further dead letters would be refused.
  local text = { (h.common_config:gsub('dead_letter_path = "dead.json"', '%0, dead_letter_max_bytes = 0')) }
  for name, l in pairs(listeners) do
    local keys = { string.format('type = "syslog_input", address = "%s", max_line = %d, framing = "%s"', l.address,
      l.max_line, l.framing or "auto") }
    if l.decoder then keys[#keys + 1] = string.format('decoder = "%s"', l.decoder) end
    if l.tls then
      keys[#keys + 1] = string.format('tls = { cert = "%s", key = "%s"', c.server_cert, c.server_key)
        .. string.format(l.tls, c.ca) .. " }"
    end
    keys[#keys + 1] = l.keys
    text[#text + 1] = name .. " = { " .. table.concat(keys, ", ") .. " }"
  end
  return table.concat(text, "\n")
end

local function sh_out(dir, cmd)
  local p = io.popen("cd " .. h.quote(dir) .. " && " .. cmd)
  local out = p:read("*a")
  local ok = p:close()
  return out, ok == true or ok == 0
end

-- lumberjit's own PID: the harness's PID file names the `timeout` around it.
local function lumberjit_pid(lj)
  local timeout_pid = h.read(lj.dir .. "/lumberjit.pid"):match("%d+")
  return h.read("/proc/" .. timeout_pid .. "/task/" .. timeout_pid .. "/children"):match("%d+")
end

-- What lumberjit's descriptors point at, one a line, but its files in dir
-- (the dead-letter file opens at the first dead letter); and how many.
local function open_fds(pid, dir)
  local out = sh_out("/", string.format("for f in /proc/%s/fd/*; do echo \"${f##*/} $(readlink $f)\"; done "
    .. "| grep -v ' %s/' | sort -n; true", pid, dir))
  return select(2, out:gsub("\n", "")), out
end

describe("syslog_input fuzzed while running", function()
  it("takes every well-formed message sent at it among garbage and abrupt closes, and stays up", function()
    local why = string.format("LISTENER_FUZZ_SEED=%d LISTENER_FUZZ_SECONDS=%d", seed, seconds)
    local dir = h.tmpdir()
    local c = certs.generate(dir .. "/certs")
    local lj = h.start(config(c))
    local pid = lumberjit_pid(lj)
    -- One message on each stream listener first: libuv opens a spare
    -- descriptor for its loop with the first connection, once.
    local warm = 0
    for name, l in pairs(listeners) do
      if not l.address:find("^udp") and not l.address:find("^unix:") then
        local msg = "<13>warm up " .. name
        h.write(lj.dir .. "/warm", l.framing == "octet_counted" and #msg .. " " .. msg or msg .. "\n")
        local _, sent = h.raw_client(lj.dir, "send " .. lj.address[name] .. " warm --ca " .. c.ca
          .. " --cert " .. c.client_cert .. " --key " .. c.client_key)
        assert.is_true(sent, h.read(lj.dir .. "/client.err"))
        warm = warm + 1
      end
    end
    -- (the decoder of 'tcp' takes RFC 5424 only: its warm-up is a dead letter)
    assert.is_true(h.wait_until(function() return #h.lines(lj) + #h.lines(lj, "dead.json") >= warm end, 30))
    local fds_before, fds_at_start = open_fds(pid, lj.dir)
    local plan = { seed = seed, seconds = seconds, workers = workers, ca = c.ca, client_cert = c.client_cert,
                   client_key = c.client_key, other_cert = c.other_cert, other_key = c.other_key,
                   sent = lj.dir .. "/sent.json", targets = {} }
    for name, l in pairs(listeners) do
      plan.targets[#plan.targets + 1] = { name = name, address = lj.address[name], framing = l.framing or "auto",
        max_line = l.max_line, body = l.body or "any", verify = l.verify or false, tight = l.tight or false }
    end
    table.sort(plan.targets, function(a, b) return a.name < b.name end)
    h.write(lj.dir .. "/plan.json", cjson.encode(plan))
    local out, ok = sh_out(lj.dir, string.format("timeout -s KILL %d python3 %s run plan.json 2> fuzz.err",
      seconds + 180, driver))
    print(why .. ": " .. out)
    assert.is_true(ok, why .. "\n" .. (h.read(lj.dir .. "/fuzz.err") or "") .. (h.read(lj.dir .. "/lumberjit.err") or ""))
    local stats = cjson.decode(out)
    assert.are.equal(0, stats.failure_count, why .. ": " .. cjson.encode(stats.failures))

    -- It still answers: a last message over TCP arrives.
    h.write(lj.dir .. "/probe", "<13>probe lfz-probe-end\n")
    local _, sent = h.raw_client(lj.dir, "send " .. lj.address.tcp_lines .. " probe")
    assert.is_true(sent, why .. ": " .. (h.read(lj.dir .. "/client.err") or ""))
    -- (near the end of what may be gigabytes after a long run)
    assert.is_true(h.wait_until(function()
      return h.sh(lj.dir, "tail -c 4000000 out.json | grep -qF lfz-probe-end")
    end, 60), why .. ": the probe did not arrive")
    -- Every connection it served is closed again.
    local fds_after, fds_now
    assert.is_true(h.wait_until(function()
      fds_after, fds_now = open_fds(pid, lj.dir)
      return fds_after <= fds_before
    end, 30), string.format("%s: %d descriptors open:\n%s%d at the start:\n%s", why, fds_after, fds_now, fds_before,
      fds_at_start))

    -- (h.stop would decode every record)
    local r = { status = h.terminate(lj.dir, "lumberjit", 60), stderr = h.read(lj.dir .. "/lumberjit.err") }
    assert.are.equal(0, r.status, why .. "\n" .. r.stderr)
    assert.is_nil(r.stderr:find("AddressSanitizer", 1, true), why .. "\n" .. r.stderr)
    assert.is_nil(r.stderr:find("LeakSanitizer", 1, true), why .. "\n" .. r.stderr)
    assert.is_nil(r.stderr:find("runtime error", 1, true), why .. "\n" .. r.stderr)

    local checked = cjson.decode((sh_out(lj.dir, string.format("python3 %s check sent.json out.json dead.json", driver))))
    print(why .. ": " .. cjson.encode(checked))
    assert.are.same({}, checked.missing, why .. ": guaranteed messages neither written nor dead-lettered")
    assert.are.same({}, checked.twice, why .. ": messages written or dead-lettered twice")
    assert.are.same({}, checked.unknown, why .. ": ids no frame carried")
    assert.are.same({}, checked.no_reason, why .. ": dead letters without a reason")
    assert.is_true(checked.guaranteed > 0, why)
    -- UDP may lose datagrams, but only those the kernel dropped, which
    -- lumberjit counts.
    assert.is_true(checked.udp_missing <= h.summary(r.stderr, "udp").dropped, why .. ": " .. checked.udp_missing
      .. " UDP messages missing, " .. h.summary(r.stderr, "udp").dropped .. " dropped")
    h.cleanup(lj.dir)
    h.cleanup(dir)
  end)
end)
