-- The line-ending rule on syslog streams and datagrams (frame.h): the LF
-- that ends a message is no part of it, in an octet-counted frame too (as
-- rsyslog drops it), and neither is a CR just before it unless the input's
-- keep_cr = true.
local h = dofile("spec/e2e/syslog_harness.lua")

-- Records written as they are, one per line: an LF left in a message
-- shows as an empty line.
local raw_output = [[
lumberjit = { dead_letter_path = "dead.json" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]

local json_output = [[
lumberjit = { dead_letter_path = "dead.json" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.json", encoder = "json", message_matcher = "TRUE" }
]]

local function send(lj, address, text)
  h.write(lj.dir .. "/msg", text)
  local _, ok = h.raw_client(lj.dir, "send " .. address .. " msg")
  assert.is_true(ok, h.read(lj.dir .. "/client.err"))
end

local function octets(message)
  return #message .. " " .. message
end

describe("syslog_input's line endings", function()
  it("drops the LF that ends an octet-counted frame's message, as rsyslog does", function()
    local lj = h.start('tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0" }\n' .. raw_output)
    send(lj, lj.address.tcp, octets("<13>first\n") .. octets("<13>second\r\n") .. octets("<13>in\nside"))
    assert.is_true(h.wait_records(lj, 4, 30, "out.log"))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    assert.are.same({ "<13>first", "<13>second", "<13>in", "side" }, h.lines(lj, "out.log"))
    h.cleanup(lj.dir)
  end)

  it("keeps the CR before a message's ending LF only with keep_cr = true, on streams and datagrams", function()
    local inputs = {
      lines = 'address = "tcp://127.0.0.1:0"',
      lines_cr = 'address = "tcp://127.0.0.1:0", keep_cr = true',
      frames = 'address = "tcp://127.0.0.1:0"',
      frames_cr = 'address = "tcp://127.0.0.1:0", keep_cr = true',
      udp = 'address = "udp://127.0.0.1:0"',
      udp_cr = 'address = "udp://127.0.0.1:0", keep_cr = true',
    }
    local config = json_output
    for name, keys in pairs(inputs) do
      config = config .. name .. ' = { type = "syslog_input", ' .. keys .. ' }\n'
    end
    local lj = h.start(config)
    for _, name in ipairs({ "lines", "lines_cr" }) do
      send(lj, lj.address[name], "<13>crlf\r\n<13>in\rside\r\n")
    end
    for _, name in ipairs({ "udp", "udp_cr" }) do
      assert.is_true(h.sh(lj.dir, string.format("python3 -c \"import socket; s = socket.socket(socket.AF_INET, "
        .. "socket.SOCK_DGRAM); [s.sendto(m, ('127.0.0.1', %d)) for m in (b'<13>crlf\\r\\n', "
        .. "b'<13>in\\rside\\r\\n', b'<13>lf\\n')]\"", lj.port[name])))
    end
    for _, name in ipairs({ "frames", "frames_cr" }) do
      send(lj, lj.address[name], octets("<13>crlf\r\n") .. octets("<13>in\rside\r\n") .. octets("<13>lf\n"))
    end
    assert.is_true(h.wait_records(lj, 16))
    local r = h.stop(lj)
    assert.are.equal(0, r.status, r.stderr)
    local by_input = {}
    for _, record in ipairs(r.records) do
      by_input[record.inputname] = by_input[record.inputname] or {}
      table.insert(by_input[record.inputname], record.message)
    end
    assert.are.same({ "<13>crlf", "<13>in\rside" }, by_input.lines)
    assert.are.same({ "<13>crlf\r", "<13>in\rside\r" }, by_input.lines_cr)
    assert.are.same({ "<13>crlf", "<13>in\rside", "<13>lf" }, by_input.frames)
    assert.are.same({ "<13>crlf\r", "<13>in\rside\r", "<13>lf" }, by_input.frames_cr)
    assert.are.same({ "<13>crlf", "<13>in\rside", "<13>lf" }, by_input.udp)
    assert.are.same({ "<13>crlf\r", "<13>in\rside\r", "<13>lf" }, by_input.udp_cr)
    h.cleanup(lj.dir)
  end)
end)
