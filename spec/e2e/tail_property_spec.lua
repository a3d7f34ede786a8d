-- A property of tail_input's file identity: random sequences of what
-- writers, logrotate and operators do to files, with restarts between
-- steps; every line written is delivered whole, and exactly once unless a
-- kill -9 came after it was written (then at least once).
--
-- Operations: create (empty, or with lines), append (1-20 lines, some
-- ending in an unfinished line that a later append completes), rename
-- within the patterns (f.log -> f.log.rN), rename out of them, plain copy,
-- copytruncate, delete, symlink retarget (logs/current -> side/tN.txt),
-- restart (SIGTERM, or kill -9). Files are 0 bytes to several KiB; about
-- half start with the same 12-line banner (~500 bytes).
--
-- What is expected, exactly: every whole line written to a file the
-- patterns lead to, once per file it was written to or plainly copied
-- into; a copytruncate copy adds nothing (its lines were counted in the
-- original; the copy supplies those the reader had not read yet). The
-- assumptions that make this exact, each what a real setup does or a
-- documented limit (README, "Tailing files"):
--   - before a file leaves the patterns (renamed out, deleted, or no
--     longer the symlink's target) its writer ends its last line and
--     lumberjit has delivered all written so far (nothing is written to
--     it after): a file that leaves while closed (idle, or waiting for a
--     slot: max_open_files is 8 here) is not followed, and a deleted one
--     cannot be read;
--   - restarts come when all written so far is delivered; nothing changes
--     while lumberjit is down;
--   - a file with a banner gets it and its first own line in one write:
--     a file holding nothing but bytes identical to what was read from a
--     file truncated a moment before is taken for its copy;
--   - a plain copy is made no sooner than 0.5 s after a copytruncate (the
--     truncated file is remembered for rotate_wait_ms + scan_interval_ms),
--     and is delivered before the next step (until then it may still
--     prove a copy of its original, should that be truncated);
--   - last_line_timeout_ms is longer than the run: an unfinished line is
--     held until its writer ends it (a shorter timeout hands it on in two
--     records, by design).
-- Lines carry their file's id and a sequence number; banner lines and
-- copied lines repeat, so lines are counted as a multiset.
--
-- The suite runs fixed seeds, so that its result does not depend on the
-- day it runs: 1000 to 1002, and those that found a bug (SEEDS);
-- TAIL_PROPERTY_SEED=N runs seed N (the seed is in every failure), e.g.
-- TAIL_PROPERTY_SEED=$(date +%s) for new ones in a soak.
local h = dofile("spec/e2e/tail_harness.lua")
local run = h.run

-- TAIL_PROPERTY_STEPS=N makes each sequence longer, for a soak run.
local STEPS = tonumber(os.getenv("TAIL_PROPERTY_STEPS") or "") or 45
local SEEDS = {
  1000, 1001, 1002,
  1795733887, -- a copytruncate copy of a copytruncate copy was read from where the first original's reading ended
}

local config = [[
lumberjit = { state_dir = "state", checkpoint_interval_ms = 50, dead_letter_path = "dead.log" }
app = { type = "tail_input", paths = { "logs/*.log*", "logs/current" }, read_from_head = true,
        scan_interval_ms = 50, rotate_wait_ms = 300, idle_close_ms = 300, last_line_timeout_ms = 60000,
        max_open_files = 8 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]

local banner = {}
for i = 1, 12 do banner[i] = string.format("BANNER shared by every worker, line %02d of 12", i) end

-- One run of `steps` random operations from `seed`.
local function sequence(seed, steps)
  math.randomseed(seed)
  local dir = run.tmpdir()
  h.sh(dir, "mkdir logs side state")
  run.write(dir .. "/config.lua", config)
  local files, ids, expected, dup_ok = {}, 0, {}, {}
  local trail, last_copytruncate, link = {}, -10, nil
  local clock = 0 -- seconds slept, roughly

  local function fail(msg)
    error(string.format("seed %d: %s\nsteps: %s\nstderr: %s", seed, msg, table.concat(trail, "; "),
      (run.read(dir .. "/stderr") or ""):sub(-3000)), 0)
  end
  local function note(s) trail[#trail + 1] = s end
  local function pause(s)
    h.sleep(s)
    clock = clock + s
  end

  local function expect(line)
    expected[line] = (expected[line] or 0) + 1
  end
  local function delivered()
    return h.count(run.lines(run.read(dir .. "/out.log") or ""))
  end
  -- Waits until every line expected so far is delivered.
  local function quiesce()
    local short
    for _ = 1, 300 do
      local got = delivered()
      short = {}
      for line, n in pairs(expected) do
        if (got[line] or 0) < n then short[#short + 1] = string.format("%s (%d of %d)", line, got[line] or 0, n) end
      end
      if #short == 0 then return end
      pause(0.05)
    end
    table.sort(short)
    fail(#short .. " lines not delivered after 15 s: " .. table.concat(short, ", ", 1, math.min(8, #short)))
  end

  local function line_for(f)
    f.seq = f.seq + 1
    return string.format("f%d:%d %s", f.id, f.seq, string.rep(string.char(97 + math.random(0, 25)), math.random(0, 90)))
  end
  local function write(f, text)
    h.append(dir .. "/" .. f.path, text)
  end
  -- Ends f's unfinished line, if any.
  local function finish_line(f)
    if not f.partial then return end
    write(f, f.partial.text:sub(f.partial.cut + 1) .. "\n")
    expect(f.partial.text)
    f.lines[#f.lines + 1] = f.partial.text
    f.partial = nil
  end
  local function append(f, n, unfinished)
    finish_line(f)
    local chunk = {}
    for _ = 1, n do
      local line = line_for(f)
      chunk[#chunk + 1] = line .. "\n"
      expect(line)
      f.lines[#f.lines + 1] = line
    end
    if unfinished then
      local line = line_for(f)
      local cut = math.random(1, #line - 1)
      chunk[#chunk + 1] = line:sub(1, cut)
      f.partial = { text = line, cut = cut }
    end
    write(f, table.concat(chunk))
  end
  local function new_file(path, kind)
    ids = ids + 1
    local f = { id = ids, path = path, kind = kind, seq = 0, lines = {} }
    files[#files + 1] = f
    return f
  end
  -- Creates a file: empty, with lines, or with the banner and a line.
  local function create(path, kind)
    local f = new_file(path, kind)
    local r = math.random(3)
    run.write(dir .. "/" .. path, "")
    if r == 2 then
      append(f, math.random(1, 20), math.random(4) == 1)
    elseif r == 3 then
      local own = line_for(f)
      write(f, h.text(banner) .. own .. "\n")
      for _, l in ipairs(banner) do expect(l) f.lines[#f.lines + 1] = l end
      expect(own)
      f.lines[#f.lines + 1] = own
    end
    return f
  end
  local function drop(f)
    for i, g in ipairs(files) do
      if g == f then table.remove(files, i) return end
    end
  end
  local function pick(kind)
    local c = {}
    for _, f in ipairs(files) do
      if f.kind == kind and (kind ~= "side" or f == link) then c[#c + 1] = f end
    end
    return #c > 0 and c[math.random(#c)] or nil
  end

  local function start()
    h.start(dir)
  end
  local function restart()
    quiesce()
    if math.random(2) == 1 then
      note("restart (TERM)")
      h.sh(dir, "kill -TERM $(cat pid)")
    else
      note("restart (kill -9)")
      h.sh(dir, "kill -KILL " .. h.lumberjit_pid(dir))
      for line in pairs(expected) do dup_ok[line] = true end
    end
    h.wait_status(dir)
    start()
  end

  start()
  for step = 1, steps do
    local op, f = math.random(100), nil
    if op <= 14 then
      f = create(string.format("logs/f%d.log", ids + 1), "log")
      note("create " .. f.path .. " (" .. #f.lines .. " lines)")
    elseif op <= 50 then
      f = pick(math.random(5) == 1 and "side" or "log") or pick("log")
      if f then
        local n, unfinished = math.random(1, 20), math.random(3) == 1
        note(string.format("append %d%s to %s", n, unfinished and "+" or "", f.path))
        append(f, n, unfinished)
      end
    elseif op <= 58 then
      f = pick("log")
      if f then
        local to = string.format("logs/f%d.log.r%d", f.id, step)
        note("rename " .. f.path .. " " .. to)
        h.sh(dir, "mv " .. f.path .. " " .. to)
        f.path = to
      end
    elseif op <= 62 then
      f = pick("log")
      if f then
        finish_line(f)
        quiesce()
        local to = string.format("logs/f%d.gone", f.id)
        note("rename out " .. f.path .. " " .. to)
        h.sh(dir, "mv " .. f.path .. " " .. to)
        drop(f)
      end
    elseif op <= 69 then
      f = pick("log")
      if f then
        if clock - last_copytruncate < 0.5 then pause(0.5) end
        finish_line(f)
        local c = new_file(string.format("logs/f%d.log", ids + 1), "log")
        note("copy " .. f.path .. " " .. c.path)
        h.sh(dir, "cp " .. f.path .. " " .. c.path)
        for _, l in ipairs(f.lines) do expect(l) c.lines[#c.lines + 1] = l end
        quiesce()
      end
    elseif op <= 78 then
      f = pick("log")
      if f then
        finish_line(f)
        local c = new_file(string.format("%s.c%d", f.path, step), "log")
        note("copytruncate " .. f.path .. " " .. c.path)
        h.sh(dir, "cp " .. f.path .. " " .. c.path .. " && : > " .. f.path)
        c.lines, f.lines = f.lines, {}
        last_copytruncate = clock
      end
    elseif op <= 83 then
      f = pick("log")
      if f then
        finish_line(f)
        quiesce()
        note("delete " .. f.path)
        h.sh(dir, "rm " .. f.path)
        drop(f)
      end
    elseif op <= 91 then
      if link then
        finish_line(link)
        quiesce()
        drop(link)
      end
      link = create(string.format("side/t%d.txt", ids + 1), "side")
      note("symlink logs/current -> " .. link.path .. " (" .. #link.lines .. " lines)")
      h.sh(dir, "ln -sfn ../" .. link.path .. " logs/current")
    else
      restart()
    end
    if math.random(4) == 1 then pause(0.05 * math.random(1, 6)) end
  end
  for _, f in ipairs(files) do finish_line(f) end
  quiesce()
  h.sleep(0.2) -- any duplicate a moment behind
  assert.are.equal(0, h.stop(dir))
  local got, problems = delivered(), {}
  for line, n in pairs(got) do
    local want = expected[line]
    if not want then
      problems[#problems + 1] = "torn or unknown: " .. line
    elseif n < want then
      problems[#problems + 1] = string.format("lost: %s (%d of %d)", line, n, want)
    elseif n > want and not dup_ok[line] then
      problems[#problems + 1] = string.format("duplicated: %s (%d of %d)", line, n, want)
    end
  end
  for line in pairs(expected) do
    if not got[line] then problems[#problems + 1] = "lost: " .. line end
  end
  if #problems > 0 then
    table.sort(problems)
    fail(#problems .. " problems: " .. table.concat(problems, "\n", 1, math.min(10, #problems)))
  end
  run.cleanup(dir)
end

describe("tail_input file identity, as a property", function()
  local seed = tonumber(os.getenv("TAIL_PROPERTY_SEED") or "")
  for _, n in ipairs(seed and { seed } or SEEDS) do
    it("delivers every line whole through random file operations and restarts (seed " .. n .. ")", function()
      sequence(n, STEPS)
    end)
  end
end)
