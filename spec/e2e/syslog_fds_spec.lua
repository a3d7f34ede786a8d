-- syslog_input out of file descriptors (syslog_accept.c), under `ulimit -n
-- 256`: 400 clients that each connect and send a line. None is lost
-- without a count: connections wait in the kernel's queue until a
-- descriptor is free and are then served; those that wait longer than a
-- second are refused, counted and logged. libuv's uv_listen closed them
-- unread and uncounted (241 of 400 delivered, "0 refused").
local h = dofile("spec/e2e/syslog_harness.lua")

local config = 'tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0" }\n' .. h.common_config

-- 400 connections from 8 addresses (50 each, under
-- max_connections_per_address), each sending "<13>crowd I" as it opens;
-- they close once the file `go` exists.
local function crowd(lj)
  h.spawn(lj.dir, "crowd", string.format("python3 %s crowd %s 400 --hosts 8 --speak --go go", h.quote(h.client),
    lj.address.tcp), 120)
end

local function crowd_messages(records)
  local seen, n = {}, 0
  for _, r in ipairs(records) do
    local i = r.message:match("^<13>crowd (%d+)$")
    if i then
      assert.is_nil(seen[i], "twice: " .. r.message)
      seen[i], n = true, n + 1
    end
  end
  return n
end

describe("syslog_input out of file descriptors", function()
  it("serves connections that waited in the kernel's queue once descriptors are free", function()
    local lj = h.start(config, nil, { max_files = 256 })
    h.write(lj.dir .. "/go", "")
    crowd(lj)
    assert.are.equal(0, h.wait_exit(lj.dir, "crowd", 60), h.read(lj.dir .. "/crowd.err"))
    assert.is_true(h.wait_records(lj, 400))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(400, crowd_messages(r.records))
    assert.are.equal(400, h.summary(r.stderr, "tcp").connections)
    -- It did run short: the wait was logged.
    assert.matches("input 'tcp': file descriptors are down to the run's reserve %(limit 256, %d+ connections open, "
      .. "none silent%): new connections wait in the kernel's queue for one, at most 1000 ms", r.stderr)
    h.cleanup(lj.dir)
  end)

  it("refuses, counts and logs connections that waited too long, and serves new ones once descriptors are free", function()
    local lj = h.start(config, nil, { max_files = 256 })
    crowd(lj)
    -- Those served hold their descriptors until the refusal is logged.
    assert.is_true(h.wait_until(function()
      return (h.read(lj.dir .. "/lumberjit.err") or ""):find("no file descriptor came free within 1000 ms")
    end, 60), h.read(lj.dir .. "/lumberjit.err"))
    h.write(lj.dir .. "/go", "")
    assert.are.equal(0, h.wait_exit(lj.dir, "crowd", 60), h.read(lj.dir .. "/crowd.err"))
    h.write(lj.dir .. "/after", "<13>after\n")
    local _, ok = h.raw_client(lj.dir, "send " .. lj.address.tcp .. " after")
    assert.is_true(ok, h.read(lj.dir .. "/client.err"))
    assert.is_true(h.wait_until(function() return #h.values(h.records(lj), "message", "^<13>after$") == 1 end, 30))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local served, slots = crowd_messages(r.records), h.slots(r.stderr, "tcp")
    assert.is_true(slots.refused_fd > 0)
    assert.are.equal(400, served + slots.refused_fd)
    assert.are.equal(served + 1, h.summary(r.stderr, "tcp").connections)
    assert.matches("input 'tcp': refused a connection from 127%.0%.0%.%d+:%d+: no file descriptor came free within "
      .. "1000 ms %(limit 256, %d+ connections open%) %(1 so far", r.stderr)
    h.cleanup(lj.dir)
  end)
end)
