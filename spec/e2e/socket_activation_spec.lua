-- Socket activation (src/core/systemd_listen.h): lumberjit started by
-- Debian's systemd-socket-activate, which binds the sockets, passes them as
-- systemd does (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES) and execs lumberjit
-- once a first connection comes. systemd-socket-activate's -d makes every
-- socket of one invocation a datagram one, so one invocation binds the
-- stream sockets and execs a second, which passes them on beside the
-- datagram sockets it binds. All on 127.0.0.1 and in the spec's directory.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")

local ACTIVATE = "systemd-socket-activate"

-- it(), pending where systemd-socket-activate is not installed.
local function it_activated(title, body)
  it(title, function()
    local ok = os.execute("command -v " .. ACTIVATE .. " >/dev/null")
    if ok ~= true and ok ~= 0 then
      pending(ACTIVATE .. " is not installed (Debian's systemd package)")
      return
    end
    body()
  end)
end


local function listener(name, address)
  return string.format('%s = { type = "syslog_input", address = "%s", decoder = "rfc5424" }\n', name, address)
end

-- logger sends each line of `lines` as a message.
local function logger(dir, args, lines)
  h.write(dir .. "/logger.in", table.concat(lines, "\n") .. "\n")
  assert.is_true(h.sh(dir, "timeout -s KILL 30 logger --socket-errors=on --rfc5424 -t activated " .. args
    .. " < logger.in 2>> logger.err"), h.read(dir .. "/logger.err"))
end

