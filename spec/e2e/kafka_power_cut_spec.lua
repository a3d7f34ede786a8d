-- Power loss on an edge box (issue 28, §3) with a kafka_output's disk
-- buffer (src/outputs/kafka/kafka_disk.c on src/storage/disk_queue.c),
-- against a real broker (spec/e2e/kafka_harness.lua): lumberjit tails a
-- file into Kafka while the broker is stopped, so the records go to the
-- disk buffer; it is stopped with kill -9 mid-stream, and its state is
-- damaged as a power cut on an SD card leaves it (spec/e2e/power_cut.lua:
-- the checkpoint file, the disk buffer's cursor and one of its segments cut
-- at a random byte offset, with bytes changed before the cut). The next
-- run, with the broker back, must start, say what it repaired, and lose
-- nothing but what the damage took. Every other round, that run is killed
-- too, mostly while it drains the disk buffer (capped at 1,000 records a
-- second, a second's worth at once), its state cut again the same way, and
-- a third run must do the same.
--
-- The rounds are seeded (KAFKA_POWER_CUT_SEED; KAFKA_POWER_CUT_ROUNDS, 6
-- by default, 2 on an ASan build; KAFKA_POWER_CUT_KEEP keeps each round's
-- directory). The broker starts, and stops, once: every round's first run
-- is made while it is stopped, then the others once it is back, each
-- round with its own lines ("kpcSEED N ...") in one topic.
-- The oracle, per round, is power_cut_spec's:
--   * every line written that is not lost by a cut (a record of a damaged
--     segment at or after its first damaged byte) is in the topic; nothing
--     else is (no torn or merged record);
--   * the run after each cut logs its repairs: the segment's (the bytes cut
--     exactly, the records exactly unless a length field changed; none of
--     a segment before the cursor's, which is deleted unread as
--     acknowledged), a checkpoint file or cursor cut short said to be
--     damaged;
--   * the last run exits 0 on SIGTERM;
-- and, for Kafka, duplicates only as the README says: the broker was away
-- for the whole first run, so in a round of two runs the only record sent
-- twice is a line read again by the second run while its copy on disk is
-- sent too: with the checkpoint file whole, only lines at or after its
-- offset (those acknowledged since its last save); with it damaged, any
-- (the file is read again from its head). A crash while draining sends
-- again what was sent since the cursor was saved (all of the disk buffer
-- if the cursor is damaged): those rounds bound nothing.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local k = dofile("spec/e2e/kafka_harness.lua")
local pc = dofile("spec/e2e/power_cut.lua")

-- Fewer on an AddressSanitizer build, which runs each round slower.
local ROUNDS = tonumber(os.getenv("KAFKA_POWER_CUT_ROUNDS") or (run.asan_runtime() and "2" or "6"))
local SEED = tonumber(os.getenv("KAFKA_POWER_CUT_SEED") or "1")
local LINES = 3000
local TOPIC = "power-cut"

-- The lines as read are the records' values (the payload encoder); small
-- segments, so that a round has several.
local function config(bootstrap, cap)
  return 'lumberjit = { dead_letter_path = "dead.log", state_dir = "state", checkpoint_interval_ms = 20, '
    .. 'stop_timeout_ms = 2000 }\n'
    .. 'app = { type = "tail_input", paths = { "in.log" }, scan_interval_ms = 20, read_from_head = true }\n'
    .. 'payload = { type = "encoder", filename = "encoders/payload.lua" }\n'
    .. 'kafka = { type = "kafka_output", message_matcher = "TRUE", encoder = "payload", brokers = "'
    .. bootstrap .. '", topic = "' .. TOPIC .. '", disk_buffer = { path = "buffer", segment_bytes = 16384 }'
    .. (cap and ", max_messages_per_second = " .. cap or "") .. ' }\n'
end

-- Whether the disk buffer has a segment with a record in it (more than
-- its 8-byte header).
local function on_disk(dir)
  for _, name in ipairs(pc.listing(dir .. "/buffer", "*.seg")) do
    if run.size(dir .. "/buffer/" .. name) > 8 then return true end
  end
  return false
end

-- Every value in the topic, one a line (values are lines without their
-- newline), counted: { [value] = n }.
local function topic_values(b, dir)
  local file = dir .. "/topic.txt"
  h.sh(dir, string.format("timeout -s KILL 120 kcat -C -q -e -o beginning -f '%%s\\n' -b %s -t %s > %s 2> kcat.err",
    b.bootstrap, TOPIC, run.quote(file)))
  local seen = {}
  for _, line in ipairs(run.lines(run.read(file) or "")) do seen[line] = (seen[line] or 0) + 1 end
  return seen
