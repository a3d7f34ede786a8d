-- tail_input through the binary, with real writers and real logrotate:
-- every line a writer wrote arrives at least once, in order per file,
-- through rename and copytruncate rotation, truncation, deletion, idle
-- closing and a kill -9 in mid-stream.
local h = dofile("spec/e2e/tail_harness.lua")
local run, sh, sleep, setup, start, stop = h.run, h.sh, h.sleep, h.setup, h.start, h.stop
local wait_status, wait_lines, lumberjit_pid, count = h.wait_status, h.wait_lines, h.lumberjit_pid, h.count

-- A writer appending lines "<tag> <n>" from..to to file, reopening it for
-- every burst of 50 (as a logger that reopens after rotation does).
local function writer(dir, file, tag, from, to, pause)
  return string.format([[i=%d; while [ $i -le %d ]; do j=$((i+49)); [ $j -gt %d ] && j=%d
    seq -f '%s %%.0f' $i $j >> %s; i=$((j+1)); sleep %s; done]], from, to, to, to, tag, file, pause or 0.005)
end

-- Every line of want appears in got, in want's order (each line's first
-- arrival); returns how many more lines got has than want.
local function assert_all_in_order(want, got)
  local seen, first = count(got), {}
  local missing = {}
  for _, line in ipairs(want) do
    if not seen[line] then missing[#missing + 1] = line end
  end
  assert.are.same({}, missing)
  for i, line in ipairs(got) do first[line] = first[line] or i end
  for i = 2, #want do
    assert.is_true(first[want[i - 1]] < first[want[i]], want[i - 1] .. " arrived after " .. want[i])
  end
  return #got - #want
end

local function numbers(tag, from, to)
  local out = {}
  for i = from, to do out[#out + 1] = tag .. " " .. i end
  return out
end

-- Tails `pattern` while a writer writes "line 1" .. "line 20000" to
-- logs/app.log and real logrotate rotates it 5 times in `mode` (create or
-- copytruncate), keeping every rotated file; lumberjit has read them all
-- and stopped (status 0) when this returns the directory.
local function rotate_while_writing(pattern, mode)
  local dir = setup({ pattern })
  run.write(dir .. "/rotate.conf", dir .. "/logs/app.log {\n  rotate 50\n  " .. mode .. "\n  missingok\n}\n")
  run.write(dir .. "/logs/app.log", "")
  start(dir)
  sh(dir, "(" .. writer(dir, "logs/app.log", "line", 1, 20000) .. ") & w=$!; "
    .. "for k in 1 2 3 4 5; do sleep 0.3; logrotate -f -s lr.state rotate.conf; done; wait $w")
  wait_lines(dir, 20000)
  assert.are.equal(0, stop(dir))
  return dir
end

-- The paths of the files in dir/logs.
local function log_files(dir)
  local files = {}
  for name in io.popen("ls " .. run.quote(dir .. "/logs")):lines() do files[#files + 1] = dir .. "/logs/" .. name end
  return files
end

describe("tail_input", function()
  it("starts existing files at their end, reads new files from their head, and follows both", function()
    local dir = setup({ "logs/*.log" })
    run.write(dir .. "/logs/old.log", "before the start\n")
    start(dir)
    sh(dir, "echo appended >> logs/old.log; printf 'new 1\\nnew 2\\n' > logs/new.log")
    wait_lines(dir, 3)
    sh(dir, "echo 'new 3' >> logs/new.log")
    wait_lines(dir, 4)
    assert.are.equal(0, stop(dir))
    local got = run.lines(run.read(dir .. "/out.log"))
    assert.are.same({ appended = 1, ["new 1"] = 1, ["new 2"] = 1, ["new 3"] = 1 }, count(got))
    run.cleanup(dir)
  end)

  it("reads every line through logrotate's create rotation while a writer writes", function()
    local dir = rotate_while_writing("logs/app.log", "create")
    assert.is_true(#run.lines(run.read(dir .. "/logs/app.log.5") or "") > 0, "logrotate rotated 5 times")
    -- Every line once; in order per file (files are read side by side,
    -- so the old file's last lines may come after the new one's first).
    local got = run.lines(run.read(dir .. "/out.log"))
    assert.are.equal(20000, #got)
    local seen = count(got)
    for _, line in ipairs(numbers("line", 1, 20000)) do assert.are.equal(1, seen[line], line) end
    for _, file in ipairs(log_files(dir)) do assert_all_in_order(run.lines(run.read(file)), got) end
    run.cleanup(dir)
  end)

  it("reads every line through logrotate's copytruncate rotation while a writer writes", function()
    local dir = rotate_while_writing("logs/app.log*", "copytruncate")
    local stderr = run.read(dir .. "/stderr")
    assert.matches("was truncated", stderr)
    assert.matches("is a copy of", stderr)
    -- Lines written between logrotate's copy and its truncation that were
    -- read in time are read from the copy too: the only duplicates. Lines
    -- written in that window and not read yet are in no file (logrotate's
    -- own loss): all others arrive.
    local on_disk = {}
    for _, file in ipairs(log_files(dir)) do
      for _, line in ipairs(run.lines(run.read(file))) do on_disk[#on_disk + 1] = line end
    end
    local seen = count(run.lines(run.read(dir .. "/out.log")))
    local dups = 0
    for _, line in ipairs(on_disk) do
      assert.is_truthy(seen[line], line .. " is missing")
      dups = dups + seen[line] - 1
    end
    assert.is_true(#on_disk > 19000, #on_disk .. " lines on disk")
    assert.is_true(dups < 1000, dups .. " duplicates")
    run.cleanup(dir)
  end)

  it("reads a truncated file again from the start and a deleted one to its end", function()
    local dir = setup({ "logs/*.log" })
    run.write(dir .. "/logs/a.log", "")
    run.write(dir .. "/logs/b.log", "")
    start(dir)
    sh(dir, "printf 'a1\\na2\\na3\\n' >> logs/a.log; printf 'b1\\n' >> logs/b.log")
    wait_lines(dir, 4)
    -- b.log is held open by a writer, deleted, then written once more.
    sh(dir, "exec 3>>logs/b.log; rm logs/b.log; echo b2 >&3; : > logs/a.log; echo a4 >> logs/a.log")
    wait_lines(dir, 6)
    assert.are.equal(0, stop(dir))
    assert.matches("a.log was truncated", run.read(dir .. "/stderr"))
    assert.are.same({ a1 = 1, a2 = 1, a3 = 1, a4 = 1, b1 = 1, b2 = 1 },
                    count(run.lines(run.read(dir .. "/out.log"))))
    run.cleanup(dir)
  end)

  it("reads a lone write at once, a busy file at most every read_interval_ms, and all of it at a stop", function()
    -- No state_dir: what the stop left unread would be lost for good.
    local dir = setup({ "logs/*.log" }, { extra = ", read_interval_ms = 4000, scan_interval_ms = 60000", no_state = true })
    run.write(dir .. "/logs/app.log", "")
    start(dir)
    sh(dir, "echo one >> logs/app.log")
    wait_lines(dir, 1) -- a lone write: read at once, well before 4 s
    assert.are.same({ "one" }, run.lines(run.read(dir .. "/out.log")))
    sh(dir, "echo two >> logs/app.log")
    sleep(1) -- inside the rest after the first batch: not read yet
    assert.are.same({ "one" }, run.lines(run.read(dir .. "/out.log")))
    wait_lines(dir, 2) -- the next batch
    sh(dir, "echo three >> logs/app.log; echo four >> logs/app.log")
    assert.are.equal(0, stop(dir))
    assert.are.same({ "one", "two", "three", "four" }, run.lines(run.read(dir .. "/out.log")))
    run.cleanup(dir)
  end)

  it("closes idle files, reopens them when they grow, and holds back an unfinished last line", function()
    local dir = setup({ "logs/*.log" }, { idle_close_ms = 200, last_line_timeout_ms = 60000 })
    run.write(dir .. "/logs/a.log", "")
    start(dir)
    sh(dir, "echo one >> logs/a.log")
    wait_lines(dir, 1)
    sleep(0.6)
    local pid = lumberjit_pid(dir)
    local fds = io.popen("ls -l /proc/" .. pid .. "/fd"):read("*a")
    assert.is_nil(fds:find("a.log", 1, true), "a.log is closed when idle")
    sh(dir, "printf 'two\\nthr' >> logs/a.log")
    wait_lines(dir, 2)
    assert.are.equal(0, stop(dir))
    -- "thr" has no newline: held back, its offset not acknowledged.
    sh(dir, "echo ee >> logs/a.log")
    start(dir)
    wait_lines(dir, 3)
    assert.are.equal(0, stop(dir))
    assert.are.same({ "one", "two", "three" }, run.lines(run.read(dir .. "/out.log")))
    run.cleanup(dir)
  end)

  it("finishes a symlink's old target and follows the new one", function()
    local dir = setup({ "logs/current" })
    sh(dir, "printf 'a1\\n' > logs/a && ln -s a logs/current")
    start(dir)
    sh(dir, "printf 'a2\\n' >> logs/a")
    wait_lines(dir, 1)
    -- The writer still appends to the old target for a moment.
    sh(dir, "printf 'b1\\n' > logs/b && ln -sfn b logs/current && sleep 0.2 && echo a3 >> logs/a && echo b2 >> logs/b")
    wait_lines(dir, 4)
    assert.are.equal(0, stop(dir))
    assert.are.same({ a2 = 1, a3 = 1, b1 = 1, b2 = 1 }, count(run.lines(run.read(dir .. "/out.log"))))
    run.cleanup(dir)
  end)

  it("reads more files than max_open_files in turn, closing idle ones", function()
    local dir = setup({ "logs/*.log" }, { idle_close_ms = 100, extra = ", max_open_files = 2" })
    start(dir)
    for i = 1, 5 do sh(dir, string.format("printf 'm%d\\n' > logs/%d.log", i, i)) end
    wait_lines(dir, 5)
    sh(dir, "echo m6 >> logs/1.log")
    wait_lines(dir, 6)
    assert.are.equal(0, stop(dir))
    assert.are.same({ m1 = 1, m2 = 1, m3 = 1, m4 = 1, m5 = 1, m6 = 1 }, count(run.lines(run.read(dir .. "/out.log"))))
    assert.matches("files open %(max_open_files%)", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)

  it("joins multiline records, and holds an unfinished one back at a stop", function()
    local dir = setup({ "logs/app.log" }, { extra = [[,
      multiline = { start = "^%d%d%d%d%-%d%d%-%d%d ", flush_ms = 60000 }]] })
    run.write(dir .. "/logs/app.log", "")
    start(dir)
    sh(dir, "printf '2026-01-01 one\\n  at a\\n  at b\\n2026-01-02 two\\n  at c\\n' >> logs/app.log")
    wait_lines(dir, 3)
    assert.are.equal(0, stop(dir))
    -- "two" is held (no line has started the next record): not written,
    -- not acknowledged; the next run reads it again.
    assert.are.same({ "2026-01-01 one", "  at a", "  at b" }, run.lines(run.read(dir .. "/out.log")))
    sh(dir, "printf '2026-01-03 three\\n' >> logs/app.log")
    start(dir)
    wait_lines(dir, 5)
    assert.are.equal(0, stop(dir))
    assert.are.same({ "2026-01-01 one", "  at a", "  at b", "2026-01-02 two", "  at c" },
                    run.lines(run.read(dir .. "/out.log")))
    run.cleanup(dir)
  end)

  it("joins the pieces of CRI and Docker lines before their decoders", function()
    local dir = run.tmpdir()
    sh(dir, "mkdir logs state")
    run.write(dir .. "/config.lua", [[
lumberjit = { state_dir = "state", dead_letter_path = "dead.log" }
cri = { type = "tail_input", paths = { "logs/cri.log" }, read_from_head = true, scan_interval_ms = 50,
        multiline = { cri = true }, decoder = "cri_lines" }
docker = { type = "tail_input", paths = { "logs/docker.log" }, read_from_head = true, scan_interval_ms = 50,
           multiline = { docker = true }, decoder = "docker_lines" }
cri_lines = { type = "decoder", filename = "decoders/cri.lua" }
docker_lines = { type = "decoder", filename = "decoders/docker.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.log", encoder = "json", message_matcher = "TRUE" }
]])
    run.write(dir .. "/logs/cri.log", "2024-01-02T03:04:05.1+00:00 stdout P first half, \n"
      .. "2024-01-02T03:04:06Z stderr F an error\n"
      .. "2024-01-02T03:04:05.25+00:00 stdout F second half\n")
    run.write(dir .. "/logs/docker.log", '{"log":"a \\"quoted\\" ","stream":"stdout","time":"2024-01-02T03:04:05Z"}\n'
      .. '{"log":"end\\n","stream":"stdout","time":"2024-01-02T03:04:06Z"}\n')
    start(dir)
    wait_lines(dir, 3)
    assert.are.equal(0, stop(dir))
    local got = {}
    for _, line in ipairs(run.lines(run.read(dir .. "/out.log"))) do
      local doc = require("cjson").decode(line)
      got[#got + 1] = doc.type .. " " .. doc.stream .. " " .. doc.message .. " " .. tostring(doc.partial)
    end
    table.sort(got)
    assert.are.same({ "cri stderr an error nil", "cri stdout first half, second half nil",
                      'docker stdout a "quoted" end nil' }, got)
    run.cleanup(dir)
  end)

  it("resumes each of several files at its own checkpoint", function()
    local dir = setup({ "logs/*.log" })
    for i = 1, 6 do run.write(dir .. "/logs/f" .. i .. ".log", "") end
    start(dir)
    local want = {}
    for i = 1, 6 do
      want[#want + 1] = "f" .. i .. " before"
      h.append(dir .. "/logs/f" .. i .. ".log", want[#want] .. "\n")
    end
    wait_lines(dir, 6)
    assert.are.equal(0, stop(dir))
    for i = 1, 6 do
      want[#want + 1] = "f" .. i .. " after"
      h.append(dir .. "/logs/f" .. i .. ".log", want[#want] .. "\n")
    end
    start(dir)
    wait_lines(dir, 12)
    assert.are.equal(0, stop(dir))
    local r = h.check(want, run.lines(run.read(dir .. "/out.log")))
    assert.are.same({ 0, 0, 0 }, { r.lost, r.dups, r.torn }, r.text)
    assert.are.equal(6, h.count_matching(run.read(dir .. "/stderr"), "resuming logs/f%d.log at offset"))
    run.cleanup(dir)
  end)

  it("resumes a file renamed while lumberjit was down at its checkpoint", function()
    local dir = setup({ "logs/app.log*" })
    run.write(dir .. "/logs/app.log", "")
    start(dir)
    sh(dir, "echo 'read before' >> logs/app.log")
    wait_lines(dir, 1)
    assert.are.equal(0, stop(dir))
    -- Rotated while down, after one more line: the restart finds the file
    -- by its inode under its new name (without read_from_head, a file the
    -- state file does not know would be read from its end).
    sh(dir, "echo 'written before the rotation' >> logs/app.log && mv logs/app.log logs/app.log.1")
    start(dir)
    wait_lines(dir, 2)
    assert.are.equal(0, stop(dir))
    assert.are.same({ "read before", "written before the rotation" }, run.lines(run.read(dir .. "/out.log")))
    assert.matches("resuming logs/app.log.1 at offset 12", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)

  it("reads a file truncated while lumberjit was down from its start", function()
    local dir = setup({ "logs/app.log" })
    run.write(dir .. "/logs/app.log", "")
    start(dir)
    sh(dir, "echo 'read before the truncation' >> logs/app.log")
    wait_lines(dir, 1)
    assert.are.equal(0, stop(dir))
    sh(dir, ": > logs/app.log && printf 'new 1\\nnew 2\\n' >> logs/app.log")
    start(dir)
    wait_lines(dir, 3)
    assert.are.equal(0, stop(dir))
    assert.are.same({ "read before the truncation", "new 1", "new 2" }, run.lines(run.read(dir .. "/out.log")))
    run.cleanup(dir)
  end)

  it("loses nothing when killed with SIGKILL mid-stream and restarted", function()
    local dir = setup({ "logs/app.log" })
    run.write(dir .. "/logs/app.log", "")
    start(dir)
    sh(dir, "(" .. writer(dir, "logs/app.log", "line", 1, 30000, 0.002) .. ") > /dev/null 2>&1 & echo $! > writer")
    wait_lines(dir, 5000)
    sh(dir, "kill -KILL " .. lumberjit_pid(dir))
    wait_status(dir)
    start(dir)
    sh(dir, "while kill -0 $(cat writer) 2>/dev/null; do sleep 0.05; done")
    wait_lines(dir, 30000)
    assert.are.equal(0, stop(dir))
    assert.matches("resuming logs/app.log at offset", run.read(dir .. "/stderr"))
    local got = run.lines(run.read(dir .. "/out.log"))
    local dups = assert_all_in_order(numbers("line", 1, 30000), got)
    -- Duplicates: what was acknowledged since the last checkpoint write
    -- (50 ms) and what was in flight; a few thousand lines at most here.
    assert.is_true(dups < 10000, dups .. " duplicates")
    run.cleanup(dir)
  end)
end)
