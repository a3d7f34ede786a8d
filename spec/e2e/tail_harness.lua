-- Helpers the tail_input specs share: a directory with logs/ and state/,
-- lumberjit run in the background there, waits on its output.
local run = dofile("spec/e2e/run.lua")

local h = { run = run }

local config = [[
lumberjit = { %s checkpoint_interval_ms = 50, dead_letter_path = "dead.log" }
app = { type = "tail_input", paths = { %s }, scan_interval_ms = 50, rotate_wait_ms = 500,
        last_line_timeout_ms = %d, idle_close_ms = %d %s }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]

function h.sh(dir, cmd)
  return os.execute("cd " .. run.quote(dir) .. " && (" .. cmd .. ")")
end

function h.sleep(s)
  os.execute("sleep " .. s)
end

-- A directory with logs/, state/ and a config tailing the given patterns;
-- opts: last_line_timeout_ms, idle_close_ms, extra (more keys of the
-- input), global (more keys of `lumberjit`, each ending in a comma),
-- no_state (no state_dir).
function h.setup(patterns, opts)
  opts = opts or {}
  local dir = run.tmpdir()
  h.sh(dir, "mkdir logs state")
  local quoted = {}
  for i, p in ipairs(patterns) do quoted[i] = string.format("%q", p) end
  run.write(dir .. "/config.lua", config:format((opts.no_state and "" or 'state_dir = "state",') .. (opts.global or ""),
    table.concat(quoted, ", "), opts.last_line_timeout_ms or 1000, opts.idle_close_ms or 60000,
    opts.extra or ""))
  return dir
end

-- Starts lumberjit in the background and returns once it is ready;
-- `pid` holds the pid of the timeout wrapping it, which passes SIGTERM on
-- (once: --foreground, see syslog_harness.lua's spawn).
-- opts.prefix runs first in the shell that execs it (a ulimit); opts.wrap
-- is a command that runs it (setpriv).
function h.start(dir, opts)
  opts = opts or {}
  h.listen_for_ready(dir)
  h.sh(dir, string.format("(sh -c 'NOTIFY_SOCKET=\"$PWD/notify.sock\"; export NOTIFY_SOCKET; %s echo $$ > pid; "
    .. "exec %s timeout --foreground -s KILL 60 %s -c config.lua' 2>> stderr; echo $? > status) &",
    opts.prefix or "", opts.wrap or "", run.quote(run.bin)))
  h.wait_ready(dir)
end

function h.lumberjit_pid(dir)
  local wrapper = (run.read(dir .. "/pid") or ""):match("%d+")
  return wrapper and (run.read("/proc/" .. wrapper .. "/task/" .. wrapper .. "/children") or ""):match("%d+")
end

-- Seconds lumberjit has to get ready (qemu-user needs about a second,
-- more on a loaded machine).
h.ready_seconds = tonumber(os.getenv("TAIL_READY_SECONDS")) or 30

local notify_ready = run.root .. "/spec/e2e/notify_ready.py"

local function exists(dir, test)
  local ok = os.execute("cd " .. run.quote(dir) .. " && test " .. test)
  return ok == true or ok == 0
end

-- Binds dir/notify.sock, systemd's end of sd_notify, for the next start
-- (NOTIFY_SOCKET names it): notify_ready.py writes dir/ready once
-- lumberjit says READY=1 there.
function h.listen_for_ready(dir)
  h.sh(dir, string.format("rm -f status pid ready notify.sock; python3 %s notify.sock ready %d > notify.log 2>&1 &",
    run.quote(notify_ready), h.ready_seconds))
  for _ = 1, 500 do
    if exists(dir, "-S notify.sock") then return end
    h.sleep(0.02)
  end
  error("notify_ready.py did not bind " .. dir .. "/notify.sock within 10 s")
end

-- Waits until lumberjit says READY=1 on NOTIFY_SOCKET, as systemd does:
-- it says so once every input started (src/cli/service.c), so a
-- tail_input's first scan is over, the files it found start at their end
-- (or checkpoint), and SIGTERM stops the run rather than killing it.
-- (Catching SIGTERM, /proc/PID/status's SigCgt, is no sign under
-- qemu-user, which catches every signal from its first instruction.)
function h.wait_ready(dir)
  local deadline = os.time() + h.ready_seconds + 1
  repeat
    if run.read(dir .. "/ready") then return end
    local status = run.read(dir .. "/status")
    if status and status:match("%d") then
      error(string.format("lumberjit exited (status %s) before it said READY=1; its log:\n%s",
        status:match("%d+"), run.read(dir .. "/stderr") or ""))
    end
    h.sleep(0.02)
  until os.time() > deadline
  error(string.format("lumberjit did not say READY=1 on NOTIFY_SOCKET within %d s; its log:\n%s",
    h.ready_seconds, run.read(dir .. "/stderr") or ""))
end

function h.wait_status(dir)
  for _ = 1, 600 do
    local status = run.read(dir .. "/status")
    if status and status:match("%d") then return tonumber(status:match("%d+")) end
    h.sleep(0.05)
  end
  error("lumberjit did not stop")
end

function h.stop(dir)
  h.sleep(0.3) -- the last lines are read
  h.sh(dir, "kill -TERM $(cat pid)")
  return h.wait_status(dir)
end

-- Waits until out.log holds at least n lines (at most 20 s).
function h.wait_lines(dir, n)
  for _ = 1, 400 do
    if #run.lines(run.read(dir .. "/out.log") or "") >= n then return end
    h.sleep(0.05)
  end
end

function h.count(lines)
  local seen = {}
  for _, line in ipairs(lines) do seen[line] = (seen[line] or 0) + 1 end
  return seen
end

-- How many lines of text match the Lua pattern.
h.count_matching = run.count

-- Compares what was delivered (got) with the lines written (want, each
-- line unique, in the order written): how many were lost, duplicated,
-- torn (delivered, never written whole) and out of order (a first
-- delivery before that of a line written earlier), with a few examples.
function h.check(want, got)
  local pos, seen, r = {}, {}, { lost = 0, dups = 0, torn = 0, disorder = 0, examples = {} }
  for i, line in ipairs(want) do pos[line] = i end
  local last = 0
  for _, line in ipairs(got) do
    if not pos[line] then
      r.torn = r.torn + 1
      r.examples[#r.examples + 1] = "torn: " .. line
    elseif seen[line] then
      r.dups = r.dups + 1
    else
      if pos[line] < last then r.disorder = r.disorder + 1 end
      last = math.max(last, pos[line])
    end
    seen[line] = true
  end
  for _, line in ipairs(want) do
    if not seen[line] then
      r.lost = r.lost + 1
      if #r.examples < 5 then r.examples[#r.examples + 1] = "lost: " .. line end
    end
  end
  r.text = string.format("%d lines written, %d delivered: %d lost, %d duplicated, %d torn, %d out of order; %s",
    #want, #got, r.lost, r.dups, r.torn, r.disorder, table.concat(r.examples, "; ", 1, math.min(5, #r.examples)))
  return r
end

-- Lines "<tag> <n> <padding>" for n = from..to, each `width` bytes with
-- its newline.
function h.numbered(tag, from, to, width)
  local out = {}
  for n = from, to do
    local line = string.format("%s %03d ", tag, n)
    out[#out + 1] = line .. string.rep("x", (width or 0) - #line - 1)
  end
  return out
end

function h.text(lines)
  return #lines > 0 and table.concat(lines, "\n") .. "\n" or ""
end

function h.append(path, text)
  local f = assert(io.open(path, "ab"))
  f:write(text)
  f:close()
end

return h