end

local totals = { drain_crashes = 0, rounds = 0, lost = 0, arrived = 0, duplicates = 0, segment_repairs = 0,
                 checkpoint_repairs = 0, cursor_repairs = 0, written = 0, examples = {} }
-- Every line of every round: a value in the topic that is none of them is
-- torn or merged.
local written = {}

-- A round's first run, while the broker is stopped, and the power cut;
-- returns what its second run needs.
local function cut(seed, b, drain_crash)
  math.randomseed(seed)
  local dir = h.tmpdir()
  local r = { seed = seed, dir = dir, expected = {}, at = {}, lost = {}, what = {}, drain_crash = drain_crash }
  local offset = 0
  for i = 1, LINES do
    local line = string.format("kpc%d %06d %s", seed, i, string.rep("x", math.random(0, 120)))
    r.expected[i] = line
    r.at[line] = offset
    offset = offset + #line + 1
    written[line] = true
  end
  run.write(dir .. "/expected.log", table.concat(r.expected, "\n") .. "\n")
  run.write(dir .. "/writer.py", pc.WRITER)
  run.write(dir .. "/config.lua", config(b.bootstrap))
  run.write(dir .. "/in.log", "")
  h.sh(dir, "mkdir state")

  -- Run 1: no broker answers, so librdkafka says every broker is down and
  -- the records go to disk; lumberjit dies mid-stream.
  h.spawn(dir, "lumberjit", run.quote(run.bin) .. " -c config.lua", 60)
  h.spawn(dir, "writer", "python3 writer.py", 30)
  -- Once the state file knows in.log and records are on disk.
  assert(h.wait_until(function()
    return (run.read(dir .. "/state/checkpoints") or ""):find("file in.log") and on_disk(dir)
  end, 20), "no records on disk: " .. (run.read(dir .. "/lumberjit.err") or ""))
  h.sleep(string.format("%.3f", math.random(0, 500) / 1000))
  pc.kill9(dir, "lumberjit")
  assert.are.equal(0, h.wait_exit(dir, "writer", 30))
  r.first_log = run.read(dir .. "/lumberjit.err") or ""

  -- The power cut: a segment, the checkpoint file and the cursor.
  r.seg = pc.cut_segment(dir .. "/buffer", r.lost, r.what)
  r.checkpoint_cut = pc.damage_file(dir .. "/state/checkpoints", "checkpoints", r.what)
  r.cursor_cut = pc.damage_file(dir .. "/buffer/cursor", "cursor", r.what)
  -- Where the state file resumes in.log, when it was left whole: lines
  -- before it were acknowledged and saved.
  if r.checkpoint_cut == nil then
    r.resume = tonumber((run.read(dir .. "/state/checkpoints") or ""):match("offset (%d+)"))
  end
  return r
end

-- Asserts what the log of the run after a power cut says of its repairs.
-- With a cursor the run used, a segment before the cursor's was deleted
-- unread, as acknowledged: nothing to say of it.
local function check_repairs(seg, checkpoint_cut, cursor_cut, cursor_seq, log, context)
  local cursor_used = cursor_seq and not log:find("cannot use its cursor file")
  if seg and not (cursor_used and tonumber(seg.name:match("%d+")) < cursor_seq)
     and pc.check_segment(seg, log, context) then
    totals.segment_repairs = totals.segment_repairs + 1
  end
  pc.count_repairs(totals, checkpoint_cut, cursor_cut, log, context)
end

