-- W1's Kafka variant (shared/WORKLOADS.md), run by bench/w1-kafka: varied
-- 247-byte W1 lines from a file -> line decoder -> kafka_output, against a
-- real broker on 127.0.0.1 (spec/e2e/kafka_harness.lua), with lz4, zstd and
-- gzip, twice: through the Logstash JSON encoder (~350-byte records) and
-- as read (no decoder, no encoder: the passthrough, as kcat sends it); and
-- kcat -P producing the same lines with the same codec and acks to the same
-- broker in the same run, alternating, and kcat -P sending the JSON
-- records lumberjit makes (written to a file beforehand), and kcat -P with
-- the idempotent producer lumberjit runs, the lines and the JSON records
-- (librdkafka 2.0 keeps one request in flight per partition with it, which
-- bounds the rate of both; each lumberjit row is also given as a fraction
-- of that). Prints, for
-- each, records/s, MB/s (of input lines), CPU seconds, lumberjit's delivery
-- latency percentiles (produce to delivery report) and the ratio of its
-- rate to kcat's: the payload run's is like for like; the JSON run's
-- includes the encoding and the larger records, and its ratio to kcat
-- sending the same JSON the encoding alone. Every run goes to a fresh
-- topic, whose count is checked once a codec's runs are over: a topic read back between runs
-- slowed the next timed run, the broker spending more CPU in it (measured
-- with zstd: lumberjit's JSON runs took 2.15-2.77 s after a read and
-- 1.62-1.98 s back to back, and its bench ratio was 0.76-0.78 where back
-- to back it was 0.84). Each codec starts with an untimed kcat run, so
-- that the broker's code for that codec is compiled by its JIT before any
-- timed run. BASE, another build, adds its runs to the same rounds,
-- labelled base: before and after in one session. WORKERS sets
-- lumberjit.workers in lumberjit's runs (0: the plugins on the loop
-- thread, which leaves the cores to librdkafka and the broker).
--
--   lua5.1 bench/lua/kafka.lua BIN N RUNS CODECS [BASE]
local k = dofile("spec/e2e/kafka_harness.lua")
local run = dofile("spec/e2e/run.lua")

