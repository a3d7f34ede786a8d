-- What the reload specs share: lumberjit run in the background in a
-- directory, signalled, watched and stopped.
--
--   local rh = dofile("spec/e2e/reload_harness.lua")
--   local proc = rh.start(dir, finally) -- dir/config.lua; stderr in dir/stderr
--   rh.signal(proc, "HUP"); rh.wait_for(dir, "stderr", "running the new")
--   assert.are.equal(0, rh.stop(proc))
local run = dofile("spec/e2e/run.lua")

local rh = {}

-- Starts lumberjit in the background in dir with config.lua, its stderr in
-- dir/stderr and, once it exits, its status in dir/status; returns
-- {pid, dir, also}. A spec that fails before it stops the run kills it:
-- pass busted's `finally`, which a file run by dofile does not see. A
-- test has one finally: proc.also(fn) adds fn to what it runs.
function rh.start(dir, finally)
  os.execute(string.format("cd %s && { %s -c config.lua > stdout 2> stderr & echo $! > pid; " ..
    "wait $!; echo $? > status; } &", run.quote(dir), run.quote(run.bin)))
  local pid
  for _ = 1, 100 do
    pid = tonumber(run.read(dir .. "/pid") or "")
    if pid then break end
    os.execute("sleep 0.05")
  end
  local after = {}
  finally(function()
    if not run.read(dir .. "/status") then os.execute(string.format("kill -9 %d 2>/dev/null", pid)) end
    for _, fn in ipairs(after) do fn() end
  end)
  return {pid = pid, dir = dir, also = function(fn) after[#after + 1] = fn end}
end

function rh.signal(proc, sig)
  os.execute(string.format("kill -%s %d", sig, proc.pid))
end

-- How many times text holds `plain` (no pattern).
function rh.count(text, plain)
  local n, at = 0, 1
  while true do
    local i, j = (text or ""):find(plain, at, true)
    if not i then return n end
    n, at = n + 1, j + 1
  end
end

-- Waits (up to 20 s) until dir/name holds `text` n times (default once);
-- true when it does.
function rh.wait_for(dir, name, text, n)
  for _ = 1, 400 do
    if rh.count(run.read(dir .. "/" .. name), text) >= (n or 1) then return true end
    os.execute("sleep 0.05")
  end
  return false
end

-- Stops the run; its exit status (nil: it did not exit in 30 s).
function rh.stop(proc)
  rh.signal(proc, "TERM")
  for _ = 1, 600 do
    local status = tonumber(run.read(proc.dir .. "/status") or "")
    if status then return status end
    os.execute("sleep 0.05")
  end
end

-- dir/dec.lua: a decoder whose messages are the syslog record without its
-- "<PRI>", after its setting `tag` and a space: "b p 12" shows which
-- configuration's decoder made it.
function rh.write_tagger(dir)
  run.write(dir .. "/dec.lua", "local tag = read_config('tag')\n" ..
    "function process_message(r) inject_message({Payload = tag .. ' ' .. r:sub(5)}) return 0 end\n")
end

-- A reader of the FIFO dir/out.fifo, appending what it reads to
-- dir/out.log, which the spec can stop (kill -STOP) to hold an output's
-- writes; its PID, once it has the FIFO open. It never sees an end, as it
-- opens the FIFO for writing too: a pipeline that closes it and the next
-- one that opens it again write to the same reader.
function rh.fifo_reader(dir)
  os.execute("mkfifo " .. run.quote(dir .. "/out.fifo"))
  local pid = tonumber(io.popen(string.format("cd %s && { python3 -c " ..
    "\"import os\nfd = os.open('out.fifo', os.O_RDWR)\nout = open('out.log', 'ab', 0)\nopen('reading', 'w')\n" ..
    "while True: out.write(os.read(fd, 65536))\" > /dev/null 2>&1 & echo $!; }", run.quote(dir))):read("*l"))
  for _ = 1, 400 do
    if run.read(dir .. "/reading") then break end
    os.execute("sleep 0.05")
  end
  return pid
end

-- Sends "<13>" and each line of the Python list expression `lines` on
-- one TCP connection to 127.0.0.1:port, and closes it once the server
-- has read it all.
function rh.send(port, lines)
  local ok = os.execute(string.format("python3 -c \"import socket; c = socket.create_connection(('127.0.0.1', %d)); " ..
    "c.sendall(b''.join(b'<13>%%s\\n' %% l.encode() for l in %s)); c.shutdown(socket.SHUT_WR); c.recv(1)\"",
    port, lines))
  assert(ok == true or ok == 0, "sending failed")
end

-- A run whose reload cannot end yet: a TCP listener whose messages go,
-- through the tagging decoder, to a FIFO whose reader is stopped, with
-- 2000 messages of 130 bytes ("x ID yyy...", more than the pipe holds)
-- read. Returns {proc, port, config = function(tag), go_on = function()},
-- go_on letting the reader go on.
function rh.held_output_run(dir, finally)
  local port = rh.port()
  local r = {port = port}
  function r.config(tag)
    run.write(dir .. "/config.lua", string.format([[
lumberjit = { state_dir = "state" }
tcp = { type = "syslog_input", address = "tcp://127.0.0.1:%d", decoder = "dec" }
dec = { type = "decoder", filename = "dec.lua", tag = "%s" }
out = { type = "file_output", path = "out.fifo", message_matcher = "TRUE" }
]], port, tag))
  end
  rh.write_tagger(dir)
  r.config("a")
  local reader = rh.fifo_reader(dir)
  r.proc = rh.start(dir, finally)
  r.proc.also(function() os.execute("kill -9 " .. reader .. " 2>/dev/null") end)
  assert(rh.wait_for(dir, "stderr", "listening on tcp://127.0.0.1"), run.read(dir .. "/stderr"))
  os.execute("kill -STOP " .. reader)
  rh.send(port, "['x %d %s' % (i, 'y' * 120) for i in range(1, 2001)]")
  function r.go_on() os.execute("kill -CONT " .. reader) end
  return r
end

-- The 2000 lines of held_output_run, tagged "a", are lines 1-2000.
function rh.held_lines_arrived(lines)
  for i = 1, 2000 do
    if lines[i] ~= string.format("a x %d %s", i, ("y"):rep(120)) then return false end
  end
  return true
end

-- A TCP port free on 127.0.0.1 now (run.free_ports).
function rh.port()
  return (run.free_ports())
end

return rh
