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

-- A TCP port free on 127.0.0.1 a moment ago.
function rh.port()
  return tonumber(io.popen("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); " ..
    "print(s.getsockname()[1])\""):read("*l"))
end

return rh