-- Runs lumberjit on `config` ($DIR: its directory) under systemd-socket-
-- activate with the sockets `stream` and `dgram` (lists of { name, address
-- as -l takes it }) passed; it starts at the first message logger sends to
-- stream[1], which it waits for. Returns lj, for h.stop.
local function activated(config, stream, dgram)
  local dir = h.tmpdir()
  local function listen(sockets)
    local args, names = {}, {}
    for _, s in ipairs(sockets) do
      args[#args + 1] = "-l " .. h.quote((s[2]:gsub("%$DIR", dir)))
      names[#names + 1] = s[1]
    end
    return table.concat(args, " "), names
  end
  local stream_args, names = listen(stream)
  local dgram_args, dgram_names = listen(dgram)
  for _, n in ipairs(dgram_names) do names[#names + 1] = n end
  h.write(dir .. "/config.lua", (config:gsub("%$DIR", dir)) .. h.common_config)
  -- The second invocation names every descriptor, those it passes on too.
  h.spawn(dir, "lumberjit", string.format("%s %s --fdname=%s %s -d %s --fdname=%s %s -c config.lua",
    ACTIVATE, stream_args, table.concat(names, ":"), ACTIVATE, dgram_args, table.concat(names, ":"),
    h.quote(run.bin)), 120)
  local lj = { dir = dir }
  -- systemd-socket-activate is listening once it says so; the message then
  -- waits in the kernel's queue for lumberjit to start and accept it.
  assert(h.wait_until(function()
    local _, n = (h.read(dir .. "/lumberjit.err") or ""):gsub("Listening on", "")
    return n >= #stream
  end, 10), h.read(dir .. "/lumberjit.err"))
  logger(dir, "-T -n 127.0.0.1 -P " .. stream[1][2]:match(":(%d+)$"), { "first" })
  assert(h.wait_until(function()
    return (h.read(dir .. "/lumberjit.err") or ""):find("lumberjit: input '[^']+': listening on")
  end, 20), h.read(dir .. "/lumberjit.err"))
  return lj
end

describe("socket activation", function()
  it_activated("adopts the TCP, UDP and Unix sockets systemd passes, and closes with a warning one no input takes", function()
    local tcp, udp, extra = run.free_ports(3)
    local lj = activated(listener("tcp", "tcp://127.0.0.1:" .. tcp) .. listener("udp", "udp://127.0.0.1:" .. udp)
      .. listener("stream", "unix-stream:$DIR/stream.sock") .. listener("dgram", "unix:$DIR/dgram.sock"),
      { { "syslog-tcp", "127.0.0.1:" .. tcp }, { "syslog-stream", "$DIR/stream.sock" },
        { "spare", "127.0.0.1:" .. extra } },
      { { "syslog-udp", "127.0.0.1:" .. udp }, { "syslog-dgram", "$DIR/dgram.sock" } })
    logger(lj.dir, "-T -n 127.0.0.1 -P " .. tcp, h.numbered("tcp", 20))
    logger(lj.dir, "-d -n 127.0.0.1 -P " .. udp, h.numbered("udp", 20))
    logger(lj.dir, "-T -u " .. h.quote(lj.dir .. "/stream.sock"), h.numbered("stream", 20))
    logger(lj.dir, "-d -u " .. h.quote(lj.dir .. "/dgram.sock"), h.numbered("dgram", 20))
    assert.is_true(h.wait_records(lj, 81), h.read(lj.dir .. "/lumberjit.err"))
    -- The spare socket is closed: nothing accepts there any more.
    assert.is_false(h.sh(lj.dir, "timeout 5 python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "
      .. extra .. "))' 2>/dev/null"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({}, r.dead)
    assert.are.same({ tcp = 21, udp = 20, stream = 20, dgram = 20 }, h.count(r.records, "inputname"))
    assert.are.same({ "first" }, h.values(r.records, "message", "^first$"))
    for _, name in ipairs({ "tcp", "udp", "stream", "dgram" }) do
      assert.are.same(h.numbered(name, 20), h.values(r.records, "message", "^" .. name .. " "))
    end
    local dir = lj.dir:gsub("%p", "%%%0")
    assert.matches("input 'tcp': listening on tcp://127%.0%.0%.1:" .. tcp .. " %(socket 'syslog%-tcp' passed by systemd%)",
      r.stderr)
    assert.matches("input 'udp': listening on udp://127%.0%.0%.1:" .. udp .. " %(socket 'syslog%-udp' passed by systemd%)",
      r.stderr)
    assert.matches("input 'stream': listening on unix%-stream:" .. dir .. "/stream%.sock %(socket 'syslog%-stream'", r.stderr)
    assert.matches("input 'dgram': listening on unix:" .. dir .. "/dgram%.sock %(socket 'syslog%-dgram'", r.stderr)
    assert.matches("warning lumberjit: systemd passed socket 'spare' %(fd %d+, stream 127%.0%.0%.1:" .. extra
      .. "%), which no input listens on: it is closed", r.stderr)
    -- The socket files are systemd's: lumberjit leaves them.
    assert.is_true(h.sh(lj.dir, "test -S stream.sock && test -S dgram.sock"))
    h.cleanup(lj.dir)
  end)

  it_activated("binds an input's address that systemd did not pass, as without it", function()
    local tcp, own = run.free_ports(2)
    local lj = activated(listener("tcp", "tcp://127.0.0.1:" .. tcp) .. listener("own", "udp://127.0.0.1:" .. own),
      { { "syslog-tcp", "127.0.0.1:" .. tcp } }, {})
    logger(lj.dir, "-d -n 127.0.0.1 -P " .. own, h.numbered("own", 5))
    assert.is_true(h.wait_records(lj, 6), h.read(lj.dir .. "/lumberjit.err"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ tcp = 1, own = 5 }, h.count(r.records, "inputname"))
    assert.matches("input 'own': listening on udp://127%.0%.0%.1:" .. own .. "\n", r.stderr)
    assert.is_nil(r.stderr:find("no input listens on", 1, true))
    h.cleanup(lj.dir)
  end)
end)

describe("socket activation and a reload", function()
  -- The next pipeline's input takes the socket again: lumberjit kept it,
  -- where binding the port itself could fail (514 without the capability).
  it_activated("goes on listening on the passed socket after a reload", function()
    local tcp = run.free_ports()
    local lj = activated(listener("tcp", "tcp://127.0.0.1:" .. tcp), { { "syslog-tcp", "127.0.0.1:" .. tcp } }, {})
    logger(lj.dir, "-T -n 127.0.0.1 -P " .. tcp, h.numbered("before", 5))
    assert.is_true(h.wait_records(lj, 6), h.read(lj.dir .. "/lumberjit.err"))
    h.write(lj.dir .. "/config.lua", h.read(lj.dir .. "/config.lua"):gsub('decoder = "rfc5424"',
      'decoder = "rfc5424", max_connections = 500'))
    h.signal(lj.dir, "lumberjit", "HUP")
    assert(h.wait_until(function()
      return (h.read(lj.dir .. "/lumberjit.err") or ""):find("reload: running the new configuration", 1, true)
    end, 20), h.read(lj.dir .. "/lumberjit.err"))
    logger(lj.dir, "-T -n 127.0.0.1 -P " .. tcp, h.numbered("after", 5))
    assert.is_true(h.wait_records(lj, 11), h.read(lj.dir .. "/lumberjit.err"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same(h.numbered("after", 5), h.values(r.records, "message", "^after "))
    local _, taken = r.stderr:gsub("input 'tcp': listening on tcp://127%.0%.0%.1:" .. tcp
      .. " %(socket 'syslog%-tcp' passed by systemd%)", "")
    assert.are.equal(2, taken, r.stderr)
    h.cleanup(lj.dir)
  end)
end)

describe("without socket activation", function()
  -- LISTEN_FDS left by a parent for itself (LISTEN_PID another process's)
  -- is not lumberjit's: descriptor 3 is left alone and every input binds.
  it("binds every input, and takes no descriptor passed to another process", function()
    local dir = h.tmpdir()
    h.write(dir .. "/config.lua", listener("tcp", "tcp://127.0.0.1:0") .. h.common_config)
    h.spawn(dir, "lumberjit", "env LISTEN_PID=1 LISTEN_FDS=1 LISTEN_FDNAMES=x " .. h.quote(run.bin)
      .. " -c config.lua 3</dev/null", 120)
    local port
    assert(h.wait_until(function()
      port = (h.read(dir .. "/lumberjit.err") or ""):match("input 'tcp': listening on tcp://127%.0%.0%.1:(%d+)\n")
      return port
    end, 20), h.read(dir .. "/lumberjit.err"))
    local lj = { dir = dir }
    logger(dir, "-T -n 127.0.0.1 -P " .. port, h.numbered("bound", 3))
    assert.is_true(h.wait_records(lj, 3))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same(h.numbered("bound", 3), h.values(r.records, "message"))
    assert.is_nil(r.stderr:find("systemd", 1, true), r.stderr)
    h.cleanup(dir)
  end)

  -- So a privileged port is no error either, whoever runs it.
  it("--check binds nothing: a port another process holds is no error", function()
    local dir = h.tmpdir()
    h.write(dir .. "/config.lua", listener("tcp", "tcp://127.0.0.1:PORT") .. h.common_config)
    -- A listener holds the port while --check runs.
    h.spawn(dir, "holder", "python3 -c 'import socket, time; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
      .. "s.listen(); open(\"port\", \"w\").write(str(s.getsockname()[1])); time.sleep(60)'", 70)
    assert(h.wait_until(function() return (h.read(dir .. "/port") or ""):match("%d+") end, 10))
    local config = h.read(dir .. "/config.lua"):gsub("PORT", h.read(dir .. "/port"))
    h.write(dir .. "/config.lua", config)
    local r = run.in_dir(dir, "--check -c config.lua")
    h.terminate(dir, "holder", 5)
    h.cleanup(dir)
    assert.are.equal(0, r.status, r.stderr)
    assert.matches("configuration OK", r.stdout)
  end)
end)