-- For a round that crashes while the disk buffer drains: a second run with
-- the broker up and the drain capped, killed with kill -9 at a random
-- moment of it (the drain takes about two seconds), and a second power cut,
-- whose lost lines join the first's. Asserts the first cut's repairs.
local function crash_while_draining(r, b)
  local dir = r.dir
  math.randomseed(r.seed + 1000000)
  run.write(dir .. "/config.lua", config(b.bootstrap, 1000))
  h.spawn(dir, "drain", run.quote(run.bin) .. " -c config.lua", 60)
  assert(h.wait_until(function() return (run.read(dir .. "/drain.err") or ""):find("partitions on 1 broker") end, 30),
    run.read(dir .. "/drain.err"))
  h.sleep(string.format("%.3f", math.random(0, 2000) / 1000))
  pc.kill9(dir, "drain")
  local log = run.read(dir .. "/drain.err") or ""
  check_repairs(r.seg, r.checkpoint_cut, r.cursor_cut, nil, log,
    "seed " .. r.seed .. " in " .. dir .. ": " .. table.concat(r.what, "; ") .. "\n" .. log)
  -- Where the drain's cursor was last saved.
  r.cursor_seq = tonumber((run.read(dir .. "/buffer/cursor") or ""):match("segment (%d+)"))
  r.what[#r.what + 1] = "killed while draining, then"
  r.seg = pc.cut_segment(dir .. "/buffer", r.lost, r.what)
  r.checkpoint_cut = pc.damage_file(dir .. "/state/checkpoints", "checkpoints", r.what)
  r.cursor_cut = pc.damage_file(dir .. "/buffer/cursor", "cursor", r.what)
  r.resume = nil
  run.write(dir .. "/config.lua", config(b.bootstrap))
end

-- A round's last run, with the broker up; asserts the oracle.
local function recover(r, b)
  local dir = r.dir
  if r.drain_crash then crash_while_draining(r, b) end
  h.spawn(dir, "lumberjit2", run.quote(run.bin) .. " -c config.lua", 120)
  local want = {}
  for _, line in ipairs(r.expected) do
    if not r.lost[line] then want[#want + 1] = line end
  end
  local seen
  local function all_arrived()
    seen = topic_values(b, dir)
    for _, line in ipairs(want) do
      if not seen[line] then return false end
    end
    return true
  end
  local arrived = h.wait_until(all_arrived, 60)
  local status = h.terminate(dir, "lumberjit2", 30)
  all_arrived()
  local log = run.read(dir .. "/lumberjit2.err") or ""
  local context = "seed " .. r.seed .. " in " .. dir .. ": " .. table.concat(r.what, "; ") .. "\n" .. log
  assert.are.equal(0, status, context)
  assert.is_true(arrived, context)

  -- Nothing but written lines arrived; this round's, as often as allowed.
  local duplicates, got, prefix = 0, 0, "kpc" .. r.seed .. " "
  for line, n in pairs(seen) do
    assert.is_true(written[line] ~= nil, "torn or merged: " .. line .. "\n" .. context)
    if line:sub(1, #prefix) == prefix then
      got = got + 1
      duplicates = duplicates + n - 1
      if n > 1 and r.resume then
        assert.is_true(r.at[line] >= r.resume, string.format("%q arrived %d times, though at offset %d, before "
          .. "the checkpoint's %d\n%s", line, n, r.at[line], r.resume, context))
      end
    end
  end

  check_repairs(r.seg, r.checkpoint_cut, r.cursor_cut, r.cursor_seq, log, context)
  local n_lost = 0
  for line in pairs(r.lost) do
    if not seen[line] then n_lost = n_lost + 1 end
  end
  totals.rounds = totals.rounds + 1
  totals.drain_crashes = totals.drain_crashes + (r.drain_crash and 1 or 0)
  totals.written = totals.written + #r.expected
  totals.lost = totals.lost + n_lost
  totals.arrived = totals.arrived + got
  totals.duplicates = totals.duplicates + duplicates
  if os.getenv("KAFKA_POWER_CUT_KEEP") then io.stderr:write(dir, "\n") else h.cleanup(dir) end
end

describe("a power cut with a kafka_output's disk buffer", function()
  local b

  setup(function()
    b = k.start()
    k.create_topic(b, TOPIC, 1)
  end)

  teardown(function()
    if b then k.destroy(b) end
  end)

  it("loses only what it cut, says what it repaired, and sends again only what the README allows", function()
    -- Every round runs, so that a long run reports all that failed.
    local failed, rounds = {}, {}
    k.stop(b)
    for i = 0, ROUNDS - 1 do
      local ok, r = pcall(cut, SEED + i, b, i % 2 == 1)
      if ok then rounds[#rounds + 1] = r else failed[#failed + 1] = tostring(r) end
    end
    k.restart(b)
    for _, r in ipairs(rounds) do
      local ok, err = pcall(recover, r, b)
      if not ok then failed[#failed + 1] = tostring(err) end
    end
    io.stderr:write(string.format("\nkafka power cut: %d rounds from seed %d, %d passed (%d of them killed while "
      .. "draining and cut again); %d lines written, %d arrived (%d more times as duplicates), %d lost by the "
      .. "cuts; repaired %d segments, %d checkpoint files, %d cursors\n", ROUNDS, SEED, totals.rounds,
      totals.drain_crashes, totals.written, totals.arrived,
      totals.duplicates, totals.lost, totals.segment_repairs, totals.checkpoint_repairs,
      totals.cursor_repairs))
    for _, line in pairs(totals.examples) do io.stderr:write("  ", line, "\n") end
    assert.are.same({}, failed)
  end)
end)
