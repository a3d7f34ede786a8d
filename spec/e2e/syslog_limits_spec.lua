-- syslog_input's settings through the binary: idle connections closed and
-- counted, an address in use or a live socket refused at the start,
-- IPv6, the sender and listener fields switched off, and what --check says
-- of a bad address or TLS table.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")

local output = [[
lumberjit = { dead_letter_path = "dead.json" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.json", encoder = "json", message_matcher = "TRUE" }
]]

local function send(lj, address, text)
  h.write(lj.dir .. "/msg", text)
  local _, ok = h.raw_client(lj.dir, "send " .. address .. " msg")
  assert.is_true(ok, h.read(lj.dir .. "/client.err"))
end

-- Runs lumberjit in a fresh directory until it exits (at most 20 s).
local function run_config(config, args)
  local dir = run.tmpdir()
  run.write(dir .. "/config.lua", config)
  local cmd = string.format("cd %s && timeout -s KILL 20 %s %s -c config.lua < /dev/null > stdout 2> stderr; echo $?",
    run.quote(dir), run.quote(run.bin), args or "")
  local status = tonumber(io.popen(cmd):read("*l"))
  local stderr = run.read(dir .. "/stderr")
  run.cleanup(dir)
  return status, stderr
end

describe("syslog_input's limits", function()
  it("closes a connection silent for idle_timeout_ms, counts it, and serves the next", function()
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", idle_timeout_ms = 300 }\n'
      .. output)
    -- Sends one message, then waits (up to 10 s) for the server to close.
    h.write(lj.dir .. "/msg", "<13>before idling\n")
    local out, ok = h.raw_client(lj.dir, "send " .. lj.address.tcp .. " msg --wait-close 10 --stay-open")
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.matches("closed by server", out)
    send(lj, lj.address.tcp, "<13>after\n")
    assert.is_true(h.wait_records(lj, 2))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "<13>before idling", "<13>after" }, h.values(r.records, "message"))
    local s = h.summary(r.stderr, "tcp")
    assert.are.equal(1, s.idle)
    assert.are.equal(2, s.connections)
    assert.matches("silent for %d+ ms %(idle_timeout_ms%)", r.stderr)
    h.cleanup(lj.dir)
  end)

  -- The peer did not end the message it began: its rest was coming when
  -- this side closed. Before, the half was written as a whole message.
  it("makes a message begun when idle_timeout_ms closes the connection a dead letter, never a record", function()
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", idle_timeout_ms = 300 }\n'
      .. output)
    h.write(lj.dir .. "/msg", "<13>whole\n\n\r\n<13>first half|")
    local out, ok = h.raw_client(lj.dir, "send " .. lj.address.tcp .. " msg --wait-close 10 --stay-open")
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.matches("closed by server", out)
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "<13>whole" }, h.values(r.records, "message"))
    assert.are.equal(1, #r.dead, r.stderr)
    assert.are.equal("<13>first half|", r.dead[1].payload)
    assert.matches("^the connection was closed inside this message: silent for %d+ ms %(idle_timeout_ms%)$",
      r.dead[1].reason)
    assert.matches("1 dead%-letter records", r.stderr)
    -- The empty lines were no messages, but counted.
    assert.are.equal(2, h.summary(r.stderr, "tcp").empty)
    h.cleanup(lj.dir)
  end)

  it("leaves out the sender and listener fields when they are set to false", function()
    local lj = h.start('udp = { type = "syslog_input", address = "udp://127.0.0.1:0",'
      .. ' sender_field = false, listener_field = "via" }\n' .. output)
    send(lj, lj.address.udp, "<13>plain\n")
    assert.is_true(h.wait_records(lj, 1))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.is_nil(r.records[1]["fromhost-ip"])
    assert.is_nil(r.records[1].inputname)
    assert.are.equal("udp", r.records[1].via)
    h.cleanup(lj.dir)
  end)

  it("listens on IPv6", function()
    if not os.execute("ip -6 addr show lo 2>/dev/null | grep -q '::1/128'") then
      pending("no IPv6 loopback on this machine")
      return
    end
    local lj = h.start('tcp6 = { type = "syslog_input", address = "tcp://[::1]:0" }\n' .. output)
    assert.matches("^tcp://%[::1%]:%d+$", lj.address.tcp6)
    assert.is_true(h.sh(lj.dir, "logger -T -n ::1 -P " .. lj.port.tcp6 .. " --rfc3164 -t six over ipv6"))
    assert.is_true(h.wait_records(lj, 1))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("::1", r.records[1]["fromhost-ip"])
    assert.matches("six: over ipv6$", r.records[1].message)
    h.cleanup(lj.dir)
  end)
