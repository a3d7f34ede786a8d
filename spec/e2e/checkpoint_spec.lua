-- Checkpoints of file inputs, through the binary: a restart resumes where
-- the acknowledged records end, a replaced or truncated file is read from
-- the start, and after kill -9 nothing is lost and the duplicates stay
-- within the documented bound.
local run = dofile("spec/e2e/run.lua")

local config = [[
lumberjit = { state_dir = "state", checkpoint_interval_ms = %d, dead_letter_path = "dead.log",
              memory_budget = 8e6 }
file = { type = "file_input", path = "in.log", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua" }
payload = { type = "encoder", filename = "encoders/payload.lua" }
out = { type = "file_output", path = "out.log", encoder = "payload", message_matcher = "TRUE" }
]]

local function numbered(from, to, width)
  local out = {}
  for i = from, to do out[#out + 1] = string.format("line %08d %s", i, string.rep("z", (i * 13) % (width or 1))) end
  return table.concat(out, "\n") .. "\n"
end

-- Runs lumberjit in dir (once per call); returns its status and stderr.
local function run_in(dir)
  local status = tonumber(io.popen(string.format("cd %s && timeout -s KILL 120 %s -c config.lua 2> stderr; echo $?",
    run.quote(dir), run.quote(run.bin))):read("*l"))
  return status, run.read(dir .. "/stderr")
end

local function setup(interval)
  local dir = run.tmpdir()
  os.execute("mkdir " .. dir .. "/state")
  run.write(dir .. "/config.lua", config:format(interval or 1000))
  return dir
end

describe("checkpoints", function()
  it("resume after the last acknowledged line, and take new lines only", function()
    local dir = setup()
    run.write(dir .. "/in.log", numbered(1, 1000))
    assert.are.equal(0, (run_in(dir)))
    assert.matches("offset " .. #numbered(1, 1000), run.read(dir .. "/state/checkpoints"))
    local status, stderr = run_in(dir)
    assert.are.equal(0, status)
    assert.matches("resuming in.log at offset", stderr)
    assert.matches("input 'file': 0 records", stderr)
    local f = io.open(dir .. "/in.log", "a")
    f:write(numbered(1001, 1010))
    f:close()
    run_in(dir)
    assert.are.equal(numbered(1, 1010), run.read(dir .. "/out.log"))
    run.cleanup(dir)
  end)

  it("read a replaced or truncated file from the start", function()
    local dir = setup()
    run.write(dir .. "/in.log", numbered(1, 100))
    run_in(dir)
    os.execute("cd " .. dir .. " && mv in.log old.log && printf 'new one\\n' > in.log")
    local status, stderr = run_in(dir)
    assert.are.equal(0, status)
    assert.matches("is not the file it was taken of", stderr)
    assert.matches("input 'file': 1 records", stderr)
    os.execute("cd " .. dir .. " && : > in.log")  -- same file, truncated
    status, stderr = run_in(dir)
    assert.matches("is not the file it was taken of", stderr)
    run.cleanup(dir)
  end)

  -- A checkpoint that a power loss would keep must not cover records that
  -- only the page cache held: each save syncs the files it counts on, the
  -- output's and the dead letters', before it renames the state file. Seen
  -- with strace (-y names each descriptor's file), in the order the
  -- syscalls returned: a save takes what was acknowledged when it dups the
  -- output's descriptor (fcntl), and what was written before that must be
  -- synced before its rename; what is written after is the next save's.
  it("sync the output files before each save that counts on them", function()
    if os.execute("command -v strace > /dev/null") ~= 0 then
      return pending("needs strace")
    end
    local dir = setup(20)
    run.write(dir .. "/in.log", numbered(1, 300000, 40))
    -- LeakSanitizer cannot run under ptrace (an ASan build).
    local status = tonumber(io.popen(string.format(
      "cd %s && ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout -s KILL 120 " ..
      "strace -f -qq -y -o trace -e trace=write,writev,fcntl,fdatasync,fsync,rename %s -c config.lua 2> stderr; echo $?",
      run.quote(dir), run.quote(run.bin))):read("*l"))
    assert.are.equal(0, status, run.read(dir .. "/stderr"))
    -- A call strace split ("unfinished", then "resumed") counts at its
    -- resumption, with the file named at its start.
    local started, wrote, must_sync = {}, false, false
    local saves, unsynced_saves, syncs, syncs_before_last_save = 0, 0, 0, 0
    for line in run.read(dir .. "/trace"):gmatch("[^\n]+") do
      local pid, rest = line:match("^(%d+)%s+(.*)$")
      local call, file
      if rest:match("<unfinished %.%.%.>$") then
        started[pid] = rest
      else
        if rest:match("^<%.%.%. %w+ resumed>") then rest = (started[pid] or "") .. rest end
        call, file = rest:match("^(%w+)%(%d+<([^>]*)>")
        call = call or rest:match("^(%w+)%(")
      end
      local out = file and file:match("/out%.log$")
      if (call == "write" or call == "writev") and out then
        wrote = true
      elseif call == "fcntl" and out and rest:match("F_DUPFD") then
        must_sync = must_sync or wrote
        wrote = false
      elseif (call == "fdatasync" or call == "fsync") and out then
        must_sync = false
        syncs = syncs + 1
      elseif call == "rename" and rest:match("checkpoints%.tmp") then
        saves = saves + 1
        if must_sync then unsynced_saves = unsynced_saves + 1 end
        syncs_before_last_save = syncs
      end
    end
    assert.is_true(saves >= 2, saves .. " saves")
    assert.is_true(syncs_before_last_save >= 1, "no sync of out.log before a save")
    assert.are.equal(0, unsynced_saves)
    run.cleanup(dir)
  end)

  it("lose nothing after kill -9, with duplicates within the bound", function()
    local dir = setup(1)
    local input = numbered(1, 1000000, 24)
    run.write(dir .. "/in.log", input)
    -- Kill it once more than half the output is written. On a loaded
    -- machine the watching shell may wake only after the run has ended:
    -- that try killed nothing, and the next starts afresh.
    local half = math.floor(#input * 0.6)
    local before
    for _ = 1, 3 do
      os.execute("cd " .. run.quote(dir) .. " && rm -f out.log state/checkpoints")
      os.execute(string.format([[cd %s && (timeout --foreground -s KILL 120 %s -c config.lua 2> stderr1 & pid=$!
        for i in $(seq 2000); do [ "$(stat -c %%s out.log 2>/dev/null || echo 0)" -ge %d ] && break; sleep 0.01; done
        kill -KILL $(tr -dc 0-9 < /proc/$pid/task/$pid/children); wait $pid) 2>/dev/null]], run.quote(dir), run.quote(run.bin), half))
      before = #(run.read(dir .. "/out.log") or "")
      if before < #input then break end
    end
    assert.is_true(before >= half and before < #input, "killed at " .. before .. " of " .. #input .. " bytes")
    local status, stderr = run_in(dir)
    assert.are.equal(0, status)
    assert.matches("resuming in.log at offset", stderr)
    -- Every line at least once, in order, whole; the second run's lines
    -- repeat a tail of the first's at most.
    local out = run.read(dir .. "/out.log")
    local want = run.lines(input)
    local got = run.lines(out)
    local seen, torn, lost = {}, {}, {}
    for _, line in ipairs(got) do
      if not line:match("^line %d+ z*$") then torn[#torn + 1] = line end
      seen[line] = true
    end
    for _, line in ipairs(want) do
      if not seen[line] then lost[#lost + 1] = line end
    end
    assert.are.same({}, torn)
    assert.are.same({}, lost)
    local duplicate_bytes = #out - #input
    -- The bound (checkpoint.h): one read (1 MiB) and the output queues
    -- (memory_budget, 8 MiB here) in flight, plus checkpoint_interval_ms of
    -- acknowledged lines.
    assert.is_true(duplicate_bytes <= 10 * 1024 * 1024, duplicate_bytes .. " bytes duplicated")
    run.cleanup(dir)
  end)
end)