local bin, n, runs, base = arg[1], tonumber(arg[2]), tonumber(arg[3]), arg[5]
local codecs = {}
for c in arg[4]:gmatch("[^,]+") do codecs[#codecs + 1] = c end

local work = run.tmpdir()
local lines = work .. "/w1.log"
assert(os.execute(("python3 bench/lib/gen_lines.py w1 %d %s"):format(n, lines)) == 0)
local bytes = run.size(lines)

local function shell(cmd)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  return out
end

-- Runs cmd under GNU time: wall and CPU seconds.
local function timed(cmd, err)
  shell(("/usr/bin/time -f '%%e %%U %%S' -o %s/time sh -c %s 2> %s"):format(work, run.quote(cmd), err))
  local e, u, s = run.read(work .. "/time"):match("([%d.]+) ([%d.]+) ([%d.]+)")
  return tonumber(e), tonumber(u) + tonumber(s)
end

-- The median of t, which stays in its order (the rounds' order).
local function median(t)
  local sorted = { unpack(t) }
  table.sort(sorted)
  return sorted[math.floor((#sorted + 1) / 2)]
end

local b = k.start()
local topics, serial = {}, 0
local function fresh_topic()
  serial = serial + 1
  return "bench-" .. serial
end
-- What lumberjit sends: the encoder, the build, and the label it is
-- printed with.
local encoders = { { name = "json", bin = bin, label = "lumberjit, JSON" },
                   { name = "payload", bin = bin, label = "lumberjit, as read" } }
if base then
  encoders[3] = { name = "json", bin = base, label = "base, JSON" }
  encoders[4] = { name = "payload", bin = base, label = "base, as read" }
end

-- Topics are made up front: one JVM start for all.
for _ = 1, (#codecs * (runs * (#encoders + 4) + 1)) do topics[fresh_topic()] = 1 end
k.create_topics(b, topics)
serial = 0

-- "payload" sends the lines as read: no decoder and no encoder, which
-- the passthrough takes (src/pipeline/internal/passthrough.h).
local workers = os.getenv("WORKERS")
local function lumberjit(binary, encoder, codec, topic)
  local as_read = encoder == "payload"
  run.write(work .. "/config.lua", ([[
lumberjit = { dead_letter_path = "%s/dead.log"%s }
file = { type = "file_input", path = "%s"%s }
kafka = { type = "kafka_output", message_matcher = "TRUE", brokers = "%s",
          topic = "%s", compression = "%s"%s }
%s]]):format(work, workers and (", workers = " .. tonumber(workers)) or "", lines,
    as_read and "" or ', decoder = "line"', b.bootstrap, topic, codec,
    as_read and "" or (', encoder = "%s"'):format(encoder),
    as_read and "" or ([[
line = { type = "decoder", filename = "decoders/line.lua" }
%s = { type = "encoder", filename = "encoders/%s.lua" }
]]):format(encoder, encoder)))
  local wall, cpu = timed(("%s -c %s/config.lua"):format(run.quote(binary), work), work .. "/lj.err")
  local err = run.read(work .. "/lj.err")
  local lat = { err:match("delivery latency p50 ([%d.]+) ms, p95 ([%d.]+) ms, p99 ([%d.]+) ms, p99.9 ([%d.]+) ms, max ([%d.]+) ms") }
  assert(#lat == 5, err)
  return wall, cpu, lat
end

-- extra: more -X settings (the idempotent producer lumberjit runs).
local function kcat(codec, topic, file, extra)
  return timed(("kcat -P -q -b %s -t %s -X compression.codec=%s -X acks=all %s -l %s"):format(
    b.bootstrap, topic, codec, extra or "", file or lines), work .. "/kcat.err")
end
local IDEMPOTENT = "-X enable.idempotence=true"

-- The JSON records lumberjit sends, one a line, for kcat to send as they
-- are: the bytes of the JSON runs without the decoding and encoding.
local json_lines = work .. "/w1.json"
run.write(work .. "/to-json.lua", ([[
file = { type = "file_input", path = "%s", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", encoder = "json", message_matcher = "TRUE", path = "%s" }
]]):format(lines, json_lines))
assert(os.execute(("%s -c %s/to-json.lua 2> %s/to-json.err"):format(run.quote(bin), work, work)) == 0)

local function median_latency(lats)
  table.sort(lats, function(x, y) return tonumber(x[1]) < tonumber(y[1]) end)
  return lats[math.floor((#lats + 1) / 2)]
end

local function row(codec, label, wall, cpu)
  return ("%-6s %-19s %8.0f records/s %6.1f MB/s %5.2f CPU-s"):format(codec, label, n / wall, bytes / wall / 1e6, cpu)
end

print(("W1 to Kafka: %d varied lines of ~247 B (%.1f MB), median of %d runs, broker on 127.0.0.1"):format(
  n, bytes / 1e6, runs))
print("lumberjit: file -> line decoder -> JSON encoder (~350 B records), or as read (no decoder or encoder)"
  .. " -> kafka_output (acks=all); kcat -P: the raw lines, and the JSON records written out beforehand")
for _, codec in ipairs(codecs) do
  local kw, kc, jw, jc, iw, ic, ijw, ijc, lj, sent = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
  for i = 1, #encoders do lj[i] = { wall = {}, cpu = {}, lat = {} } end
  local warm = fresh_topic()
  kcat(codec, warm)
  sent[warm] = "kcat (untimed)"
  for _ = 1, runs do
    for i, e in ipairs(encoders) do
      local topic = fresh_topic()
      local w, c, lat = lumberjit(e.bin, e.name, codec, topic)
      table.insert(lj[i].wall, w)
      table.insert(lj[i].cpu, c)
      table.insert(lj[i].lat, lat)
      sent[topic] = e.label
    end
    local topic = fresh_topic()
    local w, c = kcat(codec, topic)
    kw[#kw + 1], kc[#kc + 1] = w, c
    sent[topic] = "kcat"
    topic = fresh_topic()
    w, c = kcat(codec, topic, json_lines)
    jw[#jw + 1], jc[#jc + 1] = w, c
    sent[topic] = "kcat, JSON lines"
    topic = fresh_topic()
    w, c = kcat(codec, topic, nil, IDEMPOTENT)
    iw[#iw + 1], ic[#ic + 1] = w, c
    sent[topic] = "kcat, idempotent"
    topic = fresh_topic()
    w, c = kcat(codec, topic, json_lines, IDEMPOTENT)
    ijw[#ijw + 1], ijc[#ijc + 1] = w, c
    sent[topic] = "kcat, idempotent, JSON lines"
  end
  for topic, label in pairs(sent) do
    assert(k.count(b, topic) == n, label .. ": not every line arrived in " .. topic)
  end
  local k_wall, j_wall, i_wall, ij_wall = median(kw), median(jw), median(iw), median(ijw)
  print(row(codec, "kcat -P", k_wall, median(kc)))
  print(row("", "kcat -P, JSON lines", j_wall, median(jc)))
  print(row("", "kcat -P, idempotent", i_wall, median(ic)))
  print(row("", "kcat -P, idem., JSON", ij_wall, median(ijc)))
  -- CPU ratios are taken round by round (kcat's CPU-seconds over
  -- lumberjit's in the same round), then their median: the machine's load
  -- changes between rounds more than within one.
  local function cpu_ratio(theirs, ours)
    local r = {}
    for round = 1, #ours do r[round] = theirs[round] / ours[round] end
    return median(r)
  end
  for i, e in ipairs(encoders) do
    local wall = median(lj[i].wall)
    print(row("", e.label, wall, median(lj[i].cpu)) .. (" | of kcat: rate %.2f, CPU %.2f"):format(
      k_wall / wall, cpu_ratio(kc, lj[i].cpu)) .. (e.name == "json" and
      ("; of kcat sending its JSON: rate %.2f, CPU %.2f; of idempotent kcat sending it: rate %.2f, CPU %.2f"):format(
        j_wall / wall, cpu_ratio(jc, lj[i].cpu), ij_wall / wall, cpu_ratio(ijc, lj[i].cpu)) or
      ("; of idempotent kcat: rate %.2f, CPU %.2f"):format(i_wall / wall, cpu_ratio(ic, lj[i].cpu))))
  end
  for i, e in ipairs(encoders) do
    local lat = median_latency(lj[i].lat)
    print(("       %s: delivery latency p50 %s ms, p95 %s ms, p99 %s ms, p99.9 %s ms, max %s ms"):format(
      e.label, lat[1], lat[2], lat[3], lat[4], lat[5]))
  end
end
k.destroy(b)
run.cleanup(work)