end)

describe("syslog_input's start", function()
  it("fails at once, naming the address, when it is in use", function()
    local lj = h.start('first = { type = "syslog_input", address = "tcp://127.0.0.1:0" }\n' .. output)
    local status, stderr = run_config('second = { type = "syslog_input", address = "'
      .. lj.address.first .. '" }\n' .. output)
    assert.are.equal(1, status)
    assert.matches("config.lua:1: input 'second': cannot listen on " .. lj.address.first:gsub("%p", "%%%0")
      .. ": address already in use", stderr)
    h.stop(lj)
    h.cleanup(lj.dir)
  end)

  it("replaces a stale socket file but not a live socket or another file", function()
    local lj = h.start('devlog = { type = "syslog_input", address = "unix:$DIR/log.sock" }\n' .. output)
    local path = lj.path.devlog
    local status, stderr = run_config('again = { type = "syslog_input", address = "unix:' .. path .. '" }\n' .. output)
    assert.are.equal(1, status)
    assert.matches("is in use by another process", stderr)
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    -- Its socket file is gone with it; a regular file in the way is kept.
    assert.is_nil(h.read(path))
    h.write(path, "not a socket")
    status, stderr = run_config('again = { type = "syslog_input", address = "unix:' .. path .. '" }\n' .. output)
    assert.are.equal(1, status)
    assert.matches("exists and is not a socket", stderr)
    assert.are.equal("not a socket", h.read(path))
    h.cleanup(lj.dir)
  end)

  it("names what is wrong in its keys (--check)", function()
    local function check(keys)
      local _, stderr = run_config("s = { type = \"syslog_input\", " .. keys .. " }\n" .. output, "--check")
      return stderr
    end
    assert.matches("input 's' %(syslog_input%): key 'address' is required", check(""))
    assert.matches("must start with tcp://, tls://, udp://, unix: or unix%-stream:", check("address = 'http://x:1'"))
    assert.matches("the port must be a number from 0 to 65535", check("address = 'tcp://127.0.0.1:99999'"))
    assert.matches("the host must be an IPv4 address, %[IPv6%] or %*", check("address = 'udp://example.org:514'"))
    assert.matches("key 'tls' is required for a tls:// address", check("address = 'tls://127.0.0.1:6514'"))
    assert.matches("key 'tls' is for tls:// addresses only",
                   check("address = 'tcp://127.0.0.1:1', tls = { cert = 'c', key = 'k' }"))
    assert.matches("verify_client needs ca",
                   check("address = 'tls://127.0.0.1:1', tls = { cert = 'c', key = 'k', verify_client = true }"))
    assert.matches("key 'framing' must be \"auto\", \"octet_counted\" or \"newline\", not \"lines\"",
                   check("address = 'tcp://127.0.0.1:1', framing = 'lines'"))
    assert.matches("key 'socket_mode' must be octal permissions",
                   check("address = 'unix:/tmp/x', socket_mode = '0999'"))
    assert.matches("key 'max_connections_per_address' must be at least 1",
                   check("address = 'tcp://127.0.0.1:1', max_connections_per_address = 0"))
    assert.matches("key 'max_conections' is unknown %(did you mean 'max_connections'%?%)",
                   check("address = 'tcp://127.0.0.1:1', max_conections = 5"))
  end)

  it("names a TLS certificate that does not load", function()
    local status, stderr = run_config('s = { type = "syslog_input", address = "tls://127.0.0.1:0",'
      .. ' tls = { cert = "/nonexistent/cert.pem", key = "/nonexistent/key.pem" } }\n' .. output)
    assert.are.equal(1, status)
    assert.matches("input 's': tls.cert /nonexistent/cert.pem", stderr)
  end)
end)
